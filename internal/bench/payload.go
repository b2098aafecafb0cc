package bench

import (
	"bytes"
	"errors"
	"hash/fnv"
	"io"
	"math/rand/v2"
	"sync"
)

// Payloads are generated without touching a random generator on the hot
// path: one random pool of PoolSize bytes is filled once, and the content of
// an object is the pool read as a ring starting at an offset derived from
// the object's key. Readers slice the pool (no copy beyond the one Read
// requires), so producing payload costs a memcpy at most, and a download can
// be verified from its key alone, without storing what was uploaded.
//
// The pool size is not a power of two, so objects larger than the pool do
// not repeat on block boundaries that a deduplicating server could exploit
// cheaply.
const PoolSize = 64<<20 + 4093

// Pool is the random byte ring payloads are cut from. It is read-only after
// NewPool and shared by all goroutines.
type Pool struct {
	data []byte
}

// NewPool fills a pool from a seeded generator (the same seed gives the same
// content, so a separate run can verify what another uploaded).
func NewPool(seed uint64) *Pool { return newPoolSize(seed, PoolSize) }

// newPoolSize makes a pool of another size (tests use small ones).
func newPoolSize(seed uint64, size int) *Pool {
	rng := rand.NewChaCha8([32]byte{byte(seed), byte(seed >> 8), byte(seed >> 16), byte(seed >> 24),
		byte(seed >> 32), byte(seed >> 40), byte(seed >> 48), byte(seed >> 56)})
	data := make([]byte, size)
	_, _ = rng.Read(data) // ChaCha8.Read never fails
	return &Pool{data: data}
}

// offsetOf places key's content in the ring.
func (p *Pool) offsetOf(key string) int64 {
	h := fnv.New64a()
	_, _ = io.WriteString(h, key)
	return int64(h.Sum64() % uint64(len(p.data)))
}

// Payload returns the content of key, size bytes long, as a reader.
func (p *Pool) Payload(key string, size int64) *Payload {
	return &Payload{pool: p, start: p.offsetOf(key), size: size}
}

// Payload is an object's content: a window of the pool ring. It implements
// io.Reader, io.Seeker, io.ReaderAt and io.WriterTo, which lets the SDK
// compute checksums, retry and split multipart uploads without buffering.
type Payload struct {
	pool  *Pool
	start int64 // offset of byte 0 in the ring
	size  int64
	pos   int64
}

// Len returns the object size.
func (r *Payload) Len() int64 { return r.size }

// ReadAt copies content at off.
func (r *Payload) ReadAt(b []byte, off int64) (int, error) {
	if off >= r.size {
		return 0, io.EOF
	}
	n := 0
	for n < len(b) && off < r.size {
		ring := r.pool.data
		at := (r.start + off) % int64(len(ring))
		chunk := min(int64(len(b)-n), r.size-off, int64(len(ring))-at)
		copy(b[n:], ring[at:at+chunk])
		n += int(chunk)
		off += chunk
	}
	if n < len(b) {
		return n, io.EOF
	}
	return n, nil
}

// Read implements io.Reader.
func (r *Payload) Read(b []byte) (int, error) {
	if r.pos >= r.size {
		return 0, io.EOF
	}
	n, err := r.ReadAt(b, r.pos)
	r.pos += int64(n)
	if err == io.EOF && n > 0 {
		err = nil
	}
	return n, err
}

// WriteTo writes the remaining content straight from the ring.
func (r *Payload) WriteTo(w io.Writer) (int64, error) {
	var total int64
	for r.pos < r.size {
		ring := r.pool.data
		at := (r.start + r.pos) % int64(len(ring))
		chunk := min(r.size-r.pos, int64(len(ring))-at)
		n, err := w.Write(ring[at : at+chunk])
		total += int64(n)
		r.pos += int64(n)
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

// Seek implements io.Seeker.
func (r *Payload) Seek(offset int64, whence int) (int64, error) {
	var abs int64
	switch whence {
	case io.SeekStart:
		abs = offset
	case io.SeekCurrent:
		abs = r.pos + offset
	case io.SeekEnd:
		abs = r.size + offset
	default:
		return 0, errors.New("payload: bad whence")
	}
	if abs < 0 {
		return 0, errors.New("payload: negative position")
	}
	r.pos = abs
	return abs, nil
}

// Sink receives a downloaded object. It counts bytes and, when it has an
// expected payload, compares every byte against it — at the write offset, so
// the transfer manager's out-of-order parts verify as well as a stream.
// Sink is safe for concurrent WriteAt calls on disjoint ranges.
type Sink struct {
	expect   *Payload // nil: discard
	mu       sync.Mutex
	pos      int64 // next offset for Write
	n        int64
	mismatch bool
}

// NewSink returns a sink verifying against expect (nil to only count).
func NewSink(expect *Payload) *Sink { return &Sink{expect: expect} }

// Write appends sequentially.
func (s *Sink) Write(b []byte) (int, error) {
	s.mu.Lock()
	off := s.pos
	s.pos += int64(len(b))
	s.mu.Unlock()
	return s.WriteAt(b, off)
}

// WriteAt accepts b at off.
func (s *Sink) WriteAt(b []byte, off int64) (int, error) {
	bad := false
	if s.expect != nil {
		bad = !s.matches(b, off)
	}
	s.mu.Lock()
	s.n += int64(len(b))
	s.mismatch = s.mismatch || bad
	s.mu.Unlock()
	return len(b), nil
}

// matches compares b with the expected content at off, chunk by chunk
// straight against the ring (no copy).
func (s *Sink) matches(b []byte, off int64) bool {
	if off+int64(len(b)) > s.expect.size {
		return false
	}
	ring := s.expect.pool.data
	for len(b) > 0 {
		at := (s.expect.start + off) % int64(len(ring))
		chunk := min(int64(len(b)), int64(len(ring))-at)
		if !bytes.Equal(b[:chunk], ring[at:at+chunk]) {
			return false
		}
		b = b[chunk:]
		off += chunk
	}
	return true
}

// Result returns the bytes received and the verification outcome.
func (s *Sink) Result(size int64) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.mismatch:
		return s.n, ErrVerify
	case size >= 0 && s.n < size:
		return s.n, ErrShortRead
	}
	return s.n, nil
}

// copyBufSize is the size of pooled copy buffers for streaming downloads.
const copyBufSize = 256 << 10

var copyBufs = sync.Pool{New: func() any { b := make([]byte, copyBufSize); return &b }}

// copyPooled copies src to dst through a pooled buffer, so a download does
// not allocate a buffer per request.
func copyPooled(dst io.Writer, src io.Reader) (int64, error) {
	bp := copyBufs.Get().(*[]byte)
	defer copyBufs.Put(bp)
	// Hide dst's ReadFrom (and src's WriteTo) so CopyBuffer uses our buffer.
	return io.CopyBuffer(struct{ io.Writer }{dst}, struct{ io.Reader }{src}, *bp)
}
