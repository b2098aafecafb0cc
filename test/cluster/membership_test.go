package cluster_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
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

// TestClusterMembership grows a group from 3 to 4 nodes with `b3 admin
// cluster add` and shrinks it with `b3 admin cluster remove`, both asked
// of nodes that do not lead: the new node receives the leader's snapshot
// and fetches the bytes, becomes a voter by itself, and serves every
// object, and restarts into the group; the removed node stops serving and
// says why, refuses to start again, and the others go on taking writes.
func TestClusterMembership(t *testing.T) {
	c := testutil.StartCluster(t, testutil.ClusterOptions{Args: snapshotArgs})
	cl := clients(c)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const bucket = "grow"
	if err := createBucket(ctx, cl[0], bucket); err != nil {
		t.Fatal(err)
	}
	want := map[string][]byte{}
	put := func(via *s3.Client, key string, body []byte) {
		t.Helper()
		if _, err := via.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader(body)}); err != nil {
			t.Fatalf("PutObject %s: %v", key, err)
		}
		want[key] = body
	}
	for i := range 30 {
		put(cl[i%3], fmt.Sprintf("k%02d", i), randomBytes(uint64(i), []int{200, 30 << 10, 300 << 10}[i%3]))
	}
	leader, err := c.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	other := (leader + 1) % 3

	// A node started with --join waits, and says so to clients.
	n4, err := c.AddNode()
	if err != nil {
		t.Fatal(err)
	}
	ak, sk := c.Keys()
	cl = append(cl, testutil.S3Client(c.Nodes[n4].Endpoint(), ak, sk))
	if m := member(t, c, n4); !m.Waiting {
		t.Fatalf("a node started with --join does not report waiting: %+v", m)
	}
	if err := s3Refusal(ctx, c.Nodes[n4].Endpoint(), "waits to be added"); err != nil {
		t.Fatal(err)
	}
	// Wrong id for the address: refused, nothing changes.
	if _, err := c.AdminCLI(ctx, other, "cluster", "add", "n9="+c.Nodes[n4].ClusterAddr); err == nil || !strings.Contains(err.Error(), "is n4, not n9") {
		t.Fatalf("add with the wrong id: %v", err)
	}

	// Add it through a node that does not lead.
	out, err := c.AdminCLI(ctx, other, "cluster", "add", "n4="+c.Nodes[n4].ClusterAddr, "--json")
	if err != nil {
		t.Fatal(err)
	}
	var ch admin.ClusterChange
	if err := json.Unmarshal(out, &ch); err != nil || ch.Op != "add" || ch.ID != "n4" || ch.Suffrage != "nonvoter" || ch.Leader != c.Nodes[leader].ID {
		t.Fatalf("cluster add --json: %s (%v)", out, err)
	}
	added := time.Now()
	waitFor(ctx, t, "n4 to become a voter and catch up", func() bool {
		st, err := c.Status(leader)
		if err != nil {
			return false
		}
		for _, m := range st.Members {
			if m.ID == "n4" {
				return m.Suffrage == "voter" && m.Healthy && m.LagEntries == 0
			}
		}
		return false
	})
	t.Logf("n4 became a voter and caught up %.1fs after it was added", time.Since(added).Seconds())
	if m := member(t, c, n4); m.SnapshotsRestored == 0 {
		t.Errorf("n4 did not receive the leader's snapshot: %+v", m)
	}
	for key, body := range want {
		got, err := getObject(ctx, cl[n4], bucket, key)
		if err != nil || !bytes.Equal(got, body) {
			t.Fatalf("GET %s through n4: %d bytes, %v", key, len(got), err)
		}
	}
	put(cl[n4], "via-n4", randomBytes(400, 50<<10))

	// Remove a follower through the new node.
	gone := (leader + 2) % 3
	out, err = c.AdminCLI(ctx, n4, "cluster", "remove", c.Nodes[gone].ID, "--json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(out, &ch); err != nil || ch.Op != "remove" || ch.ID != c.Nodes[gone].ID || ch.Suffrage != "removed" || !ch.Notified {
		t.Fatalf("cluster remove --json: %s (%v)", out, err)
	}
	if err := s3Refusal(ctx, c.Nodes[gone].Endpoint(), "was removed from its cluster"); err != nil {
		t.Fatal(err)
	}
	for i := range 10 { // the rest goes on
		put(cl[[]int{leader, other, n4}[i%3]], fmt.Sprintf("after-%d", i), randomBytes(uint64(500+i), 40<<10))
	}
	// The added node restarts (still --join) into the group it joined.
	waitFor(ctx, t, "n4 to record the cluster it joined", func() bool {
		id := member(t, c, n4).ClusterID
		return id != "" && id == member(t, c, leader).ClusterID
	})
	c.Kill(n4)
	if err := c.Start(n4); err != nil {
		t.Fatal(err)
	}
	// A node just restarted may answer 503 SlowDown until it reaches the
	// leader (a loaded machine slows that); clients retry it.
	restarted := randomBytes(600, 10<<10)
	if err := putRetry(ctx, cl[n4], bucket, "after-restart", restarted); err != nil {
		t.Fatalf("PutObject after-restart: %v", err)
	}
	want["after-restart"] = restarted
	if err := c.WaitConverged(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.Stop(); err != nil {
		t.Fatalf("stop: %v", err)
	}
	if err := c.Start(gone); err == nil || !strings.Contains(err.Error(), "was removed from its cluster") {
		t.Fatalf("the removed node started again: %v", err)
	}
	// Every remaining node's own store holds every object.
	for i, snap := range replicaSnapshots(t, c, bucket) {
		if i == gone {
			continue
		}
		if len(snap) != len(want) {
			t.Fatalf("%s holds %d objects, want %d", c.Nodes[i].ID, len(snap), len(want))
		}
		for key, body := range want {
			if snap[key] != sha256.Sum256(body) {
				t.Fatalf("%s: %s missing or different", c.Nodes[i].ID, key)
			}
		}
	}
}

