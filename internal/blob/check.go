package blob

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"

	"github.com/b3-storage/b3/internal/vfs"
)

// Checks for the scrub (package scrub): re-reading what is on disk, long
// after it was written, to find bit rot, torn or missing files before a
// client does. Neither check changes anything.
//
// A scrub pass sweeps segments, then values (and last the metadata,
// elsewhere); the split of the first two saves reading live bytes
// twice: CheckSegment reads every record of a segment and verifies both
// CRCs (the dead ones too), noting where payloads failed; CheckValue then
// walks one value's extents by their record headers only (header CRC,
// owner, chunk offset, lengths: what Reader checks), taking the payload
// verdict from the segment sweep where it covered the record, and reading
// and verifying the payload itself where it did not (records written
// since, or past a header the sweep could not decode).

// SegmentCheck is what CheckSegment found in one segment.
type SegmentCheck struct {
	Segment uint64
	// Records and Bytes count the records read whole and the bytes read.
	Records, Bytes int64
	// End is where the sweep stopped: records starting below End were
	// checked; nothing at or past it was (the limit of the data, or a
	// header it could not decode: see Broken).
	End int64
	// BadPayloads are the file offsets of records whose header held and
	// whose payload CRC failed, in file order.
	BadPayloads []int64
	// Broken, when set, is the header (or the end of the file) at End that
	// could not be decoded although data should follow: what lies beyond
	// cannot be located by a sweep. Values referencing it are checked by
	// CheckValue from their own extents.
	Broken *CorruptError
}

// CheckSegment reads segment id whole (the active one up to what was
// appended when the check began) and verifies every record's header and
// payload CRC. It returns an error only when it could not read at all
// (the segment is gone, ctx ended, an I/O error that is not about the
// data's shape); corrupt data is reported in the result.
func (s *Store) CheckSegment(ctx context.Context, id uint64) (SegmentCheck, error) {
	res := SegmentCheck{Segment: id}
	f, err := s.pin(id)
	if err != nil {
		return res, err
	}
	defer s.unpin(id)
	limit, err := s.segmentLimit(id)
	if err != nil {
		return res, err
	}
	sc := newScanner(ctx, s, f, id, 0, limit)
	for {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		rec, at, err := sc.next()
		res.End = sc.off
		switch {
		case err == nil:
			res.Records++
			res.Bytes += int64(rec.header.recordLen())
		case errors.Is(err, errBadPayload):
			s.stats.corrupt.Add(1)
			res.Bytes += int64(rec.header.recordLen())
			res.BadPayloads = append(res.BadPayloads, at)
		case errors.Is(err, errEndOfData):
			// A zero byte where a header should be ends the data. Only the
			// padding of the last block may follow it; more than a block
			// of it means records after it that no one can locate.
			res.End = at
			if limit-at >= align {
				s.stats.corrupt.Add(1)
				res.Broken = &CorruptError{Segment: id, Offset: at, Reason: fmt.Sprintf("zero byte where a record header should be, %d bytes before the end of the data", limit-at)}
			}
			return res, nil
		case errors.Is(err, errBadHeader), errors.Is(err, errShortRecord):
			s.stats.corrupt.Add(1)
			res.End = at
			res.Broken = &CorruptError{Segment: id, Offset: at, Reason: err.Error()}
			return res, nil
		default:
			var ce *CorruptError
			if errors.As(err, &ce) { // the file is shorter than it was
				res.End = at
				res.Broken = ce
				return res, nil
			}
			return res, err
		}
	}
}

// Damage is a run of a value's bytes that cannot be read back as written.
type Damage struct {
	Offset, Length int64 // the value's payload bytes [Offset, Offset+Length)
	Segment        uint64
	FileOffset     int64 // where in the segment the damage begins
	Reason         string
}

// PayloadVerdict tells CheckValue what a segment sweep found about the
// record at (segment, fileOffset): checked says the sweep verified its
// payload CRC, bad that the CRC failed. When checked is false CheckValue
// verifies the payload itself.
type PayloadVerdict func(segment uint64, fileOffset int64) (checked, bad bool)

