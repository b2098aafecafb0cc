//lint:file-ignore SA1019 feature/s3/manager is the transfer manager applications use today; its successor (feature/s3/transfermanager) is not yet a dependency of this module.

// Package cluster_test drives real `b3 node` processes (package testutil)
// with aws-sdk-go-v2: S3 through every node, failover under load, and
// what a node refuses.
package cluster_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/feature/s3/manager"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/b3-storage/b3/internal/admin"
	"github.com/b3-storage/b3/internal/iolimit"
	"github.com/b3-storage/b3/internal/meta"
	"github.com/b3-storage/b3/internal/objstore"
	"github.com/b3-storage/b3/internal/testutil"
)

func randomBytes(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, 7))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

func getObject(ctx context.Context, c *s3.Client, bucket, key string) ([]byte, error) {
	out, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		return nil, err
	}
	defer out.Body.Close()
	return io.ReadAll(out.Body)
}

// getRetry is getObject, retrying while the group answers 503 SlowDown,
// as clients do (the test clients do not retry): a node just healed or
// restarted may fail a forward to the leader for a moment.
func getRetry(ctx context.Context, c *s3.Client, bucket, key string) ([]byte, error) {
	for {
		got, err := getObject(ctx, c, bucket, key)
		if testutil.APICode(err) != "SlowDown" || ctx.Err() != nil {
			return got, err
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// createBucket creates bucket through c, retrying while the group answers
// 503 SlowDown, as clients do: on a loaded machine a group just started
// may lose its first leader for a moment. A retry that finds the bucket
// made by an attempt answered SlowDown succeeds.
func createBucket(ctx context.Context, c *s3.Client, bucket string) error {
	for retried := false; ; retried = true {
		_, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)})
		if retried && testutil.APICode(err) == "BucketAlreadyOwnedByYou" {
			return nil
		}
		if testutil.APICode(err) != "SlowDown" || ctx.Err() != nil {
			return err
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func clients(c *testutil.Cluster) []*s3.Client {
	ak, sk := c.Keys()
	var out []*s3.Client
	for _, n := range c.Nodes {
		out = append(out, testutil.S3Client(n.Endpoint(), ak, sk))
	}
	return out
}

// TestClusterS3ThroughEveryNode writes, reads, lists, uploads in parts,
// tags and deletes through different nodes of a 3-node group: a client
// need not know which node leads. At the end every node's own store holds
// the same objects, byte for byte.
func TestClusterS3ThroughEveryNode(t *testing.T) {
	c := testutil.StartCluster(t, testutil.ClusterOptions{})
	cl := clients(c)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const bucket = "photos"
	if err := createBucket(ctx, cl[1], bucket); err != nil {
		t.Fatalf("CreateBucket: %v", err)
	}
	want := map[string][]byte{}
	for i, size := range []int{0, 100, 4 << 10, 4<<10 + 1, 1 << 20, 3<<20 + 17} {
		key := fmt.Sprintf("obj-%d", size)
		body := randomBytes(uint64(i), size)
		if _, err := cl[i%3].PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader(body)}); err != nil {
			t.Fatalf("PutObject %s through %s: %v", key, c.Nodes[i%3].ID, err)
		}
		want[key] = body
	}
	// Multipart through a node, 3 parts of 5 MiB, 5 MiB and 2 MiB.
	big := randomBytes(99, 12<<20)
	up := manager.NewUploader(cl[2], func(u *manager.Uploader) { u.PartSize = 5 << 20; u.Concurrency = 2 })
	if _, err := up.Upload(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String("multi"), Body: bytes.NewReader(big)}); err != nil {
		t.Fatalf("multipart upload: %v", err)
	}
	want["multi"] = big
	for key, body := range want {
		for i := range cl {
			got, err := getObject(ctx, cl[i], bucket, key)
			if err != nil {
				t.Fatalf("GetObject %s through %s: %v", key, c.Nodes[i].ID, err)
			}
			if !bytes.Equal(got, body) {
				t.Fatalf("GetObject %s through %s: %d bytes, not the %d written", key, c.Nodes[i].ID, len(got), len(body))
			}
		}
	}
	list, err := cl[0].ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(bucket)})
	if err != nil {
		t.Fatalf("ListObjectsV2: %v", err)
	}
	var listed, expected []string
	for _, o := range list.Contents {
		listed = append(listed, aws.ToString(o.Key))
	}
	for k := range want {
		expected = append(expected, k)
	}
	sort.Strings(expected)
	if strings.Join(listed, ",") != strings.Join(expected, ",") {
		t.Fatalf("listed %v, want %v", listed, expected)
	}

	// Attributes and deletes through followers too.
	if _, err := cl[0].PutObjectTagging(ctx, &s3.PutObjectTaggingInput{Bucket: aws.String(bucket), Key: aws.String("obj-100"),
		Tagging: &types.Tagging{TagSet: []types.Tag{{Key: aws.String("k"), Value: aws.String("v")}}}}); err != nil {
		t.Fatalf("PutObjectTagging: %v", err)
	}
	tags, err := cl[1].GetObjectTagging(ctx, &s3.GetObjectTaggingInput{Bucket: aws.String(bucket), Key: aws.String("obj-100")})
	if err != nil || len(tags.TagSet) != 1 || aws.ToString(tags.TagSet[0].Value) != "v" {
		t.Fatalf("GetObjectTagging: %v %v", tags, err)
	}
	if _, err := cl[2].DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: aws.String("obj-1048576")}); err != nil {
		t.Fatalf("DeleteObject: %v", err)
	}
	delete(want, "obj-1048576")
	for i := range cl {
		_, err := cl[i].HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String("obj-1048576")})
		var re *awshttp.ResponseError
		if !errors.As(err, &re) || re.HTTPStatusCode() != 404 {
			t.Fatalf("HeadObject of a deleted key through %s: %v, want 404", c.Nodes[i].ID, err)
		}
	}

	// Users are cluster-wide: added through one node's admin API, usable
	// through another node.
	ac := &admin.Client{Endpoint: "http://" + c.Nodes[2].AdminAddr, Token: c.AdminToken}
	u, err := ac.AddUser(ctx, "alice")
	if err != nil {
		t.Fatalf("AddUser: %v", err)
	}
	alice := testutil.S3Client(c.Nodes[0].Endpoint(), u.AccessKey, u.Secret)
	if _, err := alice.ListBuckets(ctx, &s3.ListBucketsInput{}); err != nil {
		t.Fatalf("ListBuckets as the new user through another node: %v", err)
	}
	// Names are unique and no access key's, through the leader and the
	// followers alike (the leader checks, and every apply again).
	for _, n := range c.Nodes {
		nc := &admin.Client{Endpoint: "http://" + n.AdminAddr, Token: c.AdminToken}
		for _, name := range []string{"alice", "ALICE", "root", u.AccessKey} {
			if dup, err := nc.AddUser(ctx, name); err == nil || !strings.Contains(err.Error(), "(409)") {
				t.Errorf("add %q through %s: %+v %v, want 409", name, n.ID, dup, err)
			}
		}
	}

	if err := c.WaitConverged(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.Stop(); err != nil {
		t.Fatalf("stop: %v", err)
	}
	checkReplicas(t, c, bucket, want)
	// Everything a node stores (segments, metadata, the Raft log with its
	// inline objects, users) is readable by its user only.
	for _, n := range c.Nodes {
		testutil.CheckPrivate(t, n.Data)
	}
}

