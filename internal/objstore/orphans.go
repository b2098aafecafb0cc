package objstore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/b3-storage/b3/internal/blob"
	"github.com/b3-storage/b3/internal/iolimit"
	"github.com/b3-storage/b3/internal/meta"
)

// Orphans.
//
// A write that fails in a running process counts its records dead at once
// (discard). A write cut short by a crash cannot: its records may be
// synced (another writer's group commit covered them), yet no metadata
// references them and no counter counts them. Left alone they would hold
// their segment below the vacuum threshold for good.
//
// The engine therefore keeps, in meta.EngineState, the orphan floor: a
// segment at or below the lowest one a write in flight may use
// (inflightWrites.floor). Floors only grow, so every write in flight at a
// crash started in a segment at or above the last floor persisted (or a
// later one). A clean Close, with nothing in flight, says so, with the
// floor at the first segment still to audit if vacuum has not audited
// every one yet (else at the active segment, which stays active at the
// next Open: nothing to audit); that Open lists the sealed segments at or
// above it again. After any other end, Open seals the recovered segment,
// so that no record of the new run joins the suspects, and lists the
// sealed segments at or above the floor. The next vacuum pass audits each
// once, before it picks candidates: it scans the records and, on one
// meta.View, finds their references and the segment's counter; the bytes
// of records referenced by nothing, less the counter, are added to it.
// The view makes that exact: a delete committed after it counts its bytes
// in its own batch, and no vacuum swap runs during the audit (it runs
// inside the pass).
type orphanBooks struct {
	mu      sync.Mutex
	pending []uint64     // segments to audit, ascending
	floor   uint64       // the floor last persisted
	closed  bool         // closeOrphanBooks ran
	held    atomic.Int32 // open Founds: no audit while one is open

	// claimed holds the extents Found.Take handed out and not yet
	// released: referenced by nothing now, by a record soon. The audit
	// reads it before it opens its meta view, so an extent released after
	// that read was referenced (or counted dead by Discard) before the
	// view.
	claimMu sync.Mutex
	claimed map[meta.Extent]bool
}

func (o *orphanBooks) claim(exts []meta.Extent) {
	o.claimMu.Lock()
	defer o.claimMu.Unlock()
	if o.claimed == nil {
		o.claimed = map[meta.Extent]bool{}
	}
	for _, e := range exts {
		o.claimed[e] = true
	}
}

func (o *orphanBooks) unclaim(exts []meta.Extent) {
	if len(exts) == 0 {
		return
	}
	o.claimMu.Lock()
	defer o.claimMu.Unlock()
	for _, e := range exts {
		delete(o.claimed, e)
	}
}

// claimedIn returns the claimed extents of segment.
func (o *orphanBooks) claimedIn(segment uint64) []meta.Extent {
	o.claimMu.Lock()
	defer o.claimMu.Unlock()
	var out []meta.Extent
	for e := range o.claimed {
		if e.Segment == segment {
			out = append(out, e)
		}
	}
	return out
}

// openOrphanBooks reads how the last run ended and lists the segments to
// audit. Called by Open before anything is written.
func (s *Store) openOrphanBooks() error {
	st, found, err := s.meta.EngineState()
	if err != nil {
		return err
	}
	var pending []uint64
	switch {
	case found && !st.Clean && st.OrphanFloor > 0:
		if err := s.blob.Seal(); err != nil {
			return fmt.Errorf("seal the recovered segment: %w", err)
		}
		pending = s.sealedFrom(st.OrphanFloor)
		if len(pending) > 0 {
			s.log.Info("the last run did not close cleanly: vacuum will audit segments for records of interrupted writes",
				"segments", len(pending), "from", pending[0])
		}
	case found && !st.Clean:
		s.log.Info("the last run did not close cleanly and left no orphan floor: records of interrupted writes stay uncounted")
	case found && st.OrphanFloor > 0:
		// A clean close that left segments of an earlier unclean end to
		// audit (vacuum had not run since): the floor is the first.
		if pending = s.sealedFrom(st.OrphanFloor); len(pending) > 0 {
			s.log.Info("segments left to audit after an earlier unclean end: vacuum will audit them for records of interrupted writes",
				"segments", len(pending), "from", pending[0])
		}
	}
	floor := s.activeSegment()
	if len(pending) > 0 {
		floor = pending[0]
	}
	s.orphans.pending, s.orphans.floor = pending, floor
	return s.putEngineState(meta.EngineState{OrphanFloor: floor})
}

// sealedFrom lists the sealed segments from floor on, ascending.
func (s *Store) sealedFrom(floor uint64) []uint64 {
	var out []uint64
	for _, seg := range s.blob.Segments() {
		if !seg.Active && seg.ID >= floor {
			out = append(out, seg.ID)
		}
	}
	return out
}

func (s *Store) putEngineState(st meta.EngineState) error {
	b := s.meta.NewBatch()
	defer b.Close()
	b.PutEngineState(st)
	if err := b.CommitSync(); err != nil {
		return fmt.Errorf("record engine state: %w", err)
	}
	return nil
}

// orphanFloor is the floor to persist now: below every write in flight
// and every segment still to audit.
func (s *Store) orphanFloor() uint64 {
	floor := s.inflight.floor(s.activeSegment)
	if len(s.orphans.pending) > 0 {
		floor = min(floor, s.orphans.pending[0])
	}
	return floor
}

