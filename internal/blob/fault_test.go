package blob

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"sync/atomic"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/b3-storage/b3/internal/vfs"
)

// faultFS fails every file Sync while failSync is set, as a disk reporting
// a writeback error (EIO) would. While full is set it is a disk out of
// space: segment creation and writes fail with ENOSPC (a write may land
// in part), and so does every fsync when syncToo is set (a kernel with
// delayed allocation learns of the shortage only at writeback).
type faultFS struct {
	vfs.FS
	failSync      atomic.Bool
	full, syncToo atomic.Bool
}

var errInjected = errors.New("injected fsync failure")

type faultFile struct {
	vfs.File
	fs *faultFS
}

func (f *faultFile) Sync() error {
	if f.fs.failSync.Load() {
		return errInjected
	}
	if f.fs.full.Load() && f.fs.syncToo.Load() {
		return noSpace
	}
	return f.File.Sync()
}

func (f *faultFile) WriteAt(p []byte, off int64) (int, error) {
	if f.fs.full.Load() {
		n, _ := f.File.WriteAt(p[:len(p)/2], off)
		return n, noSpace
	}
	return f.File.WriteAt(p, off)
}

// noSpace is ENOSPC wrapped as the os package wraps it.
var noSpace = &fs.PathError{Op: "write", Path: "data/segment", Err: unix.ENOSPC}

func (f *faultFS) Create(name string, direct bool) (vfs.File, bool, error) {
	if f.full.Load() {
		return nil, false, noSpace
	}
	file, d, err := f.FS.Create(name, direct)
	if err != nil {
		return nil, false, err
	}
	return &faultFile{File: file, fs: f}, d, nil
}

func (f *faultFS) OpenReadWrite(name string) (vfs.File, error) {
	file, err := f.FS.OpenReadWrite(name)
	if err != nil {
		return nil, err
	}
	return &faultFile{File: file, fs: f}, nil
}

// TestNoAcknowledgementAfterFailedFsync: once an fsync has failed, the
// pages it covered may be lost even if a later fsync of the same file
// succeeds (the kernel reports a writeback error once). So the store must
// refuse every later append, under every policy that syncs, and must not
// checkpoint past the failure on Close.
func TestNoAcknowledgementAfterFailedFsync(t *testing.T) {
	for _, policy := range []SyncPolicy{SyncBatch, SyncAlways} {
		for _, rollover := range []bool{false, true} {
			t.Run(fmt.Sprintf("%v/rollover=%v", policy, rollover), func(t *testing.T) {
				ffs := &faultFS{FS: memFS()}
				opts := testOptions(ffs)
				opts.Sync = policy
				if rollover {
					// The failing append crosses a segment boundary, so the
					// failed fsync is the seal's.
					opts.SegmentSize = int64(opts.ChunkSize) * 2
				}
				s := mustOpen(t, opts)
				before := mustAppend(t, s, "before", value(1, 100))

				ffs.failSync.Store(true)
				failed, _, err := s.Append(context.Background(), Owner{Key: []byte("failed")}, bytes.NewReader(value(2, 3*opts.ChunkSize)))
				if !errors.Is(err, errInjected) {
					t.Fatalf("append during failing fsync: %v, want the injected failure", err)
				}
				ffs.failSync.Store(false)

				_, _, err = s.Append(context.Background(), Owner{Key: []byte("after")}, bytes.NewReader(value(3, 100)))
				if err == nil {
					t.Fatal("append after a failed fsync was acknowledged")
				}
				if err := s.Close(); err == nil {
					t.Fatal("Close of a failed store reported success")
				}
				p, err := readCheckpoint(opts.FS, opts.Dir)
				if err != nil && !vfs.IsNotExist(err) {
					t.Fatal(err)
				}
				for _, e := range failed {
					if p.segment == e.Segment && p.offset > e.Offset {
						t.Fatalf("checkpoint %+v covers bytes whose fsync failed (%+v)", p, e)
					}
				}
				checkRead(t, s0(t, opts), before, value(1, 100))
			})
		}
	}
}

// s0 reopens the store after the failure: what was acknowledged before it
// is still there.
func s0(t *testing.T, opts Options) *Store {
	t.Helper()
	s := mustOpen(t, opts)
	t.Cleanup(func() { s.Close() })
	return s
}
