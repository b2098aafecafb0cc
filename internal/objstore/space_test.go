package objstore

import (
	"errors"
	"path/filepath"
	"testing"

	pvfs "github.com/cockroachdb/pebble/v2/vfs"
)

// TestReserveCountsDeclaredSizes checks the reserve against the sizes
// writes declare, on the real disk: a small write fits, one larger than the
// free space does not, and writes admitted but still running count against
// the next until they release.
func TestReserveCountsDeclaredSizes(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, Options{DataDir: filepath.Join(dir, "data"), MetaDir: filepath.Join(dir, "meta"), MinFreeBytes: 1 << 20})
	defer s.Close()
	free := s.FreeBytes()
	if free <= 1<<20 {
		t.Fatalf("free space %d: the test needs more than the 1 MiB reserve", free)
	}
	release, err := s.Reserve(4096)
	if err != nil {
		t.Fatalf("4 KiB write refused with %d bytes free: %v", free, err)
	}
	release()
	if _, err := s.Reserve(free); !errors.Is(err, ErrStorageFull) {
		t.Fatalf("write of all %d free bytes: %v, want ErrStorageFull", free, err)
	}
	// Two writes of 40% of the free space fit; a third does not while they
	// run, and does once one of them has released.
	part := free * 2 / 5
	r1, err1 := s.Reserve(part)
	r2, err2 := s.Reserve(part)
	if err1 != nil || err2 != nil {
		t.Fatalf("two writes of %d of %d free bytes: %v, %v", part, free, err1, err2)
	}
	if _, err := s.Reserve(part); !errors.Is(err, ErrStorageFull) {
		t.Fatalf("third write of %d bytes while two run: %v, want ErrStorageFull", part, err)
	}
	r1()
	r1() // release is idempotent
	r3, err := s.Reserve(part)
	if err != nil {
		t.Fatalf("third write after one released: %v", err)
	}
	r2()
	r3()
}

// TestNoReserveWithoutRealDisk: in-memory filesystems report no free space,
// so the guard is off and admits everything.
func TestNoReserveWithoutRealDisk(t *testing.T) {
	opts := memOptions(pvfs.NewMem())
	opts.MinFreeBytes = 1 << 62
	s := openStore(t, opts)
	defer s.Close()
	if _, err := s.Reserve(1 << 40); err != nil || s.FreeBytes() != -1 {
		t.Fatalf("in-memory store: Reserve %v, FreeBytes %d", err, s.FreeBytes())
	}
}
