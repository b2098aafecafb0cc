package e2e

import (
	"bufio"
	"bytes"
	"context"
	"crypto/md5"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/b3-storage/b3/internal/testutil"
)

const (
	accessKey = "E2EACCESSKEY0000000"
	secretKey = "e2e/secret+key/0000000000000000000000000"
	region    = "us-east-1"

	bigSize   = 100 << 20 // the "100 MiB object" every client uploads
	smallBody = "hello from b3's end-to-end test\n"

	// buildTimeout bounds `go build` (a cold cache compiles pebble);
	// startTimeout starting the server; stopTimeout the graceful stop
	// before SIGKILL.
	buildTimeout = 5 * time.Minute
	startTimeout = 30 * time.Second
	stopTimeout  = 20 * time.Second
	// toolTimeout bounds one client command.
	toolTimeout = 2 * time.Minute
)

// env is the shared state of the run, set up once in TestMain.
var env struct {
	endpoint string // "http://127.0.0.1:port"
	hostPort string // "127.0.0.1:port"
	work     string // temporary root of everything below
	bin      string // the b3 binary
	home     string // HOME of every client process

	smallPath, smallSHA string
	bigPath, bigSHA     string

	serverLog *testutil.Buffer // the server's stdout and stderr
}

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) (code int) {
	work, err := os.MkdirTemp("", "b3-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	defer os.RemoveAll(work)
	env.work = work
	// The build runs in the caller's environment (HOME locates the Go
	// caches); everything after it in the isolated one.
	buildCtx, cancelBuild := context.WithTimeout(context.Background(), buildTimeout)
	err = buildBinary(buildCtx, work)
	cancelBuild()
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e: build:", err)
		return 1
	}
	if err := isolateEnvironment(work); err != nil {
		fmt.Fprintln(os.Stderr, "e2e: environment:", err)
		return 1
	}
	if err := makeFiles(work); err != nil {
		fmt.Fprintln(os.Stderr, "e2e: test files:", err)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	srv, err := startServer(ctx, filepath.Join(work, "data"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e: start server:", err)
		if env.serverLog != nil {
			fmt.Fprintf(os.Stderr, "server output:\n%s\n", env.serverLog.String())
		}
		return 1
	}
	code = m.Run()
	if err := srv.stop(); err != nil {
		// A server that does not shut down cleanly is a failure too.
		fmt.Fprintln(os.Stderr, "e2e: stop server:", err)
		code = 1
	}
	// No request of any test may have been an internal error or a
	// panic: the server logs those (and only those) at ERROR.
	for line := range strings.Lines(env.serverLog.String()) {
		if strings.Contains(line, "level=ERROR") || strings.HasPrefix(line, "panic:") {
			fmt.Fprintf(os.Stderr, "e2e: the server logged an internal error: %s", line)
			code = 1
		}
	}
	if code != 0 {
		fmt.Fprintf(os.Stderr, "server output (last 64 KiB):\n%s\n", env.serverLog.Tail(64<<10))
	}
	return code
}

// isolateEnvironment makes the test process, and every client it starts,
// see only the test's credentials and configuration.
func isolateEnvironment(work string) error {
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		upper := strings.ToUpper(name)
		if strings.HasPrefix(upper, "AWS_") || strings.HasPrefix(upper, "RCLONE_") ||
			strings.HasPrefix(upper, "MINIO_") || strings.HasPrefix(upper, "B3_") ||
			strings.HasPrefix(upper, "BOTO_") || upper == "S3CMD_CONFIG" {
			os.Unsetenv(name)
		}
	}
	env.home = filepath.Join(work, "home")
	awsDir := filepath.Join(env.home, ".aws")
	if err := os.MkdirAll(awsDir, 0o700); err != nil {
		return err
	}
	awsConfig := filepath.Join(awsDir, "config")
	if err := os.WriteFile(awsConfig, []byte("[default]\nregion = "+region+"\ns3 =\n  addressing_style = path\n"), 0o600); err != nil {
		return err
	}
	awsCredentials := filepath.Join(awsDir, "credentials")
	if err := os.WriteFile(awsCredentials, nil, 0o600); err != nil {
		return err
	}
	for name, value := range map[string]string{
		"HOME":                        env.home,
		"XDG_CONFIG_HOME":             filepath.Join(env.home, ".config"),
		"XDG_CACHE_HOME":              filepath.Join(env.home, ".cache"),
		"AWS_ACCESS_KEY_ID":           accessKey,
		"AWS_SECRET_ACCESS_KEY":       secretKey,
		"AWS_REGION":                  region,
		"AWS_DEFAULT_REGION":          region,
		"AWS_EC2_METADATA_DISABLED":   "true",
		"AWS_CONFIG_FILE":             awsConfig,
		"AWS_SHARED_CREDENTIALS_FILE": awsCredentials,
		"AWS_PAGER":                   "",
		"AWS_CLI_AUTO_PROMPT":         "off",
		"AWS_MAX_ATTEMPTS":            "1",
		"RCLONE_CONFIG":               filepath.Join(env.home, "rclone.conf"),
		"NO_PROXY":                    "127.0.0.1,localhost",
		"no_proxy":                    "127.0.0.1,localhost",
		"PYTHONDONTWRITEBYTECODE":     "1",
		"PYTHONNOUSERSITE":            "1",
	} {
		if err := os.Setenv(name, value); err != nil {
			return err
		}
	}
	for _, name := range []string{"HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY", "all_proxy", "PYTHONPATH", "PYTHONHOME", "SSL_CERT_FILE", "REQUESTS_CA_BUNDLE"} {
		os.Unsetenv(name)
	}
	return nil
}

// makeFiles writes the small and the 100 MiB test files and their SHA-256.
func makeFiles(work string) error {
	env.smallPath = filepath.Join(work, "small.txt")
	if err := os.WriteFile(env.smallPath, []byte(smallBody), 0o644); err != nil {
		return err
	}
	env.smallSHA = sha256Hex([]byte(smallBody))

	env.bigPath = filepath.Join(work, "big.bin")
	f, err := os.Create(env.bigPath)
	if err != nil {
		return err
	}
	// Pseudo-random, so nothing on the way can compress or dedupe it;
	// seeded, so a failure reproduces.
	rng := rand.NewChaCha8([32]byte{'b', '3', 'e', '2', 'e'})
	h := sha256.New()
	w := bufio.NewWriterSize(io.MultiWriter(f, h), 1<<20)
	if _, err := io.CopyN(w, rng, bigSize); err != nil {
		f.Close()
		return err
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	env.bigSHA = hex.EncodeToString(h.Sum(nil))
	return f.Close()
}

// buildBinary builds ./cmd/b3 into work (without -race: the detector
// instruments only the test process that runs it).
func buildBinary(ctx context.Context, work string) error {
	root, err := moduleRoot()
	if err != nil {
		return err
	}
	env.bin = filepath.Join(work, "b3")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", env.bin, "./cmd/b3")
	cmd.Dir = root
	cmd.Env = os.Environ()
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build ./cmd/b3: %v\n%s", err, out)
	}
	return nil
}

func moduleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		return "", errors.New("not inside the b3 module")
	}
	return filepath.Dir(mod), nil
}