// auditOrphans audits the segments listed at Open and raises the
// persisted floor. Vacuum calls it at the start of each pass, under the
// pass lock. An audit that fails is logged and not retried: it only costs
// space.
func (s *Store) auditOrphans(ctx context.Context) error {
	s.orphans.mu.Lock()
	defer s.orphans.mu.Unlock()
	if s.orphans.held.Load() > 0 {
		return nil // a Found is open: its runs may still be taken
	}
	for len(s.orphans.pending) > 0 {
		seg := s.orphans.pending[0]
		if err := s.auditSegment(ctx, seg); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			s.log.Warn("audit of a segment for records of interrupted writes failed", "segment", seg, "err", err)
		}
		s.orphans.pending = s.orphans.pending[1:]
	}
	if floor := s.orphanFloor(); floor > s.orphans.floor {
		// Not synced: a floor lost in a crash leaves an older, lower one,
		// which only audits more.
		b := s.meta.NewBatch()
		defer b.Close()
		b.PutEngineState(meta.EngineState{OrphanFloor: floor})
		if err := b.Commit(); err != nil {
			return fmt.Errorf("record orphan floor: %w", err)
		}
		s.orphans.floor = floor
	}
	return nil
}

// closeOrphanBooks records a clean end if nothing is in flight, with the
// floor at the first segment still to audit, if any (the next Open lists
// it and those after it again). Called by Close before the metadata
// closes.
func (s *Store) closeOrphanBooks() error {
	s.orphans.mu.Lock()
	defer s.orphans.mu.Unlock()
	if s.orphans.closed {
		return nil
	}
	s.orphans.closed = true
	if !s.inflight.empty() || s.blob.Failure() != nil {
		// The floor persisted stays; the next Open audits. After a
		// failure, discard counted only the bytes that stay
		// (blob.Store.Surviving): what the restart's recovery keeps of
		// the rest is the audit's to count.
		return nil
	}
	return s.putEngineState(meta.EngineState{Clean: true, OrphanFloor: s.orphanFloor()})
}

// auditSegment counts dead the bytes of segment's records that nothing
// references and its counter does not count yet.
func (s *Store) auditSegment(ctx context.Context, segment uint64) error {
	type record struct{ offset, length int64 }
	owners := map[ownerID][]record{}
	err := s.blob.ScanSegment(iolimit.WithPriority(ctx, iolimit.Background), segment, func(r blob.Record) error {
		id := ownerID{string(r.Owner.Key), r.Owner.Version}
		owners[id] = append(owners[id], record{r.Extent.Offset, r.Extent.Length})
		return nil
	})
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	claimed := newExtentIndex(s.orphans.claimedIn(segment)) // before the view (see claimed)
	view := s.meta.NewView()
	defer view.Close()
	counted, err := view.DeadBytes(segment)
	if err != nil {
		return err
	}
	var dead int64
	for id, recs := range owners {
		var refs []referencer
		if bucket, key, ok := splitOwnerKey([]byte(id.key)); ok {
			if refs, err = s.referencesIn(view, bucket, key, id.version); err != nil {
				return err
			}
		}
		refd := referencedBy(refs)
		for _, r := range recs {
			if claimed.covers(segment, r.offset) {
				continue // staged bytes Found.Take handed to a command
			}
			if !refd.covers(segment, r.offset) {
				dead += r.length
			}
		}
	}
	if dead <= counted {
		return nil
	}
	b := s.meta.NewBatch()
	defer b.Close()
	counts := map[uint64]int64{}
	addDead(b, []meta.Extent{{Segment: segment, Length: dead - counted}}, counts)
	if err := b.Commit(); err != nil {
		return err
	}
	s.noteDead(counts)
	s.log.Info("counted records of interrupted writes dead", "segment", segment, "bytes", dead-counted)
	return nil
}

// extentIndex tells whether a record lies in any of a set of extents:
// they sorted by segment and offset, merged where they overlap or touch,
// so that one binary search answers (an upload's parts may be thousands).
type extentIndex []meta.Extent

func newExtentIndex(exts []meta.Extent) extentIndex {
	x := slices.Clone(exts)
	slices.SortFunc(x, func(a, b meta.Extent) int {
		return cmp.Or(cmp.Compare(a.Segment, b.Segment), cmp.Compare(a.Offset, b.Offset))
	})
	out := x[:0]
	for _, e := range x {
		if n := len(out); n > 0 && out[n-1].Segment == e.Segment && e.Offset <= out[n-1].Offset+out[n-1].Length {
			out[n-1].Length = max(out[n-1].Length, e.Offset+e.Length-out[n-1].Offset)
			continue
		}
		out = append(out, e)
	}
	return out
}

// referencedBy indexes the extents of refs.
func referencedBy(refs []referencer) extentIndex {
	var exts []meta.Extent
	for _, ref := range refs {
		exts = append(exts, ref.extents...)
	}
	return newExtentIndex(exts)
}

// covers reports whether one of x's extents holds the record at offset of
// segment.
func (x extentIndex) covers(segment uint64, offset int64) bool {
	// The last extent starting at or before the record is the only one
	// that may hold it.
	i, found := slices.BinarySearchFunc(x, recordAt{segment, offset}, func(e meta.Extent, r recordAt) int {
		return cmp.Or(cmp.Compare(e.Segment, r.segment), cmp.Compare(e.Offset, r.offset))
	})
	if !found {
		i--
	}
	return i >= 0 && x[i].Segment == segment && offset < x[i].Offset+x[i].Length
}
