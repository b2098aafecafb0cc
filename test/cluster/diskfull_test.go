package cluster_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/b3-storage/b3/internal/testutil"
)

// mountTmpfs mounts a tmpfs of size bytes at dir (made if missing) for
// the test; at its end the cluster's processes are killed, then the file
// system is unmounted.
func mountTmpfs(t *testing.T, c *testutil.Cluster, dir string, size int64) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", fmt.Sprintf("size=%d,mode=0700", size), "tmpfs", dir).CombinedOutput(); err != nil {
		t.Fatalf("mount a tmpfs for the full disk (the test needs root): %v: %s", err, out)
	}
	t.Cleanup(func() {
		for i := range c.Nodes {
			if c.Running(i) {
				c.Kill(i)
			}
		}
		_ = exec.Command("umount", "-l", dir).Run()
	})
}

// retrying is cl with the SDK's standard retryer (503s and connection
// errors, exponential back-off with jitter), given enough attempts to
// ride through a leader change (an election takes 1-3 s here).
func retrying(cl *s3.Client) *s3.Client {
	return s3.New(cl.Options(), func(o *s3.Options) { o.Retryer, o.RetryMaxAttempts = retry.NewStandard(), 10 })
}

// TestClusterDiskFull: one member's data sits on a 320 MiB file system
// (tmpfs), most of it taken by another file, that 80 PUTs of 1 MiB
// overfill, while the two others have room. Every PUT is acknowledged
// (the SDK retries 503s, nothing else); the full member refuses pushes,
// its apply waits on its own disk — which it reports as such, never as
// bytes no member holds — and it stops standing for election;
// declare-lost refuses; every object reads back whole through every node.
// Once an operator frees space on its disk, the member catches up without
// a restart.
//
// Two layouts: the whole node on the small disk, with a free-space
// reserve (writes are refused before the disk is full); and only its
// segments there (--data-dir, metadata and Raft log elsewhere) with no
// reserve, so that the segment writes themselves fail with ENOSPC and the
// blob store must recover from that once space is back.
func TestClusterDiskFull(t *testing.T) {
	for _, tc := range []struct {
		name     string
		reserve  string
		segments bool  // only the segments on the small disk
		ballast  int64 // of the 320 MiB
	}{
		{name: "reserve", reserve: "12MiB", ballast: 235 << 20},
		{name: "ENOSPC", reserve: "0", segments: true, ballast: 270 << 20},
	} {
		t.Run(tc.name, func(t *testing.T) { diskFull(t, tc.reserve, tc.segments, tc.ballast) })
	}
}

