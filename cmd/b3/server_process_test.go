package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"io"
	"math/big"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/b3-storage/b3/internal/testutil"
)

// waitFor polls cond every 20ms for up to 30s (a bound on waiting, not
// an assertion on time).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testutil.WaitFor(t, what, cond)
}

// TestTLS serves S3 over HTTPS with a certificate from a test CA: the
// SDK (which sends checksums as trailers over HTTPS) and the aws CLI
// verify it; then the certificate is renewed under a client that keeps
// its connection: that connection carries on, new ones get the new
// certificate, after SIGHUP and after a plain file change.
func TestTLS(t *testing.T) {
	ca := testutil.NewCA(t)
	adminDir := t.TempDir()
	adminCert, adminKey := filepath.Join(adminDir, "cert.pem"), filepath.Join(adminDir, "key.pem")
	ca.Issue(t, adminCert, adminKey)
	consoleCert, consoleKey := filepath.Join(adminDir, "console-cert.pem"), filepath.Join(adminDir, "console-key.pem")
	ca.Issue(t, consoleCert, consoleKey)
	s := testutil.StartServer(t, testutil.ServerOptions{CA: ca,
		Args: []string{"--tls-check-interval", "1s", "--admin-tls-cert", adminCert, "--admin-tls-key", adminKey,
			"--console-tls-cert", consoleCert, "--console-tls-key", consoleKey}})
	ctx := context.Background()

	// The console is served over HTTPS with its own pair.
	trusting := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.Pool(), MinVersion: tls.VersionTLS12}}}
	resp, err := trusting.Get("https://" + s.ConsoleAddr + "/")
	if err != nil {
		t.Fatalf("console over https: %v", err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(page), "<html") {
		t.Fatalf("console over https: %d %.200s", resp.StatusCode, page)
	}
	if _, err := http.Get("https://" + s.ConsoleAddr + "/"); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("the console to a client without the CA: %v", err)
	}

	// The admin listener is HTTPS too: b3 admin and b3 healthcheck trust the CA.
	b3 := func(args ...string) (string, int) {
		cmd := exec.Command(testutil.Binary(t), args...)
		cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + t.TempDir()}
		out, err := cmd.CombinedOutput()
		if ee, ok := err.(*exec.ExitError); ok {
			return string(out), ee.ExitCode()
		}
		return string(out), 0
	}
	adminURL := "https://" + s.AdminAddr
	if out, code := b3("admin", "stats", "--url", adminURL, "--ca-cert", ca.File, "--token", s.AdminToken); code != 0 || !strings.Contains(out, "segments:") {
		t.Fatalf("b3 admin over https: %d %s", code, out)
	}
	if out, code := b3("admin", "stats", "--url", adminURL, "--token", s.AdminToken); code != 1 || !strings.Contains(out, "certificate") {
		t.Fatalf("b3 admin over https without the CA: %d %s", code, out)
	}
	if out, code := b3("healthcheck", "--url", adminURL+"/health/ready", "--ca-cert", ca.File); code != 0 || !strings.Contains(out, "ready") {
		t.Fatalf("b3 healthcheck over https: %d %s", code, out)
	}

	// An SDK client whose requests report the certificate of the
	// connection they went over.

	sdk := func() *s3.Client {
		ak, sk := s.Keys()
		hc := awshttp.NewBuildableClient().WithTransportOptions(func(tr *http.Transport) {
			tr.TLSClientConfig = &tls.Config{RootCAs: ca.Pool(), MinVersion: tls.VersionTLS12}
			tr.MaxConnsPerHost = 1
		})
		cfg, err := config.LoadDefaultConfig(ctx, config.WithRegion("us-east-1"), config.WithHTTPClient(hc),
			config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider(ak, sk, "")), config.WithRetryMaxAttempts(1))
		if err != nil {
			t.Fatal(err)
		}
		return s3.NewFromConfig(cfg, func(o *s3.Options) {
			o.BaseEndpoint, o.UsePathStyle = aws.String(s.Endpoint()), true
		})
	}
	serialOf := func(c *s3.Client) *big.Int {
		t.Helper()
		var raw *http.Response
		_, err := c.ListBuckets(ctx, &s3.ListBucketsInput{}, func(o *s3.Options) {
			o.HTTPClient = &recordingClient{inner: o.HTTPClient, last: &raw}
		})
		if err != nil {
			t.Fatal(err)
		}
		return raw.TLS.PeerCertificates[0].SerialNumber
	}

	kept := sdk()
	if _, err := kept.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("tls")}); err != nil {
		t.Fatal(err)
	}
	body := bytes.Repeat([]byte("t"), 100<<10)
	if _, err := kept.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("tls"), Key: aws.String("trailer"),
		Body: bytes.NewReader(body), ChecksumAlgorithm: types.ChecksumAlgorithmCrc32c}); err != nil {
		t.Fatalf("PutObject with a trailing checksum over HTTPS: %v", err)
	}
	first := serialOf(kept)

	// The aws CLI verifies the chain against the CA bundle.
	ak, sk := s.Keys()
	file := filepath.Join(t.TempDir(), "f")
	os.WriteFile(file, []byte("from the cli"), 0o600)
	awsCLI := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("/usr/bin/aws", append([]string{"--endpoint-url", s.Endpoint(), "--ca-bundle", ca.File}, args...)...)
		cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + t.TempDir(), "AWS_ACCESS_KEY_ID=" + ak, "AWS_SECRET_ACCESS_KEY=" + sk,
			"AWS_REGION=us-east-1", "AWS_EC2_METADATA_DISABLED=true", "AWS_CONFIG_FILE=/dev/null", "AWS_SHARED_CREDENTIALS_FILE=/dev/null", "AWS_PAGER="}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("aws %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	awsCLI("s3", "cp", file, "s3://tls/cli")
	if out := awsCLI("s3", "ls", "s3://tls/"); !strings.Contains(out, "cli") || !strings.Contains(out, "trailer") {
		t.Fatalf("aws s3 ls: %s", out)
	}
	if _, err := http.Get(s.Endpoint()); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("a client without the CA: %v", err)
	}

	// Renewal 1, announced with SIGHUP.
	reloads := func() int { return strings.Count(s.Output(), "TLS certificate reloaded") }
	second := ca.Issue(t, s.TLSCert, s.TLSKey)
	if err := s.Proc.Cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "reload after SIGHUP", func() bool { return reloads() >= 1 })
	if got := serialOf(kept); got.Cmp(first) != 0 {
		t.Fatalf("the kept connection changed: serial %v, want %v", got, first)
	}
	out, err := kept.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("tls"), Key: aws.String("trailer")})
	if err != nil {
		t.Fatalf("GetObject on the kept connection after the swap: %v", err)
	}
	got, _ := io.ReadAll(out.Body)
	out.Body.Close()
	if !bytes.Equal(got, body) {
		t.Fatal("object read back differs")
	}
	if got := serialOf(sdk()); got.Cmp(second) != 0 {
		t.Fatalf("a new connection after SIGHUP: serial %v, want %v", got, second)
	}

	// Renewal 2, noticed by the file check alone.
	before := reloads()
	third := ca.Issue(t, s.TLSCert, s.TLSKey)
	waitFor(t, "reload after a file change", func() bool { return reloads() > before })
	if got := serialOf(sdk()); got.Cmp(third) != 0 {
		t.Fatalf("a new connection after the file changed: serial %v, want %v", got, third)
	}
	if got := serialOf(kept); got.Cmp(first) != 0 {
		t.Fatalf("the kept connection after two renewals: serial %v, want %v", got, first)
	}
}

