package mount

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// maxParts is S3's limit on the parts of one upload.
const maxParts = 10000

// smallWrite is how much of a file is kept in a heap buffer of its own
// before it takes a part buffer from the pool: small files (the common
// case of many files at once) do not hold a whole part each.
const smallWrite = 1 << 20

// writer is a file open for writing: the whole new content of the object,
// arriving in order, uploaded as it comes.
//
// Order of durable steps: bytes are copied into the current buffer; a full
// buffer becomes a part (the first one also creates the multipart upload)
// and is uploaded in the background, at most UploadConcurrency at a time;
// commit uploads the rest (or, for a file smaller than one part, PUTs it
// whole), waits for every part and completes the upload. Nothing is
// visible in the bucket before that last step.
type writer struct {
	m    *mountFS
	node *fileNode
	key  string
	pid  uint32 // the process that opened the file

	mu       sync.Mutex
	written  atomic.Int64
	mtime    time.Time
	cur      []byte  // bytes not yet handed to a part
	small    *[]byte // cur while it is still the first, growing buffer
	uploadID string
	partsMu  sync.Mutex
	etags    []string // by part number - 1, under partsMu
	inflight sync.WaitGroup
	slots    chan struct{} // one per part in flight
	failed   atomic.Value  // error: first failure; the upload is then void
	flushes  int           // closes seen
	state    writerState
	result   syscall.Errno // the commit's outcome, once done
	done     chan struct{} // closed when committed or abandoned
}

type writerState int

const (
	writing writerState = iota
	committing
	committed
	abandoned
)

// startWrite registers a new writer of key; one at a time per key.
func (m *mountFS) startWrite(ctx context.Context, key string, node *fileNode) (*writer, syscall.Errno) {
	w := &writer{m: m, node: node, key: key, mtime: time.Now(),
		slots: make(chan struct{}, m.cfg.UploadConcurrency), done: make(chan struct{})}
	if c, ok := ctx.(*fuse.Context); ok {
		w.pid = c.Pid
	}
	w.small = getSmall(64 << 10)
	w.cur = *w.small
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.writing[key] != nil {
		putSmall(w.small)
		return nil, syscall.EBUSY
	}
	m.writing[key] = w
	return w, 0
}

var (
	_ fs.FileWriter    = (*writer)(nil)
	_ fs.FileReader    = (*writer)(nil)
	_ fs.FileFlusher   = (*writer)(nil)
	_ fs.FileFsyncer   = (*writer)(nil)
	_ fs.FileReleaser  = (*writer)(nil)
	_ fs.FileGetattrer = (*writer)(nil)
	_ fs.FileAllocater = (*writer)(nil)
)

// restart makes a writer committed empty writable again. Called with mu
// held.
func (w *writer) restart() syscall.Errno {
	w.m.mu.Lock()
	defer w.m.mu.Unlock()
	if w.m.writing[w.key] != nil {
		return syscall.EBUSY
	}
	w.m.writing[w.key] = w
	w.state, w.done = writing, make(chan struct{})
	w.small = getSmall(64 << 10)
	w.cur = *w.small
	return 0
}

// object describes the file as written so far.
func (w *writer) object() object { return object{size: w.written.Load(), mtime: w.mtime} }

func (w *writer) fail(err error) {
	w.failed.CompareAndSwap(nil, err)
}

func (w *writer) failure() error {
	if err, _ := w.failed.Load().(error); err != nil {
		return err
	}
	return nil
}

// Write appends data; it must start where the previous write ended.
func (w *writer) Write(ctx context.Context, data []byte, off int64) (uint32, syscall.Errno) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.state == committed && w.result == 0 && w.written.Load() == 0 && off == 0 {
		// Committed empty at a close (a shell redirection closes its
		// first descriptor before writing through the other one): the
		// file starts again, and replaces the empty object at its close.
		if errno := w.restart(); errno != 0 {
			return 0, errno
		}
	}
	if w.state != writing {
		return 0, syscall.EBADF
	}
	if err := w.failure(); err != nil {
		return 0, errnoOf(err)
	}
	if off != w.written.Load() {
		// A random write cannot be expressed as an upload: the file is
		// void from here on, and close reports it too.
		w.fail(fmt.Errorf("%w: write at %d, file has %d bytes (only sequential writes)", syscall.EINVAL, off, w.written.Load()))
		w.m.log.Printf("write %q: out of order at %d after %d bytes; the file will not be committed", w.key, off, w.written.Load())
		return 0, syscall.EINVAL
	}
	partSize := w.m.cfg.PartSize
	for rest := data; len(rest) > 0; {
		if len(w.cur) == partSize {
			if errno := w.sendPart(ctx, true); errno != 0 {
				return 0, errno
			}
		}
		if w.small != nil && len(w.cur)+len(rest) > smallWrite {
			// No longer a small file: move to a part buffer.
			w.cur = append(w.m.writeP.get(nil)[:0], w.cur...)
			putSmall(w.small)
			w.small = nil
		}
		n := min(len(rest), partSize-len(w.cur))
		w.cur = append(w.cur, rest[:n]...)
		if w.small != nil {
			// The first buffer may have grown: recycle the grown one.
			*w.small = w.cur
		}
		rest = rest[n:]
		w.written.Add(int64(n))
	}
	w.mtime = time.Now()
	return uint32(len(data)), 0
}

