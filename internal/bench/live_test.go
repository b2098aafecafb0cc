package bench

// Tests against a real b3 server process. TestMain re-executes this test
// binary as the server (liveServerEnv names its data directory), so the
// server is a separate process, with its own runtime and its own CPU
// accounting, configured exactly as `b3 server` configures itself
// (server.LoadSettings with the command's defaults), on 127.0.0.1 and a
// free port, without a `go build` inside the test.
//
// B3_TEST_ENDPOINT (with B3_TEST_ACCESS_KEY / B3_TEST_SECRET_KEY) runs the
// same tests against another S3 server instead, e.g. MinIO.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/b3-storage/b3/internal/server"
	"github.com/b3-storage/b3/internal/testutil"
)

const (
	liveServerEnv = "B3_BENCH_TEST_SERVER_ROOT" // set in the child: serve from this root
	liveAccessKey = "benchtestak"
	liveSecretKey = "benchtestsecretkey0123456789"
	liveBucket    = "b3-bench-live"
	readyPrefix   = "b3-bench-test-server ready "
)

func TestMain(m *testing.M) {
	if root := os.Getenv(liveServerEnv); root != "" {
		os.Exit(serveLive(root))
	}
	os.Exit(m.Run())
}

// serveLive is the child process: what `b3 server` does (cmd/b3 runServer)
// with these flags, until SIGTERM. The environment is ignored so that no
// B3_* variable of the machine changes the server under test; the admin
// listener is off (its default port would collide with other servers).
func serveLive(root string) int {
	cfg, out, err := server.LoadSettings([]string{"--address", "127.0.0.1:0", "--data", root,
		"--access-key", liveAccessKey, "--secret-key", liveSecretKey,
		"--admin-address", "", "--console-address", "", "--log-level", "warn"},
		func(string) (string, bool) { return "", false }, os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "b3 server settings:", err)
		return 2
	}
	cfg.Logger = out.NewLogger(os.Stderr)
	cfg.Ready = func(addr string) { fmt.Printf("%shttp://%s\n", readyPrefix, addr) }
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := server.Run(ctx, cfg, io.Discard); err != nil {
		fmt.Fprintln(os.Stderr, "b3 server:", err)
		return 1
	}
	return 0
}

type liveServer struct {
	endpoint, accessKey, secretKey string
	pid                            int // 0 when the server is not ours
}

// startLiveServer starts the server process (or uses B3_TEST_ENDPOINT) and
// stops it when the test ends, failing the test unless it shuts down
// cleanly: exit status 0 within the server's own shutdown bound.
func startLiveServer(t *testing.T) liveServer {
	t.Helper()
	if ep := os.Getenv("B3_TEST_ENDPOINT"); ep != "" {
		return liveServer{endpoint: ep,
			accessKey: envOr("B3_TEST_ACCESS_KEY", os.Getenv("AWS_ACCESS_KEY_ID")),
			secretKey: envOr("B3_TEST_SECRET_KEY", os.Getenv("AWS_SECRET_ACCESS_KEY"))}
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), liveServerEnv+"="+t.TempDir())
	// If the test binary dies (a test timeout panics past the cleanups),
	// the server must not outlive it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	logs := &testutil.Buffer{}
	cmd.Stderr = logs
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start server: %v", err)
	}
	exited := make(chan error, 1)
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if ep, ok := strings.CutPrefix(sc.Text(), readyPrefix); ok {
				ready <- ep
			}
		}
		exited <- cmd.Wait() // after stdout is drained, as Wait requires
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-exited:
			if err != nil {
				t.Errorf("server did not shut down cleanly: %v\n%s", err, logs.String())
			}
		case <-time.After(server.ShutdownTimeout + 10*time.Second):
			_ = cmd.Process.Kill()
			t.Errorf("server ignored SIGTERM\n%s", logs.String())
		}
	})
	select {
	case ep := <-ready:
		return liveServer{endpoint: ep, accessKey: liveAccessKey, secretKey: liveSecretKey, pid: cmd.Process.Pid}
	case err := <-exited:
		t.Fatalf("server exited before it was ready: %v\n%s", err, logs.String())
	case <-time.After(60 * time.Second):
		t.Fatalf("server not ready after 60s\n%s", logs.String())
	}
	return liveServer{}
}