// checkReplicas opens each stopped node's own store and checks that it
// holds exactly want in bucket.
func checkReplicas(t *testing.T, c *testutil.Cluster, bucket string, want map[string][]byte) {
	t.Helper()
	for i, snap := range replicaSnapshots(t, c, bucket) {
		if len(snap) != len(want) {
			t.Fatalf("%s holds %d objects, want %d", c.Nodes[i].ID, len(snap), len(want))
		}
		for key, body := range want {
			if snap[key] != sha256.Sum256(body) {
				t.Fatalf("%s: %s missing or different from what was written", c.Nodes[i].ID, key)
			}
		}
	}
}

// replicaSnapshots opens each stopped node's own store and returns, per
// node, the SHA-256 of every object in bucket.
func replicaSnapshots(t *testing.T, c *testutil.Cluster, bucket string) []map[string][32]byte {
	t.Helper()
	var out []map[string][32]byte
	for _, n := range c.Nodes {
		metaDir, dataDir := objstore.DefaultDirs(n.Data)
		st, err := objstore.Open(objstore.Options{MetaDir: metaDir, DataDir: dataDir})
		if err != nil {
			t.Fatalf("open the store of %s: %v", n.ID, err)
		}
		snap, err := snapshot(st, bucket)
		if cerr := st.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			t.Fatalf("%s: %v", n.ID, err)
		}
		out = append(out, snap)
	}
	return out
}

