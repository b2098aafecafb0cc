package server

import (
	"bytes"
	"context"
	"fmt"
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

	// Two clients writing back to back: busy all the time.
	loadCtx, stopLoad := context.WithCancel(ctx)
	var wg sync.WaitGroup
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
	time.Sleep(1500 * time.Millisecond)
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
