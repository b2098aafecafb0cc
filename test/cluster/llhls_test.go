package cluster_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/b3-storage/b3/internal/admin"
	"github.com/b3-storage/b3/internal/testutil"
)

// livePlaylist is a media playlist with a 10 s target duration (a held
// request waits up to 30 s): segments 0..last.
func livePlaylist(last int) []byte {
	var b strings.Builder
	b.WriteString("#EXTM3U\n#EXT-X-VERSION:9\n#EXT-X-TARGETDURATION:10\n#EXT-X-SERVER-CONTROL:CAN-BLOCK-RELOAD=YES\n#EXT-X-MEDIA-SEQUENCE:0\n")
	for i := 0; i <= last; i++ {
		fmt.Fprintf(&b, "#EXTINF:10.0,\ns%d.ts\n", i)
	}
	return []byte(b.String())
}

// TestClusterLLHLS: the LL-HLS origin setting, turned on through a
// follower's admin API, reaches every member; a blocking playlist request
// (a presigned URL with _HLS_msn appended) sent to a follower is held on
// the leader, not woken by a write that does not reach it, and answered
// by the encoder's write through the other follower that does. Held, it
// counts as client load on neither node.
func TestClusterLLHLS(t *testing.T) {
	c := testutil.StartCluster(t, testutil.ClusterOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	leader, err := c.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	reader, writer := (leader+1)%len(c.Nodes), (leader+2)%len(c.Nodes)
	cls := clients(c)
	if err := createBucket(ctx, cls[writer], "live"); err != nil {
		t.Fatal(err)
	}
	acs := make([]*admin.Client, len(c.Nodes))
	for i, n := range c.Nodes {
		acs[i] = &admin.Client{Endpoint: "http://" + n.AdminAddr, Token: c.AdminToken}
	}
	if res, err := acs[reader].SetBucketHLS(ctx, "live", true); err != nil || !res.LLHLS {
		t.Fatalf("buckets hls live on through %s: %+v %v", c.Nodes[reader].ID, res, err)
	}
	testutil.WaitFor(t, "the LL-HLS setting on every node", func() bool {
		for _, ac := range acs {
			list, err := ac.Buckets(ctx)
			if err != nil || len(list) != 1 || !list[0].LLHLS {
				return false
			}
		}
		return true
	})

	put := func(body []byte) {
		t.Helper()
		if _, err := cls[writer].PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("live"), Key: aws.String("cam/index.m3u8"),
			Body: bytes.NewReader(body)}); err != nil {
			t.Fatalf("PUT the playlist through %s: %v", c.Nodes[writer].ID, err)
		}
	}
	put(livePlaylist(2))
	presigned, err := s3.NewPresignClient(cls[reader]).PresignGetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("live"), Key: aws.String("cam/index.m3u8")})
	if err != nil {
		t.Fatal(err)
	}
	type answer struct {
		status int
		body   []byte
		err    error
	}
	done := make(chan answer, 1)
	go func() {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, presigned.URL+"&_HLS_msn=4", nil)
		resp, err := (&http.Client{Transport: &http.Transport{DialContext: c.Nodes[reader].Dial}}).Do(req)
		if err != nil {
			done <- answer{err: err}
			return
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		done <- answer{status: resp.StatusCode, body: body, err: err}
	}()
	const held = "b3_llhls_held_requests"
	testutil.WaitFor(t, "the request held on the leader", func() bool { return mustMetric(t, c, leader, held) == 1 })
	if v := mustMetric(t, c, reader, held); v != 0 {
		t.Fatalf("%v requests held on the follower that received it", v)
	}
	// Held, it is no client load on either node: background work does
	// not slow down for it.
	const inFlight = "b3_background_pace_client_requests_in_flight"
	testutil.WaitFor(t, "no client load counted for the held request", func() bool {
		return mustMetric(t, c, leader, inFlight) == 0 && mustMetric(t, c, reader, inFlight) == 0
	})
	put(livePlaylist(3)) // segment 3: not 4
	if v := mustMetric(t, c, leader, held); v != 1 {
		t.Fatalf("a write without segment 4 left %v requests held, want 1", v)
	}
	select {
	case a := <-done:
		t.Fatalf("answered before segment 4 was written: %+v", a)
	default:
	}
	put(livePlaylist(4))
	a := <-done
	if a.err != nil || a.status != http.StatusOK || !bytes.Equal(a.body, livePlaylist(4)) {
		t.Fatalf("held request: %d %v\n%s", a.status, a.err, a.body)
	}
	if v := mustMetric(t, c, leader, held); v != 0 {
		t.Fatalf("%v requests held after the write that reached them", v)
	}
}
