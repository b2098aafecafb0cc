package cluster_test

import (
	"bytes"
	"context"
	"crypto/md5"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/b3-storage/b3/internal/admin"
	"github.com/b3-storage/b3/internal/partition"
	"github.com/b3-storage/b3/internal/testutil"
)

// twoGroups starts group g1 (n1-n3), then group g2 (n4-n6) joining it
// through n1, and a router asking each group.
type twoGroups struct {
	g1, g2      *testutil.Cluster
	routers     []string // S3 endpoints
	routerProcs []*testutil.Process
	admin       string // the first router's admin URL
}

func startTwoGroups(t *testing.T, beforeG2 func(*testutil.Cluster), g2Env ...string) *twoGroups {
	t.Helper()
	tg := &twoGroups{g1: testutil.StartCluster(t, testutil.ClusterOptions{})}
	if beforeG2 != nil {
		beforeG2(tg.g1)
	}
	tg.g2 = testutil.StartCluster(t, testutil.ClusterOptions{FirstID: 3, Env: g2Env,
		Args: []string{"--group", "g2", "--cluster-seeds", tg.g1.Nodes[0].ClusterAddr}})
	adminAddr := testutil.FreeAddr(t)
	p1, r1 := tg.g1.StartRouter([]string{tg.g1.Nodes[0].ClusterAddr}, "--admin-address", adminAddr)
	p2, r2 := tg.g1.StartRouter([]string{tg.g2.Nodes[0].ClusterAddr})
	tg.routers, tg.routerProcs, tg.admin = []string{r1, r2}, []*testutil.Process{p1, p2}, "http://"+adminAddr
	return tg
}

// endpoints are every node's and router's S3 endpoint.
func (tg *twoGroups) endpoints() []string {
	var out []string
	for _, c := range []*testutil.Cluster{tg.g1, tg.g2} {
		for _, n := range c.Nodes {
			out = append(out, n.Endpoint())
		}
	}
	return append(out, tg.routers...)
}

// status asks the first router for the cluster's status.
func (tg *twoGroups) status(ctx context.Context) (admin.ClusterStatus, error) {
	return (&admin.Client{Endpoint: tg.admin, Token: tg.g1.AdminToken}).ClusterStatus(ctx)
}

