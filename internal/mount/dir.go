package mount

import (
	"context"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// dirNode is a directory: a key prefix.
type dirNode struct {
	fs.Inode
	m *mountFS
}

var (
	_ fs.NodeLookuper   = (*dirNode)(nil)
	_ fs.NodeReaddirer  = (*dirNode)(nil)
	_ fs.NodeGetattrer  = (*dirNode)(nil)
	_ fs.NodeSetattrer  = (*dirNode)(nil)
	_ fs.NodeMkdirer    = (*dirNode)(nil)
	_ fs.NodeRmdirer    = (*dirNode)(nil)
	_ fs.NodeCreater    = (*dirNode)(nil)
	_ fs.NodeUnlinker   = (*dirNode)(nil)
	_ fs.NodeRenamer    = (*dirNode)(nil)
	_ fs.NodeStatfser   = (*dirNode)(nil)
	_ fs.NodeSymlinker  = (*dirNode)(nil)
	_ fs.NodeLinker     = (*dirNode)(nil)
	_ fs.NodeMknoder    = (*dirNode)(nil)
	_ fs.NodeFsyncer    = (*dirNode)(nil)
	_ fs.NodeOpendirer  = (*dirNode)(nil)
	_ fs.NodeAccesser   = (*dirNode)(nil)
	_ fs.NodeGetxattrer = (*dirNode)(nil)
)

// prefix is the directory's key prefix: "" or the mount prefix for the
// root, else ending in "/".
func (d *dirNode) prefix() string {
	p := d.Path(nil)
	if p == "" {
		return d.m.cfg.Prefix
	}
	return d.m.cfg.Prefix + p + "/"
}

func (d *dirNode) newDir(ctx context.Context, out *fuse.EntryOut) *fs.Inode {
	d.m.dirAttr(&out.Attr)
	return d.NewInode(ctx, &dirNode{m: d.m}, fs.StableAttr{Mode: syscall.S_IFDIR})
}

func (d *dirNode) newFile(ctx context.Context, key string, o object, out *fuse.EntryOut) *fs.Inode {
	d.m.fileAttr(&out.Attr, o)
	return d.NewInode(ctx, &fileNode{m: d.m, obj: o, fetched: time.Now()}, fs.StableAttr{Mode: syscall.S_IFREG})
}

// Lookup finds name: a file being written here, the cached listing (read
// again if it expired and the directory is small), or the server (HEAD of
// the object and a one-key listing of the prefix, in parallel; the
// directory wins when both exist).
func (d *dirNode) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	if len(name) > 255 {
		return nil, syscall.ENAMETOOLONG
	}
	dir := d.prefix()
	key := dir + name
	if w := d.m.writerOf(key); w != nil {
		return d.newFile(ctx, key, w.object(), out), 0
	}
	k, o := d.m.dirs.lookup(dir, name)
	if k == unknown && d.m.dirs.relistable(dir) {
		// A small directory listed before: list it again (shared by the
		// lookups running now) rather than ask for this one name.
		if _, errno := d.listing(ctx); errno != 0 {
			return nil, errno
		}
		k, o = d.m.dirs.lookup(dir, name)
	}
	switch k {
	case absent:
		return nil, syscall.ENOENT
	case isDir:
		return d.newDir(ctx, out), 0
	case isFile:
		return d.newFile(ctx, key, o, out), 0
	}
	type probe struct {
		found bool
		err   error
	}
	dirProbe := make(chan probe, 1)
	go func() {
		found, err := d.m.be.hasPrefix(ctx, key+"/", "")
		dirProbe <- probe{found, err}
	}()
	o, headErr := d.m.be.head(ctx, key)
	dp := <-dirProbe
	switch {
	case dp.err != nil:
		return nil, failure(d.m.log, "list", key+"/", dp.err)
	case dp.found:
		return d.newDir(ctx, out), 0
	case headErr != nil:
		return nil, failure(d.m.log, "head", key, headErr)
	}
	return d.newFile(ctx, key, o, out), 0
}

