package blob

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/b3-storage/b3/internal/vfs"
)

const align = vfs.DirectAlignment

func alignDown(n int64) int64 { return n &^ (align - 1) }
func alignUp(n int) int       { return (n + align - 1) &^ (align - 1) }

// bufPool recycles aligned write buffers. Its bound only limits what is kept
// idle; the number in use is bounded by the flush queue.
type bufPool struct {
	size int
	free chan []byte
}

func newBufPool(size, keep int) *bufPool {
	return &bufPool{size: size, free: make(chan []byte, keep)}
}

func (p *bufPool) get() []byte {
	select {
	case b := <-p.free:
		return b
	default:
		return vfs.AlignedBuffer(p.size)
	}
}

func (p *bufPool) put(b []byte) {
	select {
	case p.free <- b:
	default:
	}
}

// segWriter appends to one segment file. Appenders copy records into buf
// under Store.mu; filled or cut buffers go to the flusher goroutine, which
// writes them in order with aligned WriteAt calls.
//
// Invariants:
//   - bufStart is a multiple of align; buf[:bufLen] are the bytes of the
//     file at [bufStart, bufStart+bufLen), of which the first
//     (bufLen % align) may already be in the file from an earlier cut.
//   - Every write reaching the file is aligned in offset, length and memory.
//     A cut pads the last partial block with zeros; the next write of that
//     block carries the same prefix plus new bytes, so rewriting it never
//     changes a byte already written (a torn rewrite tears only padding).
//   - flushed <= cutEnd <= end, and all three only grow.
type segWriter struct {
	id     uint64
	file   vfs.File
	direct bool
	pool   *bufPool
	onErr  func(error)

	// Guarded by Store.mu.
	buf      []byte
	bufStart int64
	bufLen   int
	cutEnd   int64 // logical end handed to the flusher so far
	sealed   bool  // the flusher is stopped and the file closed

	end atomic.Int64 // logical end: bufStart+bufLen; stored under Store.mu

	queue chan flushJob
	done  chan struct{}

	flushMu      sync.Mutex
	flushCond    sync.Cond
	flushed      int64 // logical end written to the file (not yet synced)
	flushErr     error
	flushedFast  atomic.Int64 // copy of flushed for lock-free checks
	syncMu       sync.Mutex   // serialises Sync and Close of file
	closed       bool         // guarded by syncMu
	stopFlushing sync.Once
}

type flushJob struct {
	buf []byte
	off int64 // file offset, aligned
	n   int   // bytes to write, aligned
	end int64 // logical end once written
}

// newSegWriter starts a writer appending at logical offset end. prefix holds
// the file bytes [alignDown(end), end) so the partial last block can be
// rewritten.
func newSegWriter(id uint64, f vfs.File, direct bool, pool *bufPool, queueLen int, end int64, prefix []byte, onErr func(error)) *segWriter {
	w := &segWriter{
		id:       id,
		file:     f,
		direct:   direct,
		pool:     pool,
		onErr:    onErr,
		buf:      pool.get(),
		bufStart: alignDown(end),
		cutEnd:   end,
		flushed:  end,
		queue:    make(chan flushJob, queueLen),
		done:     make(chan struct{}),
	}
	w.flushCond.L = &w.flushMu
	w.bufLen = copy(w.buf, prefix)
	w.end.Store(end)
	w.flushedFast.Store(end)
	go w.flushLoop()
	return w
}

// write copies p into the buffer, handing full buffers to the flusher
// (blocking when its queue is full: backpressure). Caller holds Store.mu.
func (w *segWriter) write(p []byte) {
	for len(p) > 0 {
		n := copy(w.buf[w.bufLen:], p)
		w.bufLen += n
		p = p[n:]
		if w.bufLen == len(w.buf) {
			end := w.bufStart + int64(w.bufLen)
			w.queue <- flushJob{buf: w.buf, off: w.bufStart, n: w.bufLen, end: end}
			w.cutEnd = end
			w.buf = w.pool.get()
			w.bufStart = end
			w.bufLen = 0
		}
	}
	w.end.Store(w.bufStart + int64(w.bufLen))
}

// cut hands everything written so far to the flusher; waitFlushed(end)
// then returns once it is in the file. Caller holds Store.mu.
func (w *segWriter) cut() {
	end := w.bufStart + int64(w.bufLen)
	if w.sealed || end == w.cutEnd {
		return
	}
	n := alignUp(w.bufLen)
	clear(w.buf[w.bufLen:n])
	w.queue <- flushJob{buf: w.buf, off: w.bufStart, n: n, end: end}
	w.cutEnd = end
	tail := w.bufLen % align
	next := w.pool.get()
	copy(next, w.buf[w.bufLen-tail:w.bufLen])
	w.buf = next
	w.bufStart = end - int64(tail)
	w.bufLen = tail
}

func (w *segWriter) flushLoop() {
	defer close(w.done)
	for job := range w.queue {
		w.flushMu.Lock()
		failed := w.flushErr != nil
		w.flushMu.Unlock()
		var err error
		if !failed {
			if _, err = w.file.WriteAt(job.buf[:job.n], job.off); err != nil {
				err = fmt.Errorf("blob: write segment %016x at %d: %w", w.id, job.off, err)
			}
		}
		w.pool.put(job.buf)
		w.flushMu.Lock()
		if err != nil {
			w.flushErr = err
		} else if !failed && job.end > w.flushed {
			w.flushed = job.end
			w.flushedFast.Store(job.end)
		}
		w.flushCond.Broadcast()
		w.flushMu.Unlock()
		if err != nil {
			w.onErr(err)
		}
	}
}

// waitFlushed waits until the file holds the logical bytes [0, end), which
// an earlier cut (or full buffer) must have handed to the flusher.
func (w *segWriter) waitFlushed(end int64) error {
	w.flushMu.Lock()
	defer w.flushMu.Unlock()
	for w.flushed < end && w.flushErr == nil {
		w.flushCond.Wait()
	}
	return w.flushErr
}

// stopFlusher drains the queue and stops the flusher. Caller holds
// Store.mu and has cut.
func (w *segWriter) stopFlusher() error {
	w.stopFlushing.Do(func() { close(w.queue) })
	<-w.done
	w.flushMu.Lock()
	defer w.flushMu.Unlock()
	return w.flushErr
}