// CheckValue checks every record of owner's value (extents, in payload
// order) as a Reader of the whole value would, without returning bytes:
// each header's CRC, owner and chunk offset, each extent's payload total,
// and each payload's CRC (from verdict, or read). It returns the damaged
// runs of the value, adjacent ones merged; none when a Reader would
// return every byte. Its error is only ctx's: a segment gone or unreadable
// is damage like the rest.
func (s *Store) CheckValue(ctx context.Context, owner Owner, extents []Extent, verdict PayloadVerdict) ([]Damage, error) {
	r := &Reader{s: s, ctx: ctx, owner: owner, extents: extents, files: map[uint64]vfs.File{}}
	defer r.Close()
	var out []Damage
	add := func(d Damage) {
		if n := len(out); n > 0 && out[n-1].Offset+out[n-1].Length == d.Offset {
			out[n-1].Length += d.Length
			return
		}
		out = append(out, d)
	}
	for r.idx = 0; r.idx < len(extents); r.idx++ {
		ext := extents[r.idx]
		extEnd := ext.Offset + ext.Length
		r.recOff, r.consumed = ext.Offset, 0
		whole := true // every record of the extent was located
		if err := r.pinExtent(ext); err != nil {
			add(Damage{Offset: r.base, Length: ext.Size, Segment: ext.Segment, FileOffset: ext.Offset, Reason: err.Error()})
			whole = false
		}
		for whole && r.recOff < extEnd {
			at := r.recOff
			h, err := r.header(ext, at)
			if err != nil {
				if ctx.Err() != nil {
					return out, ctx.Err()
				}
				add(Damage{Offset: r.base + r.consumed, Length: ext.Size - r.consumed, Segment: ext.Segment, FileOffset: at, Reason: err.Error()})
				whole = false
				break
			}
			checked, bad := false, false
			if verdict != nil {
				checked, bad = verdict(ext.Segment, at)
			}
			if !checked {
				b, err := r.window(ext, at, h.recordLen(), h.recordLen())
				if err != nil {
					if ctx.Err() != nil {
						return out, ctx.Err()
					}
					add(Damage{Offset: r.base + r.consumed, Length: ext.Size - r.consumed, Segment: ext.Segment, FileOffset: at, Reason: err.Error()})
					whole = false
					break
				}
				bad = crc32.Checksum(b[headerSize+h.keyLen:], castagnoli) != h.payloadCRC
				if bad {
					s.stats.corrupt.Add(1)
				}
			}
			if bad {
				add(Damage{Offset: r.base + r.consumed, Length: int64(h.payloadLen), Segment: ext.Segment, FileOffset: at, Reason: errBadPayload.Error()})
			}
			r.advance(h)
		}
		if whole && r.consumed != ext.Size {
			reason := fmt.Sprintf("extent holds %d payload bytes, want %d", r.consumed, ext.Size)
			if r.consumed < ext.Size {
				add(Damage{Offset: r.base + r.consumed, Length: ext.Size - r.consumed, Segment: ext.Segment, FileOffset: r.recOff, Reason: reason})
			} else {
				add(Damage{Offset: r.base, Length: ext.Size, Segment: ext.Segment, FileOffset: ext.Offset, Reason: reason})
			}
			whole = false
		}
		r.prevEnd, r.prevKnown = r.chunkNext, whole && r.recOff == extEnd
		r.base += ext.Size
	}
	return out, ctx.Err()
}

// pinExtent pins ext's segment for the Reader, once per segment, and
// makes sure the file holds all that was appended to it (records past
// that are missing, and read as a file that ends early).
func (r *Reader) pinExtent(ext Extent) error {
	if ext.Size < 0 || ext.Offset < 0 || ext.Length < ext.Size {
		return fmt.Errorf("blob: invalid extent %+v", ext)
	}
	if _, ok := r.files[ext.Segment]; ok {
		return nil
	}
	f, err := r.s.pin(ext.Segment)
	if err != nil {
		return err
	}
	r.files[ext.Segment] = f
	_, err = r.s.segmentLimit(ext.Segment)
	return err
}
