package blob

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/b3-storage/b3/internal/vfs"
)

// Reader streams payload bytes of a value. It verifies each record's
// payload CRC before releasing any of its bytes, and each record's owner
// (key and version) and chunk offset before using it at all, so a corrupt
// record, or metadata pointing at records that are not the value's, yields
// an error wrapping ErrCorrupt, never wrong bytes. It pins the segments it
// reads until Close. Not safe for concurrent use.
type Reader struct {
	s       *Store
	ctx     context.Context
	owner   Owner
	extents []Extent
	files   map[uint64]vfs.File

	idx      int   // current extent
	recOff   int64 // file offset of the next record in extents[idx]
	consumed int64 // payload bytes of extents[idx] before recOff
	// Chunk offsets: inside an extent, each record's follows on from the
	// one before (chunkNext). An extent's first record starts the value
	// (0), or continues the previous extent (prevEnd, if its records were
	// all read), or starts a multipart object's next part (0 again);
	// after extents skipped unread it can only be checked against base,
	// the payload bytes of the extents before it. Metadata does not say
	// where parts begin, so offset 0 is accepted at any extent's start:
	// the check guarantees the owner's bytes, each append's in order, not
	// the order of parts.
	chunkNext uint64
	prevEnd   uint64
	prevKnown bool
	base      int64
	skip      int64 // payload bytes still to skip before the range
	remaining int64 // payload bytes of the range not yet returned
	pending   []byte

	buf     []byte
	bufHint int // buffer size to allocate: the largest extent, at most readBufSize
	pooled  *[]byte
	winSeg  uint64
	winOff  int64
	winLen  int

	// Read-ahead: the kernel is asked to fetch the extent run ahead of the
	// reader (prefetchAhead bytes) whenever the reader gets within half of
	// that of where the last request ended, so that the disk works while
	// the previous record travels to the client.
	prefetchSeg uint64
	prefetchEnd int64

	err    error
	closed bool
}

var (
	_ io.ReadCloser = (*Reader)(nil)
	_ io.WriterTo   = (*Reader)(nil)
)

// NewReader returns a reader of payload bytes [off, off+n) of owner's value
// whose records are extents, in payload order. Every record read must
// carry owner's key and version and the chunk offset its place implies.
// ctx is used for every read (rate limiter priority, cancellation).
func (s *Store) NewReader(ctx context.Context, owner Owner, extents []Extent, off, n int64) (*Reader, error) {
	var total int64
	for _, e := range extents {
		if e.Size < 0 || e.Offset < 0 || e.Length < e.Size {
			return nil, fmt.Errorf("blob: invalid extent %+v", e)
		}
		total += e.Size
	}
	if off < 0 || n < 0 || off+n > total {
		return nil, fmt.Errorf("blob: range [%d, %d) outside a value of %d bytes", off, off+n, total)
	}
	r := &Reader{s: s, ctx: ctx, owner: owner, extents: extents, files: map[uint64]vfs.File{}, skip: off, remaining: n}
	if n == 0 {
		return r, nil
	}
	ends := map[uint64]int64{}
	for _, e := range extents {
		if _, ok := r.files[e.Segment]; !ok {
			f, err := s.pin(e.Segment)
			if err != nil {
				r.Close()
				return nil, err
			}
			r.files[e.Segment] = f
		}
		ends[e.Segment] = max(ends[e.Segment], e.Offset+e.Length)
		r.bufHint = max(r.bufHint, int(min(e.Length, int64(s.readBufSize()))))
	}
	for id, end := range ends {
		if err := s.ensureFlushed(id, end); err != nil {
			r.Close()
			return nil, err
		}
	}
	if len(extents) > 0 {
		r.recOff = extents[0].Offset
	}
	return r, nil
}

// Close releases the pinned segments. Idempotent.
func (r *Reader) Close() error {
	if r.closed {
		return nil
	}
	r.closed = true
	for id := range r.files {
		r.s.unpin(id)
	}
	r.files = nil
	r.releaseBuf()
	r.pending = nil
	return nil
}

func (r *Reader) releaseBuf() {
	if r.pooled != nil {
		r.s.readPool.Put(r.pooled)
		r.pooled = nil
	}
	r.buf, r.winLen = nil, 0
}

