package mount

import (
	"context"
	"sync"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// fileNode is a file: an object, or a file being written.
type fileNode struct {
	fs.Inode
	m *mountFS

	mu      sync.Mutex
	obj     object    // as last seen on the server or committed by us
	fetched time.Time // when obj was seen; zero forces a HEAD
}

var (
	_ fs.NodeOpener     = (*fileNode)(nil)
	_ fs.NodeGetattrer  = (*fileNode)(nil)
	_ fs.NodeSetattrer  = (*fileNode)(nil)
	_ fs.NodeGetxattrer = (*fileNode)(nil)
)

func (f *fileNode) key() string { return f.m.cfg.Prefix + f.Path(nil) }

// set records o as the object seen now. The same version (ETag and size)
// keeps the time it was first seen with: a listing, a HEAD and a GET give
// one Last-Modified at different precisions, and a file whose times
// change under a reader looks modified (tar: "file changed as we read
// it"; rsync copies it again).
func (f *fileNode) set(o object) {
	f.mu.Lock()
	if o.etag != "" && o.etag == f.obj.etag && o.size == f.obj.size && !f.obj.mtime.IsZero() {
		o.mtime = f.obj.mtime
	}
	f.obj, f.fetched = o, time.Now()
	f.mu.Unlock()
}

// forget makes the next stat ask the server (after a rename).
func (f *fileNode) forget() {
	f.mu.Lock()
	f.fetched = time.Time{}
	f.mu.Unlock()
}

// current returns the object, asking the server when what we know is
// older than the metadata TTL.
func (f *fileNode) current(ctx context.Context, key string) (object, syscall.Errno) {
	if w := f.m.writerOf(key); w != nil {
		return w.object(), 0
	}
	f.mu.Lock()
	o, fresh := f.obj, time.Since(f.fetched) <= f.m.cfg.MetadataTTL
	f.mu.Unlock()
	if fresh {
		return o, 0
	}
	o, err := f.m.be.head(ctx, key)
	if err != nil {
		return object{}, failure(f.m.log, "head", key, err)
	}
	f.set(o)
	return o, 0
}

func (f *fileNode) Getattr(ctx context.Context, fh fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	if w, ok := fh.(*writer); ok {
		f.m.fileAttr(&out.Attr, w.object())
		return 0
	}
	o, errno := f.current(ctx, f.key())
	if errno != 0 {
		return errno
	}
	f.m.fileAttr(&out.Attr, o)
	return 0
}

func (f *fileNode) Getxattr(ctx context.Context, attr string, dest []byte) (uint32, syscall.Errno) {
	return 0, syscall.ENOTSUP
}

// Open for writing replaces the object: allowed with O_TRUNC, or for an
// empty file. Opening a non-empty file O_WRONLY without O_TRUNC (which
// would patch or append) fails with ENOTSUP; O_RDWR without O_TRUNC opens
// a non-empty file for reading only. Reading a file being written waits
// for its commit once it is closed; while it is still open, EBUSY.
func (f *fileNode) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	key := f.key()
	acc := flags & syscall.O_ACCMODE
	if acc != syscall.O_RDONLY || flags&syscall.O_TRUNC != 0 {
		if errno := f.m.readOnly(); errno != 0 {
			return nil, 0, errno
		}
	}
	if w := f.m.writerOf(key); w != nil {
		if !w.closing() {
			return nil, 0, syscall.EBUSY
		}
		// Closed by its writer, committing at release: wait.
		if errno := w.wait(ctx); errno != 0 {
			return nil, 0, errno
		}
	}
	wantWrite := acc != syscall.O_RDONLY
	if wantWrite && flags&syscall.O_TRUNC == 0 {
		o, errno := f.current(ctx, key)
		if errno != 0 && errno != syscall.ENOENT {
			return nil, 0, errno
		}
		switch {
		case o.size == 0:
			// Nothing to keep: the same as O_TRUNC.
		case acc == syscall.O_RDWR:
			wantWrite = false // a reader; writes get EBADF
		default:
			return nil, 0, syscall.ENOTSUP
		}
	}
	if wantWrite {
		w, errno := f.m.startWrite(ctx, key, f)
		if errno != 0 {
			return nil, 0, errno
		}
		return w, f.m.openFlags(), 0
	}
	// No request here: the first read pins the version it finds. A
	// reader's close has nothing to do: the kernel is told not to send
	// it (one FUSE request fewer per file read).
	return f.m.newReader(key, f, acc == syscall.O_RDWR), f.m.openFlags() | fuse.FOPEN_NOFLUSH, 0
}

// Setattr: the size can be set only to what it is, or to 0 (replace the
// object with an empty one); other sizes (truncate, extend) are ENOTSUP.
// Modes and owners cannot change (EPERM); times are accepted, not stored.
func (f *fileNode) Setattr(ctx context.Context, fh fs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	key := f.key()
	w, _ := fh.(*writer)
	if w == nil {
		w = f.m.writerOf(key)
	}
	var o object
	if w != nil {
		o = w.object()
	} else {
		var errno syscall.Errno
		if o, errno = f.current(ctx, key); errno != 0 {
			return errno
		}
	}
	f.m.fileAttr(&out.Attr, o)
	if size, ok := in.GetSize(); ok && int64(size) != o.size {
		if errno := f.m.readOnly(); errno != 0 {
			return errno
		}
		if size != 0 || w != nil {
			return syscall.ENOTSUP
		}
		etag, err := f.m.be.put(ctx, key, nil)
		if err != nil {
			return failure(f.m.log, "truncate", key, err)
		}
		o = object{mtime: time.Now(), etag: etag}
		f.set(o)
		dir, name := splitKey(key)
		f.m.dirs.setFile(dir, name, o)
		f.m.fileAttr(&out.Attr, o)
	}
	return unchangeable(in, &out.Attr)
}