// listing reads the directory's listing from the server and caches it;
// concurrent callers share one listing.
func (d *dirNode) listing(ctx context.Context) ([]dirEntry, syscall.Errno) {
	dir := d.prefix()
	d.m.mu.Lock()
	if f := d.m.listings[dir]; f != nil {
		d.m.mu.Unlock()
		select {
		case <-f.done:
			return f.entries, f.errno
		case <-ctx.Done():
			return nil, syscall.EINTR
		}
	}
	f := &listFlight{done: make(chan struct{})}
	d.m.listings[dir] = f
	d.m.mu.Unlock()
	defer func() {
		d.m.mu.Lock()
		delete(d.m.listings, dir)
		d.m.mu.Unlock()
		close(f.done)
	}()
	fetch := d.m.dirs.begin(dir)
	l, err := d.m.be.list(context.WithoutCancel(ctx), dir)
	if err != nil {
		d.m.dirs.abandon(fetch)
		f.errno = failure(d.m.log, "list", dir, err)
		return nil, f.errno
	}
	// Files being written here are listed with their size so far.
	d.m.mu.Lock()
	for key, w := range d.m.writing {
		if wd, name := splitKey(key); wd == dir && !l.dirs[name] {
			l.files[name] = w.object()
		}
	}
	d.m.mu.Unlock()
	f.entries = d.m.dirs.end(fetch, l)
	return f.entries, 0
}

// listFlight is one listing in progress, shared by concurrent callers.
type listFlight struct {
	done    chan struct{}
	entries []dirEntry
	errno   syscall.Errno
}

// Opendir is where the kernel starts a listing; the directory must still
// exist (an explicit marker, or keys below it) except at the root.
func (d *dirNode) Opendir(ctx context.Context) syscall.Errno { return 0 }

// Readdir always reads the listing from the server (and refreshes the
// cache with it): a listing is never stale.
func (d *dirNode) Readdir(ctx context.Context) (fs.DirStream, syscall.Errno) {
	entries, errno := d.listing(ctx)
	if errno != 0 {
		return nil, errno
	}
	out := make([]fuse.DirEntry, len(entries))
	for i, e := range entries {
		mode := uint32(syscall.S_IFREG)
		if e.dir {
			mode = syscall.S_IFDIR
		}
		out[i] = fuse.DirEntry{Name: e.name, Mode: mode}
	}
	return fs.NewListDirStream(out), 0
}

func (d *dirNode) Getattr(ctx context.Context, f fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	d.m.dirAttr(&out.Attr)
	return 0
}

// Setattr: modes and owners of directories cannot change.
func (d *dirNode) Setattr(ctx context.Context, f fs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	d.m.dirAttr(&out.Attr)
	return unchangeable(in, &out.Attr)
}

func (d *dirNode) Access(ctx context.Context, mask uint32) syscall.Errno {
	if mask&2 != 0 { // W_OK
		return d.m.readOnly()
	}
	return 0
}

func (d *dirNode) Getxattr(ctx context.Context, attr string, dest []byte) (uint32, syscall.Errno) {
	return 0, syscall.ENOTSUP
}

// Mkdir writes the explicit marker "name/", so the directory exists for
// every client and survives while empty.
func (d *dirNode) Mkdir(ctx context.Context, name string, mode uint32, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	if errno := d.m.readOnly(); errno != 0 {
		return nil, errno
	}
	dir := d.prefix()
	key := dir + name + "/"
	if _, err := d.m.be.put(ctx, key, nil); err != nil {
		return nil, failure(d.m.log, "mkdir", key, err)
	}
	d.m.dirs.setDir(dir, name)
	// The new directory is known empty.
	d.m.dirs.store(key, &listing{files: map[string]object{}, dirs: map[string]bool{}, marker: true})
	return d.newDir(ctx, out), 0
}

// Rmdir removes an empty directory's marker. A directory with any key
// below it (or a file being written in it) is not empty.
func (d *dirNode) Rmdir(ctx context.Context, name string) syscall.Errno {
	if errno := d.m.readOnly(); errno != 0 {
		return errno
	}
	dir := d.prefix()
	key := dir + name + "/"
	d.m.mu.Lock()
	for k := range d.m.writing {
		if len(k) > len(key) && k[:len(key)] == key {
			d.m.mu.Unlock()
			return syscall.ENOTEMPTY
		}
	}
	d.m.mu.Unlock()
	busy, err := d.m.be.hasPrefix(ctx, key, key)
	if err != nil {
		return failure(d.m.log, "list", key, err)
	}
	if busy {
		return syscall.ENOTEMPTY
	}
	if err := d.m.be.remove(ctx, key); err != nil {
		return failure(d.m.log, "rmdir", key, err)
	}
	d.m.dirs.remove(dir, name)
	d.m.dirs.forget(key)
	return 0
}

// Create starts a new file: an upload committed when the file is closed.
func (d *dirNode) Create(ctx context.Context, name string, flags uint32, mode uint32, out *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	if errno := d.m.readOnly(); errno != 0 {
		return nil, nil, 0, errno
	}
	if len(name) > 255 {
		return nil, nil, 0, syscall.ENAMETOOLONG
	}
	dir := d.prefix()
	key := dir + name
	node := &fileNode{m: d.m, obj: object{mtime: time.Now()}, fetched: time.Now()}
	w, errno := d.m.startWrite(ctx, key, node)
	if errno != 0 {
		return nil, nil, 0, errno
	}
	d.m.fileAttr(&out.Attr, w.object())
	inode := d.NewInode(ctx, node, fs.StableAttr{Mode: syscall.S_IFREG})
	return inode, w, d.m.openFlags(), 0
}