func snapshot(st *objstore.Store, bucket string) (map[string][32]byte, error) {
	snap := map[string][32]byte{}
	opts := meta.ListOptions{MaxKeys: 1000}
	for {
		res, err := st.ListObjects(bucket, opts)
		if err != nil {
			return nil, err
		}
		for _, o := range res.Objects {
			_, r, err := st.OpenObject(context.Background(), bucket, o.Key, objstore.WholeObject)
			if err != nil {
				return nil, fmt.Errorf("open %s: %w", o.Key, err)
			}
			body, err := io.ReadAll(r)
			r.Close()
			if err != nil {
				return nil, fmt.Errorf("read %s: %w", o.Key, err)
			}
			snap[o.Key] = sha256.Sum256(body)
		}
		if !res.IsTruncated {
			return snap, nil
		}
		opts.StartAfter = res.NextMarker
	}
}

// TestClusterNoQuorum: with two of three nodes down the survivor answers
// writes with 503 SlowDown and a Retry-After, and does not hang.
func TestClusterNoQuorum(t *testing.T) {
	c := testutil.StartCluster(t, testutil.ClusterOptions{})
	cl := clients(c)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := createBucket(ctx, cl[0], "quorum"); err != nil {
		t.Fatal(err)
	}
	c.Kill(1)
	c.Kill(2)
	for _, size := range []int{10, 1 << 20} {
		_, err := cl[0].PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("quorum"), Key: aws.String("k"), Body: bytes.NewReader(make([]byte, size))})
		var re *awshttp.ResponseError
		if !errors.As(err, &re) || re.HTTPStatusCode() != 503 || testutil.APICode(err) != "SlowDown" {
			t.Fatalf("PUT of %d bytes without quorum: %v, want 503 SlowDown", size, err)
		}
		if re.Response.Header.Get("Retry-After") == "" {
			t.Fatalf("503 without Retry-After")
		}
	}
	_, err := getObject(ctx, cl[0], "quorum", "k")
	if testutil.APICode(err) != "SlowDown" {
		t.Fatalf("GET without quorum: %v, want SlowDown", err)
	}
	// Back to a majority: writes go through again.
	if err := c.Start(1); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := cl[0].PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("quorum"), Key: aws.String("k"), Body: strings.NewReader("back")})
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no write accepted 30s after the quorum returned: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestNodeRefusesForeignData: a node does not start on another node's data
// directory, a b3 server's, or with an id that is not a peer, and says why.
func TestNodeRefusesForeignData(t *testing.T) {
	c := testutil.StartCluster(t, testutil.ClusterOptions{})
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	bin := testutil.Binary(t)
	serverData := t.TempDir()
	srv := exec.Command(bin, "server", "--data", serverData, "--address", testutil.FreeAddr(t))
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	_ = srv.Process.Kill()
	_ = srv.Wait()

	swap := func(args []string, flag, value string) []string {
		out := append([]string(nil), args...)
		for i := range out {
			if out[i] == flag {
				out[i+1] = value
			}
		}
		return out
	}
	n2 := c.Args(1)
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"another node's directory", swap(n2, "--data", c.Nodes[0].Data), `belongs to node "n1", not "n2"`},
		{"a b3 server's directory", swap(n2, "--data", serverData), "has no cluster.json"},
		{"an id not in --peers", swap(swap(c.Args(0), "--id", "n9"), "--data", filepath.Join(t.TempDir(), "x")), "not in --peers"},
		{"another cluster", swap(c.Args(0), "--peers", "n1="+c.Nodes[0].ClusterAddr+",n2=127.0.0.1:1"), "belongs to another cluster"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			out, err := exec.CommandContext(ctx, bin, tc.args...).CombinedOutput()
			if err == nil {
				t.Fatalf("the node started; output:\n%s", out)
			}
			if !strings.Contains(string(out), tc.want) {
				t.Fatalf("output %q does not say %q", out, tc.want)
			}
		})
	}
}

