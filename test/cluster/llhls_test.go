package cluster_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"syscall"
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

// llhlsCluster starts a 3-node cluster with a bucket "live" (LL-HLS
// off), and names its leader, a follower players use (reader) and one the
// encoder uses (writer).
func llhlsCluster(t *testing.T) (c *testutil.Cluster, ctx context.Context, leader, reader, writer int, cls []*s3.Client) {
	c = testutil.StartCluster(t, testutil.ClusterOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	leader, err := c.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	reader, writer = (leader+1)%len(c.Nodes), (leader+2)%len(c.Nodes)
	cls = clients(c)
	if err := createBucket(ctx, cls[writer], "live"); err != nil {
		t.Fatal(err)
	}
	return c, ctx, leader, reader, writer, cls
}

// TestClusterLLHLS: the LL-HLS origin setting, turned on through a
// follower's admin API, reaches every member; a blocking playlist request
// (a presigned URL with _HLS_msn appended) sent to a follower is held on
// the leader, not woken by a write that does not reach it, and answered
// by the encoder's write through the other follower that does. Held, it
// counts as client load on neither node. A GET, through a follower, of
// the part the next playlist's preload hint names is held on the leader
// until the encoder's chunked PUT of it begins through the other
// follower, gets its first bytes while that PUT is in flight, and ends
// with the whole part.
func TestClusterLLHLS(t *testing.T) {
	c, ctx, leader, reader, writer, cls := llhlsCluster(t)
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

	preloadHint(ctx, t, c, cls, leader, reader, writer, put)
}

// preloadHint is TestClusterLLHLS's preload-hint part.
func preloadHint(ctx context.Context, t *testing.T, c *testutil.Cluster, cls []*s3.Client, leader, reader, writer int, put func([]byte)) {
	put(append(livePlaylist(4), "#EXT-X-PRELOAD-HINT:TYPE=PART,URI=\"p5.0.m4s\"\n"...))
	get, err := s3.NewPresignClient(cls[reader]).PresignGetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("live"), Key: aws.String("cam/p5.0.m4s")})
	if err != nil {
		t.Fatal(err)
	}
	putURL, err := s3.NewPresignClient(cls[writer]).PresignPutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("live"), Key: aws.String("cam/p5.0.m4s")})
	if err != nil {
		t.Fatal(err)
	}
	responses := make(chan *http.Response, 1)
	go func() {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, get.URL, nil)
		resp, err := (&http.Client{Transport: &http.Transport{DialContext: c.Nodes[reader].Dial}}).Do(req)
		if err != nil {
			t.Errorf("GET the hinted part: %v", err)
			close(responses)
			return
		}
		responses <- resp
	}()
	const heldParts = "b3_llhls_held_part_requests"
	testutil.WaitFor(t, "the part GET held on the leader", func() bool { return mustMetric(t, c, leader, heldParts) == 1 })
	pr, pw := io.Pipe()
	putDone := make(chan error, 1)
	go func() {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPut, putURL.URL, pr)
		req.ContentLength = -1
		resp, err := (&http.Client{Transport: &http.Transport{DialContext: c.Nodes[writer].Dial}}).Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				err = fmt.Errorf("status %d", resp.StatusCode)
			}
		}
		putDone <- err
	}()
	first, rest := bytes.Repeat([]byte("moof"), 4096), bytes.Repeat([]byte("mdat"), 30000)
	if _, err := pw.Write(first); err != nil {
		t.Fatal(err)
	}
	resp, ok := <-responses
	if !ok {
		t.FailNow()
	}
	defer resp.Body.Close()
	got := make([]byte, len(first))
	if _, err := io.ReadFull(resp.Body, got); err != nil || resp.StatusCode != http.StatusOK || !bytes.Equal(got, first) {
		t.Fatalf("the part's first bytes through %s: %d %v", c.Nodes[reader].ID, resp.StatusCode, err)
	}
	select {
	case err := <-putDone:
		t.Fatalf("the PUT ended before its body: %v", err)
	default:
	}
	if _, err := pw.Write(rest); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	if err := <-putDone; err != nil {
		t.Fatalf("PUT the part through %s: %v", c.Nodes[writer].ID, err)
	}
	tail, err := io.ReadAll(resp.Body)
	if err != nil || !bytes.Equal(tail, rest) {
		t.Fatalf("the rest of the part: %d bytes, %v", len(tail), err)
	}
	if v := mustMetric(t, c, leader, "b3_llhls_part_requests_streamed_total"); v != 1 {
		t.Fatalf("%v part GETs streamed, want 1", v)
	}
}

// liveHinted turns LL-HLS on for "live" (through node adminNode's admin
// API) and writes cam/index.m3u8, segments 0..4 and a preload hint of
// p5.0.m4s, through node via; it returns the playlist's writer.
func liveHinted(ctx context.Context, t *testing.T, c *testutil.Cluster, cls []*s3.Client, adminNode, via int) func(i int) error {
	ac := &admin.Client{Endpoint: "http://" + c.Nodes[adminNode].AdminAddr, Token: c.AdminToken}
	if _, err := ac.SetBucketHLS(ctx, "live", true); err != nil {
		t.Fatal(err)
	}
	hinted := append(livePlaylist(4), "#EXT-X-PRELOAD-HINT:TYPE=PART,URI=\"p5.0.m4s\"\n"...)
	put := func(i int) error {
		_, err := cls[i].PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("live"), Key: aws.String("cam/index.m3u8"), Body: bytes.NewReader(hinted)})
		return err
	}
	testutil.WaitFor(t, "the playlist written with LL-HLS on", func() bool {
		list, err := ac.Buckets(ctx)
		return err == nil && len(list) == 1 && list[0].LLHLS && put(via) == nil
	})
	return put
}