// waitBalanced waits until the map is balanced with g2 owning partitions.
func (tg *twoGroups) waitBalanced(ctx context.Context, t *testing.T) admin.ClusterStatus {
	t.Helper()
	for {
		st, err := tg.status(ctx)
		if err == nil && st.Balanced && len(st.Groups) == 2 && st.Groups[1].Partitions > 0 {
			return st
		}
		if ctx.Err() != nil {
			t.Fatalf("the cluster did not balance: %+v, %v", st, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// objectsOf counts the objects a node's own store holds.
func objectsOf(ctx context.Context, t *testing.T, c *testutil.Cluster, i int) int64 {
	t.Helper()
	out, err := c.AdminCLI(ctx, i, "stats", "--objects", "--json")
	if err != nil {
		t.Fatalf("stats: %v: %s", err, out)
	}
	var st struct {
		Objects struct{ Objects int64 } `json:"objects"`
	}
	if err := json.Unmarshal(out, &st); err != nil {
		t.Fatal(err)
	}
	return st.Objects.Objects
}

// TestClusterGroups: a second group joins a cluster holding data, under
// a load of writes; partitions move to it by themselves until both
// groups hold half; no write fails (beyond the SDK's retried 503s); every
// acknowledged object then reads back identical through every node of
// both groups and both routers, listings through either router are
// complete and ordered (prefix, delimiter, start-after, continuation,
// versions), and buckets, users and policies are the cluster's, in force
// in both groups when the call that changed them returns. Then the
// second group is drained: it ends holding nothing, is stopped, and
// nothing is lost.
func TestClusterGroups(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	var mu sync.Mutex
	want := map[string][]byte{} // acknowledged: key → body
	var writer sync.WaitGroup
	stop := make(chan struct{})
	tg := startTwoGroups(t, func(c *testutil.Cluster) {
		cl := retrying(c.Client(0, 30*time.Second))
		for _, b := range []string{"photos", "versioned"} {
			if err := createBucket(ctx, cl, b); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := cl.PutBucketVersioning(ctx, &s3.PutBucketVersioningInput{Bucket: aws.String("versioned"),
			VersioningConfiguration: &types.VersioningConfiguration{Status: types.BucketVersioningStatusEnabled}}); err != nil {
			t.Fatal(err)
		}
		for i := range 120 {
			key := fmt.Sprintf("before/%02d/obj-%03d", i%7, i)
			body := randomBytes(uint64(i), []int{100, 3000, 70 << 10}[i%3])
			if _, err := cl.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("photos"), Key: aws.String(key), Body: bytes.NewReader(body)}); err != nil {
				t.Fatal(err)
			}
			want[key] = body
		}
		for i := range 30 {
			key := fmt.Sprintf("v/%02d", i%10)
			if _, err := cl.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("versioned"), Key: aws.String(key), Body: bytes.NewReader(randomBytes(uint64(1000+i), 5000))}); err != nil {
				t.Fatal(err)
			}
		}
		// Writes go on while g2 joins and partitions move.
		writer.Add(1)
		go func() {
			defer writer.Done()
			cls := []*s3.Client{retrying(c.Client(0, 30*time.Second)), retrying(c.Client(1, 30*time.Second)), retrying(c.Client(2, 30*time.Second))}
			for i := 0; ctx.Err() == nil && i < 1000; i++ {
				select {
				case <-stop:
					return
				default:
				}
				key := fmt.Sprintf("during/%02d/obj-%03d", i%5, i)
				body := randomBytes(uint64(5000+i), []int{200, 9000, 40 << 10}[i%3])
				_, err := cls[i%3].PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("photos"), Key: aws.String(key), Body: bytes.NewReader(body)})
				if err != nil {
					if ctx.Err() == nil {
						t.Errorf("PUT %s during the moves: %v", key, err)
					}
					return
				}
				mu.Lock()
				want[key] = body
				mu.Unlock()
				time.Sleep(20 * time.Millisecond)
			}
		}()
	})
	st := tg.waitBalanced(ctx, t)
	t.Logf("balanced at epoch %d: %s %d, %s %d partitions", st.MapEpoch, st.Groups[0].Name, st.Groups[0].Partitions, st.Groups[1].Name, st.Groups[1].Partitions)
	for _, g := range st.Groups {
		if g.Partitions != g.Target || g.Partitions < 500 {
			t.Errorf("group %s owns %d partitions, target %d", g.Name, g.Partitions, g.Target)
		}
	}
	// Writes through the routers and g2's nodes once balanced.
	for i, ep := range append(slices.Clone(tg.routers), tg.g2.Nodes[0].Endpoint()) {
		cl := retrying(tg.g1.ClientOf(ep, 30*time.Second))
		for j := range 20 {
			key := fmt.Sprintf("after/%d/obj-%03d", i, j)
			body := randomBytes(uint64(9000+100*i+j), 2000+j*500)
			if _, err := cl.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("photos"), Key: aws.String(key), Body: bytes.NewReader(body)}); err != nil {
				t.Fatalf("PUT %s through %s: %v", key, ep, err)
			}
			mu.Lock()
			want[key] = body
			mu.Unlock()
		}
	}
	close(stop)
	writer.Wait()
	ctx2, cancel2 := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel2()
	mu.Lock()
	defer mu.Unlock()

	// Objects landed in both groups: each group's members hold some.
	n1, n4 := objectsOf(ctx2, t, tg.g1, 0), objectsOf(ctx2, t, tg.g2, 0)
	t.Logf("objects held: g1 %d, g2 %d (of %d acknowledged, and 30 versions)", n1, n4, len(want))
	if n1 == 0 || n4 == 0 || n1+n4 < int64(len(want)) {
		t.Errorf("g1 holds %d objects, g2 %d, of %d", n1, n4, len(want))
	}

	// Every acknowledged object, identical, through every endpoint.
	for _, ep := range tg.endpoints() {
		cl := retrying(tg.g1.ClientOf(ep, 30*time.Second))
		for key, body := range want {
			got, err := getObject(ctx2, cl, "photos", key)
			if err != nil || !bytes.Equal(got, body) {
				t.Fatalf("GET %s through %s: %d bytes (want %d), %v", key, ep, len(got), len(body), err)
			}
		}
	}

	// Listings through either router: complete, ordered.
	keys := make([]string, 0, len(want))
	for k := range want {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, ep := range tg.routers {
		cl := retrying(tg.g1.ClientOf(ep, 30*time.Second))
		checkListing(ctx2, t, cl, keys, "", "", "")
		checkListing(ctx2, t, cl, keys, "during/", "", "")
		checkListing(ctx2, t, cl, keys, "", "/", "")
		checkListing(ctx2, t, cl, keys, "before/", "/", "")
		checkListing(ctx2, t, cl, keys, "", "", "before/03/obj-050")
		checkVersions(ctx2, t, cl, "versioned", 30)
	}

	// Multipart uploads of keys in both groups are listed together.
	var uploads []string
	for i := range 12 {
		key := fmt.Sprintf("mp/k%02d", i)
		out, err := root0(tg).CreateMultipartUpload(ctx2, &s3.CreateMultipartUploadInput{Bucket: aws.String("photos"), Key: aws.String(key)})
		if err != nil {
			t.Fatal(err)
		}
		uploads = append(uploads, key+" "+*out.UploadId)
	}
	for _, ep := range tg.routers {
		cl := retrying(tg.g1.ClientOf(ep, 30*time.Second))
		var got []string
		var km, um *string
		for {
			out, err := cl.ListMultipartUploads(ctx2, &s3.ListMultipartUploadsInput{Bucket: aws.String("photos"), MaxUploads: aws.Int32(5), KeyMarker: km, UploadIdMarker: um})
			if err != nil {
				t.Fatal(err)
			}
			for _, u := range out.Uploads {
				got = append(got, *u.Key+" "+*u.UploadId)
			}
			if !aws.ToBool(out.IsTruncated) {
				break
			}
			km, um = out.NextKeyMarker, out.NextUploadIdMarker
		}
		if !slices.Equal(got, uploads) {
			t.Fatalf("uploads listed through %s:\n%v\nwant\n%v", ep, got, uploads)
		}
	}
	for _, u := range uploads {
		key, id, _ := strings.Cut(u, " ")
		if _, err := root0(tg).AbortMultipartUpload(ctx2, &s3.AbortMultipartUploadInput{Bucket: aws.String("photos"), Key: aws.String(key), UploadId: aws.String(id)}); err != nil {
			t.Fatal(err)
		}
	}

	// Users and policies are the cluster's, in force on every group when
	// the call returns: a user added through g2's admin API reads a key
	// g2 holds through the first router at once; a policy set through
	// the second router lets anonymous reads of g2's keys through at once.
	out, err := tg.g2.AdminCLI(ctx2, 1, "users", "add", "carol", "--json")
	if err != nil {
		t.Fatalf("users add on g2: %v: %s", err, out)
	}
	var carol struct {
		AccessKey string `json:"access_key"`
		Secret    string `json:"secret_key"`
	}
	if err := json.Unmarshal(out, &carol); err != nil || carol.AccessKey == "" {
		t.Fatalf("users add: %s", out)
	}
	cc := testutil.S3Client(tg.routers[0], carol.AccessKey, carol.Secret)
	if _, err := cc.CreateBucket(ctx2, &s3.CreateBucketInput{Bucket: aws.String("carols")}); err != nil {
		t.Fatalf("the user added on g2, through the first router: %v", err)
	}
	for i := range 20 {
		if _, err := cc.PutObject(ctx2, &s3.PutObjectInput{Bucket: aws.String("carols"), Key: aws.String(fmt.Sprintf("k%d", i)), Body: strings.NewReader("x")}); err != nil {
			t.Fatalf("carol's PUT %d (some on each group): %v", i, err)
		}
	}
	policy := `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::photos/after/*"}]}`
	root := retrying(tg.g1.ClientOf(tg.routers[1], 30*time.Second))
	if _, err := root.PutPublicAccessBlock(ctx2, &s3.PutPublicAccessBlockInput{Bucket: aws.String("photos"),
		PublicAccessBlockConfiguration: &types.PublicAccessBlockConfiguration{BlockPublicAcls: aws.Bool(false), BlockPublicPolicy: aws.Bool(false),
			IgnorePublicAcls: aws.Bool(false), RestrictPublicBuckets: aws.Bool(false)}}); err != nil {
		t.Fatal(err)
	}
	if _, err := root.PutBucketPolicy(ctx2, &s3.PutBucketPolicyInput{Bucket: aws.String("photos"), Policy: aws.String(policy)}); err != nil {
		t.Fatal(err)
	}
	for _, ep := range append([]string{tg.g2.Nodes[2].Endpoint(), tg.g1.Nodes[2].Endpoint()}, tg.routers...) {
		for _, key := range keys {
			if !strings.HasPrefix(key, "after/") {
				continue
			}
			resp, err := http.Get(ep + "/photos/" + key)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK || !bytes.Equal(body, want[key]) {
				t.Fatalf("anonymous GET %s through %s right after the policy: %s", key, ep, resp.Status)
			}
		}
	}
	// A bucket with objects in both groups is not deleted.
	if _, err := root.DeleteBucket(ctx2, &s3.DeleteBucketInput{Bucket: aws.String("carols")}); err == nil || !strings.Contains(err.Error(), "BucketNotEmpty") {
		t.Fatalf("delete a bucket with objects in both groups: %v", err)
	}
	out, err = tg.g1.AdminCLI(ctx2, 0, "cluster", "status")
	if err != nil || !strings.Contains(string(out), "balanced") || !strings.Contains(string(out), "g2") {
		t.Fatalf("cluster status: %v\n%s", err, out)
	}

	// Rebalancing pauses and resumes; then g2 is drained through the
	// router's admin API: it ends owning and holding nothing, is
	// stopped, and every object still reads back; bucket changes go on
	// without it.
	rb := (&admin.Client{Endpoint: tg.admin, Token: tg.g1.AdminToken})
	if st, err := rb.SetRebalance(ctx2, true); err != nil || !st.Paused {
		t.Fatalf("rebalance pause: %+v, %v", st.Paused, err)
	}
	for { // g2's members follow the map: a moment behind
		out, err = tg.g2.AdminCLI(ctx2, 0, "cluster", "rebalance", "status")
		if err == nil && strings.Contains(string(out), "balanced") && strings.Contains(string(out), "paused") {
			break
		}
		if ctx2.Err() != nil {
			t.Fatalf("rebalance status on g2: %v\n%s", err, out)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if _, err := rb.SetRebalance(ctx2, false); err != nil {
		t.Fatal(err)
	}
	if out, err := tg.g1.AdminCLI(ctx2, 1, "cluster", "drain", "g1"); err == nil {
		// Allowed: g2 takes everything. Undo it before draining g2.
		if out, err := tg.g1.AdminCLI(ctx2, 1, "cluster", "drain", "g1", "--stop"); err != nil {
			t.Fatalf("drain --stop: %v: %s", err, out)
		}
	} else {
		t.Fatalf("drain g1: %v: %s", err, out)
	}
	if _, err := rb.DrainGroup(ctx2, "g2", true); err != nil {
		t.Fatal(err)
	}
	if _, err := rb.DrainGroup(ctx2, "g1", true); err == nil {
		t.Fatal("drained the last group not draining")
	}
	for {
		st, err := tg.status(ctx2)
		if err == nil && st.Balanced && st.Groups[1].Partitions == 0 && st.Groups[1].Draining && objectsOf(ctx2, t, tg.g2, 0) == 0 {
			break
		}
		if ctx2.Err() != nil {
			t.Fatalf("g2 did not drain: %+v, %v", st, err)
		}
		time.Sleep(500 * time.Millisecond)
	}
	for i := range tg.g2.Nodes {
		tg.g2.Kill(i)
	}
	for _, ep := range []string{tg.g1.Nodes[1].Endpoint(), tg.routers[0]} {
		cl := retrying(tg.g1.ClientOf(ep, 30*time.Second))
		for key, body := range want {
			got, err := getObject(ctx2, cl, "photos", key)
			if err != nil || !bytes.Equal(got, body) {
				t.Fatalf("GET %s through %s with g2 drained and stopped: %d bytes, %v", key, ep, len(got), err)
			}
		}
		checkListing(ctx2, t, cl, keys, "", "/", "")
	}
	if _, err := root.DeleteBucketPolicy(ctx2, &s3.DeleteBucketPolicyInput{Bucket: aws.String("photos")}); err != nil {
		t.Fatalf("a bucket change with the drained g2 stopped: %v", err)
	}
}

// checkListing lists the bucket "photos" by pages of 7 with prefix,
// delimiter and start-after, and compares with what keys say.
func checkListing(ctx context.Context, t *testing.T, cl *s3.Client, keys []string, prefix, delim, startAfter string) {
	t.Helper()
	var wantEntries []string
	seen := map[string]bool{}
	for _, k := range keys {
		if !strings.HasPrefix(k, prefix) || k <= startAfter {
			continue
		}
		e := k
		if delim != "" {
			if i := strings.Index(k[len(prefix):], delim); i >= 0 {
				e = k[:len(prefix)+i+len(delim)]
			}
		}
		if !seen[e] {
			seen[e] = true
			wantEntries = append(wantEntries, e)
		}
	}
	var got []string
	var token *string
	for pages := 0; ; pages++ {
		in := &s3.ListObjectsV2Input{Bucket: aws.String("photos"), MaxKeys: aws.Int32(7), ContinuationToken: token}
		if prefix != "" {
			in.Prefix = aws.String(prefix)
		}
		if delim != "" {
			in.Delimiter = aws.String(delim)
		}
		if startAfter != "" && token == nil {
			in.StartAfter = aws.String(startAfter)
		}
		out, err := cl.ListObjectsV2(ctx, in)
		if err != nil {
			t.Fatalf("list %q %q %q: %v", prefix, delim, startAfter, err)
		}
		var page []string
		for _, o := range out.Contents {
			page = append(page, *o.Key)
		}
		for _, p := range out.CommonPrefixes {
			page = append(page, *p.Prefix)
		}
		sort.Strings(page)
		if len(page) > 7 {
			t.Fatalf("a page of %d entries", len(page))
		}
		got = append(got, page...)
		if !aws.ToBool(out.IsTruncated) {
			break
		}
		token = out.NextContinuationToken
	}
	if !slices.Equal(got, wantEntries) {
		t.Fatalf("list prefix %q delimiter %q start-after %q: %d entries, want %d\ngot  %v\nwant %v", prefix, delim, startAfter, len(got), len(wantEntries), got, wantEntries)
	}
}

// checkVersions lists bucket's versions by pages of 4 and checks there
// are n, each key's newest first and marked latest.
func checkVersions(ctx context.Context, t *testing.T, cl *s3.Client, bucket string, n int) {
	t.Helper()
	var keys []string
	latest := 0
	var km, vm *string
	for {
		out, err := cl.ListObjectVersions(ctx, &s3.ListObjectVersionsInput{Bucket: aws.String(bucket), MaxKeys: aws.Int32(4), KeyMarker: km, VersionIdMarker: vm})
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range out.Versions {
			keys = append(keys, *v.Key)
			if aws.ToBool(v.IsLatest) {
				latest++
			}
		}
		if !aws.ToBool(out.IsTruncated) {
			break
		}
		km, vm = out.NextKeyMarker, out.NextVersionIdMarker
	}
	if len(keys) != n || !sort.StringsAreSorted(keys) || latest != 10 {
		t.Fatalf("versions of %s: %d (want %d), sorted %v, %d latest (want 10): %v", bucket, len(keys), n, sort.StringsAreSorted(keys), latest, keys)
	}
}

// root0 is a client of the first router with the root user.
func root0(tg *twoGroups) *s3.Client {
	return retrying(tg.g1.ClientOf(tg.routers[0], 30*time.Second))
}

// groupKillCycles is the number of moves TestClusterGroupsKill kills a
// process in: 4 in CI (each group's leader as a source, a leader as a
// destination, a router), more with B3_GROUP_KILLS (the long variant: on
// a loaded machine 8 cycles have written 100,000 objects, tens of GB on
// the six nodes' data directories under the test's temporary directory,
// removed when the test ends — not if it is killed).
func groupKillCycles(t *testing.T) int {
	if v := os.Getenv("B3_GROUP_KILLS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("B3_GROUP_KILLS=%q: want a positive number", v)
		}
		return n
	}
	return 4
}

// TestClusterGroupsKill: partitions move back and forth between two
// groups (g2 drained, then not) under a load of unique writes, deletes
// and register operations through both routers and a node of each
// group; during each move one process is killed with SIGKILL at a random
// moment — the source group's leader, the destination's leader or a
// router, in turn — and started again. Every acknowledged object then
// reads back identical through every router and node, nothing deleted
// comes back, and the history of the register keys is linearizable.
func TestClusterGroupsKill(t *testing.T) {
	tg := startTwoGroups(t, nil)
	// Moves copy as background I/O, paced down to --background-min-rate
	// while the load runs, and every cycle moves more data: 4 minutes a
	// cycle, and 2 for the checks.
	cycles := groupKillCycles(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(4*cycles+2)*time.Minute)
	defer cancel()
	tg.waitBalanced(ctx, t)
	ak, sk := tg.g1.Keys()
	endpoints := append(slices.Clone(tg.routers), tg.g1.Nodes[0].Endpoint(), tg.g2.Nodes[1].Endpoint())
	var load []*s3.Client
	for _, ep := range endpoints {
		load = append(load, testutil.S3ClientTimeout(ep, ak, sk, 15*time.Second))
	}
	const bucket = "moving"
	if err := createBucket(ctx, retrying(load[0]), bucket); err != nil {
		t.Fatal(err)
	}
	st := &loadState{acked: map[string][32]byte{}, deleted: map[string]bool{}, maybe: map[string][32]byte{}}
	hist := &history{start: time.Now()}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	registers := []string{"r0", "r1", "r2", "r3", "r4", "r5", "r6", "r7"}
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(w), 7))
			for seq := 0; ; seq++ {
				select {
				case <-stop:
					return
				default:
				}
				cl := load[r.IntN(len(load))]
				var err error
				if r.IntN(2) == 0 {
					err = uniqueOp(ctx, cl, bucket, w, seq, r, st)
				} else {
					err = registerOp(ctx, cl, bucket, w, seq, registers[r.IntN(len(registers))], r, hist)
				}
				if err != nil {
					time.Sleep(100 * time.Millisecond)
				}
			}
		}()
	}
	stopLoad := func() {
		select {
		case <-stop:
		default:
			close(stop)
		}
		wg.Wait()
	}
	defer stopLoad()

	rb := &admin.Client{Endpoint: tg.admin, Token: tg.g1.AdminToken}
	groups := map[string]*testutil.Cluster{"g1": tg.g1, "g2": tg.g2}
	r := rand.New(rand.NewPCG(42, 42))
	for cycle := range cycles {
		time.Sleep(time.Second) // load before the move
		drain := cycle%2 == 0
		if _, err := rb.DrainGroup(ctx, "g2", drain); err != nil {
			t.Fatalf("cycle %d: drain g2 %v: %v", cycle, drain, err)
		}
		// Wait for a move to be under way, then kill at a random moment.
		var moving admin.ClusterStatus
		for {
			s, err := tg.status(ctx)
			if err == nil && len(s.Moves) > 0 {
				moving = s
				break
			}
			if ctx.Err() != nil {
				t.Fatalf("cycle %d: no move started: %v", cycle, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
		time.Sleep(time.Duration(r.IntN(300)) * time.Millisecond)
		mv := moving.Moves[0]
		// The source's leader (g2's, then g1's), the destination's (g1's),
		// a router, in turn.
		switch victim := cycle % 4; victim {
		case 0, 1, 2:
			name := mv.From
			if victim == 2 {
				name = mv.To
			}
			c := groups[name]
			leader, err := c.Leader(ctx)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("cycle %d: moving %s -> %s; kill -9 %s, the leader of %s", cycle, mv.From, mv.To, c.Nodes[leader].ID, name)
			c.Kill(leader)
			time.Sleep(500 * time.Millisecond)
			if err := c.Start(leader); err != nil {
				t.Fatal(err)
			}
		case 3:
			addr := strings.TrimPrefix(tg.routers[0], "http://")
			t.Logf("cycle %d: moving %s -> %s; kill -9 the router %s", cycle, mv.From, mv.To, addr)
			tg.routerProcs[0].Kill()
			time.Sleep(500 * time.Millisecond)
			tg.routerProcs[0], _ = tg.g1.StartRouterAt(addr, []string{tg.g1.Nodes[0].ClusterAddr}, "--admin-address", strings.TrimPrefix(tg.admin, "http://"))
		}
		for {
			s, err := tg.status(ctx)
			if err == nil && s.Balanced {
				t.Logf("cycle %d: balanced at epoch %d: g1 %d, g2 %d partitions", cycle, s.MapEpoch, s.Groups[0].Partitions, s.Groups[1].Partitions)
				break
			}
			if ctx.Err() != nil {
				t.Fatalf("cycle %d: the cluster did not balance again: %+v, %v", cycle, s, err)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	time.Sleep(time.Second)
	stopLoad()
	t.Logf("%d writes acknowledged, %d failed; %d deleted", st.writes, st.fails, len(st.deleted))
	if st.writes == 0 {
		t.Fatal("no write was acknowledged")
	}
	// Every acknowledged object through every endpoint; past 5,000 (the
	// long variant writes 100,000), each through one of them in turn, so
	// that every endpoint still serves a share, 8 reads at a time.
	check, stopCheck := context.WithTimeout(context.Background(), 20*time.Minute)
	defer stopCheck()
	eps := tg.endpoints()
	clients := make([]*s3.Client, len(eps))
	for i, ep := range eps {
		clients[i] = retrying(tg.g1.ClientOf(ep, 30*time.Second))
	}
	every := len(st.acked)+len(st.deleted) <= 5000
	type probe struct {
		key     string
		sum     [32]byte
		deleted bool
	}
	probes := make(chan probe)
	errs := make(chan error, 8)
	var readers sync.WaitGroup
	for range 8 {
		readers.Add(1)
		go func() {
			defer readers.Done()
			i := 0
			for p := range probes {
				for j := range eps {
					if !every && j != i%len(eps) {
						continue
					}
					body, err := getObject(check, clients[j], bucket, p.key)
					switch {
					case p.deleted && !notFound(err):
						errs <- fmt.Errorf("deleted %s through %s: %v, want 404", p.key, eps[j], err)
						return
					case !p.deleted && (err != nil || sha256.Sum256(body) != p.sum):
						errs <- fmt.Errorf("%s through %s: %v (or other bytes)", p.key, eps[j], err)
						return
					}
				}
				i++
			}
		}()
	}
	go func() {
		defer close(probes)
		for key, sum := range st.acked {
			select {
			case probes <- probe{key: key, sum: sum}:
			case <-check.Done():
				return
			}
		}
		for key := range st.deleted {
			select {
			case probes <- probe{key: key, deleted: true}:
			case <-check.Done():
				return
			}
		}
	}()
	readers.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if check.Err() != nil {
		t.Fatal("the read-back did not finish within 20 minutes")
	}
	checkLinearizable(t, hist)
	// A register read that failed counts as an unknown outcome in the
	// history; a node that found a record and its bytes disagreeing is a
	// defect whatever the client saw (no disk fault is injected here).
	for _, c := range []*testutil.Cluster{tg.g1, tg.g2} {
		for _, n := range c.Nodes {
			if out := n.Output(); strings.Contains(out, "corrupt data") {
				i := strings.Index(out, "corrupt data")
				t.Fatalf("%s logged corrupt data: %s", n.ID, out[max(0, i-300):min(len(out), i+300)])
			}
		}
	}
}

// TestClusterGroupsCancel: a batch of moves to g2 is fenced, then the
// whole of g2 stops answering (SIGSTOP of its three nodes): the fenced
// partitions refuse writes and reads (503) until an operator cancels the
// moves;
// then they take writes again at once, in g1. g2 comes back (SIGCONT):
// its switch is refused, and once rebalancing resumes the partitions
// move to it; every object, the one written after the cancel included,
// reads back through every node and router. Then copies and
// DeleteObjects across the two groups (copyAcrossGroups,
// deleteAcrossGroups).
func TestClusterGroupsCancel(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	// g2, as a destination, holds each batch fenced for 4 s before its last
	// sync: the moment to freeze it.
	tg := startTwoGroups(t, nil, "B3_TEST_FENCE_PAUSE=4s")
	tg.waitBalanced(ctx, t)
	cl := root0(tg)
	const bucket = "held"
	if err := createBucket(ctx, cl, bucket); err != nil {
		t.Fatal(err)
	}
	want := map[string][]byte{}
	for i := range 300 {
		key := fmt.Sprintf("obj-%04d", i)
		body := randomBytes(uint64(i), []int{100, 3000}[i%2])
		if _, err := cl.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader(body)}); err != nil {
			t.Fatal(err)
		}
		want[key] = body
	}
	rb := &admin.Client{Endpoint: tg.admin, Token: tg.g1.AdminToken}
	signalG2 := func(sig syscall.Signal) {
		for _, n := range tg.g2.Nodes {
			if err := n.Proc.Cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
		}
	}
	defer signalG2(syscall.SIGCONT)
	// Drain g2, then undrain it: a batch moves from g1 to g2; freeze g2
	// once the batch is fenced. The freeze can miss (the batch switched
	// first): then again.
	var fenced []admin.ClusterMove
	for attempt := 0; fenced == nil; attempt++ {
		if attempt == 8 {
			t.Fatal("no attempt froze g2 between the fence and the switch")
		}
		if _, err := rb.DrainGroup(ctx, "g2", true); err != nil {
			t.Fatal(err)
		}
		waitStatus(ctx, t, tg, "g2 drained", func(s admin.ClusterStatus) bool { return s.Balanced && s.Groups[1].Partitions == 0 })
		if _, err := rb.DrainGroup(ctx, "g2", false); err != nil {
			t.Fatal(err)
		}
		waitStatus(ctx, t, tg, "a fenced move", func(s admin.ClusterStatus) bool {
			return s.Balanced || len(s.Moves) > 0 && s.Moves[0].Fenced
		})
		signalG2(syscall.SIGSTOP)
		// A switch g2 asked for just before it froze (its pause is over)
		// still commits in g1: look once such a change reached the status.
		time.Sleep(time.Second)
		s, err := tg.status(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(s.Moves) > 0 && s.Moves[0].Fenced && s.Moves[0].To == "g2" {
			fenced = s.Moves
			break
		}
		t.Logf("attempt %d: the batch switched before g2 froze", attempt)
		signalG2(syscall.SIGCONT)
	}
	moving := map[int]bool{}
	for _, mv := range fenced {
		moving[mv.Partition] = true
	}
	var key string
	for i := 0; key == ""; i++ {
		if k := fmt.Sprintf("late-%d", i); moving[partition.Of(bucket, k, 1024)] {
			key = k
		}
	}
	body := randomBytes(99, 5000)
	put := func() error {
		_, err := cl.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader(body)},
			func(o *s3.Options) { o.RetryMaxAttempts = 1 })
		return err
	}
	if err := put(); testutil.APICode(err) != "SlowDown" {
		t.Fatalf("a write of a fenced partition with its destination frozen: %v, want 503 SlowDown", err)
	}
	// Reads too: the destination may have switched and taken writes.
	var held string
	for k := range want {
		if moving[partition.Of(bucket, k, 1024)] {
			held = k
			break
		}
	}
	get := func() error {
		_, err := cl.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(held)}, func(o *s3.Options) { o.RetryMaxAttempts = 1 })
		return err
	}
	if held == "" {
		t.Fatal("no object in the fenced partitions")
	}
	if err := get(); testutil.APICode(err) != "SlowDown" {
		t.Fatalf("a read of a fenced partition: %v, want 503 SlowDown", err)
	}
	// The metrics of a g1 node say so too.
	if v := mustMetric(t, tg.g1, 0, `b3_cluster_moving_partitions{fenced="true",from="g1",to="g2"}`); int(v) != len(fenced) {
		t.Fatalf("b3_cluster_moving_partitions fenced g1 -> g2: %v, want %d", v, len(fenced))
	}
	st, err := rb.CancelMoves(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Moves) != 0 || !st.Paused {
		t.Fatalf("after cancel: %d moves, paused %v; want none, paused", len(st.Moves), st.Paused)
	}
	// g1's leader takes the write once it knows the map: at once, since
	// the map is in its own log.
	if err := put(); err != nil {
		t.Fatalf("a write of a cancelled move's partition: %v", err)
	}
	if err := get(); err != nil {
		t.Fatalf("a read of a cancelled move's partition: %v", err)
	}
	want[key] = body
	signalG2(syscall.SIGCONT)
	if _, err := rb.SetRebalance(ctx, false); err != nil {
		t.Fatal(err)
	}
	st = waitStatus(ctx, t, tg, "balanced again", func(s admin.ClusterStatus) bool {
		return s.Balanced && s.Groups[1].Partitions > 0
	})
	// Every g2 member knows the map the status shows (within its poll);
	// g2's leader received partitions and copied records.
	for i := range tg.g2.Nodes {
		const series = `b3_cluster_group_partitions{group="g2"}`
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			if v := mustMetric(t, tg.g2, i, series); int(v) == st.Groups[1].Partitions {
				break
			} else if time.Now().After(deadline) {
				t.Fatalf("%s on %s: %v, want %d", series, tg.g2.Nodes[i].ID, v, st.Groups[1].Partitions)
			}
		}
	}
	var received, copied float64
	for i := range tg.g2.Nodes {
		received += mustMetric(t, tg.g2, i, "b3_cluster_partitions_received_total")
		copied += mustMetric(t, tg.g2, i, "b3_cluster_move_records_copied_total")
	}
	if received < float64(st.Groups[1].Partitions) || copied == 0 {
		t.Fatalf("g2's members received %v partitions and copied %v records; want at least %d partitions and some records", received, copied, st.Groups[1].Partitions)
	}
	readsBackEverywhere(ctx, t, tg, bucket, want)
	copyAcrossGroups(ctx, t, tg, bucket, want)
	postAcrossGroups(ctx, t, tg, bucket)
	deleteAcrossGroups(ctx, t, tg, bucket, want)
	// The admin API's bucket list counts every group's objects, from a
	// member of either group: 301 written, 3 copies, 200 deleted.
	for _, c := range []*testutil.Cluster{tg.g1, tg.g2} {
		bs, err := (&admin.Client{Endpoint: "http://" + c.Nodes[1].AdminAddr, Token: c.AdminToken}).Buckets(ctx)
		if err != nil {
			t.Fatal(err)
		}
		i := slices.IndexFunc(bs, func(b admin.Bucket) bool { return b.Name == bucket })
		if i < 0 || bs[i].Objects != int64(len(want)+3-200) {
			t.Fatalf("b3 admin buckets on %s: %+v, want %s with %d objects", c.Nodes[1].ID, bs, bucket, len(want)+3-200)
		}
	}
}

