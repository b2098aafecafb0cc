package cluster_test

import (
	"context"
	"encoding/json"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/b3-storage/b3/internal/admin"
	"github.com/b3-storage/b3/internal/testutil"
)

// TestNodeOperations: `b3 node` runs as `b3 server` does. Its S3 API is
// served over HTTPS that aws-sdk-go-v2 verifies against a test CA (and a
// client without the CA refuses); media headers are on by default; the
// banner is a JSON line with --log-format json; a second process on the
// data directory fails naming the first one's pid; limits, vacuum and
// the object cache's size set through b3 admin outlive a restart and
// show as overridden; SIGHUP reloads the certificate without stopping
// the node; on SIGTERM /health/ready fails for the drain delay while S3
// is still served.
func TestNodeOperations(t *testing.T) {
	ca := testutil.NewCA(t)
	c := testutil.StartCluster(t, testutil.ClusterOptions{Nodes: 1, CA: ca,
		Args: []string{"--drain-delay", "3s", "--log-format", "json"}})
	ctx := context.Background()
	n := c.Nodes[0]
	if !strings.HasPrefix(n.Endpoint(), "https://") {
		t.Fatalf("endpoint %s", n.Endpoint())
	}
	cl := c.Client(0, 10*time.Second)
	if err := createBucket(ctx, cl, "media"); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("media"), Key: aws.String("live/index.m3u8"),
		Body: strings.NewReader("#EXTM3U\n")}); err != nil {
		t.Fatal(err)
	}
	head, err := cl.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("media"), Key: aws.String("live/index.m3u8")})
	if err != nil {
		t.Fatal(err)
	}
	if ct := aws.ToString(head.ContentType); ct != "application/vnd.apple.mpegurl" {
		t.Errorf("a playlist stored without a type is served as %q (media headers off?)", ct)
	}
	ak, sk := c.Keys()
	if _, err := testutil.S3Client(n.Endpoint(), ak, sk).ListBuckets(ctx, &s3.ListBucketsInput{}); err == nil ||
		!strings.Contains(err.Error(), "certificate") {
		t.Fatalf("a client without the test CA: %v", err)
	}
	out := n.Proc.Output.String()
	banner := ""
	for line := range strings.SplitSeq(out, "\n") {
		if strings.Contains(line, "b3 node n1: S3 API on") {
			banner = line
		}
	}
	var doc map[string]any
	if err := json.Unmarshal([]byte(banner), &doc); err != nil || doc["s3_endpoint"] != n.Endpoint() {
		t.Errorf("banner with --log-format json: %v %q", err, banner)
	}

	// A second process on the same data directory.
	second := exec.Command(testutil.Binary(t), c.Args(0)...)
	second.Env = []string{"B3_CLUSTER_SECRET=" + testutil.TestClusterSecret, "B3_ADMIN_TOKEN=" + c.AdminToken}
	msg, err := second.CombinedOutput()
	if want := "in use by pid " + strconv.Itoa(n.Proc.Cmd.Process.Pid); err == nil || !strings.Contains(string(msg), want) {
		t.Fatalf("a second node on the data directory: %v, %s; want %q", err, msg, want)
	}

	// Runtime settings outlive a restart.
	admin1 := func(args ...string) string {
		t.Helper()
		out, err := c.AdminCLI(ctx, 0, args...)
		if err != nil {
			t.Fatal(err)
		}
		return string(out)
	}
	admin1("limits", "set", "background-write=20MiB")
	admin1("vacuum", "stop")
	admin1("cache", "set", "--size", "32MiB") // a node has an object cache (--cache-size), resized as on b3 server
	if err := n.Proc.Stop(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	if err := c.Start(0); err != nil {
		t.Fatal(err)
	}
	var limits admin.LimitsDoc
	if err := json.Unmarshal([]byte(admin1("limits", "--json")), &limits); err != nil || limits.BackgroundWrite != 20<<20 {
		t.Fatalf("limits after a restart: %+v %v", limits, err)
	}
	var settings []admin.Setting
	if err := json.Unmarshal([]byte(admin1("settings", "--json")), &settings); err != nil || len(settings) == 0 {
		t.Fatalf("settings: %v", err)
	}
	for _, s := range settings {
		if !s.Overridden || (s.Name == "vacuum-interval" && s.Value != "0s") || (s.Name == "cache-size" && s.Value != strconv.Itoa(32<<20)) {
			t.Errorf("after a restart: %+v", s)
		}
	}

	// SIGHUP reloads the key pair; the node carries on.
	if err := n.Proc.Cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, "reload line after SIGHUP", func() bool {
		return strings.Contains(n.Proc.Output.String(), "SIGHUP: reloading TLS certificates")
	})
	if _, err := c.Client(0, 5*time.Second).ListBuckets(ctx, &s3.ListBucketsInput{}); err != nil || n.Proc.Exited() {
		t.Fatalf("after SIGHUP: %v (exited %v)", err, n.Proc.Exited())
	}

	// The drain window: /health/ready fails first, S3 still answers.
	testutil.CheckDrain(t, n.Proc, "http://"+n.AdminAddr+"/health/ready", func() error {
		_, err := c.Client(0, 5*time.Second).ListBuckets(ctx, &s3.ListBucketsInput{})
		return err
	})
}