func diskFull(t *testing.T, reserve string, segments bool, ballast int64) {
	const full = 2 // the member whose disk fills
	var disk string
	c := testutil.StartCluster(t, testutil.ClusterOptions{
		Args: []string{"--min-free-space", reserve, "--segment-size", "4MiB"},
		NodeArgs: func(i int, n *testutil.ClusterNode) []string {
			if i != full || !segments {
				return nil
			}
			return []string{"--data-dir", filepath.Join(disk, "segments")}
		},
		BeforeStart: func(c *testutil.Cluster) {
			disk = filepath.Join(filepath.Dir(c.Nodes[full].Data), "small-disk")
			mountTmpfs(t, c, disk, 320<<20)
			if !segments {
				c.Nodes[full].Data = filepath.Join(disk, "data")
			}
			// What the operator removes to free space.
			if err := os.WriteFile(filepath.Join(disk, "ballast"), make([]byte, ballast), 0o600); err != nil {
				t.Fatal(err)
			}
		},
	})
	var cl []*s3.Client
	for _, raw := range clients(c) {
		cl = append(cl, retrying(raw))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	const bucket = "full"
	if err := createBucket(ctx, cl[0], bucket); err != nil {
		t.Fatal(err)
	}
	want := map[string][]byte{}
	for i := range 80 {
		key := fmt.Sprintf("big-%04d", i)
		body := randomBytes(uint64(100+i), 1<<20)
		// Through each node in turn, the full one included.
		if _, err := cl[i%3].PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader(body)}); err != nil {
			t.Fatalf("PUT %s through %s (the SDK retried what it may): %v", key, c.Nodes[i%3].ID, err)
		}
		want[key] = body
	}

	// The full member waits on its own disk, and says so.
	waitFor(ctx, t, "the full member to report its own disk", func() bool {
		m := member(t, c, full).MissingBytes
		return m != nil && m.Local != "" && mustMetric(t, c, full, "b3_cluster_local_fault") == 1
	})
	out, err := c.AdminCLI(ctx, full, "cluster", "status")
	if err != nil || !strings.Contains(string(out), "Nothing is lost") || strings.Contains(string(out), "no member it asked gave") {
		t.Errorf("cluster status with a full member: %v\n%s", err, out)
	}
	t.Logf("b3 admin cluster status with a full member:\n%s", out)
	leader, err := c.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if leader == full {
		t.Errorf("the full member leads")
	}
	// Nothing to declare: the leader waits for nothing, and no member
	// lacks what another holds.
	for i := range c.Nodes {
		if out, err := c.AdminCLI(ctx, i, "cluster", "declare-lost", "--yes"); err == nil {
			t.Errorf("declare-lost through %s was accepted:\n%s", c.Nodes[i].ID, out)
		}
	}
	// Every acknowledged object, through every node.
	for i := range c.Nodes {
		for key, body := range want {
			got, err := getObject(ctx, cl[i], bucket, key)
			if err != nil || !bytes.Equal(got, body) {
				t.Fatalf("GET %s through %s: %d bytes, %v", key, c.Nodes[i].ID, len(got), err)
			}
		}
	}
	// The leader steps down: the full member does not take over.
	c.Kill(leader)
	if err := c.Start(leader); err != nil {
		t.Fatal(err)
	}
	if l, err := c.Leader(ctx); err != nil || l == full {
		t.Fatalf("after the leader's restart: leader %d (%v); the full member must not lead", l, err)
	}

	// An operator frees space: the member catches up, no restart.
	if err := os.Remove(filepath.Join(disk, "ballast")); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitConverged(ctx); err != nil {
		t.Fatal(err)
	}
	waitFor(ctx, t, "the member to recover", func() bool {
		return member(t, c, full).MissingBytes == nil && mustMetric(t, c, full, "b3_cluster_local_fault") == 0
	})
	if segments {
		// The same process met ENOSPC and came back from it.
		out := c.Nodes[full].Proc.Output.String()
		for _, want := range []string{"no space left on device", "the data disk has room again: accepting writes"} {
			if !strings.Contains(out, want) {
				t.Errorf("the full member's log lacks %q", want)
			}
		}
	}
	if _, err := cl[full].PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String("after"), Body: bytes.NewReader(randomBytes(7, 1<<20))}); err != nil {
		t.Fatalf("PUT after the space was freed: %v", err)
	}
	if err := c.WaitConverged(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestClusterDiskEIO: every member's data sits on a FUSE file system
// that can be made to fail writes with EIO (faultFS); the leader's is
// made to fail while clients write. The failing node hands leadership
// over and stops standing for election (or, if its metadata store gives
// up, exits); every PUT through the two healthy members is acknowledged
// with SDK retries and reads back whole; declare-lost refuses; once the
// disk is replaced (the fault cleared) and the node restarted, it
// catches up.
func TestClusterDiskEIO(t *testing.T) {
	var faults []*faultFS
	c := testutil.StartCluster(t, testutil.ClusterOptions{
		Args: []string{"--min-free-space", "0", "--segment-size", "4MiB", "--direct-io=false"},
		BeforeStart: func(c *testutil.Cluster) {
			for i, n := range c.Nodes {
				base := filepath.Dir(n.Data)
				f := mountFaultFS(t, filepath.Join(base, fmt.Sprintf("disk-%d", i)), filepath.Join(base, fmt.Sprintf("mnt-%d", i)))
				faults = append(faults, f)
				n.Data = filepath.Join(base, fmt.Sprintf("mnt-%d", i), "data")
			}
			t.Cleanup(func() {
				for i := range c.Nodes {
					if c.Running(i) {
						c.Kill(i)
					}
				}
				for _, f := range faults {
					f.unmount()
				}
			})
		},
	})
	var cl []*s3.Client
	for _, raw := range clients(c) {
		cl = append(cl, retrying(raw))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	const bucket = "eio"
	if err := createBucket(ctx, cl[0], bucket); err != nil {
		t.Fatal(err)
	}
	want := map[string][]byte{}
	put := func(i, through int) {
		t.Helper()
		key := fmt.Sprintf("obj-%04d", i)
		body := randomBytes(uint64(500+i), 256<<10)
		if _, err := cl[through].PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader(body)}); err != nil {
			t.Fatalf("PUT %s through %s: %v", key, c.Nodes[through].ID, err)
		}
		want[key] = body
	}
	for i := range 10 {
		put(i, i%3)
	}
	bad, err := c.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	faults[bad].failing.Store(true)
	healthy := []int{(bad + 1) % 3, (bad + 2) % 3}
	for i := 10; i < 40; i++ {
		put(i, healthy[i%2])
	}
	waitFor(ctx, t, "a healthy leader", func() bool {
		l, err := c.Leader(ctx)
		return err == nil && l != bad
	})
	if c.Running(bad) {
		st, err := c.Status(bad)
		if err == nil {
			for _, m := range st.Members {
				if m.ID == c.Nodes[bad].ID && m.State == "Leader" {
					t.Errorf("the failing node still leads: %+v", m)
				}
			}
		}
	}
	for _, i := range healthy {
		if out, err := c.AdminCLI(ctx, i, "cluster", "declare-lost", "--yes"); err == nil {
			t.Errorf("declare-lost through %s was accepted:\n%s", c.Nodes[i].ID, out)
		}
		for key, body := range want {
			got, err := getObject(ctx, cl[i], bucket, key)
			if err != nil || !bytes.Equal(got, body) {
				t.Fatalf("GET %s through %s: %d bytes, %v", key, c.Nodes[i].ID, len(got), err)
			}
		}
	}

	state := "exited (its metadata store stopped the process)"
	if c.Running(bad) {
		state = "running, not leading"
	}
	t.Logf("the failing node %s: %s; the end of its output:\n%s", c.Nodes[bad].ID, state, c.Nodes[bad].Proc.Output.Tail(4096))

	// The disk is replaced: the node restarts and catches up.
	faults[bad].failing.Store(false)
	if c.Running(bad) {
		c.Kill(bad)
	}
	if err := c.Start(bad); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitConverged(ctx); err != nil {
		t.Fatal(err)
	}
	put(40, bad)
	if err := c.WaitConverged(ctx); err != nil {
		t.Fatal(err)
	}
	if m := member(t, c, bad); m.MissingBytes != nil || m.ApplyHalted != "" || m.LocalFault {
		t.Errorf("the repaired node: %+v", m)
	}
}