// copyAcrossGroups: a copy runs on the destination key's group and reads
// its source from the source key's group: CopyObject and UploadPartCopy
// (a range) from a key of the other group succeed with no retry and read
// back through every node and router; a copy-source precondition is
// judged on the source's record, and a missing source is NoSuchKey.
func copyAcrossGroups(ctx context.Context, t *testing.T, tg *twoGroups, bucket string, objects map[string][]byte) {
	owners := ownersOf(t, tg)
	ownerOf := func(k string) string { return owners[partition.Of(bucket, k, len(owners))] }
	var src, dst [2]string // by group: a source key, a free destination key
	for k := range objects {
		if i := slices.Index([]string{"g1", "g2"}, ownerOf(k)); i >= 0 && src[i] == "" && len(objects[k]) >= 3000 {
			src[i] = k
		}
	}
	for i := 0; dst[0] == "" || dst[1] == ""; i++ {
		k := fmt.Sprintf("copy-%d", i)
		if g := slices.Index([]string{"g1", "g2"}, ownerOf(k)); dst[g] == "" {
			dst[g] = k
		}
	}
	if src[0] == "" || src[1] == "" {
		t.Fatalf("no source key in each group: %q", src)
	}
	noRetry := func(o *s3.Options) { o.RetryMaxAttempts = 1 }
	cl := tg.g1.ClientOf(tg.routers[0], 30*time.Second)
	copied := map[string][]byte{}
	for i := range 2 {
		from, to := src[i], dst[1-i] // a key of one group to a key of the other
		out, err := cl.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String(bucket), Key: aws.String(to),
			CopySource: aws.String(bucket + "/" + from)}, noRetry)
		if err != nil {
			t.Fatalf("copy %s (%s) to %s (%s): %v", from, ownerOf(from), to, ownerOf(to), err)
		}
		if got, want := aws.ToString(out.CopyObjectResult.ETag), fmt.Sprintf("\"%x\"", md5.Sum(objects[from])); got != want {
			t.Fatalf("copy %s to %s: ETag %s, want %s", from, to, got, want)
		}
		copied[to] = objects[from]
		_, err = cl.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String(bucket), Key: aws.String(to + "-no"),
			CopySource: aws.String(bucket + "/" + from), CopySourceIfMatch: aws.String(`"0123"`)}, noRetry)
		if testutil.APICode(err) != "PreconditionFailed" {
			t.Fatalf("copy of %s with a wrong x-amz-copy-source-if-match: %v, want PreconditionFailed", from, err)
		}
	}
	var missing string
	for i := 0; missing == ""; i++ {
		if k := fmt.Sprintf("none-%d", i); ownerOf(k) != ownerOf(dst[0]) {
			missing = k
		}
	}
	if _, err := cl.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String(bucket), Key: aws.String(dst[0] + "-no"),
		CopySource: aws.String(bucket + "/" + missing)}, noRetry); testutil.APICode(err) != "NoSuchKey" {
		t.Fatalf("copy of a missing key of the other group: %v, want NoSuchKey", err)
	}
	// UploadPartCopy of a range of a key of g2 into an upload to a key of g1.
	up, err := cl.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String(bucket), Key: aws.String(dst[0] + "-parts")})
	if err != nil {
		t.Fatal(err)
	}
	part, err := cl.UploadPartCopy(ctx, &s3.UploadPartCopyInput{Bucket: aws.String(bucket), Key: up.Key, UploadId: up.UploadId, PartNumber: aws.Int32(1),
		CopySource: aws.String(bucket + "/" + src[1]), CopySourceRange: aws.String("bytes=100-2099")}, noRetry)
	if err != nil {
		t.Fatalf("UploadPartCopy from %s (%s) into %s (%s): %v", src[1], ownerOf(src[1]), *up.Key, ownerOf(*up.Key), err)
	}
	if _, err := cl.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: aws.String(bucket), Key: up.Key, UploadId: up.UploadId,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: []types.CompletedPart{{ETag: part.CopyPartResult.ETag, PartNumber: aws.Int32(1)}}}}); err != nil {
		t.Fatal(err)
	}
	copied[*up.Key] = objects[src[1]][100:2100]
	readsBackEverywhere(ctx, t, tg, bucket, copied)
}