// serverProcess is the running `b3 server`.
type serverProcess struct {
	cmd    *exec.Cmd
	exited chan struct{}
	err    error // Wait's result, once exited is closed
}

// startServer starts `b3 server` on a kernel-chosen loopback port, reads
// the endpoint from its banner and waits until it answers HTTP.
func startServer(ctx context.Context, data string) (*serverProcess, error) {
	env.serverLog = &testutil.Buffer{}
	cmd := exec.Command(env.bin, "server",
		"--address", "127.0.0.1:0",
		"--data", data,
		"--access-key", accessKey, "--secret-key", secretKey,
		"--region", region,
		"--fsync", "batch",
		"--log-level", "warn")
	// Every other listener on a kernel-chosen port too (the admin API
	// defaults to 127.0.0.1:9001, which another server may hold). Set
	// through the environment so an older binary without it still runs.
	cmd.Env = append(os.Environ(), "B3_ADMIN_ADDRESS=127.0.0.1:0", "B3_CONSOLE_ADDRESS=127.0.0.1:0")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stderr = env.serverLog
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &serverProcess{cmd: cmd, exited: make(chan struct{})}
	endpoint := make(chan string, 1)
	go func() {
		// The banner's first line names the endpoint; everything is
		// kept for the failure report.
		scanner := bufio.NewScanner(stdout)
		for scanner.Scan() {
			line := scanner.Text()
			env.serverLog.Write([]byte(line + "\n"))
			if _, rest, ok := strings.Cut(line, "S3 API on "); ok {
				url, _, _ := strings.Cut(rest, " ")
				select {
				case endpoint <- url:
				default:
				}
			}
		}
		io.Copy(io.Discard, stdout)
	}()
	go func() {
		p.err = cmd.Wait()
		close(p.exited)
	}()
	fail := func(err error) (*serverProcess, error) {
		p.stop()
		return nil, err
	}
	select {
	case env.endpoint = <-endpoint:
	case <-p.exited:
		return nil, fmt.Errorf("b3 server exited before serving: %v", p.err)
	case <-ctx.Done():
		return fail(errors.New("no banner from b3 server in time"))
	}
	env.hostPort = strings.TrimPrefix(env.endpoint, "http://")
	// Serving: any HTTP answer will do (anonymous ListBuckets is denied).
	client := &http.Client{Timeout: 5 * time.Second}
	for {
		resp, err := client.Get(env.endpoint + "/")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode != http.StatusForbidden {
				return fail(fmt.Errorf("anonymous GET / answered %s, want 403", resp.Status))
			}
			return p, nil
		}
		select {
		case <-p.exited:
			return nil, fmt.Errorf("b3 server exited: %v", p.err)
		case <-ctx.Done():
			return fail(fmt.Errorf("b3 server at %s does not answer: %v", env.endpoint, err))
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// stop sends SIGTERM and waits for a clean exit; after stopTimeout it
// kills the process and reports that.
func (p *serverProcess) stop() error {
	select {
	case <-p.exited:
		return fmt.Errorf("b3 server had already exited: %v", p.err)
	default:
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return err
	}
	select {
	case <-p.exited:
		if p.err != nil {
			return fmt.Errorf("b3 server exited uncleanly after SIGTERM: %v", p.err)
		}
		return nil
	case <-time.After(stopTimeout):
		p.cmd.Process.Kill()
		<-p.exited
		return fmt.Errorf("b3 server ignored SIGTERM for %v; killed", stopTimeout)
	}
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// fileSHA256 returns the hex SHA-256 of the file at path.
func fileSHA256(t testing.TB, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("open %s: %v", path, err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// assertSameFile fails unless the file at got has the SHA-256 want.
func assertSameFile(t testing.TB, got, wantSHA, what string) {
	t.Helper()
	if sum := fileSHA256(t, got); sum != wantSHA {
		t.Fatalf("%s: downloaded SHA-256 %s, uploaded %s", what, sum, wantSHA)
	}
}

// tools caches the resolved path of each external tool.
var tools struct {
	sync.Mutex
	path map[string]string
}

// versionArgs is how each tool is checked to actually work.
var versionArgs = map[string][]string{
	"aws":     {"--version"},
	"s3cmd":   {"--version"},
	"rclone":  {"version"},
	"curl":    {"--version"},
	"python3": {"-c", "import boto3"},
}

// tool returns the path of a working name, preferring the distribution's
// /usr/bin (a pyenv shim earlier in PATH may not work), and fails the test
// when there is none: tools are installed by scripts/install-test-tools.sh.
func tool(t testing.TB, name string) string {
	t.Helper()
	tools.Lock()
	defer tools.Unlock()
	if p, ok := tools.path[name]; ok {
		return p
	}
	candidates := []string{"/usr/bin/" + name, "/usr/local/bin/" + name}
	if p, err := exec.LookPath(name); err == nil {
		candidates = append(candidates, p)
	}
	var tried []string
	for _, c := range candidates {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		out, err := exec.CommandContext(ctx, c, versionArgs[name]...).CombinedOutput()
		cancel()
		if err == nil {
			if tools.path == nil {
				tools.path = map[string]string{}
			}
			tools.path[name] = c
			return c
		}
		tried = append(tried, fmt.Sprintf("%s: %v %s", c, err, bytes.TrimSpace(out)))
	}
	t.Fatalf("no working %s (needed: run `sh scripts/install-test-tools.sh` as root, or `make tools`); tried:\n%s",
		name, strings.Join(tried, "\n"))
	return ""
}

// runTool runs a tool to completion and returns its stdout; a non-zero
// exit fails the test with the output.
func runTool(t testing.TB, name string, args ...string) string {
	t.Helper()
	out, errOut, err := runToolErr(t, name, args...)
	if err != nil {
		t.Fatalf("%s %s: %v\nstdout:\n%s\nstderr:\n%s", name, strings.Join(args, " "), err, out, errOut)
	}
	return out
}

// runToolErr runs a tool and returns stdout, stderr and the exit error.
func runToolErr(t testing.TB, name string, args ...string) (string, string, error) {
	t.Helper()
	return runPathErr(t, name, tool(t, name), args...)
}

// runPathErr runs the program at path (called name in logs) and returns
// stdout, stderr and the exit error.
func runPathErr(t testing.TB, name, path string, args ...string) (string, string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), toolTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Env = os.Environ()
	cmd.Dir = env.work
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	if d := time.Since(start); d > time.Second {
		t.Logf("%s %s: %.1fs", name, strings.Join(args, " "), d.Seconds())
	}
	if ctx.Err() != nil {
		err = fmt.Errorf("timed out after %v", toolTimeout)
	}
	return stdout.String(), stderr.String(), err
}

// curlGet fetches url with curl into a file in dir and returns the
// status and the path of the body.
func curlGet(t testing.TB, dir, url string) (int, string) {
	t.Helper()
	out := filepath.Join(dir, fmt.Sprintf("curl-%d", time.Now().UnixNano()))
	status := strings.TrimSpace(runTool(t, "curl", "-sS", "--noproxy", "*", "-o", out, "-w", "%{http_code}", url))
	var code int
	if _, err := fmt.Sscanf(status, "%d", &code); err != nil {
		t.Fatalf("curl %s: status %q", url, status)
	}
	return code, out
}

// curlFetchEquals fetches a presigned url with curl and fails unless it
// answers 200 with exactly the bytes of the file with SHA-256 wantSHA.
func curlFetchEquals(t testing.TB, url, wantSHA, what string) {
	t.Helper()
	status, body := curlGet(t, t.TempDir(), url)
	if status != http.StatusOK {
		data, _ := os.ReadFile(body)
		t.Fatalf("%s: curl %s: status %d: %s", what, url, status, data)
	}
	assertSameFile(t, body, wantSHA, what+" via curl")
}

// curlExpectError fetches url with curl and fails unless the answer is
// status with an S3 error body carrying code.
func curlExpectError(t testing.TB, url string, status int, code, what string) {
	t.Helper()
	got, body := curlGet(t, t.TempDir(), url)
	data, _ := os.ReadFile(body)
	if got != status || !bytes.Contains(data, []byte("<Code>"+code+"</Code>")) {
		t.Fatalf("%s: curl %s: status %d body %s; want %d %s", what, url, got, data, status, code)
	}
}

func md5Hex(b []byte) string {
	sum := md5.Sum(b)
	return hex.EncodeToString(sum[:])
}
