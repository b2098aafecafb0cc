package objstore

import (
	"errors"
	"path/filepath"
	"testing"

	pvfs "github.com/cockroachdb/pebble/v2/vfs"
)

// TestAdmitCountsTheDeclaredSize checks the reserve against the size a
// write declares: a small write fits, one larger than the free space does
// not, on the real disk.
func TestAdmitCountsTheDeclaredSize(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, Options{DataDir: filepath.Join(dir, "data"), MetaDir: filepath.Join(dir, "meta"), MinFreeBytes: 1 << 20})
	defer s.Close()
	free := s.FreeBytes()
	if free <= 1<<20 {
		t.Fatalf("free space %d: the test needs more than the 1 MiB reserve", free)
	}
	if err := s.Admit(4096); err != nil {
		t.Fatalf("4 KiB write refused with %d bytes free: %v", free, err)
	}
	if err := s.Admit(free); !errors.Is(err, ErrStorageFull) {
		t.Fatalf("write of all %d free bytes: %v, want ErrStorageFull", free, err)
	}
}

// TestNoReserveWithoutRealDisk: in-memory filesystems report no free space,
// so the guard is off and admits everything.
func TestNoReserveWithoutRealDisk(t *testing.T) {
	opts := memOptions(pvfs.NewMem())
	opts.MinFreeBytes = 1 << 62
	s := openStore(t, opts)
	defer s.Close()
	if err := s.Admit(1 << 40); err != nil || s.FreeBytes() != -1 {
		t.Fatalf("in-memory store: Admit %v, FreeBytes %d", err, s.FreeBytes())
	}
}
