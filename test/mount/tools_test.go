package mount

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestShellTools drives the mount with cp, dd, cat, ls, mkdir, rm and mv,
// and checks every result through the S3 API too.
func TestShellTools(t *testing.T) {
	e := newEnv(t, "--part-size", "5MiB")
	src := filepath.Join(t.TempDir(), "src")
	body := pattern(1, 12<<20+12345) // three parts: the multipart path
	if err := os.WriteFile(src, body, 0o644); err != nil {
		t.Fatal(err)
	}

	e.run("mkdir", "-p", e.path("a/b"))
	e.run("cp", src, e.path("a/b/big"))
	if got := e.mustObject("a/b/big"); !bytes.Equal(got, body) {
		t.Fatalf("cp: object has %d bytes, sha %s; want %d, %s", len(got), sum(got), len(body), sum(body))
	}
	if out := e.run("cat", e.path("a/b/big")); out != string(body) {
		t.Fatalf("cat: %d bytes differ from what cp wrote", len(out))
	}
	e.run("dd", "if="+src, "of="+e.path("a/dd"), "bs=1M", "status=none")
	if got := e.mustObject("a/dd"); !bytes.Equal(got, body) {
		t.Fatalf("dd: object has %d bytes, want %d", len(got), len(body))
	}
	e.run("sh", "-c", "echo hello > "+e.path("a/echo"))
	if got := string(e.mustObject("a/echo")); got != "hello\n" {
		t.Fatalf("shell redirection: object is %q", got)
	}
	// A subshell writes through a descriptor its children share.
	e.run("sh", "-c", "{ echo one; /bin/echo two; echo three; } > "+e.path("a/shared"))
	if got := string(e.mustObject("a/shared")); got != "one\ntwo\nthree\n" {
		t.Fatalf("writes through shared descriptors: object is %q", got)
	}
	e.run("touch", e.path("a/empty"))
	if got, err := e.object("a/empty"); err != nil || len(got) != 0 {
		t.Fatalf("touch: object %q, %v", got, err)
	}
	if ls := strings.Fields(e.run("ls", e.path("a"))); !slices.Equal(ls, []string{"b", "dd", "echo", "empty", "shared"}) {
		t.Fatalf("ls a: %v", ls)
	}
	if out := e.run("ls", "-l", e.path("a/b/big")); !strings.Contains(out, fmt.Sprint(len(body))) {
		t.Fatalf("ls -l shows no size %d: %s", len(body), out)
	}

	e.run("mv", e.path("a/dd"), e.path("a/b/moved"))
	if got := e.mustObject("a/b/moved"); !bytes.Equal(got, body) {
		t.Fatal("mv: moved object differs")
	}
	if _, err := e.object("a/dd"); err == nil {
		t.Fatal("mv: source object still exists")
	}
	// A directory moves by copy and delete (rename answers EXDEV).
	e.run("mv", e.path("a/b"), e.path("c"))
	if got := e.mustObject("c/moved"); !bytes.Equal(got, body) {
		t.Fatal("mv of a directory: object differs")
	}
	e.run("rm", e.path("c/moved"), e.path("c/big"))
	e.run("rm", "-r", e.path("a"))
	e.run("rmdir", e.path("c"))
	if keys := e.keys(); len(keys) != 0 {
		t.Fatalf("after rm and rmdir the bucket holds %v", keys)
	}
	if out := e.run("ls", "-A", e.dir); out != "" {
		t.Fatalf("ls of the empty mount: %q", out)
	}
}

// TestTreeRoundTrip copies a tree in with cp -r and out again; checksums
// agree through the S3 API, through the mount and after copying out.
func TestTreeRoundTrip(t *testing.T) {
	e := newEnv(t, "--part-size", "5MiB", "--read-part-size", "1MiB", "--small-file", "256KiB")
	src := filepath.Join(t.TempDir(), "tree")
	want := map[string]string{}
	sizes := []int{0, 1, 4095, 4096, 128 << 10, 256<<10 + 1, 1 << 20, 5 << 20, 5<<20 + 1, 11 << 20}
	for i, size := range sizes {
		rel := filepath.Join(fmt.Sprintf("d%d", i%3), fmt.Sprintf("sub%d", i%2), fmt.Sprintf("f%02d", i))
		body := pattern(100+i, size)
		if err := os.MkdirAll(filepath.Dir(filepath.Join(src, rel)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(src, rel), body, 0o644); err != nil {
			t.Fatal(err)
		}
		want[rel] = sum(body)
	}
	e.run("cp", "-r", src, e.path("tree"))
	for rel, s := range want {
		if got := sum(e.mustObject("tree/" + rel)); got != s {
			t.Errorf("through S3, %s: sha %s, want %s", rel, got, s)
		}
		b, err := os.ReadFile(e.path("tree/" + rel))
		if err != nil || sum(b) != s {
			t.Errorf("through the mount, %s: sha %s, %v; want %s", rel, sum(b), err, s)
		}
	}
	out := filepath.Join(t.TempDir(), "out")
	e.run("cp", "-r", e.path("tree"), out)
	got := map[string]string{}
	err := filepath.WalkDir(out, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(out, p)
		got[rel] = sum(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("copied out %d files, want %d", len(got), len(want))
	}
	for rel, s := range want {
		if got[rel] != s {
			t.Errorf("copied out, %s: sha %s, want %s", rel, got[rel], s)
		}
	}
}