func (s liveServer) args(mode string, extra ...string) []string {
	args := []string{mode, "--endpoint", s.endpoint, "--bucket", liveBucket,
		"--access-key", s.accessKey, "--secret-key", s.secretKey}
	return append(args, extra...)
}

func (s liveServer) target(t *testing.T) *S3Target {
	t.Helper()
	tgt, err := NewS3Target(context.Background(), S3Options{Endpoint: s.endpoint, Bucket: liveBucket,
		AccessKey: s.accessKey, SecretKey: s.secretKey, PathStyle: true})
	if err != nil {
		t.Fatal(err)
	}
	return tgt
}

// list returns key -> size of the bucket's objects under prefix.
func (s liveServer) list(t *testing.T, prefix string) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	p := s3.NewListObjectsV2Paginator(s.target(t).Client, &s3.ListObjectsV2Input{
		Bucket: aws.String(liveBucket), Prefix: aws.String(prefix)})
	for p.HasMorePages() {
		page, err := p.NextPage(context.Background())
		if err != nil {
			t.Fatalf("list %s: %v", prefix, err)
		}
		for _, o := range page.Contents {
			out[aws.ToString(o.Key)] = aws.ToInt64(o.Size)
		}
	}
	return out
}

// liveRun is one `b3 bench` invocation and everything it wrote.
type liveRun struct {
	report *Report
	json   string
	out    string // the table on stdout
}

// runLive runs Main writing into dir, then checks every output: exit 0, the JSON report
// parses and passes Check, the CSV parses back into the same cells, and
// every SVG chart is a well-formed SVG document (at least minCharts).
func runLive(t *testing.T, dir string, args []string, minCharts int) liveRun {
	t.Helper()
	args = append(args, "--out", dir)
	var stdout, stderr bytes.Buffer
	if code := Main(args, &stdout, &stderr); code != 0 {
		t.Fatalf("%v: exit %d\n%s", args, code, stderr.String())
	}
	jsons, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	csvs, _ := filepath.Glob(filepath.Join(dir, "*[0-9].csv"))
	svgs, _ := filepath.Glob(filepath.Join(dir, "*.svg"))
	if len(jsons) != 1 || len(csvs) != 1 {
		t.Fatalf("outputs: json %v, csv %v", jsons, csvs)
	}
	rep, err := ReadReport(jsons[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := rep.Check(); err != nil {
		t.Fatal(err)
	}
	if len(rep.Notes) > 0 {
		t.Errorf("notes: %q", rep.Notes)
	}
	f, err := os.Open(csvs[0])
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cells, err := ReadCSV(f)
	if err != nil {
		t.Fatal(err)
	}
	if len(cells) != len(rep.Cells) {
		t.Fatalf("csv has %d cells, json %d", len(cells), len(rep.Cells))
	}
	for i, c := range cells {
		j := rep.Cells[i]
		if c.Key() != j.Key() || c.Issued != j.Issued || c.Ops != j.Ops || c.Bytes != j.Bytes || c.Latency.P99 != j.Latency.P99 {
			t.Errorf("csv row %d %s differs from json %s", i, c.Key(), j.Key())
		}
	}
	if len(svgs) < minCharts {
		t.Errorf("%d charts written, want at least %d", len(svgs), minCharts)
	}
	for _, path := range svgs {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := wellFormedSVG(bytes.NewReader(data)); err != nil {
			t.Errorf("%s: %v", filepath.Base(path), err)
		}
	}
	return liveRun{report: rep, json: jsons[0], out: stdout.String()}
}

// wellFormedSVG parses r as XML and checks that the root element is <svg>.
func wellFormedSVG(r io.Reader) error {
	dec := xml.NewDecoder(r)
	root := ""
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("not well-formed XML: %w", err)
		}
		if se, ok := tok.(xml.StartElement); ok && root == "" {
			root = se.Name.Local
		}
	}
	if root != "svg" {
		return fmt.Errorf("root element %q, want svg", root)
	}
	return nil
}

// assertHealthy fails for any error, cancellation or empty cell: the server
// is healthy and idle apart from us.
func assertHealthy(t *testing.T, c Cell) {
	t.Helper()
	if c.Errors != 0 || c.Canceled != 0 || c.Ops == 0 || c.Issued != c.Ops {
		t.Errorf("%s: issued %d ok %d errors %v", c.Key(), c.Issued, c.Ops, c.ErrorsByType)
	}
	if c.Bytes != c.Ops*c.Size {
		t.Errorf("%s: %d bytes for %d ops of %d", c.Key(), c.Bytes, c.Ops, c.Size)
	}
	if c.OpsPerSec <= 0 || c.MBPerSec <= 0 || c.Latency.P50 <= 0 {
		t.Errorf("%s: %.1f ops/s %.2f MB/s P50 %v ms", c.Key(), c.OpsPerSec, c.MBPerSec, c.Latency.P50)
	}
}

