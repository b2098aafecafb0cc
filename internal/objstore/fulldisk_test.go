package objstore

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"sync/atomic"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/b3-storage/b3/internal/blob"
	"github.com/b3-storage/b3/internal/vfs"
)

// fullDisk is a data disk that can run out of space: while full is set,
// writes fail with ENOSPC (a write may land in part); creating an empty
// file still works, as on a full tmpfs.
type fullDisk struct {
	vfs.FS
	full atomic.Bool
}

type fullDiskFile struct {
	vfs.File
	d *fullDisk
}

var errFull = &fs.PathError{Op: "write", Path: "/data/segment", Err: unix.ENOSPC}

func (f *fullDiskFile) WriteAt(p []byte, off int64) (int, error) {
	if f.d.full.Load() {
		n, _ := f.File.WriteAt(p[:len(p)/2], off)
		return n, errFull
	}
	return f.File.WriteAt(p, off)
}

func (d *fullDisk) Create(name string, direct bool) (vfs.File, bool, error) {
	f, isDirect, err := d.FS.Create(name, direct)
	if err != nil {
		return nil, false, err
	}
	return &fullDiskFile{f, d}, isDirect, nil
}

func (d *fullDisk) OpenReadWrite(name string) (vfs.File, error) {
	f, err := d.FS.OpenReadWrite(name)
	if err != nil {
		return nil, err
	}
	return &fullDiskFile{f, d}, nil
}

// TestFullDiskRecovers: uploads to a full data disk fail with ENOSPC;
// once space is back the store takes uploads again without a restart, and
// what it acknowledged reads back. The failed uploads' bytes, cut away by
// the recovery, are not counted dead: the dead bytes never exceed the
// segments, and stay below one failed upload's worth.
func TestFullDiskRecovers(t *testing.T) {
	mem := vfs.NewCrashableMem()
	opts := memOptions(mem)
	disk := &fullDisk{FS: vfs.Pebble(mem)}
	opts.FS = disk
	s := openStore(t, opts)
	defer s.Close()
	ensureBucket(t, s, "b")
	const size = 40 << 10
	put(t, s, "b", "before", value("before", 0, size))

	disk.full.Store(true)
	for i := range 20 {
		_, err := s.PutObject(context.Background(), PutInput{Bucket: "b", Key: "failed", Body: bytes.NewReader(value("failed", i, size))})
		if !blob.IsNoSpace(err) && !errors.Is(err, blob.ErrRestarted) {
			t.Fatalf("PUT %d on a full disk: %v, want ENOSPC", i, err)
		}
		// The store tries to recover before each write (no reserve here):
		// the recovery cuts, the write fails again.
		s.lastRecover.Store(0)
	}
	disk.full.Store(false)
	s.lastRecover.Store(0)
	put(t, s, "b", "after", value("after", 0, size))
	for _, k := range []string{"before", "after"} {
		got, err := read(s, "b", k)
		if err != nil || !bytes.Equal(got, value(k, 0, size)) {
			t.Fatalf("%s: %v", k, err)
		}
	}
	if _, err := read(s, "b", "failed"); !errors.Is(err, ErrNoSuchKey) {
		t.Fatalf("a failed upload is there: %v", err)
	}
	vs := s.VacuumStatus()
	if vs.DeadBytes > vs.TotalBytes || vs.DeadBytes > size {
		t.Fatalf("after 20 uploads cut away by recoveries: %d of %d segment bytes counted dead, want under %d", vs.DeadBytes, vs.TotalBytes, size)
	}
	// Each recovery sealed a segment, some cut to nothing: vacuum removes
	// those, and what was acknowledged stays.
	before := len(s.Blob().Segments())
	if _, err := s.Vacuum(context.Background(), 0.99); err != nil {
		t.Fatal(err)
	}
	if after := len(s.Blob().Segments()); after >= before {
		t.Fatalf("vacuum kept every segment (%d of %d), the empty ones too", after, before)
	}
	for _, k := range []string{"before", "after"} {
		if got, err := read(s, "b", k); err != nil || !bytes.Equal(got, value(k, 0, size)) {
			t.Fatalf("%s after vacuum: %v", k, err)
		}
	}
}
