package cluster_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/b3-storage/b3/internal/admin"
	"github.com/b3-storage/b3/internal/testutil"
)

// TestNodeServerFlags: `b3 node` takes b3 server's storage and operation
// settings, from flags and from a --config YAML file. Each node's
// --meta-dir and --data-dir hold its store (nothing under --data/meta or
// --data/segments); --domain serves virtual-host-style requests through
// any node; --access-log logs the requests the leader serves; the file's
// regions are accepted as a LocationConstraint (others are not), its
// cache-size is the configured size `b3 admin settings` shows and `b3
// admin cache set` changes on every node (no 501), the leader's cache
// serves repeated reads; its bucket-metrics give per-bucket gauges on
// every node, counted in the node's own store; its legacy-compatible
// new-bucket defaults are in the bucket record the leader builds, so every
// replica holds them: the next leader answers the same.
func TestNodeServerFlags(t *testing.T) {
	root := t.TempDir()
	conf := filepath.Join(root, "node.yaml")
	if err := os.WriteFile(conf, []byte("cache-size: 8MiB\nregions: [eu-west-1]\nvacuum-threshold: 0.3\nbucket-metrics: 10\nbucket-metrics-interval: 10s\n"+
		"default-object-ownership: ObjectWriter\ndefault-block-public-access: false\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := func(i int, kind string) string { return filepath.Join(root, fmt.Sprintf("n%d-%s", i+1, kind)) }
	c := testutil.StartCluster(t, testutil.ClusterOptions{
		Args: []string{"--domain", "s3.b3.test", "--access-log", "--config", conf},
		NodeArgs: func(i int, _ *testutil.ClusterNode) []string {
			return []string{"--meta-dir", dir(i, "meta"), "--data-dir", dir(i, "segments")}
		},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	// Regions from the file.
	cl := c.Client(1, 10*time.Second)
	if _, err := cl.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("photos"),
		CreateBucketConfiguration: &types.CreateBucketConfiguration{LocationConstraint: "eu-west-1"}}); err != nil {
		t.Fatalf("a LocationConstraint of the file's regions: %v", err)
	}
	for i, n := range c.Nodes {
		loc, err := c.Client(i, 10*time.Second).GetBucketLocation(ctx, &s3.GetBucketLocationInput{Bucket: aws.String("photos")})
		if err != nil || loc.LocationConstraint != "eu-west-1" {
			t.Fatalf("GetBucketLocation through %s: %q, %v; want eu-west-1", n.ID, loc.LocationConstraint, err)
		}
	}
	if _, err := cl.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("other"),
		CreateBucketConfiguration: &types.CreateBucketConfiguration{LocationConstraint: "ap-south-1"}}); testutil.APICode(err) != "InvalidLocationConstraint" {
		t.Fatalf("a LocationConstraint of no configured region: %v, want InvalidLocationConstraint", err)
	}

	// A virtual-host-style PUT through each node (its Host names the
	// bucket: bucket.s3.b3.test), read back path-style.
	ak, sk := c.Keys()
	body := bytes.Repeat([]byte("b3 node flags "), 5000) // 70 KB: in the segments, not inline
	for i, n := range c.Nodes {
		_, port, _ := net.SplitHostPort(n.S3Addr)
		vh := testutil.S3ClientDial("http://s3.b3.test:"+port, ak, sk, 10*time.Second, func(ctx context.Context, network, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, network, n.S3Addr)
		})
		key := fmt.Sprintf("vhost-%d", i)
		if _, err := vh.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("photos"), Key: aws.String(key), Body: bytes.NewReader(body)},
			func(o *s3.Options) { o.UsePathStyle = false }); err != nil {
			t.Fatalf("virtual-host-style PUT through %s: %v", n.ID, err)
		}
		got, err := cl.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("photos"), Key: aws.String(key)})
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(got.Body)
		got.Body.Close()
		if err != nil || !bytes.Equal(data, body) {
			t.Fatalf("%s read back: %d bytes, %v", key, len(data), err)
		}
	}
	if err := c.WaitConverged(ctx); err != nil {
		t.Fatal(err)
	}

	// --meta-dir and --data-dir hold each node's store.
	for i, n := range c.Nodes {
		var segBytes int64
		_ = filepath.Walk(dir(i, "segments"), func(_ string, fi os.FileInfo, err error) error {
			if err == nil && fi.Mode().IsRegular() {
				segBytes += fi.Size()
			}
			return nil
		})
		if segBytes < int64(3*len(body)) {
			t.Errorf("%s: %d bytes under --data-dir %s, want the three objects' %d", n.ID, segBytes, dir(i, "segments"), 3*len(body))
		}
		if entries, err := os.ReadDir(dir(i, "meta")); err != nil || len(entries) == 0 {
			t.Errorf("%s: --meta-dir %s: %d entries, %v", n.ID, dir(i, "meta"), len(entries), err)
		}
		for _, sub := range []string{"meta", "segments"} {
			if _, err := os.Stat(filepath.Join(n.Data, sub)); !os.IsNotExist(err) {
				t.Errorf("%s: %s exists under --data (%v), though --meta-dir and --data-dir are elsewhere", n.ID, sub, err)
			}
		}
	}

	// --access-log: the leader logged the PUTs it served, forwarded ones
	// included.
	l, err := c.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if out := c.Nodes[l].Proc.Output.String(); strings.Count(out, "msg=request") < 3 || !strings.Contains(out, "op=PutObject") {
		t.Errorf("the leader %s logged no access lines with --access-log:\n%s", c.Nodes[l].ID, c.Nodes[l].Proc.Output.Tail(4096))
	}

	// The cache: configured from the file, set at run time on every node.
	for i, n := range c.Nodes {
		if _, err := c.AdminCLI(ctx, i, "cache", "set", "--size", "16MiB"); err != nil {
			t.Fatalf("b3 admin cache set on %s: %v", n.ID, err)
		}
		out, err := c.AdminCLI(ctx, i, "settings", "--json")
		if err != nil {
			t.Fatal(err)
		}
		var rows []admin.Setting
		if err := json.Unmarshal(out, &rows); err != nil {
			t.Fatal(err)
		}
		found := false
		for _, r := range rows {
			if r.Name == "cache-size" {
				found = true
				if r.Value != strconv.Itoa(16<<20) || r.Configured != strconv.Itoa(8<<20) || !r.Overridden {
					t.Errorf("%s: %+v, want 16MiB set at run time over the file's 8MiB", n.ID, r)
				}
			}
		}
		if !found {
			t.Errorf("%s: b3 admin settings has no cache-size: %s", n.ID, out)
		}
	}
	for range 2 {
		got, err := c.Client(l, 10*time.Second).GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("photos"), Key: aws.String("vhost-0")})
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, got.Body)
		got.Body.Close()
	}
	leaderAdmin := &admin.Client{Endpoint: "http://" + c.Nodes[l].AdminAddr, Token: c.AdminToken}
	if st, err := leaderAdmin.Cache(ctx); err != nil || st.Hits == 0 || st.MaxBytes != 16<<20 {
		t.Errorf("the leader's cache after two GETs: %+v, %v; want a hit, 16MiB", st, err)
	}

	// Per-bucket gauges from the file's bucket-metrics, on every node.
	for _, n := range c.Nodes {
		want := `b3_bucket_objects{bucket="photos"} 3`
		var lines []string
		for deadline := time.Now().Add(45 * time.Second); ; time.Sleep(200 * time.Millisecond) {
			resp, err := http.Get("http://" + n.AdminAddr + "/metrics")
			if err != nil {
				t.Fatal(err)
			}
			data, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if strings.Contains(string(data), want) {
				break
			}
			lines = lines[:0]
			for line := range strings.SplitSeq(string(data), "\n") {
				if strings.HasPrefix(line, "b3_bucket") {
					lines = append(lines, line)
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s /metrics has no %s with bucket-metrics in the config file: %q", n.ID, want, lines)
			}
		}
	}

	// The new-bucket defaults of the file, in photos' replicated record:
	// the leader's successor answers them from its own store.
	checkLegacy := func(i int) {
		t.Helper()
		nc := c.Client(i, 10*time.Second)
		oc, err := nc.GetBucketOwnershipControls(ctx, &s3.GetBucketOwnershipControlsInput{Bucket: aws.String("photos")})
		if err != nil || oc.OwnershipControls.Rules[0].ObjectOwnership != types.ObjectOwnershipObjectWriter {
			t.Fatalf("photos' ownership through %s: %+v, %v; want ObjectWriter", c.Nodes[i].ID, oc, err)
		}
		_, err = nc.GetPublicAccessBlock(ctx, &s3.GetPublicAccessBlockInput{Bucket: aws.String("photos")})
		if code := testutil.APICode(err); code != "NoSuchPublicAccessBlockConfiguration" {
			t.Fatalf("photos' public access block through %s: %q (%v), want none", c.Nodes[i].ID, code, err)
		}
	}
	checkLegacy(l)
	c.Kill(l)
	next, err := c.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	checkLegacy(next)
}