// postAcrossGroups: a browser form upload (POST Object) names its key in
// the form; through a router and through a node of each group it lands in
// the key's group — ${filename} replaced — and reads back everywhere.
func postAcrossGroups(ctx context.Context, t *testing.T, tg *twoGroups, bucket string) {
	owners := ownersOf(t, tg)
	ownerOf := func(k string) string { return owners[partition.Of(bucket, k, len(owners))] }
	ak, sk := tg.g1.Keys()
	posted := map[string][]byte{}
	groups := map[string]int{}
	endpoints := []string{tg.routers[0], tg.g1.Nodes[2].Endpoint(), tg.g2.Nodes[2].Endpoint()}
	for i := range 12 {
		ep := endpoints[i%len(endpoints)]
		key, file := fmt.Sprintf("form-%d-${filename}", i), fmt.Sprintf("f%d.bin", i)
		stored := strings.ReplaceAll(key, "${filename}", file)
		body := randomBytes(uint64(1000+i), 2000+i)
		status, answer, err := testutil.PostForm(ctx, ep, ak, sk, bucket, fmt.Sprintf("form-%d-", i), key, file, body)
		if err != nil || status != http.StatusNoContent {
			t.Fatalf("POST Object %s (group %s) through %s: %d %s %v", stored, ownerOf(stored), ep, status, answer, err)
		}
		posted[stored] = body
		groups[ownerOf(stored)]++
	}
	if groups["g1"] == 0 || groups["g2"] == 0 {
		t.Fatalf("the form uploads' keys are all of one group: %v", groups)
	}
	readsBackEverywhere(ctx, t, tg, bucket, posted)
	for k := range posted {
		if _, err := retrying(tg.g1.ClientOf(tg.routers[0], 30*time.Second)).DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: aws.String(k)}); err != nil {
			t.Fatal(err)
		}
	}
}

