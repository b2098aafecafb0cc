package mount

import (
	"context"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path"
	"sync"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"github.com/hanwen/go-fuse/v2/splice"
)

// mountFS is the state shared by every node of one mount.
type mountFS struct {
	cfg    Config
	be     *backend
	log    *log.Logger
	dirs   *dirCache
	writeP *bufferPool
	readP  *bufferPool

	// writing holds the files being written through this mount, by key,
	// from create/open until their object is committed or abandoned. They
	// are visible (size so far) though not yet in the bucket.
	mu      sync.Mutex
	writing map[string]*writer
	// listings in progress, by directory prefix.
	listings map[string]*listFlight
}

// Mounted is a mounted bucket.
type Mounted struct {
	server *fuse.Server
	fs     *mountFS
}

// MaxRequest returns the largest read or write request the mount asks
// the kernel for. Read replies go through go-fuse's splice path, which
// grows a pipe to hold a whole reply, its header and a spare page; the
// kernel sizes pipes in powers of two pages. So requests are two pages
// under the smaller of 1 MiB (the kernel's request limit) and
// /proc/sys/fs/pipe-max-size as go-fuse read it when the process started:
// 1016 KiB at the default, and each of go-fuse's pooled pipes (it never
// frees them) stays within 1 MiB. A program's 1 MiB read becomes two
// requests, of 1016 and 8 KiB; full 1 MiB requests would need 2 MiB pipes
// and were measured no faster. A request larger than the pipe holds would
// make go-fuse log every read.
func MaxRequest() int {
	page := os.Getpagesize()
	n := (min(fuse.MAX_KERNEL_WRITE, splice.MaxPipeSize()) - 2*page) &^ (page - 1)
	return max(n, page)
}

// Mount checks that the bucket answers, then mounts it on dir. It returns
// once the kernel serves the mount.
func Mount(ctx context.Context, client *s3.Client, dir string, cfg Config) (*Mounted, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if cfg.Log == nil {
		cfg.Log = log.Default()
	}
	be := &backend{client: client, bucket: cfg.Bucket}
	if !cfg.SDKRequests {
		be.direct = newDirect(client, cfg.Bucket, cfg.SignPayload)
	}
	m := &mountFS{
		cfg:      cfg,
		be:       be,
		log:      cfg.Log,
		dirs:     newDirCache(cfg.MetadataTTL, cfg.DirCacheSize),
		writeP:   newBufferPool(cfg.PartSize, cfg.WriteBuffers, be.direct != nil),
		readP:    newBufferPool(cfg.ReadPartSize, cfg.ReadBuffers, false),
		writing:  map[string]*writer{},
		listings: map[string]*listFlight{},
	}
	checkCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := m.be.check(checkCtx, cfg.Prefix); err != nil {
		return nil, fmt.Errorf("bucket %s is not reachable: %w", cfg.Bucket, err)
	}
	ttl, negTTL := cfg.MetadataTTL, cfg.NegativeTTL
	opts := &fs.Options{
		EntryTimeout:    &ttl,
		AttrTimeout:     &ttl,
		NegativeTimeout: &negTTL,
		UID:             cfg.UID,
		GID:             cfg.GID,
		MountOptions: fuse.MountOptions{
			AllowOther: cfg.AllowOther,
			FsName:     "b3:" + cfg.Bucket + "/" + cfg.Prefix,
			Name:       "b3",
			// Requests at or just under the kernel's 1 MiB limit
			// (max_read, max_write): see MaxRequest.
			MaxWrite:     MaxRequest(),
			MaxReadAhead: MaxRequest(),
			// Reads and writes of many files at once.
			MaxBackground: 64,
			// O_TRUNC comes with open rather than as a separate truncate,
			// so a whole-file overwrite never empties the object first.
			ExtraCapabilities: fuse.CAP_ATOMIC_O_TRUNC | fuse.CAP_DIRECT_IO_ALLOW_MMAP,
			// Extended attributes are not stored: the kernel answers
			// EOPNOTSUPP without asking.
			DisableXAttrs: true,
			// Splicing stays on although replies come from memory, never
			// from a file descriptor: only then does go-fuse call a read
			// result's Done after it has written the reply, which lets a
			// reply point into a read-ahead buffer instead of copying
			// out of it (chunkReply). It costs three small system calls
			// per read reply (go-fuse writes the header into a pipe before
			// it finds nothing to splice, then empties the pipe).
			DisableSplice: false,
			Debug:         cfg.Debug,
			// As root, mount(2) directly; else through fusermount3.
			DirectMount: true,
			Logger:      cfg.Log,
		},
	}
	if cfg.ReadOnly {
		opts.MountOptions.Options = append(opts.MountOptions.Options, "ro")
	}
	if cfg.AllowOther {
		// Without it every user could read every file: the kernel checks
		// the modes and owners the mount reports.
		opts.MountOptions.Options = append(opts.MountOptions.Options, "default_permissions")
	}
	root := &dirNode{m: m}
	server, err := fs.Mount(dir, root, opts)
	if err != nil {
		return nil, fmt.Errorf("mount %s: %w", dir, err)
	}
	return &Mounted{server: server, fs: m}, nil
}

