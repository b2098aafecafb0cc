package blob

import (
	"context"
	"errors"
	"fmt"

	"github.com/b3-storage/b3/internal/vfs"
)

// scanner walks the records of a segment file in order, reading large
// windows. It is used by ScanSegment and by recovery.
type scanner struct {
	s      *Store
	ctx    context.Context
	f      vfs.File
	seg    uint64
	limit  int64 // scan stops here (file size or logical end)
	buf    []byte
	winOff int64 // file offset of buf[0]
	winLen int
	off    int64 // offset of the next record
}

const scanWindow = 4 << 20

func newScanner(ctx context.Context, s *Store, f vfs.File, seg uint64, from, limit int64) *scanner {
	size := int64(scanWindow)
	if limit-from < size {
		size = max(limit-from, headerSize)
	}
	return &scanner{s: s, ctx: ctx, f: f, seg: seg, limit: limit, buf: make([]byte, size), off: from, winOff: from}
}

// fill reads the window starting at sc.off, at least need bytes if the
// limit allows.
func (sc *scanner) fill(need int) error {
	if need > len(sc.buf) {
		sc.buf = make([]byte, need)
	}
	n := int(min(int64(len(sc.buf)), sc.limit-sc.off))
	if err := sc.s.readAt(sc.ctx, sc.f, sc.seg, sc.buf[:n], sc.off); err != nil {
		return err
	}
	sc.winOff, sc.winLen = sc.off, n
	return nil
}

// next decodes the record at sc.off and returns it with its offset. On
// success and on errBadPayload sc.off moves past the record. errEndOfData
// means zero padding or the limit was reached; errShortRecord means a
// record runs past the limit; errBadHeader means the header is invalid.
// Other errors are I/O errors.
func (sc *scanner) next() (decodedRecord, int64, error) {
	at := sc.off
	for {
		if sc.off >= sc.limit {
			return decodedRecord{}, at, errEndOfData
		}
		lo := int(sc.off - sc.winOff)
		if sc.off < sc.winOff || lo >= sc.winLen {
			if err := sc.fill(0); err != nil {
				return decodedRecord{}, at, err
			}
			continue
		}
		avail := sc.buf[lo:sc.winLen]
		rec, need, err := decodeRecord(avail)
		if errors.Is(err, errShortRecord) {
			if sc.winOff+int64(sc.winLen) < sc.limit && int64(need) <= sc.limit-sc.off {
				if err := sc.fill(need); err != nil {
					return decodedRecord{}, at, err
				}
				continue
			}
			// The bytes up to the limit cannot hold the record. Fewer than a
			// header's worth of zeros is just the padding of the last block.
			if len(avail) < headerSize && allZero(avail) {
				return rec, at, errEndOfData
			}
			return rec, at, err
		}
		if err == nil || errors.Is(err, errBadPayload) {
			sc.off += int64(rec.header.recordLen())
		}
		return rec, at, err
	}
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// ScanSegment calls fn for each record of segment id in file order; for
// the active segment, up to what was appended when the scan began. A
// record whose header is valid but whose payload is corrupt is skipped and
// counted (Stats.CorruptRecords). An invalid header ends the scan with an
// error wrapping ErrCorrupt that gives its offset: nothing after it can be
// located. An error from fn ends the scan and is returned.
func (s *Store) ScanSegment(ctx context.Context, id uint64, fn func(Record) error) error {
	f, err := s.pin(id)
	if err != nil {
		return err
	}
	defer s.unpin(id)
	limit, err := s.segmentLimit(id)
	if err != nil {
		return err
	}
	sc := newScanner(ctx, s, f, id, 0, limit)
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		rec, at, err := sc.next()
		switch {
		case err == nil:
			err = fn(Record{
				Owner:       Owner{Key: append([]byte(nil), rec.key...), Version: rec.header.version},
				ChunkOffset: int64(rec.header.chunkOff),
				Tag:         rec.header.tag,
				Extent: Extent{Segment: id, Offset: at, Length: int64(rec.header.recordLen()),
					Size: int64(rec.header.payloadLen)},
			})
			if err != nil {
				return err
			}
		case errors.Is(err, errEndOfData):
			return nil
		case errors.Is(err, errBadPayload):
			s.stats.corrupt.Add(1)
			s.log.Warn("blob: skipping record with corrupt payload", "segment", id, "offset", at)
		case errors.Is(err, errBadHeader), errors.Is(err, errShortRecord):
			s.stats.corrupt.Add(1)
			return &CorruptError{Segment: id, Offset: at, Reason: err.Error()}
		default:
			return err
		}
	}
}

// segmentLimit returns how far a scan of segment id may read: the size of
// a sealed segment, or all that was appended to the active one (flushed to
// the file first).
func (s *Store) segmentLimit(id uint64) (int64, error) {
	s.segMu.Lock()
	seg := s.segments[id]
	var size int64
	var w *segWriter
	if seg != nil {
		size, w = seg.size, seg.writer
	}
	s.segMu.Unlock()
	if seg == nil {
		return 0, fmt.Errorf("blob: segment %016x vanished", id)
	}
	if w == nil {
		return size, nil
	}
	end := w.end.Load()
	return end, s.ensureFlushed(id, end)
}
