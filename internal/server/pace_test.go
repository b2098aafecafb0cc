package server

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/b3-storage/b3/internal/blob"
	"github.com/b3-storage/b3/internal/iolimit"
	"github.com/b3-storage/b3/internal/objstore"
)

// TestVacuumPacedByClients: with the default pacing on a real server, S3
// clients hold a vacuum pass to the minimum background rate (by the
// pacer's own work counter: work <= min*elapsed + one burst), the admin
// status and /metrics say so and why, and once the clients stop the pace
// returns to full speed and the pass finishes.
//
// Besides two writers, one upload stays open (its body not sent) for the
// whole load: the clients are then busy in every pacer interval however
// the machine schedules the writers, so the rate cannot rise between two
// of their requests and the bound holds exactly.
func TestVacuumPacedByClients(t *testing.T) {
	const minRate = 1 << 20
	n := startNode(t, Config{Sync: blob.SyncNone, SegmentSize: 256 << 10, VacuumThreshold: 0.3,
		Pace: iolimit.PacerConfig{MinBytesPerSec: minRate}})
	ctx := context.Background()
	c := n.client(t, "", "")
	bucket := aws.String("paced")
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: bucket}); err != nil {
		t.Fatal(err)
	}
	obj := bytes.Repeat([]byte("p"), 64<<10)
	for i := range 96 {
		if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: bucket, Key: aws.String(fmt.Sprint("old/", i)), Body: bytes.NewReader(obj)}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 96 {
		if i%3 != 0 {
			if _, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: bucket, Key: aws.String(fmt.Sprint("old/", i))}); err != nil {
				t.Fatal(err)
			}
		}
	}

	// Two clients writing back to back, and an upload held open.
	loadCtx, stopLoad := context.WithCancel(ctx)
	var wg sync.WaitGroup
	held, err := s3.NewPresignClient(c).PresignPutObject(ctx, &s3.PutObjectInput{Bucket: bucket, Key: aws.String("held")})
	if err != nil {
		t.Fatal(err)
	}
	wg.Go(func() {
		// Nothing is written to feed: the body ends, in error, with the load.
		body, feed := io.Pipe()
		stop := context.AfterFunc(loadCtx, func() { feed.CloseWithError(loadCtx.Err()) })
		defer stop()
		req, err := http.NewRequestWithContext(loadCtx, held.Method, held.URL, body)
		if err != nil {
			t.Error(err)
			return
		}
		req.Header = held.SignedHeader.Clone()
		req.ContentLength = 1 << 20
		resp, err := http.DefaultClient.Do(req)
		switch {
		case err == nil:
			resp.Body.Close()
			t.Errorf("the held upload ended before the load stopped: %s", resp.Status)
		case loadCtx.Err() == nil:
			t.Errorf("the held upload ended before the load stopped: %v", err)
		}
	})
	for w := range 2 {
		wg.Go(func() {
			for i := 0; loadCtx.Err() == nil; i++ {
				_, err := c.PutObject(loadCtx, &s3.PutObjectInput{Bucket: bucket, Key: aws.String(fmt.Sprint("new/", w, "/", i%20)),
					Body: bytes.NewReader(obj[:16<<10])})
				if err != nil && loadCtx.Err() == nil {
					t.Errorf("put under vacuum: %v", err)
					return
				}
			}
		})
	}
	defer func() { stopLoad(); wg.Wait() }()
	busy := waitPace(t, n, "clients busy", func(p iolimit.PaceStatus) bool {
		return p.Reason == iolimit.ReasonClientsBusy && p.BytesPerSec == minRate
	})
	families := scrape(t, n.adminEndpoint)
	if got := sample(families, "b3_background_pace_reason", map[string]string{"reason": "clients-busy"}); got != 1 {
		t.Errorf("b3_background_pace_reason{reason=clients-busy} = %v, want 1", got)
	}
	if got := sample(families, "b3_background_pace_bytes_per_second", nil); got != minRate {
		t.Errorf("b3_background_pace_bytes_per_second = %v, want %d", got, minRate)
	}

	start := time.Now()
	if err := n.admin.VacuumStart(ctx, 0); err != nil {
		t.Fatal(err)
	}
	// Once the pass has been granted work, let it run under the load for
	// a while.
	waitWork(t, n, busy.Work)
	time.Sleep(time.Until(start.Add(1500 * time.Millisecond)))
	vs, err := n.admin.VacuumStatus(ctx)
	if err != nil {
		t.Fatal(err)
	}
	elapsed := time.Since(start)
	work := vs.Pace.Work - busy.Work
	burst := int64(minRate * iolimit.DefaultPaceInterval.Seconds())
	bound := int64(minRate*elapsed.Seconds()) + burst
	t.Logf("under load: %d bytes of background work in %v (bound %d); pace %v", work, elapsed, bound, vs.Pace)
	if work == 0 || work > bound {
		t.Errorf("background work %d in %v under client load, want in (0, %d]", work, elapsed, bound)
	}
	if !vs.Running {
		t.Errorf("the pass (about 4 MiB of work at %d B/s) ended within %v under client load", minRate, elapsed)
	}

	stopLoad()
	wg.Wait()
	waitPace(t, n, "full speed after the clients left", func(p iolimit.PaceStatus) bool {
		return p.Reason == iolimit.ReasonIdle && p.BytesPerSec == 0
	})
	if vs := waitVacuum(t, n); vs.SegmentsRemoved == 0 || vs.LastError != "" {
		t.Fatalf("vacuum after the load: %+v", vs)
	}
}

// waitPace polls the admin vacuum status until the pace satisfies cond.
func waitPace(t *testing.T, n *node, what string, cond func(iolimit.PaceStatus) bool) iolimit.PaceStatus {
	t.Helper()
	var vs objstore.VacuumStatus
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		var err error
		if vs, err = n.admin.VacuumStatus(context.Background()); err != nil {
			t.Fatal(err)
		}
		if cond(vs.Pace) {
			return vs.Pace
		}
	}
	t.Fatalf("%s: pace never got there: %+v", what, vs.Pace)
	return iolimit.PaceStatus{}
}

// waitWork polls the admin vacuum status until the pacer has granted more
// background work than before; a pass that ends without any fails.
func waitWork(t *testing.T, n *node, before int64) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		vs, err := n.admin.VacuumStatus(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if vs.Pace.Work > before {
			return
		}
		if !vs.Running && !vs.LastPass.IsZero() {
			t.Fatalf("the vacuum pass ended without background work: %+v", vs)
		}
	}
	t.Fatal("the vacuum pass got no background work in 30s")
}
