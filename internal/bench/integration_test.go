//go:build integration

package bench

// Integration tests against a live S3 server. Build tag "integration":
//
//	B3_TEST_ENDPOINT=http://127.0.0.1:9000 \
//	B3_TEST_ACCESS_KEY=... B3_TEST_SECRET_KEY=... \
//	go test -tags integration ./internal/bench/
//
// Credentials fall back to AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY. Without
// B3_TEST_ENDPOINT the tests FAIL rather than skip: a test that needs a
// server must never pass silently. (Once `b3 server` exists, liveServer
// should start it on 127.0.0.1 when the variable is unset.)

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

type liveServer struct {
	endpoint, accessKey, secretKey string
}

func requireServer(t *testing.T) liveServer {
	t.Helper()
	s := liveServer{
		endpoint:  os.Getenv("B3_TEST_ENDPOINT"),
		accessKey: envOr("B3_TEST_ACCESS_KEY", os.Getenv("AWS_ACCESS_KEY_ID")),
		secretKey: envOr("B3_TEST_SECRET_KEY", os.Getenv("AWS_SECRET_ACCESS_KEY")),
	}
	if s.endpoint == "" {
		t.Fatal("B3_TEST_ENDPOINT is not set: integration tests need a live S3 server")
	}
	return s
}

func (s liveServer) args(mode string, extra ...string) []string {
	args := []string{mode, "--endpoint", s.endpoint, "--bucket", "b3-bench-it"}
	if s.accessKey != "" {
		args = append(args, "--access-key", s.accessKey, "--secret-key", s.secretKey)
	}
	return append(args, extra...)
}

func runLive(t *testing.T, args []string) *Report {
	t.Helper()
	out := t.TempDir()
	args = append(args, "--out", out)
	var stdout, stderr bytes.Buffer
	if code := Main(args, &stdout, &stderr); code != 0 {
		t.Fatalf("%v: exit %d\n%s", args, code, stderr.String())
	}
	files, _ := os.ReadDir(out)
	for _, f := range files {
		if strings.HasSuffix(f.Name(), ".json") {
			rep, err := ReadReport(filepath.Join(out, f.Name()))
			if err != nil {
				t.Fatal(err)
			}
			if err := rep.Check(); err != nil {
				t.Fatal(err)
			}
			return rep
		}
	}
	t.Fatal("no JSON report written")
	return nil
}

func TestLivePeak(t *testing.T) {
	s := requireServer(t)
	rep := runLive(t, s.args("peak", "--sizes", "4KiB,1MiB,70MiB", "--concurrency", "1,8",
		"--count", "16", "--verify", "--multipart-threshold", "64MiB"))
	if len(rep.Cells) != 12 {
		t.Fatalf("%d cells", len(rep.Cells))
	}
	for _, c := range rep.Cells {
		if c.Errors != 0 || c.Ops != 16 {
			t.Errorf("%s: %d ok, errors %v", c.Key(), c.Ops, c.ErrorsByType)
		}
	}
}

func TestLiveMixed(t *testing.T) {
	s := requireServer(t)
	rep := runLive(t, s.args("mixed", "--size", "256KiB", "--upload-rate", "20", "--download-rate", "5",
		"--multipliers", "1,2", "--duration", "3s", "--drain", "10s"))
	if len(rep.Mixed) != 2 {
		t.Fatalf("%d multiples", len(rep.Mixed))
	}
	for _, m := range rep.Mixed {
		for _, c := range m.Cells {
			if c.Errors != 0 {
				t.Errorf("x%g %s: errors %v", m.Multiplier, c.Op, c.ErrorsByType)
			}
		}
	}
}

func TestLiveKV(t *testing.T) {
	s := requireServer(t)
	rep := runLive(t, s.args("kv", "--records", "500", "--read-percent", "50", "--count", "500", "--duration", "1m"))
	for _, c := range rep.Cells {
		if c.Errors != 0 {
			t.Errorf("%s: errors %v", c.Key(), c.ErrorsByType)
		}
	}
}