// TestLive runs every S3 mode of `b3 bench` through Main against a real
// server and checks the reports against what the server holds.
func TestLive(t *testing.T) {
	s := startLiveServer(t)
	peakOut := t.TempDir() // outlives the peak subtest: compare reads it
	var peakJSON string

	t.Run("peak", func(t *testing.T) {
		// 4 KiB goes through PutObject/GetObject, 12 MiB (above an 8 MiB
		// threshold) through the transfer manager: a 3-part multipart upload
		// and ranged parallel GETs. Objects are kept (--cleanup=false) so
		// that the server's listing can be checked against the report.
		const prefix = "it-peak"
		extra := []string{"--sizes", "4KiB,12MiB", "--concurrency", "1,4", "--duration", "1s",
			"--multipart-threshold", "8MiB", "--part-size", "5MiB", "--prepare-bytes", "24MiB",
			"--verify", "--cleanup=false", "--prefix", prefix}
		if s.pid != 0 {
			extra = append(extra, "--local", "--pid", fmt.Sprint(s.pid))
		}
		run := runLive(t, peakOut, s.args("peak", extra...), 6)
		peakJSON = run.json
		rep := run.report
		if len(rep.Cells) != 8 {
			t.Fatalf("%d cells, want 2 sizes × 2 concurrencies × up/down", len(rep.Cells))
		}
		stored := s.list(t, prefix+"/")
		seen := map[string]bool{}
		for _, c := range rep.Cells {
			assertHealthy(t, c)
			seen[c.Key()] = true
			if c.ClientCPU <= 0 {
				t.Errorf("%s: client CPU not measured", c.Key())
			}
			if c.Op == "download" && c.Note != "verified" {
				t.Errorf("%s: not verified", c.Key())
			}
			if c.Op == "upload" {
				// Every acknowledged upload is stored, under the key
				// numbered after its sequence, with its full size.
				for i := range c.Ops {
					key := fmt.Sprintf("%s/up/%d/c%d/%d", prefix, c.Size, c.Concurrency, i)
					if got, ok := stored[key]; !ok || got != c.Size {
						t.Errorf("%s: %s stored %v (size %d)", c.Key(), key, ok, got)
					}
				}
			}
		}
		if len(seen) != 8 {
			t.Errorf("duplicate cells: %v", seen)
		}
		if s.pid != 0 && (len(rep.System) == 0 || rep.System[len(rep.System)-1].RSSMB <= 0) {
			t.Errorf("--local --pid: system samples %+v", rep.System)
		}
		keys := make([]string, 0, len(stored))
		for k := range stored {
			keys = append(keys, k)
		}
		if err := s.target(t).Delete(context.Background(), keys); err != nil {
			t.Fatal(err)
		}
		if left := s.list(t, prefix+"/"); len(left) != 0 {
			t.Errorf("%d objects left after delete", len(left))
		}
	})

	t.Run("mixed", func(t *testing.T) {
		const upRate, downRate, hold = 16, 8, 2
		run := runLive(t, t.TempDir(), s.args("mixed", "--size", "64KiB", "--upload-rate", fmt.Sprint(upRate),
			"--download-rate", fmt.Sprint(downRate), "--multipliers", "1,2", "--duration", fmt.Sprintf("%ds", hold),
			"--drain", "20s", "--download-objects", "8", "--verify", "--prefix", "it-mixed"), 1)
		rep := run.report
		if len(rep.Mixed) != 2 || len(rep.Cells) != 4 {
			t.Fatalf("%d multiples, %d cells", len(rep.Mixed), len(rep.Cells))
		}
		for _, m := range rep.Mixed {
			if m.Verdict != "sustained" && m.Verdict != "saturated" {
				t.Errorf("x%g: verdict %q", m.Multiplier, m.Verdict)
			}
			if m.Verdict == "saturated" {
				// Possible on a loaded 2-core machine; the reasons must say why.
				t.Logf("x%g saturated: %q", m.Multiplier, m.Reasons)
				if len(m.Reasons) == 0 {
					t.Errorf("x%g: saturated without reasons", m.Multiplier)
				}
			}
			for _, c := range m.Cells {
				assertHealthy(t, c)
				rate := map[string]float64{"upload": upRate, "download": downRate}[c.Op] * m.Multiplier
				if want := int64(rate * hold); c.Issued != want {
					t.Errorf("x%g %s: issued %d, want %d (rate × hold)", m.Multiplier, c.Op, c.Issued, want)
				}
				var issued, completed, bytes int64
				for _, sec := range m.Series[c.Op] {
					issued += sec.Issued
					completed += sec.Completed
					bytes += sec.Bytes
				}
				if issued != c.Issued || completed != c.Ops || bytes != c.Bytes {
					t.Errorf("x%g %s: series sums issued %d completed %d bytes %d, cell %d %d %d",
						m.Multiplier, c.Op, issued, completed, bytes, c.Issued, c.Ops, c.Bytes)
				}
				if m.InFlight[c.Op] < 0 {
					t.Errorf("x%g %s: in flight %d", m.Multiplier, c.Op, m.InFlight[c.Op])
				}
			}
		}
		if left := s.list(t, "it-mixed/"); len(left) != 0 {
			t.Errorf("%d objects left after the mixed run's cleanup", len(left))
		}
	})

	t.Run("kv", func(t *testing.T) {
		const records = 300
		run := runLive(t, t.TempDir(), s.args("kv", "--records", fmt.Sprint(records), "--read-percent", "50",
			"--concurrency", "4", "--count", "400", "--duration", "30s", "--prefix", "it-kv"), 1)
		var load, mix int64
		for _, c := range run.report.Cells {
			assertHealthy(t, c)
			if c.Mode == "load" {
				load += c.Ops
			} else {
				mix += c.Issued
			}
		}
		if load != records || mix != 400 {
			t.Errorf("load %d (want %d), reads+updates %d (want the count 400)", load, records, mix)
		}
		if left := s.list(t, "it-kv/"); len(left) != 0 {
			t.Errorf("%d records left after cleanup", len(left))
		}
	})

	// 500 ms segments for 3 s: 6 per camera; retention 1 s and 2 listed
	// keep the last 2 segments of each camera (--cleanup=false lets the
	// test check that against the server). Each client: the plain one
	// (segments sent with sendfile from the pool file), the same chunked
	// as encoders send, the SDK's.
	pool := NewPool(1)
	for _, c := range []struct {
		name    string
		cameras []int
		extra   []string
	}{
		{"hls", []int{4, 8}, nil},
		{"hls-chunked", []int{2}, []string{"--chunked"}},
		{"hls-sdk", []int{2}, []string{"--client", "sdk"}},
	} {
		t.Run(c.name, func(t *testing.T) { testLiveHLS(t, s, pool, "it-"+c.name, c.cameras, c.extra) })
	}

	t.Run("compare", func(t *testing.T) {
		if peakJSON == "" {
			t.Fatal("peak run wrote no report")
		}
		var stdout, stderr bytes.Buffer
		if code := Main([]string{"compare", "--names", "b3,again", peakJSON, peakJSON}, &stdout, &stderr); code != 0 {
			t.Fatalf("exit %d: %s", code, stderr.String())
		}
		rows := 0
		for line := range strings.SplitSeq(stdout.String(), "\n") {
			if strings.HasPrefix(strings.TrimSpace(line), "upload") || strings.HasPrefix(strings.TrimSpace(line), "download") {
				rows++
				if strings.Count(line, "1.00") < 2 {
					t.Errorf("a report against itself, ratios not 1: %q", line)
				}
			}
		}
		if !strings.Contains(stdout.String(), "again MB/s") {
			t.Errorf("--names not used:\n%s", stdout.String())
		}
		if rows != 8 {
			t.Errorf("%d cell rows, want 8:\n%s", rows, stdout.String())
		}
	})
}