func (r *Reader) Read(p []byte) (int, error) {
	if r.closed {
		return 0, errors.New("blob: read from closed Reader")
	}
	for len(r.pending) == 0 {
		if r.err != nil {
			return 0, r.err
		}
		if r.remaining == 0 {
			return 0, io.EOF
		}
		if err := r.nextRecord(); err != nil {
			r.err = err
			return 0, err
		}
	}
	n := copy(p, r.pending)
	r.pending = r.pending[n:]
	return n, nil
}

// WriteTo writes the rest of the range to w, record by record, without an
// intermediate copy.
func (r *Reader) WriteTo(w io.Writer) (int64, error) {
	if r.closed {
		return 0, errors.New("blob: read from closed Reader")
	}
	var total int64
	for {
		if len(r.pending) > 0 {
			n, err := w.Write(r.pending)
			total += int64(n)
			r.pending = r.pending[n:]
			if err != nil {
				return total, err
			}
			continue
		}
		if r.err != nil {
			return total, r.err
		}
		if r.remaining == 0 {
			return total, nil
		}
		if err := r.nextRecord(); err != nil {
			r.err = err
			return total, err
		}
	}
}

func (r *Reader) corrupt(seg uint64, off int64, reason string) error {
	r.s.stats.corrupt.Add(1)
	return &CorruptError{Segment: seg, Offset: off, Reason: reason}
}

// misdirected reports a valid record that is not the one the metadata
// promised: another owner's, or the value's own at another offset. It is
// corruption (counted with the rest) and counted apart: it means metadata
// and segments disagree, not that a disk flipped bits.
func (r *Reader) misdirected(seg uint64, off int64, reason string) error {
	r.s.stats.misdirected.Add(1)
	return r.corrupt(seg, off, reason)
}

// nextRecord makes pending the verified part of the next record that falls
// in the range.
func (r *Reader) nextRecord() error {
	for {
		if err := r.ctx.Err(); err != nil {
			return err
		}
		if r.idx >= len(r.extents) {
			return io.ErrUnexpectedEOF // unreachable: NewReader checked the sizes
		}
		ext := r.extents[r.idx]
		extEnd := ext.Offset + ext.Length
		if r.recOff >= extEnd || r.skip >= ext.Size-r.consumed {
			if r.recOff == extEnd && r.consumed != ext.Size {
				return r.corrupt(ext.Segment, ext.Offset, fmt.Sprintf("extent holds %d payload bytes, want %d", r.consumed, ext.Size))
			}
			if r.recOff > extEnd {
				return r.corrupt(ext.Segment, ext.Offset, "records overrun the extent")
			}
			// Done with this extent, or the range starts past it.
			r.skip -= ext.Size - r.consumed
			r.prevEnd, r.prevKnown = r.chunkNext, r.recOff == extEnd
			r.base += ext.Size
			r.idx++
			r.consumed = 0
			if r.idx < len(r.extents) {
				r.recOff = r.extents[r.idx].Offset
			}
			continue
		}
		if r.skip > 0 {
			// The range starts inside this extent: step over whole records
			// by their headers, reading no payload.
			h, err := r.header(ext, r.recOff)
			if err != nil {
				return err
			}
			if int64(h.payloadLen) <= r.skip {
				r.advance(h)
				r.skip -= int64(h.payloadLen)
				continue
			}
		}
		rec, err := r.record(ext, r.recOff)
		if err != nil {
			return err
		}
		r.advance(rec.header)
		payload := rec.payload[r.skip:]
		r.skip = 0
		if int64(len(payload)) > r.remaining {
			payload = payload[:r.remaining]
		}
		r.remaining -= int64(len(payload))
		r.pending = payload
		if len(payload) > 0 {
			return nil
		}
	}
}

func (r *Reader) advance(h recordHeader) {
	r.recOff += int64(h.recordLen())
	r.consumed += int64(h.payloadLen)
	r.chunkNext = h.chunkOff + uint64(h.payloadLen)
}

