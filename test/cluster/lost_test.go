package cluster_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"

	"github.com/b3-storage/b3/internal/admin"
	"github.com/b3-storage/b3/internal/cluster"
	"github.com/b3-storage/b3/internal/meta"
	"github.com/b3-storage/b3/internal/objstore"
	"github.com/b3-storage/b3/internal/s3api"
	"github.com/b3-storage/b3/internal/testutil"
)

// TestClusterDeclareLost: in async mode the leader acknowledges two PUTs
// whose bytes no follower got yet (their disks are held to 4 KiB/s
// through b3 admin limits set), and dies with its disk (SIGKILL, data
// directory moved away). The group elects a leader that cannot apply the
// first committed PUT: every request gets 503 SlowDown saying why, and
// cluster status, its JSON and the metrics name the command, the object
// and the members asked. declare-lost refuses without a "yes", and while
// the dead leader, which may hold the bytes, is not named gone; then it
// declares the bytes lost through a follower (forwarded to the leader),
// both writes in turn; the group serves again: the lost objects answer
// 404 NoSuchKey through every node and are not listed, every other object
// reads back identical, writes succeed. The old leader, back with its
// disk (which holds the bytes), removes those versions too: every node's
// store ends the same.
func TestClusterDeclareLost(t *testing.T) {
	c := testutil.StartCluster(t, testutil.ClusterOptions{Replication: "async"})
	cl := clients(c)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const bucket = "lost"
	if err := createBucket(ctx, cl[0], bucket); err != nil {
		t.Fatal(err)
	}
	want := map[string][]byte{"small": randomBytes(1, 1000), "kept": randomBytes(2, 300<<10), "big": randomBytes(3, 1500<<10)}
	for key, body := range want {
		if _, err := cl[0].PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader(body)}); err != nil {
			t.Fatalf("PutObject %s: %v", key, err)
		}
	}
	if err := c.WaitConverged(ctx); err != nil {
		t.Fatal(err)
	}
	old, err := c.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	followers := []int{(old + 1) % 3, (old + 2) % 3}
	for _, f := range followers {
		if _, err := c.AdminCLI(ctx, f, "limits", "set", "write=4KiB"); err != nil {
			t.Fatal(err)
		}
	}
	lostKeys := []string{"gone", "gone2"}
	for i, key := range lostKeys {
		if _, err := cl[old].PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader(randomBytes(uint64(10+i), 2<<20))}); err != nil {
			t.Fatalf("PutObject %s: %v", key, err)
		}
	}
	c.Kill(old)
	away := c.Nodes[old].Data + ".away"
	if err := os.Rename(c.Nodes[old].Data, away); err != nil {
		t.Fatal(err)
	}

	// Stuck: the new leader waits for the bytes of "gone", and says so.
	leader, err := c.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	other := followers[0]
	if other == leader {
		other = followers[1]
	}
	var m *admin.ClusterMissing
	waitFor(ctx, t, "the new leader to report the bytes it waits for", func() bool {
		m = member(t, c, leader).MissingBytes
		return m != nil && m.WaitedSeconds >= 1
	})
	if m.Op != "put" || m.Bucket != bucket || m.Key != "gone" || m.Size != 2<<20 || m.Index == 0 {
		t.Fatalf("the leader waits for %+v, want the put of %s/gone (2 MiB)", m, bucket)
	}
	// The version is named as S3 clients see it (in a versioned bucket).
	engineID := objstore.VersionID(&meta.Object{Versioned: true, Version: m.Version})
	if want := s3api.ClientVersionID(cluster.VersionKey([]byte(testutil.TestClusterSecret)), engineID); m.VersionID != want {
		t.Fatalf("the missing bytes' version id is %q, want the clients' %q", m.VersionID, want)
	}
	var asked []string
	for _, a := range m.Asked {
		asked = append(asked, a.ID)
	}
	slices.Sort(asked)
	wantAsked := []string{c.Nodes[old].ID, c.Nodes[other].ID}
	slices.Sort(wantAsked)
	if !slices.Equal(asked, wantAsked) {
		t.Fatalf("the leader asked %v (%+v), want %v", asked, m.Asked, wantAsked)
	}
	if got := mustMetric(t, c, leader, "b3_cluster_apply_blocked_seconds"); got <= 0 {
		t.Fatalf("b3_cluster_apply_blocked_seconds = %v on the stuck leader, want > 0", got)
	}
	if got := mustMetric(t, c, leader, "b3_cluster_apply_blocked_index"); got != float64(m.Index) {
		t.Fatalf("b3_cluster_apply_blocked_index = %v, want %d", got, m.Index)
	}
	out, err := c.AdminCLI(ctx, other, "cluster", "status")
	if err != nil || !strings.Contains(string(out), "b3 admin cluster declare-lost") || !strings.Contains(string(out), bucket+"/gone") {
		t.Fatalf("cluster status while stuck: %v\n%s", err, out)
	}
	t.Logf("b3 admin cluster status while stuck:\n%s", out)
	// Reads and writes, through a follower and the leader: 503 SlowDown,
	// saying why.
	_, err = getObject(ctx, cl[other], bucket, "small")
	checkStuck(t, err)
	_, err = cl[leader].PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String("refused"), Body: strings.NewReader("x")})
	checkStuck(t, err)

	// No confirmation, nothing declared.
	if out, err := c.AdminCLIInput(ctx, other, "no\n", "cluster", "declare-lost"); err == nil || !strings.Contains(err.Error(), "not declared") {
		t.Fatalf("declare-lost answered no: %v\n%s", err, out)
	}
	if member(t, c, leader).MissingBytes == nil {
		t.Fatal("the leader waits for nothing after a declaration refused")
	}
	// The dead leader does not answer, and it may hold the bytes: the
	// leader refuses until the operator names it gone for good.
	gone := c.Nodes[old].ID
	if out, err := c.AdminCLIInput(ctx, other, "yes\n", "cluster", "declare-lost"); err == nil || !strings.Contains(err.Error(), "--gone "+gone) {
		t.Fatalf("declare-lost with %s unreachable and not named gone: %v\n%s", gone, err, out)
	}
	if member(t, c, leader).MissingBytes == nil {
		t.Fatal("the leader waits for nothing after a declaration refused")
	}
	// Both lost writes, one after the other: the command watches for the
	// next one once it declared the first, and asks again.
	out, err = c.AdminCLIInput(ctx, other, "yes\nyes\n", "cluster", "declare-lost", "--gone", gone)
	if err != nil || strings.Count(string(out), "declared lost at log index") != 2 || !strings.Contains(string(out), bucket+"/gone2 version") {
		t.Fatalf("declare-lost: %v\n%s", err, out)
	}
	t.Logf("b3 admin cluster declare-lost: %s", out)
	for _, f := range followers {
		if _, err := c.AdminCLI(ctx, f, "settings", "reset"); err != nil {
			t.Fatal(err)
		}
	}

	// The group serves again.
	want["after"] = randomBytes(5, 200<<10)
	if err := putRetry(ctx, cl[other], bucket, "after", want["after"]); err != nil {
		t.Fatalf("PutObject after the declaration: %v", err)
	}
	checkServed := func(nodes []int) {
		t.Helper()
		for _, i := range nodes {
			for _, key := range lostKeys {
				if _, err := getRetry(ctx, cl[i], bucket, key); testutil.APICode(err) != "NoSuchKey" {
					t.Fatalf("GET of the lost object %s through %s: %v, want 404 NoSuchKey", key, c.Nodes[i].ID, err)
				}
			}
			for key, body := range want {
				got, err := getRetry(ctx, cl[i], bucket, key)
				if err != nil || !bytes.Equal(got, body) {
					t.Fatalf("GET %s through %s: %v (%d bytes, want %d identical)", key, c.Nodes[i].ID, err, len(got), len(body))
				}
			}
			list, err := cl[i].ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(bucket)})
			if err != nil {
				t.Fatal(err)
			}
			var keys []string
			for _, o := range list.Contents {
				keys = append(keys, aws.ToString(o.Key))
			}
			if len(keys) != len(want) || slices.Contains(keys, "gone") || slices.Contains(keys, "gone2") {
				t.Fatalf("LIST through %s: %v, want the %d objects not lost", c.Nodes[i].ID, keys, len(want))
			}
		}
	}
	checkServed(followers)
	for _, i := range followers {
		// A follower learns that the declaration is committed with the
		// leader's next entries, and goes on.
		waitFor(ctx, t, c.Nodes[i].ID+" to go past the lost command", func() bool { return member(t, c, i).MissingBytes == nil })
	}
	if got := mustMetric(t, c, leader, "b3_cluster_apply_blocked_seconds"); got != 0 {
		t.Fatalf("b3_cluster_apply_blocked_seconds = %v once the group goes on, want 0", got)
	}
	if log := c.Nodes[other].Proc.Output.String(); !strings.Contains(log, "action=cluster.declare-lost") || !strings.Contains(log, "key=gone") {
		t.Fatalf("%s, which took the declaration, did not audit it:\n%s", c.Nodes[other].ID, log)
	}
	if out, err := c.AdminCLI(ctx, leader, "cluster", "declare-lost", "--yes"); err == nil || !strings.Contains(err.Error(), "waits for no bytes") {
		t.Fatalf("declare-lost with nothing missing: %v\n%s", err, out)
	}

	// The old leader's disk comes back, with the bytes: it discards them.
	if err := os.Rename(away, c.Nodes[old].Data); err != nil {
		t.Fatal(err)
	}
	if err := c.Start(old); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitConverged(ctx); err != nil {
		t.Fatal(err)
	}
	checkServed([]int{old})
	if log := c.Nodes[old].Proc.Output.String(); !strings.Contains(log, "object bytes declared lost") || !strings.Contains(log, "version removed") {
		t.Fatalf("the old leader did not log removing the lost version:\n%s", log)
	}
	if err := c.Stop(); err != nil {
		t.Fatalf("stop: %v", err)
	}
	checkReplicas(t, c, bucket, want)
}

// checkStuck: err is a 503 SlowDown that names the missing bytes.
func checkStuck(t *testing.T, err error) {
	t.Helper()
	var ae smithy.APIError
	if !errors.As(err, &ae) || ae.ErrorCode() != "SlowDown" || !strings.Contains(ae.ErrorMessage(), "waits for the bytes of lost/gone") {
		t.Fatalf("request to the stuck group: %v, want 503 SlowDown naming lost/gone", err)
	}
}