// TestLiveConnRefusedIsCounted: against a port nothing listens on, every
// operation fails with a transport error type (not "other"), and the run
// still ends normally with its report.
func TestLiveConnRefusedIsCounted(t *testing.T) {
	var stdout, stderr bytes.Buffer
	// Port 1 on loopback: nothing listens there (privileged, never ours).
	code := Main([]string{"peak", "--endpoint", "http://127.0.0.1:1", "--bucket", liveBucket,
		"--access-key", "a", "--secret-key", "b", "--create-bucket=false", "--ops", "upload",
		"--sizes", "1KiB", "--concurrency", "2", "--count", "6", "--out", t.TempDir()}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if !strings.Contains(stdout.String(), errRefused) {
		t.Errorf("table lacks %s:\n%s", errRefused, stdout.String())
	}
}

// testLiveHLS runs b3 bench hls with extra flags at each camera count
// under prefix and checks the report against what the server holds: the
// kept segments (their content too) and playlists, nothing older.
func testLiveHLS(t *testing.T, s liveServer, pool *Pool, prefix string, cameras []int, extra []string) {
	const segments, kept = 6, 2
	counts := make([]string, len(cameras))
	for i, n := range cameras {
		counts[i] = strconv.Itoa(n)
	}
	args := append([]string{"--cameras", strings.Join(counts, ","), "--segment", "500ms", "--bitrate", "800kbit",
		"--duration", "3s", "--drain", "20s", "--retention", "1s", "--list-size", "2", "--viewers", "50%",
		"--cleanup=false", "--prefix", prefix}, extra...)
	run := runLive(t, t.TempDir(), s.args("hls", args...), 4)
	rep := run.report
	if len(rep.HLS) != len(cameras) || len(rep.Cells) != 6*len(cameras) {
		t.Fatalf("%d runs, %d cells", len(rep.HLS), len(rep.Cells))
	}
	for _, r := range rep.HLS {
		if r.Verdict != "held" && (r.Verdict != "not held" || len(r.Reasons) == 0) {
			t.Errorf("%d cameras: verdict %q, reasons %q", r.Cameras, r.Verdict, r.Reasons)
		}
		if r.Verdict != "held" {
			t.Logf("%d cameras not held on this machine: %q", r.Cameras, r.Reasons)
		}
		var stored int64
		for _, sec := range r.Series {
			stored += sec.Segments
		}
		for _, c := range r.Cells {
			switch c.Op {
			case "segment":
				assertHealthy(t, c)
				if c.Issued != int64(r.Cameras*segments) || stored != c.Ops {
					t.Errorf("%d cameras: %d segments issued (want %d), series counts %d of %d stored",
						r.Cameras, c.Issued, r.Cameras*segments, stored, c.Ops)
				}
			case "playlist", "delete", "view-playlist", "staleness":
				if c.Errors != 0 || c.Ops == 0 {
					t.Errorf("%d cameras %s: %d ok, errors %v", r.Cameras, c.Op, c.Ops, c.ErrorsByType)
				}
			}
		}
		if len(r.Streams) != r.Cameras || r.Viewers != r.Cameras/2 {
			t.Errorf("%d cameras: %d streams, %d viewers", r.Cameras, len(r.Streams), r.Viewers)
		}
	}
	if last := cameras[len(cameras)-1]; !strings.Contains(run.out, fmt.Sprintf("%d cameras, %d viewers: ", last, last/2)) {
		t.Errorf("no verdict line in the table:\n%s", run.out)
	}
	// Each camera left its last segments and a playlist listing the
	// newest; older segments were deleted.
	stored := s.list(t, prefix+"/")
	tgt := s.target(t)
	for _, cams := range cameras {
		for c := range cams {
			dir := fmt.Sprintf("%s/hls/c%d/cam%04d/", prefix, cams, c)
			for k := range segments {
				key := fmt.Sprintf("%sseg%08d.ts", dir, k)
				size, ok := stored[key]
				if ok != (k >= segments-kept) {
					t.Errorf("%s stored %v, want %v", key, ok, k >= segments-kept)
				}
				if !ok {
					continue
				}
				// What arrived is the payload of the key, byte for byte.
				if n, err := tgt.Get(context.Background(), key, size, NewSink(pool.Payload(key, 50_000))); n != 50_000 || err != nil {
					t.Errorf("%s: %d bytes, %v", key, n, err)
				}
			}
			body, err := tgt.GetSmall(context.Background(), dir+"index.m3u8")
			if err != nil || newestListed(body) != segments-1 {
				t.Errorf("%sindex.m3u8: newest %d, %v:\n%s", dir, newestListed(body), err, body)
			}
		}
	}
	keys := make([]string, 0, len(stored))
	for k := range stored {
		keys = append(keys, k)
	}
	if err := tgt.Delete(context.Background(), keys); err != nil {
		t.Fatal(err)
	}
}