// sendPart uploads cur as the next part in the background and, if more
// is to come, takes a fresh buffer from the pool. Called with mu held and
// cur non-empty.
//
// Interrupts (signals to the writing process, which Go programs receive
// all the time) are not honoured here: an interrupted step would void the
// file, and the program's retry of the write would fail. Every wait ends
// anyway, when a part is uploaded or fails.
func (w *writer) sendPart(ctx context.Context, more bool) syscall.Errno {
	ctx = context.WithoutCancel(ctx)
	if w.uploadID == "" {
		id, err := w.m.be.createUpload(ctx, w.key)
		if err != nil {
			w.fail(err)
			return failure(w.m.log, "create upload", w.key, err)
		}
		w.uploadID = id
	}
	w.partsMu.Lock()
	if len(w.etags) == maxParts {
		w.partsMu.Unlock()
		w.fail(fmt.Errorf("%w: more than %d parts of %d bytes", syscall.EFBIG, maxParts, w.m.cfg.PartSize))
		return syscall.EFBIG
	}
	w.etags = append(w.etags, "")
	number := int32(len(w.etags))
	w.partsMu.Unlock()
	body, small := w.cur, w.small
	w.cur, w.small = nil, nil // small is nil here unless called by finish
	w.slots <- struct{}{}
	w.inflight.Add(1)
	go func() {
		defer w.inflight.Done()
		// A part goes on even if the FUSE request that filled it is
		// interrupted: the upload lives as long as the file.
		var file *os.File
		if small == nil {
			file = w.m.writeP.fileOf(body)
		}
		etag, err := w.m.be.uploadPart(context.Background(), w.key, w.uploadID, number, body, file)
		if err != nil {
			w.fail(err)
			failure(w.m.log, fmt.Sprintf("upload part %d", number), w.key, err)
		} else {
			w.partsMu.Lock()
			w.etags[number-1] = etag
			w.partsMu.Unlock()
		}
		if small != nil {
			putSmall(small)
		} else {
			w.m.writeP.put(body)
		}
		<-w.slots
	}()
	if !more {
		return 0
	}
	w.cur = w.m.writeP.get(nil)[:0]
	return 0
}

// commit makes the object: one PUT for a file smaller than a part, else
// the last part and CompleteMultipartUpload once every part is in. On any
// failure the upload is aborted and the errno returned, now and to every
// later flush or fsync of this file.
func (w *writer) commit(ctx context.Context) syscall.Errno {
	w.mu.Lock()
	switch w.state {
	case committing:
		done := w.done
		w.mu.Unlock()
		<-done
		w.mu.Lock()
		defer w.mu.Unlock()
		return w.result
	case committed, abandoned:
		defer w.mu.Unlock()
		return w.result
	}
	// From here no write gets in (EBADF) and cur is ours alone.
	w.state = committing
	w.mu.Unlock()
	result := w.finish(ctx)
	w.mu.Lock()
	defer w.mu.Unlock()
	w.result, w.state = result, committed
	w.release()
	return w.result
}

func (w *writer) finish(ctx context.Context) syscall.Errno {
	// The commit must not be cut short by an interrupted close: once
	// started it completes or fails on its own.
	ctx = context.WithoutCancel(ctx)
	if err := w.failure(); err != nil {
		w.abort()
		return errnoOf(err)
	}
	var etag string
	if w.uploadID == "" {
		var err error
		if etag, err = w.m.be.put(ctx, w.key, w.cur); err != nil {
			return failure(w.m.log, "put", w.key, err)
		}
	} else {
		if len(w.cur) > 0 {
			if errno := w.sendPart(ctx, false); errno != 0 {
				w.abort()
				return errno
			}
		}
		w.inflight.Wait()
		if err := w.failure(); err != nil {
			w.abort()
			return errnoOf(err)
		}
		var err error
		if etag, err = w.m.be.completeUpload(ctx, w.key, w.uploadID, w.etags); err != nil {
			w.abort()
			return failure(w.m.log, "complete upload", w.key, err)
		}
	}
	o := object{size: w.written.Load(), mtime: time.Now(), etag: etag}
	w.node.set(o)
	dir, name := splitKey(w.key)
	w.m.dirs.setFile(dir, name, o)
	return 0
}

