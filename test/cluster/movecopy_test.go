//go:build linux

package cluster_test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/b3-storage/b3/internal/admin"
)

// TestClusterGroupsMoveCopy (B3_MOVE_OBJECTS=N, a long variant): N
// objects of the load's sizes (200 B to 300 KiB) in two groups; g2 is
// drained, and g1's leader — the destination, and the map's leader — is
// killed once the first batch is fenced. The batch must finish under its
// new leader within 6 minutes and every object read back; the log shows
// each sync's records, copies and duration ("synced partitions"), the
// figures docs/CLUSTER.md quotes for the copy rate.
func TestClusterGroupsMoveCopy(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("B3_MOVE_OBJECTS"))
	if n <= 0 {
		t.Skip("a long variant: B3_MOVE_OBJECTS=4000 runs it")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	tg := startTwoGroups(t, nil)
	tg.waitBalanced(ctx, t)
	cl := retrying(root0(tg))
	const bucket = "moving"
	if err := createBucket(ctx, cl, bucket); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	want := map[string][]byte{}
	var wg sync.WaitGroup
	start := time.Now()
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(w), 9))
			for i := w; i < n; i += 8 {
				key, body := fmt.Sprintf("pre-%d", i), uniqueBody(r)
				if _, err := cl.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader(body)}); err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				want[key] = body
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	t.Logf("%d objects written in %v", n, time.Since(start).Round(time.Millisecond))
	if _, err := (&admin.Client{Endpoint: tg.admin, Token: tg.g1.AdminToken}).DrainGroup(ctx, "g2", true); err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	waitStatus(ctx, t, tg, "a fenced batch", func(s admin.ClusterStatus) bool { return len(s.Moves) > 0 && s.Moves[0].Fenced })
	leader, err := tg.g1.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("fenced after %v; kill -9 %s", time.Since(start).Round(time.Millisecond), tg.g1.Nodes[leader].ID)
	tg.g1.Kill(leader)
	time.Sleep(500 * time.Millisecond)
	if err := tg.g1.Start(leader); err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	bounded, stop := context.WithTimeout(ctx, 6*time.Minute)
	defer stop()
	waitStatus(bounded, t, tg, "balanced after the kill", func(s admin.ClusterStatus) bool { return s.Balanced })
	t.Logf("balanced %v after the kill", time.Since(start).Round(time.Millisecond))
	for _, nd := range tg.g1.Nodes {
		for _, line := range strings.Split(nd.Output(), "\n") {
			if strings.Contains(line, "synced partitions") || strings.Contains(line, "received partitions") {
				t.Log(line)
			}
		}
	}
	readsBackEverywhere(ctx, t, tg, bucket, want)
}