// heldAnswer is a held request's answer, and how long after the start
// it came.
type heldAnswer struct {
	status int
	body   string
	err    error
	after  time.Duration
}

// presignedGet GETs key of "live" through node i, with query appended to
// its presigned URL (as a player appends _HLS_ parameters).
func presignedGet(ctx context.Context, c *testutil.Cluster, cls []*s3.Client, i int, key, query string) (int, string, error) {
	u, err := s3.NewPresignClient(cls[i]).PresignGetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("live"), Key: aws.String(key)})
	if err != nil {
		return 0, "", err
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, u.URL+query, nil)
	resp, err := (&http.Client{Transport: &http.Transport{DialContext: c.Nodes[i].Dial}}).Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), err
}

// holdBoth sends through node via a GET of the hinted part and a
// blocking request for segment 5, and waits until both are held on the
// leader; each answer comes on the channel.
func holdBoth(ctx context.Context, t *testing.T, c *testutil.Cluster, cls []*s3.Client, via, leader int) <-chan heldAnswer {
	start := time.Now()
	answers := make(chan heldAnswer, 2)
	for _, r := range []struct{ key, query string }{{"cam/p5.0.m4s", ""}, {"cam/index.m3u8", "&_HLS_msn=5"}} {
		go func() {
			status, body, err := presignedGet(ctx, c, cls, via, r.key, r.query)
			answers <- heldAnswer{status, body, err, time.Since(start)}
		}()
	}
	testutil.WaitFor(t, "both requests held on the leader", func() bool {
		return mustMetric(t, c, leader, "b3_llhls_held_part_requests") == 1 && mustMetric(t, c, leader, "b3_llhls_held_requests") == 1
	})
	return answers
}

// wantSlowDown: both held requests are answered 503 SlowDown, well
// before their 30 s hold limit.
func wantSlowDown(t *testing.T, answers <-chan heldAnswer, what string) {
	t.Helper()
	for range 2 {
		a := <-answers
		if a.err != nil || a.status != http.StatusServiceUnavailable || !strings.Contains(a.body, "SlowDown") || a.after > 25*time.Second {
			t.Fatalf("%s: %d %v after %v\n%s", what, a.status, a.err, a.after, a.body)
		}
	}
}

// TestClusterLLHLSLeaderChange: a GET of a preload-hinted part and a
// blocking playlist request, both held on the leader through a follower,
// are answered 503 SlowDown (retryable) as soon as the leader dies, long
// before their 30 s hold limit, never left hanging; after the election the
// player's retry is held on the new leader, once the encoder's next
// playlist write through it names the part again, and answered by the
// part's PUT.
func TestClusterLLHLSLeaderChange(t *testing.T) {
	c, ctx, leader, reader, writer, cls := llhlsCluster(t)
	putPlaylist := liveHinted(ctx, t, c, cls, writer, writer)
	answers := holdBoth(ctx, t, c, cls, reader, leader)
	c.Kill(leader)
	wantSlowDown(t, answers, "a held request when its leader died")
	// The new leader: the encoder's next playlist write names the part
	// again there, the player's retry is held, the part's PUT answers it.
	testutil.WaitFor(t, "the encoder's playlist write through the new leader", func() bool { return putPlaylist(writer) == nil })
	retry := make(chan heldAnswer, 1)
	go func() {
		status, body, err := presignedGet(ctx, c, cls, reader, "cam/p5.0.m4s", "")
		retry <- heldAnswer{status, body, err, 0}
	}()
	newLeader, err := c.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, "the retry held on the new leader", func() bool { return mustMetric(t, c, newLeader, "b3_llhls_held_part_requests") == 1 })
	if _, err := cls[writer].PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("live"), Key: aws.String("cam/p5.0.m4s"), Body: strings.NewReader("part 5.0")}); err != nil {
		t.Fatal(err)
	}
	if a := <-retry; a.err != nil || a.status != http.StatusOK || a.body != "part 5.0" {
		t.Fatalf("the retry on the new leader: %d %v %q", a.status, a.err, a.body)
	}
}

// TestClusterLLHLSDeposedLeader: requests held on the leader that received
// them itself (a held part GET and a blocking playlist request) are
// answered 503 SlowDown as soon as it learns it no longer leads — it is
// frozen (SIGSTOP) while the others elect a new leader, then resumed —
// not left until their 30 s hold limit.
func TestClusterLLHLSDeposedLeader(t *testing.T) {
	c, ctx, leader, _, writer, cls := llhlsCluster(t)
	liveHinted(ctx, t, c, cls, writer, leader)
	answers := holdBoth(ctx, t, c, cls, leader, leader)
	proc := c.Nodes[leader].Proc.Cmd.Process
	if err := proc.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, "a new leader among the others", func() bool {
		st, err := c.Status(writer)
		return err == nil && st.Leader != "" && st.Leader != c.Nodes[leader].ID
	})
	if err := proc.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	wantSlowDown(t, answers, "a request held on the deposed leader")
}
