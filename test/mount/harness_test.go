package mount

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
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

// env is one server, one bucket and one mount of it.
type env struct {
	t      *testing.T
	srv    *testutil.Server
	s3     *s3.Client
	bucket string
	dir    string // the mount point
	mount  *testutil.Process
}

func requireFuse(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("fusermount3"); err != nil {
		t.Fatal("fusermount3 not found: install fuse3 (scripts/install-test-tools.sh)")
	}
	if _, err := os.Stat("/dev/fuse"); err != nil {
		t.Fatalf("/dev/fuse: %v (FUSE is needed to test b3 mount)", err)
	}
}

// newEnv starts a server, creates a bucket and mounts it with args.
func newEnv(t *testing.T, args ...string) *env {
	t.Helper()
	requireFuse(t)
	srv := testutil.StartServer(t, testutil.ServerOptions{})
	e := &env{t: t, srv: srv, s3: srv.Client(30 * time.Second), bucket: "mnt"}
	if _, err := e.s3.CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: &e.bucket}); err != nil {
		t.Fatal(err)
	}
	e.dir = t.TempDir()
	e.mount = e.startMount(e.bucket, e.dir, args...)
	return e
}

// startMount runs `b3 mount` and waits until it serves dir; the test's
// end unmounts it (SIGTERM) and checks that it went away.
func (e *env) startMount(target, dir string, args ...string) *testutil.Process {
	t := e.t
	t.Helper()
	ak, sk := e.srv.Keys()
	all := append([]string{"mount", "--endpoint", e.srv.Endpoint(), "--metadata-ttl", "1s"}, args...)
	all = append(all, target, dir)
	p, err := testutil.Start("b3 mount", testutil.Binary(t), all,
		[]string{"AWS_ACCESS_KEY_ID=" + ak, "AWS_SECRET_ACCESS_KEY=" + sk})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if !p.Exited() {
			if err := p.Stop(30 * time.Second); err != nil {
				t.Errorf("b3 mount: %v", err)
			}
		}
		if mounted(dir) {
			t.Errorf("%s still mounted after b3 mount ended", dir)
			_ = exec.Command("fusermount3", "-u", "-z", dir).Run()
		}
		if t.Failed() {
			t.Logf("b3 mount output:\n%s", p.Output.String())
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(p.Output.String(), "mounted on") {
		if p.Exited() || time.Now().After(deadline) {
			t.Fatalf("b3 mount did not mount: %v\n%s", p.Wait(time.Second), p.Output.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !mounted(dir) {
		t.Fatalf("b3 mount said mounted, but %s is not in /proc/self/mountinfo", dir)
	}
	return p
}

// mounted reports whether dir is a mount point.
func mounted(dir string) bool {
	info, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(info), "\n") {
		if f := strings.Fields(line); len(f) > 4 && f[4] == dir {
			return true
		}
	}
	return false
}

// mountOptions returns the mount and super block options of dir's mount.
func mountOptions(dir string) string {
	info, _ := os.ReadFile("/proc/self/mountinfo")
	for _, line := range strings.Split(string(info), "\n") {
		if f := strings.Fields(line); len(f) > 4 && f[4] == dir {
			return line
		}
	}
	return ""
}

func (e *env) path(name string) string { return filepath.Join(e.dir, name) }

// run runs a command, failing the test with its output on error.
func (e *env) run(name string, args ...string) string {
	e.t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		e.t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// object returns an object's content through the S3 API.
func (e *env) object(key string) ([]byte, error) {
	out, err := e.s3.GetObject(context.Background(), &s3.GetObjectInput{Bucket: &e.bucket, Key: &key})
	if err != nil {
		return nil, err
	}
	defer out.Body.Close()
	return io.ReadAll(out.Body)
}

func (e *env) mustObject(key string) []byte {
	e.t.Helper()
	b, err := e.object(key)
	if err != nil {
		e.t.Fatalf("get %s through S3: %v", key, err)
	}
	return b
}

func (e *env) putObject(key string, body []byte) {
	e.t.Helper()
	if _, err := e.s3.PutObject(context.Background(), &s3.PutObjectInput{Bucket: &e.bucket, Key: &key,
		Body: bytes.NewReader(body)}); err != nil {
		e.t.Fatal(err)
	}
}

// keys lists every key of the bucket.
func (e *env) keys() []string {
	e.t.Helper()
	var keys []string
	p := s3.NewListObjectsV2Paginator(e.s3, &s3.ListObjectsV2Input{Bucket: &e.bucket})
	for p.HasMorePages() {
		page, err := p.NextPage(context.Background())
		if err != nil {
			e.t.Fatal(err)
		}
		for _, o := range page.Contents {
			keys = append(keys, aws.ToString(o.Key))
		}
	}
	return keys
}

// pattern is deterministic content: n bytes from seed.
func pattern(seed, n int) []byte {
	b := make([]byte, n)
	x := uint64(seed)*0x9E3779B97F4A7C15 + 1
	for i := range b {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		b[i] = byte(x)
	}
	return b
}

func sum(b []byte) string { return fmt.Sprintf("%x", sha256.Sum256(b)) }

// errnoOf returns the errno inside a failed os call.
func errnoOf(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		return le.Err
	}
	var se *os.SyscallError
	if errors.As(err, &se) {
		return se.Err
	}
	return err
}
