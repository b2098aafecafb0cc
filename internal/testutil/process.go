package testutil

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

var build struct {
	once sync.Once
	path string
	err  error
}

// Binary builds the b3 command once per test process and returns its path.
func Binary(t testing.TB) string {
	t.Helper()
	path, err := BuildBinary()
	if err != nil {
		t.Fatal(err)
	}
	return path
}

// BuildBinary is Binary for TestMain. It builds without -race: the
// detector instruments only the test process that runs the binary.
//
// The binary is <tmp>/b3-testbin/b3-<pid>. A test process cannot remove
// its own at exit (there is no hook for that in a shared package), so
// each build first removes those of processes that have ended: at most
// one binary per running test process is left.
func BuildBinary() (string, error) {
	build.once.Do(func() {
		dir := filepath.Join(os.TempDir(), "b3-testbin")
		if build.err = os.MkdirAll(dir, 0o755); build.err != nil {
			return
		}
		removeStaleBinaries(dir)
		_, file, _, _ := runtime.Caller(0)
		root := filepath.Join(filepath.Dir(file), "..", "..")
		build.path = filepath.Join(dir, fmt.Sprintf("b3-%d", os.Getpid()))
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "go", "build", "-o", build.path, "./cmd/b3")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			build.err = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	return build.path, build.err
}

// removeStaleBinaries removes dir's b3-<pid> files whose process is gone.
func removeStaleBinaries(dir string) {
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		pid, err := strconv.Atoi(strings.TrimPrefix(e.Name(), "b3-"))
		if err != nil || pid <= 0 {
			continue
		}
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			os.Remove(filepath.Join(dir, e.Name()))
		}
	}
}

// FreeAddr returns a 127.0.0.1 address with a port free right now, below
// the kernel's ephemeral range (32768 and up): a port the kernel hands out
// (to a listener on :0, or as the source port of an outgoing connection,
// of which a cluster makes many) can be taken again between this call and
// the node's bind, and the node then fails to start.
func FreeAddr(t testing.TB) string {
	t.Helper()
	addr, err := freeAddr()
	if err != nil {
		t.Fatal(err)
	}
	return addr
}

// handedOut holds every port FreeAddr returned: a port is free when it
// is checked but not yet bound by the process it is for, so without this
// two nodes of one cluster could be given the same one.
var handedOut struct {
	sync.Mutex
	ports map[int]bool
}

func freeAddr() (string, error) {
	handedOut.Lock()
	defer handedOut.Unlock()
	if handedOut.ports == nil {
		handedOut.ports = map[int]bool{}
	}
	for range 1000 {
		port := 20000 + rand.IntN(12000)
		if handedOut.ports[port] {
			continue
		}
		addr := fmt.Sprintf("127.0.0.1:%d", port)
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			continue
		}
		ln.Close()
		handedOut.ports[port] = true
		return addr, nil
	}
	return "", errors.New("no free port in 20000-31999 on 127.0.0.1")
}

// Buffer is an output sink safe for concurrent use.
type Buffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Tail returns the last n bytes written.
func (b *Buffer) Tail(n int) string {
	s := b.String()
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// Process is one running command.
type Process struct {
	Name   string
	Cmd    *exec.Cmd
	Output *Buffer // stdout and stderr together
	done   chan struct{}
	err    error
}

// Start runs bin with args and env added to the test's environment.
func Start(name, bin string, args, env []string) (*Process, error) {
	p := &Process{Name: name, Output: &Buffer{}, done: make(chan struct{})}
	p.Cmd = exec.Command(bin, args...)
	p.Cmd.Env = append(os.Environ(), env...)
	p.Cmd.Stdout, p.Cmd.Stderr = p.Output, p.Output
	if err := p.Cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		p.err = p.Cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// Exited reports whether the process has ended.
func (p *Process) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Wait waits for the end, up to timeout, and returns the exit error.
func (p *Process) Wait(timeout time.Duration) error {
	select {
	case <-p.done:
		return p.err
	case <-time.After(timeout):
		return fmt.Errorf("%s still running after %s", p.Name, timeout)
	}
}

// Kill sends SIGKILL and waits for the end.
func (p *Process) Kill() {
	if p.Exited() {
		return
	}
	_ = p.Cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

// Stop sends SIGTERM, waits up to timeout, then kills. It returns the
// exit error of a graceful stop, or an error saying it had to kill.
func (p *Process) Stop(timeout time.Duration) error {
	if p.Exited() {
		return p.err
	}
	_ = p.Cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return p.err
	case <-time.After(timeout):
		p.Kill()
		return fmt.Errorf("%s did not stop within %s; killed", p.Name, timeout)
	}
}
