package blob

import (
	"context"
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
// syncs that, and goes on appending there (or, when the segment was sealed
// and the next one could not be created, creates it now). It returns nil
// when the store is healthy afterwards, the failure itself when that is
// not a full disk, or the error of the attempt (space is still short).
//
// Invariants it keeps:
//   - Everything acknowledged lies before the durable position (see
//     groupCommit): the cut removes only records whose Append or
//     CopyRecords failed, or is still running.
//   - An Append or CopyRecords that began before the cut fails with
//     ErrRestarted even if its last record lands after it, and even if the
//     durable position later passes its records' offsets (which the cut
//     made free for new records): each checks the recovery epoch it began
//     in after its wait for durability.
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
	if sealed {
		next, err = s.createSegment(w.id + 1)
	} else {
		next, err = s.reopenCut(w, synced)
	}
	if err != nil {
		g.fail(s.failed()) // the old epoch's waiters: no sync round of theirs will
		return err
	}
	s.setActive(next)
	g.restart(synced, &s.failure)
	s.log.Info("blob: recovered from a full disk; accepting writes", "segment", next.id, "offset", next.end.Load())
	return nil
}

// reopenCut closes the active segment's writer w, cuts its file back to
// the durable position and returns a writer appending there. Caller holds
// s.mu.
func (s *Store) reopenCut(w *segWriter, synced position) (*segWriter, error) {
	if !w.sealed {
		w.sealed = true
		_ = w.stopFlusher() // its error is the failure being recovered from, or a later one
	}
	w.syncMu.Lock()
	if !w.closed {
		w.closed = true
		_ = w.file.Close()
		s.pool.put(w.buf)
		w.buf = nil
	}
	w.syncMu.Unlock()

	end := int64(0) // nothing of this segment was synced: it was created after the last fsync
	if synced.segment == w.id {
		end = synced.offset
	}
	f, err := s.fs.OpenReadWrite(s.segmentPath(w.id))
	if err != nil {
		return nil, fmt.Errorf("blob: reopen segment %016x: %w", w.id, err)
	}
	if err := f.Truncate(end); err != nil {
		f.Close()
		return nil, fmt.Errorf("blob: cut segment %016x to %d: %w", w.id, end, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return nil, fmt.Errorf("blob: sync segment %016x: %w", w.id, err)
	}
	prefix := make([]byte, end-alignDown(end))
	if len(prefix) > 0 {
		if err := s.readAt(context.Background(), f, w.id, prefix, alignDown(end)); err != nil {
			f.Close()
			return nil, err
		}
	}
	next := newSegWriter(w.id, f, false, s.pool, s.opts.FlushQueue, end, prefix, s.setFailed)
	s.segMu.Lock()
	if seg := s.segments[w.id]; seg != nil {
		seg.writer = next
	}
	s.segMu.Unlock()
	return next, nil
}

// restart forgets a failure and sets the durable position back to synced
// (Recover cut everything after it). A waiter still there is from before
// the cut: it gets ErrRestarted.
func (g *groupCommit) restart(synced position, failure *atomic.Pointer[error]) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, w := range g.waiters {
		w.ch <- ErrRestarted
	}
	g.waiters = nil
	g.err = nil
	g.synced = synced
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
