package mount

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// reader is a file open for reading: one version of an object. The first
// read fetches whatever version is current (open costs no request) and
// pins its ETag and size; every later GET is conditional on that ETag, so
// a replaced object fails the read with EIO rather than mixing versions.
type reader struct {
	m        *mountFS
	key      string
	node     *fileNode
	readOnly bool // false for O_RDWR opens: writes get EBADF

	mu     sync.Mutex
	pinned bool
	obj    object  // once pinned
	whole  *[]byte // a small object, fetched by the first read
	next   int64   // where the last read ended
	window int     // read-ahead parts wanted ahead of next
	late   bool    // a request arrived behind next: keep a part behind
	ahead  []*chunk
}

// chunk is one ranged GET of read-ahead into a pooled buffer. The buffer
// goes back to the pool when the reader has dropped the chunk and every
// reply that points into it has been written (refs: one for the reader,
// one for each such reply).
type chunk struct {
	off    int64
	buf    []byte
	n      int
	err    error
	done   chan struct{}
	cancel context.CancelFunc
	refs   atomic.Int32
	pool   *bufferPool
}

// unref drops one reference; the last returns the buffer once the GET
// has ended.
func (c *chunk) unref() {
	if c.refs.Add(-1) == 0 {
		go func() {
			<-c.done
			c.pool.put(c.buf)
		}()
	}
}

// chunkReply is a read's reply served straight from a chunk's buffer: no
// copy. go-fuse calls Done after it has written the reply to the kernel
// (with splicing enabled, which is why the mount leaves it on).
type chunkReply struct {
	c    *chunk
	data []byte
}

func (r *chunkReply) Bytes([]byte) ([]byte, fuse.Status) { return r.data, fuse.OK }
func (r *chunkReply) Size() int                          { return len(r.data) }
func (r *chunkReply) Done()                              { r.c.unref() }

func (c *chunk) end() int64 { return c.off + int64(len(c.buf)) }

var (
	_ fs.FileReader   = (*reader)(nil)
	_ fs.FileWriter   = (*reader)(nil)
	_ fs.FileReleaser = (*reader)(nil)
	_ fs.FileFlusher  = (*reader)(nil)
	_ fs.FileFsyncer  = (*reader)(nil)
)

func (m *mountFS) newReader(key string, node *fileNode, rdwr bool) *reader {
	return &reader{m: m, key: key, node: node, readOnly: !rdwr}
}

// pin fetches the first SmallFile bytes of the current version: the whole
// object if it is small (kept for every later read), else its ETag and
// size for the conditional GETs that follow. The buffer is as large as
// what the server sends, not SmallFile.
func (r *reader) pin(ctx context.Context) syscall.Errno {
	var b *[]byte
	n, o, err := r.m.be.get(ctx, r.key, "", 0, r.m.cfg.SmallFile, func(n int) []byte {
		b = getSmall(n)
		*b = (*b)[:n]
		return *b
	})
	if err == nil && int64(n) != min(o.size, int64(r.m.cfg.SmallFile)) {
		err = fmt.Errorf("got %d bytes of an object of %d", n, o.size)
	}
	if err != nil {
		putSmall(b)
		return failure(r.m.log, "get", r.key, err)
	}
	r.obj, r.pinned = o, true
	r.node.set(o)
	if b == nil {
		b = getSmall(0) // an empty object: no body
	}
	if o.size <= int64(r.m.cfg.SmallFile) {
		*b = (*b)[:n]
		r.whole = b
	} else {
		putSmall(b)
	}
	return 0
}

// Read serves dest at off: small objects from one whole GET, sequential
// reads from the read-ahead, others with one ranged GET.
func (r *reader) Read(ctx context.Context, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.pinned {
		if errno := r.pin(ctx); errno != 0 {
			return nil, errno
		}
	}
	size := r.obj.size
	if off >= size {
		return fuse.ReadResultData(nil), 0
	}
	dest = dest[:min(int64(len(dest)), size-off)]
	if r.whole != nil {
		return fuse.ReadResultData((*r.whole)[off : off+int64(len(dest))]), 0
	}
	return r.readAhead(ctx, dest, off)
}

// nearby is how far from the end of the last read a read still counts as
// sequential: the kernel sends its read-ahead requests concurrently, so
// they may arrive slightly out of order.
const nearby = 4 << 20

