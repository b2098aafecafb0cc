package blob

import (
	"errors"
	"fmt"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// ErrRestarted fails an Append or CopyRecords that was in flight when the
// store recovered from a full file system (Recover): some of its records
// may have been cut with the torn tail. The caller retries.
var ErrRestarted = errors.New("blob: the store recovered from a full disk during this write; retry")

// IsNoSpace reports whether err is a file system's "no space left" (ENOSPC)
// or "quota exceeded" (EDQUOT): a failure Recover can clear once space is
// freed. Any other write or fsync failure stays until an operator acts.
func IsNoSpace(err error) bool {
	return errors.Is(err, unix.ENOSPC) || errors.Is(err, unix.EDQUOT)
}

// Failure returns the error that stopped the store from accepting writes,
// or nil.
func (s *Store) Failure() error { return s.failed() }

// Recover clears a failure that a full file system caused (IsNoSpace), so
// the store accepts writes again without a restart: it cuts the active
// segment back to the last position every waiter was told is durable,
// syncs that, seals it there, and goes on in a new segment (when the
// segment was sealed and the next one could not be created, it only
// creates that one now). It returns nil
// when the store is healthy afterwards, the failure itself when that is
// not a full disk, or the error of the attempt (space is still short).
//
// Invariants it keeps:
//   - Everything acknowledged lies before the durable position (see
//     groupCommit): the cut removes only records whose Append or
//     CopyRecords failed, or is still running.
//   - An Append or CopyRecords that began before the cut fails with
//     ErrRestarted even if its last record lands after it, in the new
//     segment: each checks the recovery epoch it began in after its wait
//     for durability.
//   - After a failed fsync the pages it covered may be gone while a later
//     fsync succeeds; they all lie past the durable position, in the cut.
//
// Under SyncNone nothing tells which acknowledged records reached the
// file, so the failure stays.
func (s *Store) Recover() error {
	if err := s.failed(); err == nil || !IsNoSpace(err) || s.opts.Sync == SyncNone {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failed() == nil {
		return nil // recovered meanwhile
	}
	s.stateMu.Lock()
	closed := s.closed
	s.stateMu.Unlock()
	if closed {
		return ErrClosed
	}
	// From here a sync round of the old epoch moves the durable position
	// no more (advanceRound), so synced is final: nothing after it was
	// acknowledged, or will be.
	g := &s.commit
	g.mu.Lock()
	synced := g.synced
	s.epoch.Add(1)
	g.mu.Unlock()
	w := s.active
	s.segMu.Lock()
	seg := s.segments[w.id]
	sealed := seg != nil && seg.writer == nil // the seal succeeded, the next segment's creation did not
	s.segMu.Unlock()
	var (
		next *segWriter
		err  error
	)
	if !sealed {
		err = s.cutAndSeal(w, synced)
	}
	if err == nil {
		next, err = s.createSegment(w.id + 1)
	}
	if err != nil {
		g.fail(s.failed()) // the old epoch's waiters: no sync round of theirs will
		return err
	}
	s.setActive(next)
	g.restart(&s.failure)
	s.log.Info("blob: recovered from a full disk; accepting writes", "segment", next.id)
	return nil
}

// cutAndSeal closes the active segment's writer w, cuts its file back to
// the durable position and seals it there: the next records go to a new
// segment, so no offset past the cut is ever used again, and an extent
// there is known gone (Surviving). Caller holds s.mu.
func (s *Store) cutAndSeal(w *segWriter, synced position) error {
	// Closes w (a no-op if a failed seal did); its error is the failure
	// being recovered from, or a later one, on bytes the cut removes.
	_ = s.sealLocked(w)

	end := int64(0) // nothing of this segment was synced: it was created after the last fsync
	if synced.segment == w.id {
		end = synced.offset
	}
	f, err := s.fs.OpenReadWrite(s.segmentPath(w.id))
	if err != nil {
		return fmt.Errorf("blob: reopen segment %016x: %w", w.id, err)
	}
	defer f.Close()
	if err := f.Truncate(end); err != nil {
		return fmt.Errorf("blob: cut segment %016x to %d: %w", w.id, end, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("blob: sync segment %016x: %w", w.id, err)
	}
	s.segMu.Lock()
	if seg := s.segments[w.id]; seg != nil {
		seg.writer, seg.size = nil, end
	}
	s.segMu.Unlock()
	s.cutMu.Lock()
	if s.cuts == nil {
		s.cuts = map[uint64]int64{}
	}
	s.cuts[w.id] = end
	s.cutMu.Unlock()
	return nil
}

// Surviving returns the parts of exts, the extents of a write that failed,
// that hold bytes now or will after any recovery: not those past the
// durable position while the store is failed (Recover cuts them, or a
// restart's recovery may), nor those past where Recover cut a segment.
// The caller counts only these dead; what a restart keeps of the others
// the audit after that unclean end counts.
func (s *Store) Surviving(exts []Extent) []Extent {
	failed := s.failed() != nil
	synced := s.commit.syncedPos()
	s.cutMu.Lock()
	defer s.cutMu.Unlock()
	out := make([]Extent, 0, len(exts))
	for _, e := range exts {
		end := e.Offset + e.Length
		if cut, ok := s.cuts[e.Segment]; ok {
			end = min(end, cut)
		}
		if failed {
			switch {
			case e.Segment > synced.segment:
				end = e.Offset
			case e.Segment == synced.segment:
				end = min(end, synced.offset)
			}
		}
		if end > e.Offset {
			if end < e.Offset+e.Length {
				e.Size -= min(e.Size, e.Offset+e.Length-end)
				e.Length = end - e.Offset
			}
			out = append(out, e)
		}
	}
	return out
}

// restart forgets a failure. The durable position stays where Recover
// cut (no round of the old epoch moved it since, advanceRound). A waiter
// still there is from before the cut: it gets ErrRestarted.
func (g *groupCommit) restart(failure *atomic.Pointer[error]) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, w := range g.waiters {
		w.ch <- ErrRestarted
	}
	g.waiters = nil
	g.err = nil
	failure.Store(nil) // under g.mu: see failRound
}

// failRound fails the store and its waiters with err, the error of a sync
// round (or SyncAlways sync) that began in epoch, unless a Recover began
// since: then err is the old file's, and the recovered store is not
// failed by it.
func (s *Store) failRound(epoch uint64, err error) {
	g := &s.commit
	g.mu.Lock()
	defer g.mu.Unlock()
	if s.epoch.Load() != epoch {
		return
	}
	s.setFailed(err)
	g.failLocked(err)
}

// advanceRound is groupCommit.advance for a sync round that began in
// epoch; it returns the waiters woken, or -1 if a Recover began since:
// the round synced the file before the cut, and its target may lie past
// the end Recover cut to.
func (s *Store) advanceRound(epoch uint64, p position) int {
	g := &s.commit
	g.mu.Lock()
	defer g.mu.Unlock()
	if s.epoch.Load() != epoch {
		return -1
	}
	return g.advanceLocked(p)
}

// sameEpoch returns err, or ErrRestarted if the store recovered since
// epoch (see Recover).
func (s *Store) sameEpoch(epoch uint64, err error) error {
	if err == nil && s.epoch.Load() != epoch {
		return ErrRestarted
	}
	return err
}