// recordingClient remembers the last raw response (its TLS state).
type recordingClient struct {
	inner interface {
		Do(*http.Request) (*http.Response, error)
	}
	last **http.Response
}

func (c *recordingClient) Do(r *http.Request) (*http.Response, error) {
	resp, err := c.inner.Do(r)
	if err == nil {
		*c.last = resp
	}
	return resp, err
}

// TestDrainDelay: after SIGTERM, /health/ready fails while S3 requests
// are still answered, and only then does the listener close.
func TestDrainDelay(t *testing.T) {
	s := testutil.StartServer(t, testutil.ServerOptions{Args: []string{"--drain-delay", "3s"}})
	testutil.CheckDrain(t, s.Proc, "http://"+s.AdminAddr+"/health/ready", func() error {
		_, err := s.Client(5*time.Second).ListBuckets(context.Background(), &s3.ListBucketsInput{})
		return err
	})
}

// TestStartupRefusals: a second server on a data directory in use fails
// naming the first one's pid; bad values fail naming their source; a
// start that fails (its port taken) generates no credentials.
func TestStartupRefusals(t *testing.T) {
	s := testutil.StartServer(t, testutil.ServerOptions{})
	bin := testutil.Binary(t)
	b3 := func(env []string, args ...string) (string, int) {
		t.Helper()
		return runB3(t, bin, 0, env, args...)
	}
	out, code := b3(nil, "server", "--data", s.Data, "--address", testutil.FreeAddr(t), "--admin-address", "")
	if want := "in use by pid " + strconv.Itoa(s.Proc.Cmd.Process.Pid); code == 0 || !strings.Contains(out, want) {
		t.Fatalf("second server on the same data: exit %d, %s; want %q", code, out, want)
	}

	dir := t.TempDir()
	yaml := filepath.Join(dir, "b3.yaml")
	os.WriteFile(yaml, []byte("lifecycle-day: 0s\n"), 0o600)
	for _, tc := range []struct {
		env  []string
		args []string
		want string
	}{
		{nil, []string{"--vacuum-threshold", "1.5"}, `vacuum-threshold="1.5" (from flag --vacuum-threshold)`},
		{[]string{"B3_SEGMENT_SIZE=1KiB"}, nil, `segment-size="1KiB" (from environment variable B3_SEGMENT_SIZE)`},
		{nil, []string{"--config", yaml}, `lifecycle-day="0s" (from key lifecycle-day in ` + yaml + `)`},
		{nil, []string{"--tls-cert", "x.pem"}, "give both of --tls-cert and --tls-key"},
	} {
		out, code := b3(tc.env, append([]string{"server", "--data", filepath.Join(dir, "d")}, tc.args...)...)
		if code != 2 || !strings.Contains(out, tc.want) {
			t.Errorf("%v %v: exit %d, %s; want %q", tc.env, tc.args, code, out, tc.want)
		}
	}

	fresh := filepath.Join(dir, "fresh")
	out, code = b3(nil, "server", "--data", fresh, "--address", s.S3Addr, "--admin-address", "")
	if code == 0 || !strings.Contains(out, "address already in use") {
		t.Fatalf("start on a taken port: exit %d, %s", code, out)
	}
	for _, name := range []string{"credentials.json", "admin-token"} {
		if _, err := os.Stat(filepath.Join(fresh, name)); err == nil {
			t.Errorf("a failed start generated %s", name)
		}
	}
}

