// Package vfs is the narrow disk interface the storage engine writes through.
//
// Everything b3 persists outside pebble goes through FS and File, so tests
// can swap the real disk for a crashable in-memory one and cut power at an
// exact instant: after a crash only what was synced survives (see
// NewCrashableMem). Pebble itself runs on a pebble vfs.FS; Pebble(fs)
// adapts the same filesystem so that the metadata store and the segment
// files crash together, at one instant, in tests.
//
// Guarantees a caller may rely on, and the only ones:
//   - File.Sync makes the file's written data and size durable.
//   - A created, renamed or removed directory entry is durable only after
//     SyncDir on its parent directory.
//   - Writes are not atomic: after a crash an unsynced write may be absent,
//     present, or present in part.
//   - On the real disk, files are created 0600 and directories 0700
//     (DirPerm); PrivateDisk gives pebble the same.
package vfs

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
)

// File is an open file. Offsets are absolute; there is no file position.
type File interface {
	io.ReaderAt
	io.WriterAt
	io.Closer
	// Sync makes all written data and the file size durable.
	Sync() error
	// Size returns the current size of the file.
	Size() (int64, error)
	// Truncate cuts (or extends) the file to size. Durable after Sync.
	Truncate(size int64) error
}

// OSFile is implemented by files backed by a real operating-system file,
// for callers that can use zero-copy paths (sendfile) when available.
type OSFile interface {
	OSFile() *os.File
}

// FS is a filesystem.
type FS interface {
	// Create creates name, truncating it if it exists, open for reading and
	// writing. With direct set the file is opened for direct I/O where the
	// platform and filesystem allow it; writers must then issue writes whose
	// offset, length and buffer address are multiples of DirectAlignment.
	// Direct reports whether direct I/O is in effect.
	Create(name string, direct bool) (f File, isDirect bool, err error)
	// OpenReadWrite opens an existing file for reading and writing.
	OpenReadWrite(name string) (File, error)
	// Open opens an existing file read-only.
	Open(name string) (File, error)
	Remove(name string) error
	Rename(oldname, newname string) error
	MkdirAll(dir string) error
	// List returns the names (not paths) of the entries in dir.
	List(dir string) ([]string, error)
	// SyncDir makes the entries of dir durable.
	SyncDir(dir string) error
	// Stat reports whether name exists and its size.
	Stat(name string) (size int64, err error)
}

// DirectAlignment is the offset, length and memory alignment direct I/O
// requires. 4096 covers every common device's logical block size.
const DirectAlignment = 4096

// IsNotExist reports whether err, or an error it wraps, says a file does
// not exist (the real disk's and pebble's errors alike).
func IsNotExist(err error) bool { return errors.Is(err, fs.ErrNotExist) }

// Prefetcher is implemented by files that can start reading a range into
// the page cache ahead of use (posix_fadvise WILLNEED). It is a hint: it
// changes no data and its failure is harmless.
type Prefetcher interface {
	Prefetch(off, n int64) error
}

// MkdirAllDurable creates dir and any missing parents, then syncs the
// parent of every directory it created (and dir's parent in any case), so
// that the whole path survives a crash: a directory entry is durable only
// once its parent is synced.
func MkdirAllDurable(fs FS, dir string) error {
	dir = path.Clean(dir)
	var created []string
	for d := dir; ; d = path.Dir(d) {
		if _, err := fs.Stat(d); err == nil {
			break
		}
		created = append(created, d)
		if path.Dir(d) == d {
			break
		}
	}
	if err := fs.MkdirAll(dir); err != nil {
		return err
	}
	if len(created) == 0 {
		created = []string{dir}
	}
	for _, d := range created {
		if err := fs.SyncDir(path.Dir(d)); err != nil {
			return fmt.Errorf("sync parent of %s: %w", d, err)
		}
	}
	return nil
}

// SpaceReporter is implemented by filesystems that know how much space is
// left for new data (the real disk); in-memory test filesystems do not.
type SpaceReporter interface {
	// FreeSpace returns the bytes an unprivileged writer may still use on
	// the filesystem holding dir.
	FreeSpace(dir string) (int64, error)
}
