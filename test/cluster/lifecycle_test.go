package cluster_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/b3-storage/b3/internal/admin"
	"github.com/b3-storage/b3/internal/meta"
	"github.com/b3-storage/b3/internal/objstore"
	"github.com/b3-storage/b3/internal/testutil"
)

// TestClusterLifecycle: lifecycle expiry is decided by the leader alone
// and replicated as deletes. Objects past a rule's date are deleted on
// every node once the rule is set; objects that expire after the leader
// is killed are deleted by the next leader; nodes that never led never
// swept; and each node's vacuum gives the space back.
func TestClusterLifecycle(t *testing.T) {
	// A lifecycle day of one second: Days=8 expires an object 8 to 9 s
	// after its write, time enough to kill its leader first. Small
	// segments, so that vacuum has full ones to compact.
	c := testutil.StartCluster(t, testutil.ClusterOptions{Args: []string{
		"--lifecycle-day", "1s", "--lifecycle-interval", "300ms", "--vacuum-interval", "0", "--inline-max", "0",
		"--segment-size", fmt.Sprint(segmentSize)}})
	cl := clients(c)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const bucket = "rec"
	if err := createBucket(ctx, cl[0], bucket); err != nil {
		t.Fatal(err)
	}
	body := randomBytes(1, 64<<10)
	put := func(prefix string, n int) {
		t.Helper()
		for i := range n {
			if _, err := cl[i%3].PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket),
				Key: aws.String(fmt.Sprintf("%s/%02d", prefix, i)), Body: bytes.NewReader(body)}); err != nil {
				t.Fatalf("PutObject %s/%02d: %v", prefix, i, err)
			}
		}
	}
	const nOld, nLater, nKeep = 10, 8, 5
	put("old", nOld)
	put("keep", nKeep)
	first, err := c.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}

	// A rule whose date has passed: the leader's pass, started by the
	// change, deletes old/ through the log.
	past := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	_, err = cl[1].PutBucketLifecycleConfiguration(ctx, &s3.PutBucketLifecycleConfigurationInput{Bucket: aws.String(bucket),
		LifecycleConfiguration: &types.BucketLifecycleConfiguration{Rules: []types.LifecycleRule{
			{ID: aws.String("old"), Status: types.ExpirationStatusEnabled, Filter: &types.LifecycleRuleFilter{Prefix: aws.String("old/")},
				Expiration: &types.LifecycleExpiration{Date: &past}},
			{ID: aws.String("later"), Status: types.ExpirationStatusEnabled, Filter: &types.LifecycleRuleFilter{Prefix: aws.String("later/")},
				Expiration: &types.LifecycleExpiration{Days: aws.Int32(8)}},
		}}})
	if err != nil {
		t.Fatal(err)
	}
	waitObjects(ctx, t, c, nKeep)

	// later/ expires a few seconds from now; its leader dies first.
	put("later", nLater)
	c.Kill(first)
	if _, err := c.Leader(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.Start(first); err != nil {
		t.Fatal(err)
	}
	waitObjects(ctx, t, c, nKeep)
	if err := c.WaitConverged(ctx); err != nil {
		t.Fatal(err)
	}

	// Decided once: the deletes of later/ were decided by one node, the
	// leader after the kill, and none by a node that did not lead (the
	// deletes of old/ were counted by the killed process).
	var expired int64
	for i := range c.Nodes {
		expired += stats(ctx, t, c, i).Lifecycle.Expired
	}
	if expired != nLater {
		t.Fatalf("the nodes running now expired %d objects between them, want %d (each decided once, by the leader)", expired, nLater)
	}

	// Each node's vacuum reclaims the expired objects' bytes: its segments
	// shrink by at least what old/ held. The killed node first holds the
	// segments its unclean end left while it looks for staged bytes in
	// them, until it has caught up (well before the 10 minutes after which
	// it lets them go anyway).
	for i, n := range c.Nodes {
		ac := &admin.Client{Endpoint: "http://" + n.AdminAddr, Token: c.AdminToken}
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
			vs, err := ac.VacuumStatus(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if !vs.Held {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s (killed: %v) still holds the segments of its unclean end a minute after it caught up", n.ID, i == first)
			}
		}
		before := segmentBytes(stats(ctx, t, c, i))
		if err := ac.VacuumStart(ctx, 0.01); err != nil {
			t.Fatalf("vacuum on %s: %v", n.ID, err)
		}
		for {
			vs, err := ac.VacuumStatus(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if !vs.Running {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		after := segmentBytes(stats(ctx, t, c, i))
		if after > before-int64(nOld*len(body)) {
			t.Fatalf("%s: vacuum took its segments from %d to %d bytes, want at least the %d bytes of old/ back", n.ID, before, after, nOld*len(body))
		}
	}

	// On every node's own store: old/ and later/ deleted, keep/ intact.
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	for _, n := range c.Nodes {
		metaDir, dataDir := objstore.DefaultDirs(n.Data)
		st, err := objstore.Open(objstore.Options{MetaDir: metaDir, DataDir: dataDir})
		if err != nil {
			t.Fatal(err)
		}
		for _, key := range []string{"old/00", fmt.Sprintf("old/%02d", nOld-1), "later/00", fmt.Sprintf("later/%02d", nLater-1), "keep/00"} {
			_, err := st.Meta().GetObject(bucket, key)
			if gone := errors.Is(err, meta.ErrNotFound); gone != (key[:4] != "keep") {
				st.Close()
				t.Fatalf("%s: %s: %v", n.ID, key, err)
			}
		}
		st.Close()
	}
}

const segmentSize = 256 << 10

// waitObjects waits until every node's store holds exactly n object
// records (expired or not: a record is gone only once deleted).
func waitObjects(ctx context.Context, t *testing.T, c *testutil.Cluster, n int64) {
	t.Helper()
	for {
		done := true
		var counts []int64
		for i := range c.Nodes {
			ac := &admin.Client{Endpoint: "http://" + c.Nodes[i].AdminAddr, Token: c.AdminToken}
			st, err := ac.Stats(ctx, true)
			if err != nil || st.Objects == nil {
				done = false
				counts = append(counts, -1)
				continue
			}
			counts = append(counts, st.Objects.Objects)
			done = done && st.Objects.Objects == n
		}
		if done {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("object records per node: %v, want %d on each", counts, n)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func stats(ctx context.Context, t *testing.T, c *testutil.Cluster, i int) admin.Stats {
	t.Helper()
	ac := &admin.Client{Endpoint: "http://" + c.Nodes[i].AdminAddr, Token: c.AdminToken}
	st, err := ac.Stats(ctx, false)
	if err != nil {
		t.Fatalf("stats of %s: %v", c.Nodes[i].ID, err)
	}
	return st
}

func segmentBytes(st admin.Stats) int64 {
	var n int64
	for _, s := range st.Segments {
		n += s.Size
	}
	return n
}
