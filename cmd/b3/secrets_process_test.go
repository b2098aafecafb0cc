package main

import (
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/b3-storage/b3/internal/testutil"
)

// TestShortSecretsRefused: b3 server and b3 node refuse a root secret
// key, an admin token or a cluster secret shorter than 16 characters,
// whichever way it arrives (flag, environment, config file, file), and
// never print the refused value.
func TestShortSecretsRefused(t *testing.T) {
	bin := testutil.Binary(t)
	dir := t.TempDir()
	write := func(name, content string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	shortFile := write("short", "Sh0rtS3cret\n")
	yaml := write("b3.yaml", "secret-key: Sh0rtS3cret\naccess-key: ROOTKEY\n")
	tokenDir := filepath.Join(dir, "token")
	if err := os.MkdirAll(tokenDir, 0o700); err != nil {
		t.Fatal(err)
	}
	write("token/admin-token", "Sh0rtS3cret\n")
	b3 := func(env []string, args ...string) (string, int) {
		t.Helper()
		// A refused start exits at once; one that is not refused is
		// stopped (and fails the case) after a while.
		return runB3(t, bin, 20*time.Second, env, args...)
	}
	server := func(data string) []string {
		return []string{"server", "--data", filepath.Join(dir, data), "--address", testutil.FreeAddr(t),
			"--admin-address", testutil.FreeAddr(t), "--console-address", ""}
	}
	node := func(data string) []string {
		addr := testutil.FreeAddr(t)
		return []string{"node", "--id", "n1", "--data", filepath.Join(dir, data), "--address", testutil.FreeAddr(t),
			"--cluster-address", addr, "--peers", "n1=" + addr, "--console-address", ""}
	}
	const long = "a-long-enough-secret-0000"
	for _, tc := range []struct {
		name string
		env  []string
		args []string
		want string
	}{
		{"server flag", nil, append(server("d1"), "--access-key", "ROOTKEY", "--secret-key", "Sh0rtS3cret"), "root secret key has 11 characters, want at least 16"},
		{"server env", []string{"B3_ACCESS_KEY=ROOTKEY", "B3_SECRET_KEY=Sh0rtS3cret"}, server("d2"), "root secret key has 11 characters"},
		{"server config", nil, append(server("d3"), "--config", yaml), "root secret key has 11 characters"},
		{"server file", []string{"B3_ACCESS_KEY=ROOTKEY"}, append(server("d4"), "--secret-key-file", shortFile), "setting secret-key-file (from flag --secret-key-file): the root secret key in " + shortFile + " has 11 characters"},
		{"server token flag", nil, append(server("d5"), "--admin-token", "Sh0rtS3cret"), "admin token has 11 characters"},
		{"server token env", []string{"B3_ADMIN_TOKEN=Sh0rtS3cret"}, server("d6"), "admin token has 11 characters"},
		{"server token file", nil, server("token"), "admin token in " + filepath.Join(dir, "token", "admin-token") + " has 11 characters"},
		{"node secret key", []string{"B3_CLUSTER_SECRET=" + long, "B3_ACCESS_KEY=ROOTKEY", "B3_SECRET_KEY=Sh0rtS3cret"}, node("n1"), "(from environment variable B3_SECRET_KEY): the root secret key has 11 characters, want at least 16"},
		{"node token", []string{"B3_CLUSTER_SECRET=" + long, "B3_ADMIN_TOKEN=Sh0rtS3cret"}, node("n2"), "(from environment variable B3_ADMIN_TOKEN): the admin token has 11 characters"},
		{"node cluster secret env", []string{"B3_CLUSTER_SECRET=Sh0rtS3cret"}, node("n3"), "cluster secret has 11 characters, want at least 16"},
		{"node cluster secret file", nil, append(node("n4"), "--cluster-secret-file", shortFile), "cluster secret has 11 characters"},
	} {
		out, code := b3(tc.env, tc.args...)
		if code == 0 || !strings.Contains(out, tc.want) {
			t.Errorf("%s: exit %d, %s; want %q", tc.name, code, out, tc.want)
		}
		if strings.Contains(out, "Sh0rtS3cret") {
			t.Errorf("%s: the refused secret is printed: %s", tc.name, out)
		}
	}
	out, code := b3(nil, append(server("d7"), "--secret-key-file", shortFile, "--secret-key", long, "--access-key", "ROOTKEY")...)
	if code != 2 || !strings.Contains(out, "not both") {
		t.Errorf("--secret-key and --secret-key-file: exit %d, %s", code, out)
	}
}

// TestSecretKeyFlagWarns: --secret-key on the command line works but
// warns (every local user reads it in /proc/PID/cmdline);
// --secret-key-file is the quiet way, and its secret is the root's.
func TestSecretKeyFlagWarns(t *testing.T) {
	ctx := context.Background()
	const secret = "flag/secret/key/000000000000000000000000"
	s := testutil.StartServer(t, testutil.ServerOptions{SecretKey: secret, AccessKey: "FLAGACCESSKEY0000000",
		Env: []string{"B3_SECRET_KEY="}, Args: []string{"--access-key", "FLAGACCESSKEY0000000", "--secret-key", secret}})
	if out := s.Output(); !strings.Contains(out, "--secret-key on the command line is visible to every local user") {
		t.Errorf("no warning for --secret-key:\n%s", out)
	}
	file := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(file, []byte(secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	f := testutil.StartServer(t, testutil.ServerOptions{SecretKey: secret, AccessKey: "FILEACCESSKEY0000000",
		Env: []string{"B3_SECRET_KEY="}, Args: []string{"--secret-key-file", file}})
	if _, err := f.Client(10*time.Second).ListBuckets(ctx, &s3.ListBucketsInput{}); err != nil {
		t.Errorf("root from --secret-key-file: %v", err)
	}
	if out := f.Output(); strings.Contains(out, "visible to every local user") || strings.Contains(out, secret) {
		t.Errorf("--secret-key-file: a warning, or the secret printed:\n%s", out)
	}
	// A secret from the environment is not on the command line: b3 node
	// and b3 router, which read B3_* variables into their flags, do not
	// warn of it (they run until the timeout stops them: -1).
	bin := testutil.Binary(t)
	env := []string{"B3_ADMIN_TOKEN=env-admin-token-0000000", "B3_CLUSTER_SECRET=env-cluster-secret-000"}
	out, code := runB3(t, bin, 2*time.Second, env, "router", "--address", testutil.FreeAddr(t),
		"--admin-address", testutil.FreeAddr(t), "--cluster-seeds", testutil.FreeAddr(t))
	if code != -1 || !strings.Contains(out, "b3 router") || strings.Contains(out, "visible to every local user") {
		t.Errorf("b3 router with B3_ADMIN_TOKEN: exit %d, a warning of a flag, or no banner:\n%s", code, out)
	}
	out, code = runB3(t, bin, 2*time.Second, env, "router", "--address", testutil.FreeAddr(t),
		"--admin-address", testutil.FreeAddr(t), "--cluster-seeds", testutil.FreeAddr(t), "--admin-token", "env-admin-token-0000000")
	if code != -1 || !strings.Contains(out, "--admin-token on the command line is visible") {
		t.Errorf("b3 router with --admin-token: exit %d, no warning:\n%s", code, out)
	}
}

// runB3 runs the b3 binary bin with args, in a bare environment plus
// env, for at most timeout (0: no bound), and returns its output and exit
// code (-1 if stopped).
func runB3(t *testing.T, bin string, timeout time.Duration, env []string, args ...string) (string, int) {
	t.Helper()
	ctx := context.Background()
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append([]string{"PATH=/usr/bin:/bin", "HOME=" + t.TempDir()}, env...)
	out, err := cmd.CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	}
	return string(out), code
}

// TestMetricsPrivate: by default /metrics names no bucket (per-bucket
// gauges are opt-in); with --metrics-token (B3_METRICS_TOKEN) it needs
// that token, or the admin token, while the health checks stay open.
func TestMetricsPrivate(t *testing.T) {
	ctx := context.Background()
	get := func(url, token string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest("GET", url, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	// The usage scan runs at start (the console samples the metrics)
	// and then every 5 minutes: a restart makes one that sees a bucket.
	withBucket := func(s *testutil.Server) {
		t.Helper()
		c := s.Client(10 * time.Second)
		if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("merger-plans-2027")}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("merger-plans-2027"), Key: aws.String("k"), Body: strings.NewReader("x")}); err != nil {
			t.Fatal(err)
		}
		if err := s.Proc.Stop(30 * time.Second); err != nil {
			t.Fatal(err)
		}
		if err := s.Start(); err != nil {
			t.Fatal(err)
		}
	}
	s := testutil.StartServer(t, testutil.ServerOptions{})
	withBucket(s)
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		code, body := get("http://"+s.AdminAddr+"/metrics", "")
		if code != http.StatusOK {
			t.Fatalf("open /metrics: %d", code)
		}
		if strings.Contains(body, "merger-plans-2027") {
			t.Fatal("/metrics names a bucket without a token, by default")
		}
		time.Sleep(200 * time.Millisecond)
	}

	const token = "metrics-token-0000000000"
	p := testutil.StartServer(t, testutil.ServerOptions{Env: []string{"B3_METRICS_TOKEN=" + token}, Args: []string{"--bucket-metrics", "10"}})
	withBucket(p)
	for _, tc := range []struct {
		token string
		code  int
	}{{"", http.StatusUnauthorized}, {"wrong-token-000000000000", http.StatusUnauthorized}, {token, http.StatusOK}, {p.AdminToken, http.StatusOK}} {
		if code, _ := get("http://"+p.AdminAddr+"/metrics", tc.token); code != tc.code {
			t.Errorf("/metrics with token %q: %d, want %d", tc.token, code, tc.code)
		}
	}
	if code, _ := get("http://"+p.AdminAddr+"/health/ready", ""); code != http.StatusOK {
		t.Errorf("/health/ready: %d", code)
	}
	testutil.WaitFor(t, "the bucket's gauges", func() bool {
		_, body := get("http://"+p.AdminAddr+"/metrics", token)
		return strings.Contains(body, `b3_bucket_bytes{bucket="merger-plans-2027"}`)
	})
}

// TestAdminUsersAddTaken: `b3 admin users add` with a taken name fails
// (exit 1) saying why, and adds no one.
func TestAdminUsersAddTaken(t *testing.T) {
	s := testutil.StartServer(t, testutil.ServerOptions{})
	run := adminProcess(t, s)
	if out, code := run("users", "add", "bob"); code != 0 {
		t.Fatalf("first bob: exit %d: %s", code, out)
	}
	out, code := run("users", "add", "Bob")
	if want := `user name "Bob" is taken by access key B3`; code != 1 || !strings.Contains(out, want) || !strings.Contains(out, "choose another name (409)") {
		t.Errorf("second bob: exit %d: %s; want 1 and %q", code, out, want)
	}
	if out, _ := run("users", "list"); strings.Count(strings.ToLower(out), "bob") != 1 {
		t.Errorf("users after the refusal:\n%s", out)
	}
}