// abort gives up the multipart upload (its parts are discarded by the
// server) once no part is in flight.
func (w *writer) abort() {
	if w.uploadID == "" {
		return
	}
	w.inflight.Wait()
	if err := w.m.be.abortUpload(context.Background(), w.key, w.uploadID); err != nil && !isNotFound(err) {
		failure(w.m.log, "abort upload", w.key, err)
	}
}

// release returns the buffers and unregisters the writer. Called with mu
// held, once.
func (w *writer) release() {
	if w.small != nil {
		putSmall(w.small)
	} else if w.cur != nil {
		w.m.writeP.put(w.cur)
	}
	w.cur, w.small = nil, nil
	w.m.mu.Lock()
	if w.m.writing[w.key] == w {
		delete(w.m.writing, w.key)
	}
	w.m.mu.Unlock()
	if w.state == abandoned || w.result != 0 {
		// Nothing was committed: the name must not linger in the
		// listing, the node or the kernel's caches.
		dir, name := splitKey(w.key)
		w.m.dirs.remove(dir, name)
		w.node.forget()
		go func() {
			if name, parent := w.node.Parent(); parent != nil {
				parent.NotifyEntry(name)
			}
		}()
	}
	close(w.done)
}

// abandon drops the file without committing it (unmount).
func (w *writer) abandon(why string) {
	w.mu.Lock()
	if w.state != writing {
		w.mu.Unlock()
		return
	}
	w.state = committing
	w.mu.Unlock()
	w.fail(errors.New(why))
	w.abort()
	w.mu.Lock()
	defer w.mu.Unlock()
	w.state, w.result = abandoned, syscall.EIO
	w.release()
	w.m.log.Printf("write %q: %s before the file was closed; nothing was committed", w.key, why)
}

// closing reports whether a close was seen (the commit may be deferred to
// release).
func (w *writer) closing() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.flushes > 0
}

// wait blocks until the writer is committed or abandoned.
func (w *writer) wait(ctx context.Context) syscall.Errno {
	w.mu.Lock()
	done := w.done
	w.mu.Unlock()
	select {
	case <-done:
		return 0
	case <-ctx.Done():
		return syscall.EINTR
	}
}

// Flush is close(2). The process that opened the file commits it here and
// gets the outcome. A close by another process (a forked child sharing
// the descriptor) leaves the commit to a later close or the last one
// (Release), so later writes through the other descriptors still count.
// A file closed empty is committed empty; a later write at offset 0
// through another descriptor starts it again (see Write).
func (w *writer) Flush(ctx context.Context) syscall.Errno {
	w.mu.Lock()
	w.flushes++
	state := w.state
	w.mu.Unlock()
	if state != writing {
		return w.commit(ctx) // the outcome, once known
	}
	pid := w.pid
	if c, ok := ctx.(*fuse.Context); ok && c.Pid != 0 && pid != 0 && !sameProcess(c.Pid, pid) {
		return 0
	}
	return w.commit(ctx)
}

// Fsync commits now; later writes fail with EBADF.
func (w *writer) Fsync(ctx context.Context, flags uint32) syscall.Errno {
	return w.commit(ctx)
}

// Release is the last close of the file: commit if no close did.
func (w *writer) Release(ctx context.Context) syscall.Errno {
	w.mu.Lock()
	pending := w.state == writing
	w.mu.Unlock()
	if errno := w.commit(ctx); errno != 0 && pending {
		w.m.log.Printf("write %q: commit at last close failed: %v", w.key, errno)
	}
	return 0
}

func (w *writer) Getattr(ctx context.Context, out *fuse.AttrOut) syscall.Errno {
	w.m.fileAttr(&out.Attr, w.object())
	return 0
}

// Read of a file open for writing: its bytes are not readable until
// committed.
func (w *writer) Read(ctx context.Context, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	return nil, syscall.EBADF
}

// Allocate (fallocate, posix_fallocate) has no object form.
func (w *writer) Allocate(ctx context.Context, off uint64, size uint64, mode uint32) syscall.Errno {
	return syscall.ENOTSUP
}

// sameProcess reports whether two FUSE callers (thread ids, as the kernel
// sends them) belong to one process.
func sameProcess(a, b uint32) bool {
	return a == b || (a != 0 && tgid(a) != 0 && tgid(a) == tgid(b))
}

// tgid returns the process (thread group) of a thread, 0 if unknown.
func tgid(tid uint32) uint32 {
	status, err := os.ReadFile("/proc/" + strconv.FormatUint(uint64(tid), 10) + "/status")
	if err != nil {
		return 0
	}
	_, rest, ok := strings.Cut(string(status), "\nTgid:")
	if !ok {
		return 0
	}
	line, _, _ := strings.Cut(rest, "\n")
	id, err := strconv.ParseUint(strings.TrimSpace(line), 10, 32)
	if err != nil {
		return 0
	}
	return uint32(id)
}