// readsBackEverywhere checks that every object of want reads back, the
// same bytes, through every node and router.
func readsBackEverywhere(ctx context.Context, t *testing.T, tg *twoGroups, bucket string, want map[string][]byte) {
	t.Helper()
	for _, ep := range tg.endpoints() {
		c := retrying(tg.g1.ClientOf(ep, 30*time.Second))
		for k, b := range want {
			got, err := getObject(ctx, c, bucket, k)
			if err != nil || !bytes.Equal(got, b) {
				t.Fatalf("%s through %s: %v (or other bytes)", k, ep, err)
			}
		}
	}
}

// deleteAcrossGroups: DeleteObjects names its keys in the body and runs
// on g1; keys of both groups are deleted in one call, with no error and
// no retry, and are gone through every node and router; in a versioned
// bucket each gets a delete marker, and a version deleted by its ID is
// gone for good.
func deleteAcrossGroups(ctx context.Context, t *testing.T, tg *twoGroups, bucket string, objects map[string][]byte) {
	noRetry := func(o *s3.Options) { o.RetryMaxAttempts = 1 }
	cl := tg.g1.ClientOf(tg.routers[1], 30*time.Second)
	var ids []types.ObjectIdentifier
	groups := map[string]int{}
	owners := ownersOf(t, tg)
	for k := range objects {
		if len(ids) == 200 {
			break
		}
		ids = append(ids, types.ObjectIdentifier{Key: aws.String(k)})
		groups[owners[partition.Of(bucket, k, len(owners))]]++
	}
	if groups["g1"] == 0 || groups["g2"] == 0 {
		t.Fatalf("the keys to delete are all of one group: %v", groups)
	}
	out, err := cl.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: aws.String(bucket), Delete: &types.Delete{Objects: ids}}, noRetry)
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Errors) != 0 || len(out.Deleted) != len(ids) {
		t.Fatalf("DeleteObjects of %d keys (%v by group): %d deleted, errors %+v", len(ids), groups, len(out.Deleted), out.Errors[:min(3, len(out.Errors))])
	}
	for _, ep := range tg.endpoints() {
		c := retrying(tg.g1.ClientOf(ep, 30*time.Second))
		for _, id := range ids {
			if _, err := getObject(ctx, c, bucket, *id.Key); !notFound(err) {
				t.Fatalf("deleted %s through %s: %v, want 404", *id.Key, ep, err)
			}
		}
	}

	const versioned = "held-versions"
	admin0 := retrying(cl)
	if err := createBucket(ctx, admin0, versioned); err != nil {
		t.Fatal(err)
	}
	if _, err := admin0.PutBucketVersioning(ctx, &s3.PutBucketVersioningInput{Bucket: aws.String(versioned),
		VersioningConfiguration: &types.VersioningConfiguration{Status: types.BucketVersioningStatusEnabled}}); err != nil {
		t.Fatal(err)
	}
	versions := map[string]string{}
	groups = map[string]int{}
	var keys []string
	for i := 0; len(keys) < 40; i++ {
		k := fmt.Sprintf("v-%d", i)
		put, err := admin0.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(versioned), Key: aws.String(k), Body: bytes.NewReader([]byte(k))})
		if err != nil {
			t.Fatal(err)
		}
		versions[k] = aws.ToString(put.VersionId)
		keys = append(keys, k)
		groups[owners[partition.Of(versioned, k, len(owners))]]++
	}
	if groups["g1"] == 0 || groups["g2"] == 0 {
		t.Fatalf("the versioned keys are all of one group: %v", groups)
	}
	ids = nil
	for i, k := range keys {
		id := types.ObjectIdentifier{Key: aws.String(k)}
		if i%2 == 1 {
			id.VersionId = aws.String(versions[k]) // this version, for good
		}
		ids = append(ids, id)
	}
	out, err = cl.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: aws.String(versioned), Delete: &types.Delete{Objects: ids}}, noRetry)
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Errors) != 0 || len(out.Deleted) != len(ids) {
		t.Fatalf("versioned DeleteObjects: %d deleted, errors %+v", len(out.Deleted), out.Errors[:min(3, len(out.Errors))])
	}
	for _, d := range out.Deleted {
		k := aws.ToString(d.Key)
		byID := d.VersionId != nil && aws.ToString(d.VersionId) == versions[k] && !aws.ToBool(d.DeleteMarker)
		marker := aws.ToBool(d.DeleteMarker) && aws.ToString(d.DeleteMarkerVersionId) != ""
		if !byID && !marker {
			t.Fatalf("deleted %s: %+v, want its version removed or a delete marker", k, d)
		}
	}
	lv, err := admin0.ListObjectVersions(ctx, &s3.ListObjectVersionsInput{Bucket: aws.String(versioned)})
	if err != nil {
		t.Fatal(err)
	}
	if len(lv.Versions) != len(keys)/2 || len(lv.DeleteMarkers) != len(keys)/2 {
		t.Fatalf("after deleting half the keys and half the versions: %d versions, %d delete markers; want %d of each",
			len(lv.Versions), len(lv.DeleteMarkers), len(keys)/2)
	}
	for _, v := range lv.Versions {
		if k := aws.ToString(v.Key); aws.ToString(v.VersionId) != versions[k] || slices.Index(keys, k)%2 != 0 {
			t.Fatalf("version %s of %s listed: deleted by its ID, or not the one written", aws.ToString(v.VersionId), k)
		}
	}
}

