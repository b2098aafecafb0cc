package cluster_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/b3-storage/b3/internal/admin"
	"github.com/b3-storage/b3/internal/testutil"
)

// snapshotArgs make nodes snapshot often and keep little log behind.
var snapshotArgs = []string{"--snapshot-threshold", "16", "--snapshot-interval", "100ms", "--trailing-logs", "4"}

// member returns what node i reports of itself.
func member(t *testing.T, c *testutil.Cluster, i int) admin.ClusterMember {
	t.Helper()
	st, err := c.Status(i)
	if err != nil {
		t.Fatalf("status of %s: %v", c.Nodes[i].ID, err)
	}
	for _, m := range st.Members {
		if m.ID == c.Nodes[i].ID {
			return m
		}
	}
	t.Fatalf("%s is not in its own status: %+v", c.Nodes[i].ID, st)
	return admin.ClusterMember{}
}

// waitFor polls cond until it holds or ctx ends.
func waitFor(ctx context.Context, t *testing.T, what string, cond func() bool) {
	t.Helper()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("timed out waiting for %s", what)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// TestClusterSnapshots: the log is compacted into snapshots; a follower
// that was down while the leader's log was compacted past its position
// comes back, is restored by InstallSnapshot, fetches the bytes it lacks
// and converges; a node restarted (kill -9) does not replay the log below
// its snapshot.
func TestClusterSnapshots(t *testing.T) {
	c := testutil.StartCluster(t, testutil.ClusterOptions{Args: snapshotArgs})
	cl := clients(c)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const bucket = "snap"
	if _, err := cl[0].CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatal(err)
	}
	leader, err := c.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	away, stay := (leader+1)%3, (leader+2)%3
	if err := c.WaitConverged(ctx); err != nil {
		t.Fatal(err)
	}
	awayAt := member(t, c, away).AppliedIndex
	c.Kill(away)

	want := writeMissed(ctx, t, cl[leader], bucket, 40, func(i int) int { return []int{100, 3000, 20 << 10, 200 << 10}[i%4] })
	// The leader compacted its log past what the stopped follower holds.
	waitFor(ctx, t, "the leader's log compacted past the stopped follower", func() bool {
		m := member(t, c, leader)
		return m.SnapshotIndex > awayAt && m.FirstLogIndex > awayAt+1
	})

	if err := c.Start(away); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitConverged(ctx); err != nil {
		t.Fatal(err)
	}
	if m := member(t, c, away); m.SnapshotsRestored == 0 || m.SnapshotIndex <= awayAt {
		t.Fatalf("the returning follower was not restored from a snapshot: %+v", m)
	}
	// Every object reads back identical through it.
	for key, body := range want {
		got, err := getObject(ctx, cl[away], bucket, key)
		if err != nil || !bytes.Equal(got, body) {
			t.Fatalf("GET %s through %s: %d bytes, %v", key, c.Nodes[away].ID, len(got), err)
		}
	}

	// A restart after a crash starts from the snapshot: the entries below
	// it are not handed to the state machine again.
	after := randomBytes(77, 10<<10)
	if _, err := cl[leader].PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String("after"), Body: bytes.NewReader(after)}); err != nil {
		t.Fatal(err)
	}
	want["after"] = after
	snapAt := member(t, c, stay).SnapshotIndex
	if snapAt == 0 {
		t.Fatal("the follower that stayed took no snapshot")
	}
	c.Kill(stay)
	if err := c.Start(stay); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitConverged(ctx); err != nil {
		t.Fatal(err)
	}
	m := member(t, c, stay)
	t.Logf("%s restarted: snapshot at %d, %d entries handled to reach %d", m.ID, m.SnapshotIndex, m.EntriesSinceStart, m.AppliedIndex)
	if m.SnapshotIndex < snapAt || m.EntriesSinceStart > m.AppliedIndex-snapAt {
		t.Fatalf("after a restart %s handled %d entries to reach %d, with a snapshot at %d: the log below it was replayed", m.ID, m.EntriesSinceStart, m.AppliedIndex, snapAt)
	}

	if err := c.Stop(); err != nil {
		t.Fatalf("stop: %v", err)
	}
	checkReplicas(t, c, bucket, want)
	for _, n := range c.Nodes {
		testutil.CheckPrivate(t, n.Data) // snapshots hold inline objects and users
	}
}
