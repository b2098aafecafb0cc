package cluster_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/b3-storage/b3/internal/server"
	"github.com/b3-storage/b3/internal/testutil"
)

// BenchmarkClusterCatchUp: a follower is down while B3_CATCHUP_BYTES
// (default 1GiB) of 4 MiB objects are written through the leader; then it
// returns and catches up (background I/O, paced by client load) while one
// client keeps writing 64 KiB objects to the leader. It reports the
// catch-up rate and that client's latency with the node away and during
// the catch-up. One catch-up per run, whatever b.N:
//
//	go test -run '^$' -bench ClusterCatchUp -benchtime 1x ./test/cluster
func BenchmarkClusterCatchUp(b *testing.B) {
	total := int64(1 << 30)
	if v := os.Getenv("B3_CATCHUP_BYTES"); v != "" {
		n, err := server.ParseBytes(v)
		if err != nil || n <= 0 {
			b.Fatalf("B3_CATCHUP_BYTES=%q: want a size such as 256MiB", v)
		}
		total = n
	}
	// B3_CATCHUP_ARGS: more b3 node flags, e.g. "--background-pacing=false".
	c := testutil.StartCluster(b, testutil.ClusterOptions{Args: strings.Fields(os.Getenv("B3_CATCHUP_ARGS"))})
	cl := clients(c)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	const bucket = "catchup"
	if err := createBucket(ctx, cl[0], bucket); err != nil {
		b.Fatal(err)
	}
	leader, err := c.Leader(ctx)
	if err != nil {
		b.Fatal(err)
	}
	away := (leader + 1) % 3
	c.Kill(away)

	// The writes the returning node misses, 4 at a time.
	const objSize = 4 << 20
	body := randomBytes(1, objSize)
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1) - 1
				if i*objSize >= total {
					return
				}
				if err := putRetry(ctx, cl[leader], bucket, fmt.Sprintf("missed/%06d", i), body); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}

	// One foreground client, first with the node away, then while it
	// catches up.
	small := randomBytes(2, 64<<10)
	var seq atomic.Int64
	foreground := func(stop <-chan struct{}) (lat []time.Duration, elapsed time.Duration) {
		start := time.Now()
		for {
			select {
			case <-stop:
				return lat, time.Since(start)
			default:
			}
			t0 := time.Now()
			if err := putRetry(ctx, cl[leader], bucket, fmt.Sprintf("fg/%08d", seq.Add(1)), small); err != nil {
				b.Errorf("foreground PUT: %v", err)
				return lat, time.Since(start)
			}
			lat = append(lat, time.Since(t0))
		}
	}
	stop := make(chan struct{})
	time.AfterFunc(10*time.Second, func() { close(stop) })
	before, beforeTime := foreground(stop)

	// Caught up: the returning node applied everything the leader had
	// applied when it came back (the foreground writes go on after that).
	target := appliedIndex(b, c, leader, leader)

	b.ResetTimer()
	start := time.Now()
	if err := c.Start(away); err != nil {
		b.Fatal(err)
	}
	stop = make(chan struct{})
	var during []time.Duration
	var duringTime time.Duration
	done := make(chan struct{})
	go func() {
		defer close(done)
		during, duringTime = foreground(stop)
	}()
	for err == nil && appliedIndex(b, c, leader, away) < target {
		select {
		case <-ctx.Done():
			err = ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	caughtUp := time.Since(start)
	close(stop)
	<-done
	if err != nil {
		b.Fatal(err)
	}
	b.StopTimer()

	missed := next.Load() * objSize
	if missed > total {
		missed = total
	}
	b.ReportMetric(float64(missed)/caughtUp.Seconds()/1e6, "catchup_MB/s")
	b.ReportMetric(caughtUp.Seconds(), "catchup_s")
	for _, m := range []struct {
		name    string
		lat     []time.Duration
		elapsed time.Duration
	}{{"away", before, beforeTime}, {"catchup", during, duringTime}} {
		if len(m.lat) == 0 {
			b.Fatalf("no foreground PUT completed with the node %s", m.name)
		}
		slices.Sort(m.lat)
		pct := func(p float64) float64 { return float64(m.lat[int(p*float64(len(m.lat)-1))].Microseconds()) / 1e3 }
		b.ReportMetric(float64(len(m.lat))/m.elapsed.Seconds(), "fg_"+m.name+"_ops/s")
		b.ReportMetric(pct(0.5), "fg_"+m.name+"_p50_ms")
		b.ReportMetric(pct(0.99), "fg_"+m.name+"_p99_ms")
	}
}

// putRetry writes one object, retrying while the group answers 503
// SlowDown (a loaded machine can make the leader step down for a moment,
// with one follower away); the retries count in the latency.
func putRetry(ctx context.Context, cl *s3.Client, bucket, key string, body []byte) error {
	for {
		_, err := cl.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader(body)})
		if testutil.APICode(err) != "SlowDown" || ctx.Err() != nil {
			return err
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// appliedIndex is node i's applied log index as node from reports it (0
// while i does not answer).
func appliedIndex(b *testing.B, c *testutil.Cluster, from, i int) uint64 {
	st, err := c.Status(from)
	if err != nil {
		b.Fatalf("status of %s: %v", c.Nodes[from].ID, err)
	}
	for _, m := range st.Members {
		if m.ID == c.Nodes[i].ID {
			return m.AppliedIndex
		}
	}
	b.Fatalf("%s is not a member in %s's status", c.Nodes[i].ID, c.Nodes[from].ID)
	return 0
}