// TestVersionAndHealthcheck: b3 version says what b3_build_info says;
// b3 healthcheck exits 0 while the server is ready, 1 once it is gone.
func TestVersionAndHealthcheck(t *testing.T) {
	s := testutil.StartServer(t, testutil.ServerOptions{})
	bin := testutil.Binary(t)
	out, err := exec.Command(bin, "version", "--json").Output()
	var v struct {
		Version, Revision string
		GoVersion         string `json:"go_version"`
	}
	if err != nil || json.Unmarshal(out, &v) != nil || v.Version == "" || v.GoVersion == "" {
		t.Fatalf("b3 version --json: %v %s", err, out)
	}
	resp, err := http.Get("http://" + s.AdminAddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if want := `b3_build_info{goversion="` + v.GoVersion + `",revision="` + v.Revision; !strings.Contains(string(metrics), want) {
		t.Fatalf("/metrics lacks %s", want)
	}
	health := func() int {
		err := exec.Command(bin, "healthcheck", "--url", "http://"+s.AdminAddr+"/health/ready").Run()
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode()
		}
		return 0
	}
	if code := health(); code != 0 {
		t.Fatalf("healthcheck of a ready server: exit %d", code)
	}
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	if code := health(); code != 1 {
		t.Fatalf("healthcheck of a stopped server: exit %d", code)
	}
}

// TestJSONBanner: with --log-format json every line the server prints,
// the banner included, is a JSON object; the banner names the endpoints.
func TestJSONBanner(t *testing.T) {
	s := testutil.StartServer(t, testutil.ServerOptions{Args: []string{"--log-format", "json"}})
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	var banner map[string]any
	for _, line := range strings.Split(strings.TrimSpace(s.Output()), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("not JSON: %q", line)
		}
		if strings.HasPrefix(rec["msg"].(string), "b3 server: S3 API on") {
			banner = rec
		}
	}
	if banner == nil || banner["s3_endpoint"] != s.Endpoint() || banner["admin_endpoint"] != "http://"+s.AdminAddr || banner["access_key"] == "" {
		t.Fatalf("banner: %v", banner)
	}
}
