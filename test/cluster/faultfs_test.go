package cluster_test

import (
	"context"
	"os"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// faultFS is a FUSE file system over a directory (go-fuse's loopback)
// that answers EIO to every write, fsync, allocation and file creation
// while failing is set: a disk that has started to fail, under a real
// process that knows nothing of it. Reads still work, as on a disk whose
// writes fail first.
type faultFS struct {
	failing atomic.Bool
	server  *fuse.Server
	mnt     string
}

// mountFaultFS serves dir at mnt (both made if missing) until the test
// ends.
func mountFaultFS(t *testing.T, dir, mnt string) *faultFS {
	t.Helper()
	for _, d := range []string{dir, mnt} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	var st syscall.Stat_t
	if err := syscall.Stat(dir, &st); err != nil {
		t.Fatal(err)
	}
	f := &faultFS{mnt: mnt}
	root := &fs.LoopbackRoot{Path: dir, Dev: uint64(st.Dev)}
	root.NewNode = func(r *fs.LoopbackRoot, _ *fs.Inode, _ string, _ *syscall.Stat_t) fs.InodeEmbedder {
		return &faultNode{LoopbackNode: fs.LoopbackNode{RootData: r}, fs: f}
	}
	rootNode := &faultNode{LoopbackNode: fs.LoopbackNode{RootData: root}, fs: f}
	root.RootNode = rootNode
	server, err := fs.Mount(mnt, rootNode, &fs.Options{MountOptions: fuse.MountOptions{FsName: "b3-faultfs", Name: "faultfs", DirectMount: true}})
	if err != nil {
		t.Fatalf("mount the fault-injecting FUSE file system (the test needs /dev/fuse and root): %v", err)
	}
	f.server = server
	return f
}

// unmount unmounts it (lazily, should a process still hold files).
func (f *faultFS) unmount() {
	if err := f.server.Unmount(); err != nil {
		_ = syscall.Unmount(f.mnt, syscall.MNT_DETACH)
	}
}

type faultNode struct {
	fs.LoopbackNode
	fs *faultFS
}

var (
	_ fs.NodeCreater = (*faultNode)(nil)
	_ fs.NodeOpener  = (*faultNode)(nil)
)

func (n *faultNode) Create(ctx context.Context, name string, flags uint32, mode uint32, out *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	if n.fs.failing.Load() {
		return nil, nil, 0, syscall.EIO
	}
	inode, fh, fuseFlags, errno := n.LoopbackNode.Create(ctx, name, flags, mode, out)
	return inode, n.wrap(fh), fuseFlags, errno
}

func (n *faultNode) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	fh, fuseFlags, errno := n.LoopbackNode.Open(ctx, flags)
	return n.wrap(fh), fuseFlags, errno
}

func (n *faultNode) wrap(fh fs.FileHandle) fs.FileHandle {
	if lf, ok := fh.(*fs.LoopbackFile); ok {
		return &faultFile{LoopbackFile: lf, fs: n.fs}
	}
	return fh
}

type faultFile struct {
	*fs.LoopbackFile
	fs *faultFS
}

// PassthroughFd: never hand the file to the kernel, whose writes would
// bypass the fault.
func (f *faultFile) PassthroughFd() (int, bool) { return -1, false }

func (f *faultFile) Write(ctx context.Context, data []byte, off int64) (uint32, syscall.Errno) {
	if f.fs.failing.Load() {
		return 0, syscall.EIO
	}
	return f.LoopbackFile.Write(ctx, data, off)
}

func (f *faultFile) Fsync(ctx context.Context, flags uint32) syscall.Errno {
	if f.fs.failing.Load() {
		return syscall.EIO
	}
	return f.LoopbackFile.Fsync(ctx, flags)
}

func (f *faultFile) Flush(ctx context.Context) syscall.Errno {
	if f.fs.failing.Load() {
		return syscall.EIO
	}
	return f.LoopbackFile.Flush(ctx)
}

func (f *faultFile) Allocate(ctx context.Context, off uint64, size uint64, mode uint32) syscall.Errno {
	if f.fs.failing.Load() {
		return syscall.EIO
	}
	return f.LoopbackFile.Allocate(ctx, off, size, mode)
}
