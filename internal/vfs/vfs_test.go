package vfs

import (
	"bytes"
	"path/filepath"
	"testing"

	pvfs "github.com/cockroachdb/pebble/v2/vfs"
)

// fsCase runs the same checks against every FS implementation.
func fsCases(t *testing.T) map[string]struct {
	fs  FS
	dir string
} {
	return map[string]struct {
		fs  FS
		dir string
	}{
		"os":     {Default, t.TempDir()},
		"pebble": {Pebble(pvfs.NewMem()), "/d"},
	}
}

func TestReadWriteTruncate(t *testing.T) {
	for name, c := range fsCases(t) {
		t.Run(name, func(t *testing.T) {
			if err := c.fs.MkdirAll(c.dir); err != nil {
				t.Fatal(err)
			}
			p := filepath.Join(c.dir, "f")
			f, _, err := c.fs.Create(p, false)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.WriteAt([]byte("hello world"), 0); err != nil {
				t.Fatal(err)
			}
			if err := f.Truncate(5); err != nil {
				t.Fatal(err)
			}
			if n, _ := f.Size(); n != 5 {
				t.Fatalf("size after truncate = %d, want 5", n)
			}
			buf := make([]byte, 5)
			if _, err := f.ReadAt(buf, 0); err != nil || string(buf) != "hello" {
				t.Fatalf("read %q, %v", buf, err)
			}
			if err := f.Sync(); err != nil {
				t.Fatal(err)
			}
			f.Close()
			names, err := c.fs.List(c.dir)
			if err != nil || len(names) != 1 || names[0] != "f" {
				t.Fatalf("List = %v, %v", names, err)
			}
			if _, err := c.fs.Open(filepath.Join(c.dir, "missing")); !IsNotExist(err) {
				t.Fatalf("open missing: %v, want not-exist", err)
			}
		})
	}
}

// TestCrashKeepsOnlySynced is the property every crash test relies on.
func TestCrashKeepsOnlySynced(t *testing.T) {
	mem := NewCrashableMem()
	fs := Pebble(mem)
	must(t, fs.MkdirAll("/d"))
	must(t, fs.SyncDir("/"))
	f, _, err := fs.Create("/d/f", false)
	must(t, err)
	must(t, fs.SyncDir("/d"))
	_, err = f.WriteAt([]byte("synced"), 0)
	must(t, err)
	must(t, f.Sync())
	_, err = f.WriteAt([]byte("-lost"), 6)
	must(t, err)

	after := Pebble(mem.CrashClone(pvfs.CrashCloneCfg{}))
	g, err := after.Open("/d/f")
	must(t, err)
	n, _ := g.Size()
	buf := make([]byte, n)
	_, _ = g.ReadAt(buf, 0)
	if !bytes.Equal(buf, []byte("synced")) {
		t.Fatalf("after crash file holds %q, want %q", buf, "synced")
	}
}

func TestDirectCreate(t *testing.T) {
	f, direct, err := Default.Create(filepath.Join(t.TempDir(), "d"), true)
	must(t, err)
	defer f.Close()
	if direct {
		// A direct write must be aligned in offset, length and memory.
		buf := AlignedBuffer(DirectAlignment)
		copy(buf, "x")
		if _, err := f.WriteAt(buf, 0); err != nil {
			t.Fatalf("aligned direct write: %v", err)
		}
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestMkdirAllDurable: every directory created survives a crash.
func TestMkdirAllDurable(t *testing.T) {
	mem := NewCrashableMem()
	fs := Pebble(mem)
	must(t, MkdirAllDurable(fs, "/a/b/c"))
	after := Pebble(mem.CrashClone(pvfs.CrashCloneCfg{}))
	for _, d := range []string{"/a", "/a/b", "/a/b/c"} {
		if _, err := after.Stat(d); err != nil {
			t.Fatalf("%s after crash: %v", d, err)
		}
	}
}
