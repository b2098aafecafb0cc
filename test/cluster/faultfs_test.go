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
	f := &faultFS{mnt: mnt}
	loopback, err := fs.NewLoopbackRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	rootNode := &faultNode{LoopbackNode: loopback.(*fs.LoopbackNode), fs: f}
	rootNode.RootData.RootNode = rootNode
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

// faultNode is a loopback node whose files fail while the file system
// does; every node below the root is one too (WrapChild).
type faultNode struct {
	*fs.LoopbackNode
	fs *faultFS
}

var (
	_ fs.NodeCreater     = (*faultNode)(nil)
	_ fs.NodeOpener      = (*faultNode)(nil)
	_ fs.NodeWrapChilder = (*faultNode)(nil)
)

func (n *faultNode) WrapChild(_ context.Context, ops fs.InodeEmbedder) fs.InodeEmbedder {
	if lb, ok := ops.(*fs.LoopbackNode); ok {
		return &faultNode{LoopbackNode: lb, fs: n.fs}
	}
	return ops
}

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
