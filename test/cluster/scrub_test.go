package cluster_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/b3-storage/b3/internal/admin"
	"github.com/b3-storage/b3/internal/scrub"
	"github.com/b3-storage/b3/internal/testutil"
)

// TestClusterScrubRepairs: bits flipped in the segments of a running
// group — in a follower's copy of one object, in the leader's copy of
// another, in both copies of a third, and in the leader's copy of a
// fourth that a client reads before any scrub — and, on the third node, a
// segment's tail cut off and a segment file deleted. The read returns the
// object's bytes (the leader fetched them again from a replica as it met
// the damage); each node's scrub finds its damage and repairs it from a
// replica (repaired, nothing left damaged); a second pass finds nothing
// to repair;
// every object reads back identical through every node throughout.
func TestClusterScrubRepairs(t *testing.T) {
	c := testutil.StartCluster(t, testutil.ClusterOptions{
		Args: []string{"--segment-size", "1MiB", "--inline-max", "0", "--cache-size", "0", "--vacuum-interval", "0", "--scrub-interval", "0"},
	})
	cl := clients(c)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const bucket = "scrub"
	if err := createBucket(ctx, cl[0], bucket); err != nil {
		t.Fatal(err)
	}
	want := map[string][]byte{}
	for i := range 12 {
		key := fmt.Sprintf("o%02d", i)
		want[key] = randomBytes(uint64(i), 300<<10)
		if _, err := retrying(cl[0]).PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader(want[key])}); err != nil {
			t.Fatalf("PUT %s: %v", key, err)
		}
	}
	if err := c.WaitConverged(ctx); err != nil {
		t.Fatal(err)
	}
	leader, err := c.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	follower := (leader + 1) % 3

	// flip damages key's record in node i's segments; the record must be
	// in a sealed segment (not the last file).
	flip := func(i int, key string) {
		t.Helper()
		files, recs := testutil.SegmentRecords(t, filepath.Join(c.Nodes[i].Data, "segments"))
		for _, f := range files[:len(files)-1] {
			for _, r := range recs[f] {
				if r.Key == key {
					testutil.FlipBit(t, r.File, r.Offset+r.Size-777)
					return
				}
			}
		}
		t.Fatalf("%s: no record of %s in a sealed segment", c.Nodes[i].ID, key)
	}
	// The third node: a segment's last record cut short, and a whole
	// segment deleted (one it has not read since it started: no handle
	// keeps the file readable).
	third := 3 - leader - follower
	thirdRepairs := map[string]bool{}
	{
		files, recs := testutil.SegmentRecords(t, filepath.Join(c.Nodes[third].Data, "segments"))
		in := func(key string) string {
			for _, f := range files[:len(files)-1] {
				for _, r := range recs[f] {
					if r.Key == key {
						return f
					}
				}
			}
			t.Fatalf("%s: no record of %s in a sealed segment", c.Nodes[third].ID, key)
			return ""
		}
		cutFile, gone := in("o06"), in("o00")
		if cutFile == gone {
			t.Fatal("o00 and o06 in one segment")
		}
		last := recs[cutFile][len(recs[cutFile])-1]
		if err := os.Truncate(cutFile, last.Offset+last.Size/2); err != nil {
			t.Fatal(err)
		}
		thirdRepairs[last.Key] = true
		for _, r := range recs[gone] {
			thirdRepairs[r.Key] = true
		}
		if err := os.Remove(gone); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: cut %s, deleted %s (%v)", c.Nodes[third].ID, last.Key, filepath.Base(gone), thirdRepairs)
	}
	flip(follower, "o01")
	flip(leader, "o03")
	flip(leader, "o05")
	flip(follower, "o05")
	flip(leader, "o07")

	checkAll := func(when string) {
		t.Helper()
		for i := range c.Nodes {
			for key, body := range want {
				got, err := getRetry(ctx, cl[i], bucket, key)
				if err != nil || !bytes.Equal(got, body) {
					t.Fatalf("%s: GET %s through %s: %d bytes (identical: %v), %v", when, key, c.Nodes[i].ID, len(got), bytes.Equal(got, body), err)
				}
			}
		}
	}
	// A client's read meets the leader's damaged copy of o07 first.
	got, err := getRetry(ctx, cl[follower], bucket, "o07")
	if err != nil || !bytes.Equal(got, want["o07"]) {
		t.Fatalf("GET o07, damaged on the leader: %d bytes, %v", len(got), err)
	}
	if out := c.Nodes[leader].Proc.Output.String(); !strings.Contains(out, "a read met damaged bytes") || !strings.Contains(out, "damaged object bytes fetched again from a replica") {
		t.Errorf("the leader logged no repair on the read path")
	}

	scrubNode := func(i int) scrub.Status {
		t.Helper()
		ac := &admin.Client{Endpoint: "http://" + c.Nodes[i].AdminAddr, Token: c.AdminToken}
		before, err := ac.ScrubStatus(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if out, err := c.AdminCLI(ctx, i, "scrub", "start"); err != nil {
			t.Fatalf("scrub start on %s: %v %s", c.Nodes[i].ID, err, out)
		}
		var st scrub.Status
		waitFor(ctx, t, "the scrub pass on "+c.Nodes[i].ID, func() bool {
			if st, err = ac.ScrubStatus(ctx); err != nil {
				t.Fatal(err)
			}
			return !st.Running && st.Passes == before.Passes+1
		})
		return st
	}
	// The leader's first: o05 is damaged on a follower too, so its repair
	// must pass over that follower's copy (served short, refused).
	for _, tc := range []struct {
		node     int
		repaired int64
	}{{leader, 2}, {follower, 2}, {third, int64(len(thirdRepairs))}} {
		st := scrubNode(tc.node)
		t.Logf("%s: %+v", c.Nodes[tc.node].ID, st.Counts)
		if st.Repaired != tc.repaired || len(st.Damaged) != 0 || st.Checked != int64(len(want)) {
			t.Errorf("%s's scrub: repaired %d, want %d; damaged %+v; checked %d", c.Nodes[tc.node].ID, st.Repaired, tc.repaired, st.Damaged, st.Checked)
		}
		checkAll("after the scrub of " + c.Nodes[tc.node].ID)
	}
	// Repaired for good: a second pass finds nothing to do (the damaged
	// records are still in their segments, dead, until vacuum rewrites
	// them: counted, referenced by nothing).
	for i, flipped := range map[int]int64{leader: 3, follower: 2} {
		if st := scrubNode(i); st.Repaired != 0 || len(st.Damaged) != 0 || st.CorruptRecords != flipped {
			t.Errorf("%s's second pass: %+v", c.Nodes[i].ID, st)
		}
	}
	checkAll("at the end")
}
