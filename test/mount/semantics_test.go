package mount

import (
	"bytes"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestUnsupportedCalls: every call docs/MOUNT.md lists as unsupported
// fails with the errno it names, and leaves the bucket as it was.
func TestUnsupportedCalls(t *testing.T) {
	e := newEnv(t)
	e.putObject("existing", []byte("existing content"))
	e.putObject("dir/inside", []byte("x"))
	existing, dir := e.path("existing"), e.path("dir")

	cases := []struct {
		name string
		call func() error
		want syscall.Errno
	}{
		{"symlink", func() error { return os.Symlink("existing", e.path("link")) }, syscall.ENOTSUP},
		{"hard link", func() error { return os.Link(existing, e.path("hard")) }, syscall.ENOTSUP},
		{"mkfifo", func() error { return syscall.Mkfifo(e.path("fifo"), 0o644) }, syscall.ENOTSUP},
		{"chmod", func() error { return os.Chmod(existing, 0o600) }, syscall.EPERM},
		{"chown", func() error { return os.Chown(existing, 1234, 1234) }, syscall.EPERM},
		{"chmod of a directory", func() error { return os.Chmod(dir, 0o700) }, syscall.EPERM},
		{"truncate to a shorter size", func() error { return os.Truncate(existing, 3) }, syscall.ENOTSUP},
		{"truncate to a longer size", func() error { return os.Truncate(existing, 1<<20) }, syscall.ENOTSUP},
		{"open for writing without O_TRUNC", func() error {
			f, err := os.OpenFile(existing, os.O_WRONLY, 0)
			if err == nil {
				f.Close()
			}
			return err
		}, syscall.ENOTSUP},
		{"append", func() error {
			f, err := os.OpenFile(existing, os.O_WRONLY|os.O_APPEND, 0)
			if err == nil {
				f.Close()
			}
			return err
		}, syscall.ENOTSUP},
		{"write through O_RDWR without O_TRUNC", func() error {
			f, err := os.OpenFile(existing, os.O_RDWR, 0)
			if err != nil {
				return err
			}
			defer f.Close()
			_, err = f.WriteAt([]byte("patch"), 2)
			return err
		}, syscall.EBADF},
		{"setxattr", func() error { return unix.Setxattr(existing, "user.k", []byte("v"), 0) }, syscall.ENOTSUP},
		{"rename a directory", func() error { return os.Rename(dir, e.path("dir2")) }, syscall.EXDEV},
		{"rmdir of a non-empty directory", func() error { return syscall.Rmdir(dir) }, syscall.ENOTEMPTY},
		{"rename exchange", func() error {
			return unix.Renameat2(unix.AT_FDCWD, existing, unix.AT_FDCWD, e.path("dir/inside"), unix.RENAME_EXCHANGE)
		}, syscall.EINVAL},
		{"rename noreplace onto a file", func() error {
			return unix.Renameat2(unix.AT_FDCWD, existing, unix.AT_FDCWD, e.path("dir/inside"), unix.RENAME_NOREPLACE)
		}, syscall.EEXIST},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if err := c.call(); errnoOf(err) != c.want {
				t.Fatalf("got %v, want %v", err, c.want)
			}
		})
	}
	// Times are accepted and not stored.
	before, err := os.Stat(existing)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(existing, time.Now(), time.Unix(1e9, 0)); err != nil {
		t.Fatalf("utimes: %v", err)
	}
	if after, err := os.Stat(existing); err != nil || !after.ModTime().Equal(before.ModTime()) {
		t.Fatalf("utimes changed the reported time: %v, %v", after.ModTime(), err)
	}
	if got := string(e.mustObject("existing")); got != "existing content" {
		t.Fatalf("after the refused calls the object is %q", got)
	}
	if keys := e.keys(); !slices.Equal(keys, []string{"dir/inside", "existing"}) {
		t.Fatalf("after the refused calls the bucket holds %v", keys)
	}
}