// Unlink deletes the object at once. A file being written cannot be
// removed (EBUSY): its upload has not committed anything to remove.
func (d *dirNode) Unlink(ctx context.Context, name string) syscall.Errno {
	if errno := d.m.readOnly(); errno != 0 {
		return errno
	}
	dir := d.prefix()
	key := dir + name
	if d.m.writerOf(key) != nil {
		return syscall.EBUSY
	}
	if err := d.m.be.remove(ctx, key); err != nil {
		return failure(d.m.log, "delete", key, err)
	}
	d.m.dirs.remove(dir, name)
	return 0
}

// Rename of a file copies the object (only the version looked up) and
// deletes the source. Directories are not renamed here (EXDEV: mv then
// copies the tree and removes the source itself).
func (d *dirNode) Rename(ctx context.Context, name string, newParent fs.InodeEmbedder, newName string, flags uint32) syscall.Errno {
	if errno := d.m.readOnly(); errno != 0 {
		return errno
	}
	const renameNoReplace, renameExchange = 1, 2
	if flags&renameExchange != 0 {
		return syscall.EINVAL
	}
	target, ok := newParent.(*dirNode)
	if !ok {
		return syscall.EXDEV
	}
	child := d.GetChild(name)
	if child == nil {
		return syscall.ENOENT
	}
	if _, isDirNode := child.Operations().(*dirNode); isDirNode {
		return syscall.EXDEV
	}
	srcDir, dstDir := d.prefix(), target.prefix()
	src, dst := srcDir+name, dstDir+newName
	if d.m.writerOf(src) != nil || d.m.writerOf(dst) != nil {
		return syscall.EBUSY
	}
	if flags&renameNoReplace != 0 {
		if _, err := d.m.be.head(ctx, dst); err == nil {
			return syscall.EEXIST
		} else if !isNotFound(err) {
			return failure(d.m.log, "head", dst, err)
		}
	}
	o, err := d.m.be.head(ctx, src)
	if err != nil {
		return failure(d.m.log, "head", src, err)
	}
	if src == dst {
		return 0
	}
	if err := d.m.be.copyObject(ctx, src, dst, o.etag); err != nil {
		return failure(d.m.log, "copy", src, err)
	}
	if err := d.m.be.remove(ctx, src); err != nil {
		return failure(d.m.log, "delete", src, err)
	}
	d.m.dirs.remove(srcDir, name)
	d.m.dirs.setFile(dstDir, newName, o)
	if f, ok := child.Operations().(*fileNode); ok {
		f.forget()
	}
	return 0
}

func (d *dirNode) Statfs(ctx context.Context, out *fuse.StatfsOut) syscall.Errno {
	// A bucket has no fixed size; report plenty so tools do not refuse.
	const blocks = 1 << 40
	out.Bsize, out.Frsize = 1<<20, 1<<20
	out.Blocks, out.Bfree, out.Bavail = blocks, blocks, blocks
	out.Files, out.Ffree = 1<<40, 1<<40
	out.NameLen = 255
	return 0
}

// Symbolic links, hard links and special files have no object form here.
func (d *dirNode) Symlink(ctx context.Context, target, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	return nil, syscall.ENOTSUP
}

func (d *dirNode) Link(ctx context.Context, target fs.InodeEmbedder, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	return nil, syscall.ENOTSUP
}

func (d *dirNode) Mknod(ctx context.Context, name string, mode uint32, dev uint32, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	return nil, syscall.ENOTSUP
}

// Fsync of a directory: every change above was already made on the server.
func (d *dirNode) Fsync(ctx context.Context, f fs.FileHandle, flags uint32) syscall.Errno { return 0 }

// unchangeable accepts a Setattr that changes nothing and refuses (EPERM)
// a change of mode, owner or group, which the bucket cannot store. Times
// are accepted and not stored (touch, cp -p, tar and rsync set them; the
// reported time stays the object's Last-Modified).
func unchangeable(in *fuse.SetAttrIn, cur *fuse.Attr) syscall.Errno {
	if m, ok := in.GetMode(); ok && m&07777 != cur.Mode&07777 {
		return syscall.EPERM
	}
	if u, ok := in.GetUID(); ok && u != cur.Uid {
		return syscall.EPERM
	}
	if g, ok := in.GetGID(); ok && g != cur.Gid {
		return syscall.EPERM
	}
	return 0
}