// s3Refusal checks that an S3 request to endpoint is answered 503 with a
// message saying why.
func s3Refusal(ctx context.Context, endpoint, why string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, endpoint+"/", nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), why) {
		return fmt.Errorf("GET / on %s: %s %s, want 503 saying %q", endpoint, resp.Status, body, why)
	}
	return nil
}

// TestClusterRemovedWhileDown: a node removed while it was down learns it
// when it returns, before it runs raft: it asks the members it knows,
// the leader tells it, and it records its removal and refuses to start
// (and to start again). It never campaigns: the members' term does not
// change and none of them is asked for a vote; they go on taking writes.
func TestClusterRemovedWhileDown(t *testing.T) {
	c := testutil.StartCluster(t, testutil.ClusterOptions{})
	cl := clients(c)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	leader, err := c.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	gone := (leader + 1) % 3
	stay := (leader + 2) % 3
	c.Kill(gone)
	out, err := c.AdminCLI(ctx, leader, "cluster", "remove", c.Nodes[gone].ID, "--json")
	if err != nil {
		t.Fatal(err)
	}
	var ch admin.ClusterChange
	if err := json.Unmarshal(out, &ch); err != nil || ch.Suffrage != "removed" || ch.Notified {
		t.Fatalf("cluster remove of a node that is down --json: %s (%v)", out, err)
	}
	if err := createBucket(ctx, cl[leader], "before"); err != nil {
		t.Fatal(err)
	}
	terms := func() [2]uint64 {
		return [2]uint64{member(t, c, leader).Term, member(t, c, stay).Term}
	}
	before := terms()

	if err := c.Start(gone); err == nil || !strings.Contains(err.Error(), "was removed from its cluster") {
		t.Fatalf("the removed node started: %v", err)
	}
	// It has exited: nothing of it can campaign later.
	if after := terms(); after != before {
		t.Fatalf("the members' terms went from %v to %v while the removed node returned", before, after)
	}
	for _, i := range []int{leader, stay} {
		if out := c.Nodes[i].Proc.Output.String(); strings.Contains(out, "rejecting vote request since node is not in configuration") {
			t.Fatalf("the removed node asked %s for votes:\n%s", c.Nodes[i].ID, out)
		}
	}
	if err := createBucket(ctx, cl[leader], "after"); err != nil {
		t.Fatalf("the remaining members do not take writes: %v", err)
	}
	if err := c.Start(gone); err == nil || !strings.Contains(err.Error(), "was removed from its cluster") {
		t.Fatalf("the removed node started again: %v", err)
	}
}