// ownersOf is the owner of each partition by the map a member of g2
// keeps (DATA/cluster-map.json, a moment behind g1's at most).
func ownersOf(t *testing.T, tg *twoGroups) []string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(tg.g2.Nodes[0].Data, "cluster-map.json"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := partition.Decode(raw)
	if err != nil {
		t.Fatal(err)
	}
	return m.Owners
}

// waitStatus waits until the cluster's status meets ok, and returns it.
func waitStatus(ctx context.Context, t *testing.T, tg *twoGroups, what string, ok func(admin.ClusterStatus) bool) admin.ClusterStatus {
	t.Helper()
	for {
		s, err := tg.status(ctx)
		if err == nil && len(s.Groups) == 2 && ok(s) {
			return s
		}
		if ctx.Err() != nil {
			t.Fatalf("waiting for %s: %+v, %v", what, s, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestClusterGroupsVersionAfterMove: a key's versions after a move are
// numbered by the new group's terms, which may be below the old group's:
// a new version must still be above the key's current one, and the bytes
// of a large object (staged, not inline) are written under that version
// from the start — the segments' record owner carries it, and a read (or
// vacuum) of a record whose version differs from its bytes' finds them
// corrupt. g2's term is raised by two leader kills, keys written there
// (64 KiB, versioned bucket) move to g1 with a drain, and are written
// again through the router: every key reads back its new bytes through
// every endpoint, and lists the new version as its latest.
func TestClusterGroupsVersionAfterMove(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	tg := startTwoGroups(t, nil)
	tg.waitBalanced(ctx, t)
	for range 2 {
		l, err := tg.g2.Leader(ctx)
		if err != nil {
			t.Fatal(err)
		}
		tg.g2.Kill(l)
		if err := tg.g2.Start(l); err != nil {
			t.Fatal(err)
		}
	}
	cl := root0(tg)
	const bucket = "renumbered"
	if err := createBucket(ctx, cl, bucket); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.PutBucketVersioning(ctx, &s3.PutBucketVersioningInput{Bucket: aws.String(bucket),
		VersioningConfiguration: &types.VersioningConfiguration{Status: types.BucketVersioningStatusEnabled}}); err != nil {
		t.Fatal(err)
	}
	owners := ownersOf(t, tg)
	var keys []string
	for i := 0; len(keys) < 12; i++ {
		if k := fmt.Sprintf("big-%d", i); owners[partition.Of(bucket, k, len(owners))] == "g2" {
			keys = append(keys, k)
		}
	}
	put := func(round int) map[string][]byte {
		out := map[string][]byte{}
		for i, k := range keys {
			body := randomBytes(uint64(round*100+i), 64<<10)
			if _, err := cl.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(k), Body: bytes.NewReader(body)}); err != nil {
				t.Fatalf("round %d: put %s: %v", round, k, err)
			}
			out[k] = body
		}
		return out
	}
	put(0) // in g2, numbered by its raised term
	rb := &admin.Client{Endpoint: tg.admin, Token: tg.g1.AdminToken}
	if _, err := rb.DrainGroup(ctx, "g2", true); err != nil {
		t.Fatal(err)
	}
	waitStatus(ctx, t, tg, "g2 drained", func(s admin.ClusterStatus) bool { return s.Balanced && s.Groups[1].Partitions == 0 })
	want := put(1) // in g1
	readsBackEverywhere(ctx, t, tg, bucket, want)
	lv, err := cl.ListObjectVersions(ctx, &s3.ListObjectVersionsInput{Bucket: aws.String(bucket)})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		var vs []types.ObjectVersion
		for _, v := range lv.Versions {
			if aws.ToString(v.Key) == k {
				vs = append(vs, v)
			}
		}
		if len(vs) != 2 || !aws.ToBool(vs[0].IsLatest) || aws.ToString(vs[0].ETag) != fmt.Sprintf("\"%x\"", md5.Sum(want[k])) {
			t.Fatalf("%s: versions %+v; want 2, the newest first and latest, of the second write's bytes", k, vs)
		}
	}
}