func (r *reader) readAhead(ctx context.Context, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	sequential := off >= r.next-nearby && off <= r.next+nearby
	if sequential && off < r.next {
		r.late = true
	}
	if sequential && len(r.ahead) > 0 && off < r.ahead[0].off {
		// A late request of the kernel's read-ahead, behind the parts
		// kept: read it alone and keep the window going.
		return r.readAlone(ctx, dest, off)
	}
	if len(r.ahead) > 0 && (off < r.ahead[0].off || off >= r.ahead[len(r.ahead)-1].end()) {
		r.dropAhead()
	}
	if !sequential {
		r.dropAhead()
		r.window = 0
		r.next = off + int64(len(dest))
		return r.readAlone(ctx, dest, off)
	}
	// Sequential: the window doubles up to ReadAhead.
	maxWindow := max(1, r.m.cfg.ReadAhead/r.m.cfg.ReadPartSize)
	r.window = min(max(1, r.window*2), maxWindow)
	if len(r.ahead) == 0 {
		// Parts are aligned to the part size, so that reads in any
		// order of the kernel land in the same parts.
		start := off - off%int64(r.m.cfg.ReadPartSize)
		if !r.fetch(start) {
			// No buffer free: read this request alone.
			r.next = off + int64(len(dest))
			return r.readAlone(ctx, dest, off)
		}
	}
	r.fill(off)
	var reply fuse.ReadResult
	copied := 0
	for copied < len(dest) {
		pos := off + int64(copied)
		c := r.chunkAt(pos)
		if c == nil {
			// Beyond the read-ahead (no buffer was free): read directly.
			n, err := r.m.be.getRange(ctx, r.key, r.obj.etag, pos, dest[copied:])
			if err != nil {
				return nil, failure(r.m.log, "get", r.key, err)
			}
			copied += n
			break
		}
		select {
		case <-c.done:
		case <-ctx.Done():
			return nil, syscall.EINTR
		}
		if c.err != nil {
			errno := failure(r.m.log, "get", r.key, c.err)
			r.dropAhead()
			return nil, errno
		}
		from := int(pos - c.off)
		if from >= c.n {
			break // end of object
		}
		if copied == 0 && from+len(dest) <= c.n {
			// The whole reply is in this part: point into its buffer.
			c.refs.Add(1)
			reply = &chunkReply{c: c, data: c.buf[from : from+len(dest)]}
			copied = len(dest)
			break
		}
		copied += copy(dest[copied:], c.buf[from:c.n])
	}
	r.next = max(r.next, off+int64(copied))
	// Parts wholly before this read are done with; once requests have
	// arrived late (concurrent requests of the kernel), those a late
	// request could still reach are kept.
	keep := off
	if r.late {
		keep = off - nearby
	}
	for len(r.ahead) > 0 && r.ahead[0].end() <= keep {
		r.release(r.ahead[0])
		r.ahead = r.ahead[1:]
	}
	r.fill(off)
	if reply == nil {
		reply = fuse.ReadResultData(dest[:copied])
	}
	return reply, 0
}

// readAlone reads dest at off with one ranged GET of its own, outside the
// read-ahead.
func (r *reader) readAlone(ctx context.Context, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	n, err := r.m.be.getRange(ctx, r.key, r.obj.etag, off, dest)
	if err != nil {
		return nil, failure(r.m.log, "get", r.key, err)
	}
	return fuse.ReadResultData(dest[:n]), 0
}

// fill keeps window parts in flight past off, as buffers allow.
func (r *reader) fill(off int64) {
	partSize := int64(r.m.cfg.ReadPartSize)
	for len(r.ahead) > 0 {
		last := r.ahead[len(r.ahead)-1]
		if last.end() >= r.obj.size || last.end() >= off+int64(r.window)*partSize+partSize {
			return
		}
		if !r.fetch(last.end()) {
			return
		}
	}
}

// fetch starts the GET of the part at off, if a buffer is free.
func (r *reader) fetch(off int64) bool {
	buf := r.m.readP.tryGet()
	if buf == nil {
		return false
	}
	buf = buf[:min(int64(len(buf)), r.obj.size-off)]
	ctx, cancel := context.WithCancel(context.Background())
	c := &chunk{off: off, buf: buf, done: make(chan struct{}), cancel: cancel, pool: r.m.readP}
	c.refs.Store(1)
	r.ahead = append(r.ahead, c)
	go func() {
		defer close(c.done)
		c.n, c.err = r.m.be.getRange(ctx, r.key, r.obj.etag, off, buf)
	}()
	return true
}

func (r *reader) chunkAt(pos int64) *chunk {
	for _, c := range r.ahead {
		if pos >= c.off && pos < c.end() {
			return c
		}
	}
	return nil
}

// release drops a part: its buffer goes back to the pool once its GET
// has ended and the replies that point into it have been written.
func (r *reader) release(c *chunk) {
	c.cancel()
	c.unref()
}

func (r *reader) dropAhead() {
	for _, c := range r.ahead {
		r.release(c)
	}
	r.ahead = nil
}

func (r *reader) Release(ctx context.Context) syscall.Errno {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.dropAhead()
	if r.whole != nil {
		putSmall(r.whole)
		r.whole = nil
	}
	return 0
}

// Write through a handle opened for reading (O_RDWR without O_TRUNC on
// an existing file) would patch the object: EBADF.
func (r *reader) Write(ctx context.Context, data []byte, off int64) (uint32, syscall.Errno) {
	return 0, syscall.EBADF
}

func (r *reader) Flush(ctx context.Context) syscall.Errno               { return 0 }
func (r *reader) Fsync(ctx context.Context, flags uint32) syscall.Errno { return 0 }