// TestWritingFileRules: what a file being written refuses, and that a
// refused write voids the file (close reports it, nothing is committed).
func TestWritingFileRules(t *testing.T) {
	e := newEnv(t)
	f, err := os.OpenFile(e.path("w"), os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte("0123456789")); err != nil {
		t.Fatal(err)
	}
	checks := []struct {
		name string
		call func() error
		want syscall.Errno
	}{
		{"read through the writing handle", func() error { _, err := f.ReadAt(make([]byte, 4), 0); return err }, syscall.EBADF},
		{"open for reading while written", func() error { _, err := os.Open(e.path("w")); return err }, syscall.EBUSY},
		{"second writer", func() error { _, err := os.Create(e.path("w")); return err }, syscall.EBUSY},
		{"unlink while written", func() error { return os.Remove(e.path("w")) }, syscall.EBUSY},
		{"fallocate", func() error { return syscall.Fallocate(int(f.Fd()), 0, 0, 1<<20) }, syscall.ENOTSUP},
	}
	for _, c := range checks {
		if err := c.call(); errnoOf(err) != c.want {
			t.Errorf("%s: got %v, want %v", c.name, err, c.want)
		}
	}
	// Times of a file being written may be set (the object takes the
	// commit time).
	if err := os.Chtimes(e.path("w"), time.Now(), time.Now()); err != nil {
		t.Errorf("utimes while written: %v", err)
	}
	// An out-of-order write is refused and voids the file.
	if _, err := f.WriteAt([]byte("x"), 100); errnoOf(err) != syscall.EINVAL {
		t.Fatalf("write at a gap: %v, want EINVAL", err)
	}
	if _, err := f.Write([]byte("more")); errnoOf(err) != syscall.EINVAL {
		t.Fatalf("write after the refused one: %v, want EINVAL", err)
	}
	if err := f.Close(); errnoOf(err) != syscall.EINVAL {
		t.Fatalf("close of the voided file: %v, want EINVAL", err)
	}
	if _, err := e.object("w"); err == nil {
		t.Fatal("a voided file was committed")
	}

	// fsync commits; a later write fails.
	g, err := os.Create(e.path("synced"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.Write([]byte("abc")); err != nil {
		t.Fatal(err)
	}
	if err := g.Sync(); err != nil {
		t.Fatalf("fsync: %v", err)
	}
	if got := string(e.mustObject("synced")); got != "abc" {
		t.Fatalf("after fsync the object is %q", got)
	}
	if _, err := g.Write([]byte("d")); errnoOf(err) != syscall.EBADF {
		t.Fatalf("write after fsync: %v, want EBADF", err)
	}
	g.Close()

	// Overwrite with O_TRUNC replaces the object whole; truncate to 0 too.
	if err := os.WriteFile(e.path("synced"), []byte("replaced"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := string(e.mustObject("synced")); got != "replaced" {
		t.Fatalf("after overwrite the object is %q", got)
	}
	if err := os.Truncate(e.path("synced"), 0); err != nil {
		t.Fatalf("truncate to 0: %v", err)
	}
	if got := e.mustObject("synced"); len(got) != 0 {
		t.Fatalf("after truncate to 0 the object is %q", got)
	}
}

// TestBucketLayout: keys written by other clients appear as files and
// directories (explicit markers, implicit prefixes, a directory shadowing
// an object of the same name) and reads see new content after re-open.
func TestBucketLayout(t *testing.T) {
	e := newEnv(t, "--metadata-ttl", "0")
	e.putObject("marker/", nil)
	e.putObject("implicit/deep/file", []byte("deep"))
	e.putObject("both", []byte("hidden"))
	e.putObject("both/child", []byte("child"))
	e.putObject("file", []byte("v1"))

	entries, err := os.ReadDir(e.dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range entries {
		kind := "f"
		if d.IsDir() {
			kind = "d"
		}
		got = append(got, d.Name()+":"+kind)
	}
	if want := []string{"both:d", "file:f", "implicit:d", "marker:d"}; !slices.Equal(got, want) {
		t.Fatalf("root lists %v, want %v", got, want)
	}
	if b, err := os.ReadFile(e.path("implicit/deep/file")); err != nil || string(b) != "deep" {
		t.Fatalf("implicit directory: %q, %v", b, err)
	}
	if b, err := os.ReadFile(e.path("both/child")); err != nil || string(b) != "child" {
		t.Fatalf("shadowing directory: %q, %v", b, err)
	}
	if st, err := os.Stat(e.path("marker")); err != nil || !st.IsDir() {
		t.Fatalf("marker directory: %v, %v", st, err)
	}
	e.putObject("file", []byte("version two"))
	if b, err := os.ReadFile(e.path("file")); err != nil || string(b) != "version two" {
		t.Fatalf("after another client replaced it: %q, %v", b, err)
	}
	if err := syscall.Rmdir(e.path("marker")); err != nil {
		t.Fatalf("rmdir of an empty explicit directory: %v", err)
	}
	if _, err := e.object("marker/"); err == nil {
		t.Fatal("rmdir left the marker")
	}
}

// TestMountFlags: --read-only, --uid/--gid/--file-mode/--dir-mode and a
// prefix.
func TestMountFlags(t *testing.T) {
	e := newEnv(t, "--uid", "1234", "--gid", "2345", "--file-mode", "0600", "--dir-mode", "0700")
	e.putObject("pre/sub/f", []byte("under the prefix"))
	e.putObject("outside", []byte("x"))
	st, err := os.Stat(e.path("pre/sub/f"))
	if err != nil {
		t.Fatal(err)
	}
	sys := st.Sys().(*syscall.Stat_t)
	if sys.Uid != 1234 || sys.Gid != 2345 || st.Mode().Perm() != 0o600 {
		t.Fatalf("file: uid %d gid %d mode %v", sys.Uid, sys.Gid, st.Mode())
	}
	if st, err := os.Stat(e.path("pre")); err != nil || st.Mode().Perm() != 0o700 {
		t.Fatalf("directory: %v, %v", st, err)
	}

	ro := t.TempDir()
	e.startMount(e.bucket+"/pre", ro, "--read-only")
	b, err := os.ReadFile(ro + "/sub/f")
	if err != nil || string(b) != "under the prefix" {
		t.Fatalf("read through the prefix mount: %q, %v", b, err)
	}
	if _, err := os.Stat(ro + "/outside"); !os.IsNotExist(err) {
		t.Fatalf("a key outside the prefix is visible: %v", err)
	}
	refused := map[string]func() error{
		"create": func() error { return os.WriteFile(ro+"/new", []byte("x"), 0o644) },
		"mkdir":  func() error { return os.Mkdir(ro+"/d", 0o755) },
		"unlink": func() error { return os.Remove(ro + "/sub/f") },
		"rename": func() error { return os.Rename(ro+"/sub/f", ro+"/g") },
	}
	for name, call := range refused {
		if err := call(); errnoOf(err) != syscall.EROFS {
			t.Errorf("%s on a read-only mount: %v, want EROFS", name, err)
		}
	}
	if got := e.mustObject("pre/sub/f"); !bytes.Equal(got, []byte("under the prefix")) {
		t.Fatal("the read-only mount changed an object")
	}

	// --allow-other lets other users in, with the kernel checking modes.
	shared := t.TempDir()
	e.startMount(e.bucket, shared, "--allow-other")
	opts := mountOptions(shared)
	if !strings.Contains(opts, "allow_other") || !strings.Contains(opts, "default_permissions") {
		t.Fatalf("--allow-other mount options: %q", opts)
	}
	if strings.Contains(mountOptions(e.dir), "allow_other") {
		t.Fatal("allow_other without --allow-other")
	}
}