// Wait returns when the file system is unmounted.
func (mt *Mounted) Wait() { mt.server.Wait() }

// Unmount unmounts. If files are still open, it abandons the files being
// written (their uploads are aborted, nothing of them is committed) and
// detaches the mount lazily: the caller then exits, and descriptors still
// open get ENOTCONN. It returns how many files were being written.
func (mt *Mounted) Unmount(dir string) (abandoned int, err error) {
	if err := mt.server.Unmount(); err == nil {
		return 0, nil
	}
	abandoned = mt.fs.abandonAll()
	if err := syscall.Unmount(dir, syscall.MNT_DETACH); err != nil {
		if out, ferr := exec.Command("fusermount3", "-u", "-z", dir).CombinedOutput(); ferr != nil {
			return abandoned, fmt.Errorf("unmount %s: %v; fusermount3: %v: %s", dir, err, ferr, out)
		}
	}
	return abandoned, nil
}

func (m *mountFS) abandonAll() int {
	m.mu.Lock()
	ws := make([]*writer, 0, len(m.writing))
	for _, w := range m.writing {
		ws = append(ws, w)
	}
	m.mu.Unlock()
	for _, w := range ws {
		w.abandon("unmounted")
	}
	return len(ws)
}

// splitKey splits a key below the prefix into its directory's key
// prefix and its name: "a/b/c" is ("a/b/", "c").
func splitKey(key string) (dir, name string) {
	d, n := path.Split(key)
	return d, n
}

// attrs fill FUSE attributes. A file's times are whole seconds, the
// precision of Last-Modified, so that every inode of one object version
// has the same times whether a listing (milliseconds) or a HEAD or GET
// (seconds) made it.
func (m *mountFS) fileAttr(out *fuse.Attr, o object) {
	out.Mode = syscall.S_IFREG | m.cfg.FileMode
	out.Size = uint64(o.size)
	out.Blocks = (out.Size + 511) / 512
	out.Blksize = 1 << 20
	out.Nlink = 1
	mtime := o.mtime.Truncate(time.Second)
	out.SetTimes(&mtime, &mtime, &mtime)
	out.Uid, out.Gid = m.cfg.UID, m.cfg.GID
}

func (m *mountFS) dirAttr(out *fuse.Attr) {
	out.Mode = syscall.S_IFDIR | m.cfg.DirMode
	out.Nlink = 2
	out.Blksize = 1 << 20
	out.Uid, out.Gid = m.cfg.UID, m.cfg.GID
}

// readOnly reports EROFS for changes to a read-only mount (the kernel
// already refuses most of them with the "ro" mount option).
func (m *mountFS) readOnly() syscall.Errno {
	if m.cfg.ReadOnly {
		return syscall.EROFS
	}
	return 0
}

// openFlags are the FUSE flags of every open file. With DirectIO, reads
// and writes bypass the kernel's page cache and reach the mount at the
// size the application asked for (up to 1 MiB), instead of the kernel's
// 128 KiB read-ahead requests.
func (m *mountFS) openFlags() uint32 {
	if m.cfg.DirectIO {
		return fuse.FOPEN_DIRECT_IO
	}
	return 0
}

func (m *mountFS) writerOf(key string) *writer {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.writing[key]
}