// TestClusterFollowerCatchUp: a follower that was down while objects were
// written, overwritten, deleted and uploaded in parts catches up when it
// returns (replaying the log, fetching the bytes it missed, skipping those
// a later command replaced) and ends with the same objects as the others.
func TestClusterFollowerCatchUp(t *testing.T) {
	// The background limit bounds the catch-up (fetches are background
	// I/O); the counters below show the bytes went through that class.
	const bucket = "catchup"
	c, cl, ctx, leader := groupWithBucket(t, []string{"--background-write-limit", "8MiB"}, bucket)
	away := (leader + 1) % 3
	c.Kill(away)
	want := writeMissed(ctx, t, cl[leader], bucket, 20, func(i int) int { return 10<<10 + i*7000 })

	if err := c.Start(away); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitConverged(ctx); err != nil {
		t.Fatal(err)
	}
	// The catch-up was background I/O on the returning node: it wrote at
	// least the bytes of the objects that survived (those it fetched).
	var missed int64
	for _, body := range want {
		missed += int64(len(body))
	}
	ac := &admin.Client{Endpoint: "http://" + c.Nodes[away].AdminAddr, Token: c.AdminToken}
	stats, err := ac.Stats(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	if got := stats.IO.Write.Background.Bytes; got < missed {
		t.Fatalf("the returning node wrote %d bytes as background I/O, want at least the %d it missed", got, missed)
	}
	// ... paced by client load like every background job: the node runs
	// the pacer's controller, and the catch-up was charged to it.
	vs, err := ac.VacuumStatus(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if vs.Pace.Reason == iolimit.ReasonNotRunning || vs.Pace.Work < missed {
		t.Fatalf("pace on the returning node: %+v, want a running controller charged at least %d bytes", vs.Pace, missed)
	}
	// ... fetched ahead of the apply, several at once, not one by one
	// inside it.
	if got := mustMetric(t, c, away, "b3_cluster_catchup_prefetched_bytes_total"); got <= 0 {
		t.Fatalf("the returning node prefetched %v bytes, want some", got)
	}
	if err := c.Stop(); err != nil {
		t.Fatalf("stop: %v", err)
	}
	checkReplicas(t, c, bucket, want)
}

// writeMissed writes what a node that is away misses: n objects (sizes
// from size), the first 5 overwritten, the next 5 deleted, and an 11 MiB
// multipart upload. It returns what the bucket then holds.
func writeMissed(ctx context.Context, t *testing.T, cl *s3.Client, bucket string, n int, size func(i int) int) map[string][]byte {
	t.Helper()
	want := map[string][]byte{}
	put := func(key string, body []byte) {
		t.Helper()
		if _, err := cl.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader(body)}); err != nil {
			t.Fatalf("PutObject %s: %v", key, err)
		}
		want[key] = body
	}
	for i := range n {
		put(fmt.Sprintf("k%02d", i), randomBytes(uint64(i), size(i)))
	}
	for i := range 5 { // overwritten: the first versions are superseded
		put(fmt.Sprintf("k%02d", i), randomBytes(uint64(100+i), 50<<10))
	}
	for i := 5; i < 10; i++ {
		key := fmt.Sprintf("k%02d", i)
		if _, err := cl.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)}); err != nil {
			t.Fatal(err)
		}
		delete(want, key)
	}
	big := randomBytes(7, 11<<20)
	up := manager.NewUploader(cl, func(u *manager.Uploader) { u.PartSize = 5 << 20 })
	if _, err := up.Upload(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String("multi"), Body: bytes.NewReader(big)}); err != nil {
		t.Fatal(err)
	}
	want["multi"] = big
	return want
}

