package cluster_test

import (
	"bytes"
	"context"
	"fmt"
	"slices"
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

// groupWithBucket starts a group with args and creates bucket through
// node 0; it returns the group, its clients, a context bounding the test
// (3 minutes) and the leader.
func groupWithBucket(t *testing.T, args []string, bucket string) (*testutil.Cluster, []*s3.Client, context.Context, int) {
	t.Helper()
	c := testutil.StartCluster(t, testutil.ClusterOptions{Args: args})
	cl := clients(c)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	if err := createBucket(ctx, cl[0], bucket); err != nil {
		t.Fatal(err)
	}
	leader, err := c.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return c, cl, ctx, leader
}

// TestClusterSnapshots: the log is compacted into snapshots; a follower
// that was down while the leader's log was compacted past its position
// comes back, is restored by InstallSnapshot, fetches the bytes it lacks
// and converges; a node restarted (kill -9) does not replay the log below
// its snapshot.
func TestClusterSnapshots(t *testing.T) {
	const bucket = "snap"
	c, cl, ctx, leader := groupWithBucket(t, snapshotArgs, bucket)
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

// TestClusterRestoreFillsOutsideRaft: a follower restored from a snapshot
// whose records' bytes arrive slowly (background I/O limited to 64 KiB/s
// on every node) goes on with raft while it fetches them: it applies the
// entries after the snapshot with its fill still pending. When it then
// leads with records still hollow, a GET of each object through it
// fetches the bytes first (as a client's I/O) and returns them identical;
// afterwards every replica holds every object.
func TestClusterRestoreFillsOutsideRaft(t *testing.T) {
	start := time.Now()
	args := append(slices.Clone(snapshotArgs), "--background-read-limit", "64KiB", "--background-write-limit", "64KiB")
	const bucket = "fill"
	c, cl, ctx, leader := groupWithBucket(t, args, bucket)
	away := (leader + 1) % 3
	if err := c.WaitConverged(ctx); err != nil {
		t.Fatal(err)
	}
	awayAt := member(t, c, away).AppliedIndex
	c.Kill(away)
	// 3 MiB, about 50 s at 64 KiB/s, then small objects (riding in their
	// commands: nothing to fetch) until a snapshot covers the large ones:
	// what the follower applies after its restore fetches nothing.
	want := map[string][]byte{}
	put := func(key string, body []byte) {
		t.Helper()
		if _, err := cl[leader].PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader(body)}); err != nil {
			t.Fatalf("PutObject %s: %v", key, err)
		}
		want[key] = body
	}
	for i := range 24 {
		put(fmt.Sprintf("k%02d", i), randomBytes(uint64(i), 128<<10))
	}
	written := member(t, c, leader).AppliedIndex
	for i := 0; ; i++ {
		if m := member(t, c, leader); m.SnapshotIndex >= written && m.FirstLogIndex > awayAt+1 {
			break
		}
		put(fmt.Sprintf("pad%03d", i), randomBytes(uint64(1000+i), 100))
	}
	if err := c.Start(away); err != nil {
		t.Fatal(err)
	}
	waitFor(ctx, t, "the returning follower to restore the snapshot", func() bool { return member(t, c, away).SnapshotsRestored > 0 })
	t.Logf("%.1fs: %s restored the snapshot", time.Since(start).Seconds(), c.Nodes[away].ID)

	// Raft goes on while the bytes arrive: a write after the restore is
	// applied there.
	after := randomBytes(99, 30<<10)
	if _, err := cl[leader].PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String("after"), Body: bytes.NewReader(after)}); err != nil {
		t.Fatal(err)
	}
	want["after"] = after
	target := member(t, c, leader).AppliedIndex
	waitFor(ctx, t, "the restored follower to apply the write made after its restore", func() bool {
		return member(t, c, away).AppliedIndex >= target
	})
	if m := member(t, c, away); !m.FillPending {
		t.Fatalf("the restored follower's fill ended before the test could see it pending (limits not applied?): %+v", m)
	}

	// Make it lead: kill whoever leads (restarting it) until it does.
	for attempt := 0; ; attempt++ {
		l, err := c.Leader(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if l == away {
			break
		}
		if attempt == 12 {
			t.Fatalf("%s did not come to lead in %d elections", c.Nodes[away].ID, attempt)
		}
		c.Kill(l)
		if _, err := c.Leader(ctx); err != nil {
			t.Fatal(err)
		}
		if err := c.Start(l); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("%.1fs: %s leads", time.Since(start).Seconds(), c.Nodes[away].ID)
	if m := member(t, c, away); !m.FillPending {
		t.Fatalf("%s leads with its fill already done: the reads below would not fetch: %+v", m.ID, m)
	}
	for key, body := range want {
		got, err := getObject(ctx, cl[away], bucket, key)
		if err != nil || !bytes.Equal(got, body) {
			t.Fatalf("GET %s through %s, leading while filling: %d bytes, %v", key, c.Nodes[away].ID, len(got), err)
		}
	}
	t.Logf("%.1fs: every object read back through %s", time.Since(start).Seconds(), c.Nodes[away].ID)
	for i := range c.Nodes {
		m := member(t, c, i)
		t.Logf("%s: restored %d, fill pending %v, applied %d", m.ID, m.SnapshotsRestored, m.FillPending, m.AppliedIndex)
	}
	if err := c.WaitConverged(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("%.1fs: converged", time.Since(start).Seconds())
	if err := c.Stop(); err != nil {
		t.Fatalf("stop: %v", err)
	}
	checkReplicas(t, c, bucket, want)
}
