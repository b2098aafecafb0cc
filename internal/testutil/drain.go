package testutil

import (
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"
)

// WaitFor polls cond every 20 ms until it holds, failing the test after
// 30 s with "no <what>".
func WaitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no %s within 30s", what)
		}
	}
}

// CheckDrain sends SIGTERM to p (a b3 server or node started with a
// drain delay) and checks the drain window: readyURL (/health/ready)
// turns from 200 to 503 while serve (an S3 request on a new connection)
// still succeeds; then p exits, serve fails, and p logged the drain.
func CheckDrain(t testing.TB, p *Process, readyURL string, serve func() error) {
	t.Helper()
	hc := &http.Client{Timeout: 5 * time.Second}
	ready := func() int {
		resp, err := hc.Get(readyURL)
		if err != nil {
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	WaitFor(t, "200 from "+readyURL+" before SIGTERM", func() bool { return ready() == http.StatusOK })
	if err := p.Cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	WaitFor(t, "503 from "+readyURL+" after SIGTERM", func() bool { return ready() == http.StatusServiceUnavailable })
	// Readiness already fails; the S3 listener still serves.
	if err := serve(); err != nil {
		t.Fatalf("S3 request inside the drain window: %v", err)
	}
	if err := p.Wait(30 * time.Second); err != nil {
		t.Fatalf("exit: %v", err)
	}
	if serve() == nil {
		t.Fatal("S3 still answered after the process exited")
	}
	if !strings.Contains(p.Output.String(), "draining") {
		t.Fatalf("no drain line:\n%s", p.Output.String())
	}
}