// TestClusterAsync: in async mode writes are acknowledged after the
// leader's own durable write and still reach every node's store; every
// node exports the replication lag (bytes, seconds).
func TestClusterAsync(t *testing.T) {
	c := testutil.StartCluster(t, testutil.ClusterOptions{Replication: "async"})
	cl := clients(c)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	st, err := c.Status(0)
	if err != nil || st.Replication != "async" {
		t.Fatalf("status: %+v, %v; want replication async", st, err)
	}
	const bucket = "async"
	if err := createBucket(ctx, cl[0], bucket); err != nil {
		t.Fatal(err)
	}
	want := map[string][]byte{}
	for i := range 12 {
		key := fmt.Sprintf("a%02d", i)
		body := randomBytes(uint64(i), 1000+i*40000)
		if _, err := cl[i%3].PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader(body)}); err != nil {
			t.Fatalf("PutObject %s: %v", key, err)
		}
		want[key] = body
		got, err := getObject(ctx, cl[(i+1)%3], bucket, key)
		if err != nil || !bytes.Equal(got, body) {
			t.Fatalf("read %s back through another node: %v", key, err)
		}
	}
	if err := c.WaitConverged(ctx); err != nil {
		t.Fatal(err)
	}

	// The lag, on every node: a follower away while 4 objects are written
	// lags by their bytes on the leader's account; the other one, caught
	// up, by nothing; once back, the first catches up to nothing too.
	leader, err := c.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	away, other := (leader+1)%3, (leader+2)%3
	series := func(i int, what string) string {
		return fmt.Sprintf(`b3_cluster_replication_lag_%s{member="%s"}`, what, c.Nodes[i].ID)
	}
	for _, i := range []int{leader, away, other} {
		if got := mustMetric(t, c, i, series(i, "bytes")); got != 0 {
			t.Fatalf("%s reports a lag of %v bytes, converged", c.Nodes[i].ID, got)
		}
	}
	c.Kill(away)
	var missed int
	for i := range 4 {
		key := fmt.Sprintf("lag%d", i)
		body := randomBytes(uint64(50+i), 200<<10)
		if _, err := cl[leader].PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader(body)}); err != nil {
			t.Fatalf("PutObject %s: %v", key, err)
		}
		want[key] = body
		missed += len(body)
	}
	if err := c.WaitConverged(ctx); err != nil {
		t.Fatal(err)
	}
	if got := mustMetric(t, c, leader, series(away, "bytes")); got < float64(missed) {
		t.Fatalf("the leader reports %s lagging by %v bytes, want at least the %d it missed", c.Nodes[away].ID, got, missed)
	}
	if got := mustMetric(t, c, leader, series(away, "seconds")); got <= 0 {
		t.Fatalf("the leader reports %s lagging by %v s, want more than 0", c.Nodes[away].ID, got)
	}
	if got := mustMetric(t, c, other, series(other, "bytes")); got != 0 {
		t.Fatalf("%s, caught up, reports a lag of %v bytes", c.Nodes[other].ID, got)
	}
	if err := c.Start(away); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitConverged(ctx); err != nil {
		t.Fatal(err)
	}
	for _, i := range []int{leader, away} {
		if got := mustMetric(t, c, i, series(away, "bytes")); got != 0 {
			t.Fatalf("%s reports %s lagging by %v bytes, caught up", c.Nodes[i].ID, c.Nodes[away].ID, got)
		}
	}
	if err := c.Stop(); err != nil {
		t.Fatalf("stop: %v", err)
	}
	checkReplicas(t, c, bucket, want)
}
