package cluster_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/b3-storage/b3/internal/admin"
	"github.com/b3-storage/b3/internal/objstore"
	"github.com/b3-storage/b3/internal/testutil"
)

// TestClusterCrashLoopReclaims: a member killed (SIGKILL) in the middle
// of writes, round after round, reclaims its dead bytes once it has caught
// up after each restart, rather than at the next automatic pass (an hour
// here): a node that crashes more often than --vacuum-interval must not
// fill its disk with the bytes its crashes left and those it fetched
// again. Every acknowledged object reads back whole afterwards.
func TestClusterCrashLoopReclaims(t *testing.T) {
	const victim = 2
	c := testutil.StartCluster(t, testutil.ClusterOptions{
		Args: []string{"--segment-size", "1MiB", "--inline-max", "0", "--vacuum-interval", "1h", "--vacuum-threshold", "0.3"},
	})
	var cl []*s3.Client
	for _, raw := range clients(c) {
		cl = append(cl, retrying(raw))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const bucket = "loop"
	if err := createBucket(ctx, cl[0], bucket); err != nil {
		t.Fatal(err)
	}
	want := map[string][]byte{}
	for round := range 3 {
		for i := range 16 {
			if i == 8 {
				c.Kill(victim)
			}
			key := fmt.Sprintf("k%02d", i)
			body := randomBytes(uint64(round<<8|i), 256<<10)
			if _, err := cl[i%2].PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader(body)}); err != nil {
				t.Fatalf("round %d: PUT %s: %v", round, key, err)
			}
			want[key] = body
		}
		if err := c.Start(victim); err != nil {
			t.Fatal(err)
		}
		if err := c.WaitConverged(ctx); err != nil {
			t.Fatal(err)
		}
	}
	ac := &admin.Client{Endpoint: "http://" + c.Nodes[victim].AdminAddr, Token: c.AdminToken}
	var last objstore.VacuumStatus
	waitFor(ctx, t, "the restarted member to vacuum once caught up", func() bool {
		vs, err := ac.VacuumStatus(ctx)
		if err != nil {
			t.Fatal(err)
		}
		last = vs
		return !vs.Held && !vs.Running && vs.SegmentsRemoved > 0
	})
	t.Logf("%s after its last restart: %d segments removed, %d bytes reclaimed, %d of %d bytes dead",
		c.Nodes[victim].ID, last.SegmentsRemoved, last.BytesReclaimed, last.DeadBytes, last.TotalBytes)
	for key, body := range want {
		got, err := getObject(ctx, cl[0], bucket, key)
		if err != nil || !bytes.Equal(got, body) {
			t.Fatalf("GET %s: %d bytes, %v", key, len(got), err)
		}
	}
}
