package objstore

import (
	"context"
	"errors"
	"slices"

	"github.com/b3-storage/b3/internal/blob"
	"github.com/b3-storage/b3/internal/iolimit"
	"github.com/b3-storage/b3/internal/meta"
)

// The engine's side of the scrub (package scrub drives it: pacing of its
// own, the cursor, the reports). Every read here is at background
// priority, so it is paced with vacuum under client load. Nothing here
// changes the store.

// ScrubValue is one object version whose bytes a scrub checked.
type ScrubValue struct {
	Bucket, Key string
	Version     uint64
	// Current: the key's current record ("o"), else a noncurrent version.
	Current bool
	Size    int64
	// Inline values live in their metadata record (pebble checks those
	// with its own checksums); nothing of them is in the segments.
	Inline bool
	// Extents is how many extents (runs of records) its bytes lie in.
	Extents int
	// Damage lists the runs of the value's bytes that cannot be read back
	// as written; empty when every byte can.
	Damage []blob.Damage
}

// ScrubSegments lists the segments a scrub sweeps, in ID order.
func (s *Store) ScrubSegments() []blob.SegmentInfo { return s.blob.Segments() }

// ScrubSegment reads segment id whole and verifies every record's CRCs
// (blob.Store.CheckSegment), at background priority.
func (s *Store) ScrubSegment(ctx context.Context, id uint64) (blob.SegmentCheck, error) {
	return s.blob.CheckSegment(iolimit.WithPriority(ctx, iolimit.Background), id)
}

// scrubBatch is how many records one metadata view serves: the view is
// closed before their bytes are checked, so a slow (paced) pass never
// holds pebble's files for long.
const scrubBatch = 64

// scrubRecordCost is the pacer charge of looking at one record: its
// metadata; the segment reads it costs are charged by the limiter.
const scrubRecordCost = 1 << 10

// ScrubRecords checks the bytes of up to scrubBatch object records
// (current ones, then noncurrent versions: meta.View.ScanRecordsAfter)
// that follow pos, calling fn with each record's position and what was
// found, in order. It reports done once no record follows. verdict gives
// the segment sweep's findings (blob.PayloadVerdict). Delete markers are
// skipped; inline values are reported without damage.
//
// A record found damaged is read again and checked again: a write,
// delete or vacuum move between the scan and the check changes its
// extents (a removed segment would look like damage otherwise). Only
// damage seen on the record still in place is reported.
func (s *Store) ScrubRecords(ctx context.Context, pos []byte, verdict blob.PayloadVerdict, fn func(pos []byte, v ScrubValue) error) (done bool, err error) {
	type item struct {
		pos []byte
		obj *meta.Object
	}
	var batch []item
	view := s.meta.NewView()
	errFull := errors.New("batch full")
	err = view.ScanRecordsAfter(pos, func(p []byte, o *meta.Object) error {
		batch = append(batch, item{p, o})
		if len(batch) == scrubBatch {
			return errFull
		}
		return nil
	})
	view.Close()
	if err != nil && !errors.Is(err, errFull) {
		return false, err
	}
	bg := iolimit.WithPriority(ctx, iolimit.Background)
	for _, it := range batch {
		if err := s.pace(ctx, scrubRecordCost); err != nil {
			return false, err
		}
		if it.obj.DeleteMarker {
			continue
		}
		v, err := s.scrubValue(bg, it.obj, verdict, it.pos[0] == 'o')
		if err != nil {
			return false, err
		}
		if err := fn(it.pos, v); err != nil {
			return false, err
		}
	}
	return len(batch) < scrubBatch, nil
}

// scrubValue checks one record's bytes, reading the record again when it
// finds damage (see ScrubRecords).
func (s *Store) scrubValue(ctx context.Context, obj *meta.Object, verdict blob.PayloadVerdict, current bool) (ScrubValue, error) {
	v := ScrubValue{Bucket: obj.Bucket, Key: obj.Key, Version: obj.Version, Current: current, Size: obj.Size}
	for attempt := 0; ; attempt++ {
		v.Inline, v.Extents, v.Damage = obj.Inline != nil, len(obj.Extents), nil
		if v.Inline || Hollow(obj) || len(obj.Extents) == 0 {
			return v, nil
		}
		damage, err := s.blob.CheckValue(ctx, recordOwner(obj), toBlob(obj.Extents), verdict)
		if err != nil || len(damage) == 0 {
			return v, err
		}
		v.Damage = damage
		if attempt == 3 {
			return v, nil
		}
		again, err := s.recordAgain(obj, current)
		switch {
		case errors.Is(err, meta.ErrNotFound) || err == nil && again.Version != obj.Version:
			return ScrubValue{Bucket: obj.Bucket, Key: obj.Key, Version: obj.Version, Current: current}, nil // gone: nothing to report
		case err != nil:
			return v, err
		case slices.Equal(again.Extents, obj.Extents):
			return v, nil
		}
		obj = again
	}
}

// recordAgain reads obj's record again from where it was found.
func (s *Store) recordAgain(obj *meta.Object, current bool) (*meta.Object, error) {
	view := s.meta.NewView()
	defer view.Close()
	if current {
		return view.GetObject(obj.Bucket, obj.Key)
	}
	return view.GetVersion(obj.Bucket, obj.Key, obj.Version)
}

// scrubMetaBatch is how many metadata keys one ScrubMetadata call reads.
const scrubMetaBatch = 4096

// ScrubMetadata reads the next keys and values of the metadata index
// after pos (meta.DB.ReadAfter), paced as background work, so that pebble
// verifies every block's checksum. It returns the position reached, the
// keys and bytes read, and done once the index is read to its end. A
// damaged block is its error.
func (s *Store) ScrubMetadata(ctx context.Context, pos []byte) (next []byte, keys int, bytes int64, done bool, err error) {
	next, keys, bytes, err = s.meta.ReadAfter(pos, scrubMetaBatch)
	if err != nil {
		return pos, keys, bytes, false, err
	}
	if err := s.pace(ctx, int(bytes)); err != nil {
		return pos, 0, 0, false, err
	}
	if keys < scrubMetaBatch {
		return next, keys, bytes, true, nil
	}
	return next, keys, bytes, false, nil
}
