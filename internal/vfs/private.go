package vfs

import (
	"io"
	"os"

	pvfs "github.com/cockroachdb/pebble/v2/vfs"
	"golang.org/x/sys/unix"
)

// Everything b3 stores is private to the user running it: object bytes in
// segments and metadata (small objects inline, keys, tags) in pebble are
// readable by no other local user. Directories are created DirPerm and
// files filePerm (before the umask, which can only narrow them).
const (
	DirPerm  os.FileMode = 0o700
	filePerm os.FileMode = 0o600
)

// PrivateDisk is pebble's real-disk filesystem with b3's permissions:
// pebble creates its files 0666 and directories with the mode it is
// asked for (0755), so every file it creates or reopens for writing is
// narrowed to 0600 at once, through its descriptor, before pebble writes a
// byte, and directories are created 0700. In-memory filesystems need no
// wrapper.
func PrivateDisk() pvfs.FS { return privateFS{pvfs.Default} }

type privateFS struct{ pvfs.FS }

func (p privateFS) Create(name string, category pvfs.DiskWriteCategory) (pvfs.File, error) {
	return private(p.FS.Create(name, category))
}

func (p privateFS) OpenReadWrite(name string, category pvfs.DiskWriteCategory, opts ...pvfs.OpenOption) (pvfs.File, error) {
	return private(p.FS.OpenReadWrite(name, category, opts...))
}

func (p privateFS) ReuseForWrite(oldname, newname string, category pvfs.DiskWriteCategory) (pvfs.File, error) {
	return private(p.FS.ReuseForWrite(oldname, newname, category))
}

func (p privateFS) MkdirAll(dir string, _ os.FileMode) error { return p.FS.MkdirAll(dir, DirPerm) }

// Lock creates the (empty) lock file; it holds no data, but is narrowed
// too so the directory has no exception.
func (p privateFS) Lock(name string) (io.Closer, error) {
	c, err := p.FS.Lock(name)
	if err != nil {
		return nil, err
	}
	if err := os.Chmod(name, filePerm); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

func (p privateFS) Unwrap() pvfs.FS { return p.FS }

func private(f pvfs.File, err error) (pvfs.File, error) {
	if err != nil {
		return f, err
	}
	if err := unix.Fchmod(int(f.Fd()), uint32(filePerm)); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}