// checkPlace verifies that the record at r.recOff, whose header and key
// are h and key, is the next record of the reader's value.
func (r *Reader) checkPlace(ext Extent, h recordHeader, key []byte) error {
	if h.version != r.owner.Version || string(key) != string(r.owner.Key) {
		return r.misdirected(ext.Segment, r.recOff, fmt.Sprintf("record of %q version %d, want %q version %d", key, h.version, r.owner.Key, r.owner.Version))
	}
	var ok bool
	switch {
	case r.consumed > 0:
		ok = h.chunkOff == r.chunkNext
	case h.chunkOff == 0:
		ok = true
	case r.idx == 0:
		ok = false
	case r.prevKnown:
		ok = h.chunkOff == r.prevEnd
	default:
		ok = h.chunkOff <= uint64(r.base)
	}
	if !ok {
		return r.misdirected(ext.Segment, r.recOff, fmt.Sprintf("chunk offset %d out of place (extent %d, %d bytes into it)", h.chunkOff, r.idx, r.consumed))
	}
	return nil
}

// window returns the bytes [off, off+need) of ext's segment, reading up to
// want bytes (at least need) when they are not in the buffer already.
func (r *Reader) window(ext Extent, off int64, need, want int) ([]byte, error) {
	if r.winLen > 0 && r.winSeg == ext.Segment && off >= r.winOff && off+int64(need) <= r.winOff+int64(r.winLen) {
		lo := int(off - r.winOff)
		return r.buf[lo : lo+need], nil
	}
	if len(r.buf) < need {
		r.releaseBuf()
		if size := max(need, r.bufHint); size == r.s.readBufSize() {
			r.pooled = r.s.readPool.Get().(*[]byte)
			r.buf = *r.pooled
		} else {
			r.buf = make([]byte, size)
		}
	}
	n := min(len(r.buf), max(want, need))
	r.winLen = 0
	r.prefetch(ext, off+int64(n))
	if err := r.s.readAt(r.ctx, r.files[ext.Segment], ext.Segment, r.buf[:n], off); err != nil {
		return nil, err
	}
	r.winSeg, r.winOff, r.winLen = ext.Segment, off, n
	return r.buf[:need], nil
}

// prefetchAhead is how far ahead of a reader the kernel is asked to read.
const prefetchAhead = 8 << 20

// prefetch hints the kernel to read ext's records from off on, up to
// prefetchAhead bytes, unless an earlier hint already covers most of it.
func (r *Reader) prefetch(ext Extent, off int64) {
	p, ok := r.files[ext.Segment].(vfs.Prefetcher)
	if !ok {
		return
	}
	end := min(ext.Offset+ext.Length, off+prefetchAhead)
	if r.prefetchSeg == ext.Segment && r.prefetchEnd-off >= prefetchAhead/2 || end <= off {
		return
	}
	if r.prefetchSeg == ext.Segment && r.prefetchEnd > off {
		off = r.prefetchEnd
	}
	_ = p.Prefetch(off, end-off) // a hint: a failure only costs speed
	r.prefetchSeg, r.prefetchEnd = ext.Segment, end
}

// header reads and checks the header (and key) of the record at off.
func (r *Reader) header(ext Extent, off int64) (recordHeader, error) {
	extEnd := ext.Offset + ext.Length
	if extEnd-off < headerSize {
		return recordHeader{}, r.corrupt(ext.Segment, off, "extent ends inside a record header")
	}
	b, err := r.window(ext, off, headerSize, int(min(extEnd-off, headerSize+256)))
	if err != nil {
		return recordHeader{}, err
	}
	h, err := parseHeader(b)
	if err != nil {
		return h, r.corrupt(ext.Segment, off, err.Error())
	}
	if extEnd-off < int64(h.recordLen()) {
		return h, r.corrupt(ext.Segment, off, "record runs past the extent")
	}
	b, err = r.window(ext, off, headerSize+h.keyLen, headerSize+h.keyLen)
	if err != nil {
		return h, err
	}
	if headerChecksum(b, b[headerSize:]) != h.headerCRC {
		return h, r.corrupt(ext.Segment, off, "header checksum mismatch")
	}
	return h, r.checkPlace(ext, h, b[headerSize:])
}

// record reads and verifies the whole record at off.
func (r *Reader) record(ext Extent, off int64) (decodedRecord, error) {
	h, err := r.header(ext, off)
	if err != nil {
		return decodedRecord{}, err
	}
	extEnd := ext.Offset + ext.Length
	b, err := r.window(ext, off, h.recordLen(), int(min(extEnd-off, int64(r.s.readBufSize()))))
	if err != nil {
		return decodedRecord{}, err
	}
	rec, _, err := decodeRecord(b)
	if err != nil {
		return rec, r.corrupt(ext.Segment, off, err.Error())
	}
	return rec, nil
}
