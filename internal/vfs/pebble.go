package vfs

import (
	"io"

	pvfs "github.com/cockroachdb/pebble/v2/vfs"
)

// Pebble adapts a pebble filesystem. Tests use it with NewCrashableMem so
// that segment files and the pebble metadata store share one filesystem and
// crash at the same instant.
func Pebble(fs pvfs.FS) FS { return pebbleFS{fs} }

// NewCrashableMem returns an in-memory filesystem on which
// (*pvfs.MemFS).CrashClone yields the state after a crash: synced data and
// directory entries survive, unsynced ones are dropped (or kept in part,
// per CrashCloneCfg).
func NewCrashableMem() *pvfs.MemFS { return pvfs.NewCrashableMem() }

type pebbleFS struct{ fs pvfs.FS }

type pebbleFile struct {
	fs   pvfs.FS
	name string
	f    pvfs.File
}

func (p *pebbleFile) ReadAt(b []byte, off int64) (int, error)  { return p.f.ReadAt(b, off) }
func (p *pebbleFile) WriteAt(b []byte, off int64) (int, error) { return p.f.WriteAt(b, off) }
func (p *pebbleFile) Close() error                             { return p.f.Close() }
func (p *pebbleFile) Sync() error                              { return p.f.Sync() }

func (p *pebbleFile) Size() (int64, error) {
	st, err := p.f.Stat()
	if err != nil {
		return 0, err
	}
	return st.Size(), nil
}

// Truncate is emulated, as pebble files cannot be truncated: the kept
// prefix is copied to a temporary file which is synced and renamed over the
// original, so the cut is atomic. Only tests take this path.
func (p *pebbleFile) Truncate(size int64) error {
	cur, err := p.Size()
	if err != nil {
		return err
	}
	if size >= cur {
		if size > cur {
			_, err = p.f.WriteAt(make([]byte, size-cur), cur)
		}
		return err
	}
	tmp := p.name + ".truncate"
	nf, err := p.fs.Create(tmp, pvfs.WriteCategoryUnspecified)
	if err != nil {
		return err
	}
	if _, err := io.Copy(nf, io.NewSectionReader(p.f, 0, size)); err != nil {
		nf.Close()
		return err
	}
	if err := nf.Sync(); err != nil {
		nf.Close()
		return err
	}
	if err := nf.Close(); err != nil {
		return err
	}
	if err := p.fs.Rename(tmp, p.name); err != nil {
		return err
	}
	if err := syncParent(p.fs, p.name); err != nil {
		return err
	}
	old := p.f
	p.f, err = p.fs.OpenReadWrite(p.name, pvfs.WriteCategoryUnspecified)
	old.Close()
	return err
}

func syncParent(fs pvfs.FS, name string) error {
	d, err := fs.OpenDir(fs.PathDir(name))
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

func (p pebbleFS) Create(name string, _ bool) (File, bool, error) {
	f, err := p.fs.Create(name, pvfs.WriteCategoryUnspecified)
	if err != nil {
		return nil, false, err
	}
	return &pebbleFile{fs: p.fs, name: name, f: f}, false, nil
}

func (p pebbleFS) OpenReadWrite(name string) (File, error) {
	f, err := p.fs.OpenReadWrite(name, pvfs.WriteCategoryUnspecified)
	if err != nil {
		return nil, err
	}
	return &pebbleFile{fs: p.fs, name: name, f: f}, nil
}

func (p pebbleFS) Open(name string) (File, error) {
	f, err := p.fs.Open(name)
	if err != nil {
		return nil, err
	}
	return &pebbleFile{fs: p.fs, name: name, f: f}, nil
}

func (p pebbleFS) Remove(name string) error             { return p.fs.Remove(name) }
func (p pebbleFS) Rename(oldname, newname string) error { return p.fs.Rename(oldname, newname) }
func (p pebbleFS) MkdirAll(dir string) error            { return p.fs.MkdirAll(dir, DirPerm) }
func (p pebbleFS) List(dir string) ([]string, error)    { return p.fs.List(dir) }

func (p pebbleFS) SyncDir(dir string) error {
	d, err := p.fs.OpenDir(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

func (p pebbleFS) Stat(name string) (int64, error) {
	st, err := p.fs.Stat(name)
	if err != nil {
		return 0, err
	}
	return st.Size(), nil
}
