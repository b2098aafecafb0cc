package mount

import (
	"context"

	"errors"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/b3-storage/b3/internal/testutil"
)

// TestServerKilledMidWrite: the server dies (SIGKILL) while a large file
// is being written. The writer gets an error from a write or from close,
// within bounded time, and no object (truncated or not) appears.
func TestServerKilledMidWrite(t *testing.T) {
	e := newEnv(t, "--part-size", "5MiB", "--retries", "1")
	f, err := os.Create(e.path("doomed"))
	if err != nil {
		t.Fatal(err)
	}
	block := pattern(3, 1<<20)
	done := make(chan error, 1)
	killed := make(chan struct{})
	go func() {
		for i := 0; ; i++ {
			if i == 12 {
				e.srv.Kill()
				close(killed)
			}
			if _, err := f.Write(block); err != nil {
				f.Close()
				done <- err
				return
			}
			if i > 200 {
				done <- f.Close()
				return
			}
		}
	}()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("writing through a killed server reported success")
		}
		t.Logf("writer got: %v", err)
	case <-time.After(90 * time.Second):
		t.Fatal("the writer hangs after the server was killed")
	}
	<-killed
	if err := e.srv.Start(); err != nil {
		t.Fatal(err)
	}
	if _, err := e.object("doomed"); testutil.APICode(err) != "NoSuchKey" {
		t.Fatalf("get of the failed file through S3: %v, want 404 (nothing committed)", err)
	}
	if _, err := e.s3.HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: &e.bucket, Key: aws.String("doomed")}); err == nil {
		t.Fatal("HEAD finds the failed file")
	}
	if st, err := os.Stat(e.path("doomed")); !os.IsNotExist(err) {
		t.Fatalf("the mount shows the failed file: %v, %v", st.Size(), err)
	}
}

// TestUnmountWithOpenFiles: SIGTERM unmounts even with files open; the
// file being written is abandoned (nothing committed), descriptors still
// open then fail instead of hanging.
func TestUnmountWithOpenFiles(t *testing.T) {
	e := newEnv(t)
	e.putObject("readme", pattern(9, 3<<20))
	r, err := os.Open(e.path("readme"))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, err := r.Read(make([]byte, 4096)); err != nil {
		t.Fatal(err)
	}
	w, err := os.Create(e.path("unfinished"))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := w.Write([]byte("not finished")); err != nil {
		t.Fatal(err)
	}
	if err := e.mount.Stop(30 * time.Second); err != nil {
		t.Fatalf("b3 mount with open files did not end cleanly: %v\n%s", err, e.mount.Output.String())
	}
	if mounted(e.dir) {
		t.Fatal("still mounted")
	}
	if !strings.Contains(e.mount.Output.String(), "1 files were still being written") {
		t.Errorf("no word of the abandoned file:\n%s", e.mount.Output.String())
	}
	if _, err := e.object("unfinished"); err == nil {
		t.Fatal("the file open for writing was committed at unmount")
	}
	// Far from the first read, beyond what the kernel may have cached.
	if _, err := r.ReadAt(make([]byte, 4096), 3<<20-4096); err == nil {
		t.Fatal("a read from a descriptor of the unmounted file system succeeded")
	}
	if _, err := w.Write([]byte("x")); err == nil {
		t.Fatal("a write to a descriptor of the unmounted file system succeeded")
	}
}

// TestUnreachableEndpoint: mounting an endpoint where nothing listens (or
// a bucket that does not exist) fails at once with a clear message.
func TestUnreachableEndpoint(t *testing.T) {
	requireFuse(t)
	srv := testutil.StartServer(t, testutil.ServerOptions{})
	ak, sk := srv.Keys()
	cases := map[string][]string{
		"nothing listens": {"--endpoint", "http://" + testutil.FreeAddr(t), "bucket"},
		"no such bucket":  {"--endpoint", srv.Endpoint(), "nosuchbucket"},
	}
	for name, args := range cases {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			cmd := exec.Command(testutil.Binary(t), append(append([]string{"mount", "--retries", "0"}, args...), dir)...)
			cmd.Env = append(os.Environ(), "AWS_ACCESS_KEY_ID="+ak, "AWS_SECRET_ACCESS_KEY="+sk)
			out, err := cmd.CombinedOutput()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != 1 {
				t.Fatalf("exit: %v\n%s", err, out)
			}
			if !strings.Contains(string(out), "is not reachable") {
				t.Fatalf("unclear message: %s", out)
			}
			if mounted(dir) {
				t.Fatal("mounted anyway")
			}
		})
	}
}
