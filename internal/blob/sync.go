package blob

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/b3-storage/b3/internal/iolimit"
)

// position is a point in the store's append order: segments in ID order,
// offsets within a segment. Compared lexicographically.
type position struct {
	segment uint64
	offset  int64
}

func (p position) less(q position) bool {
	return p.segment < q.segment || (p.segment == q.segment && p.offset < q.offset)
}

// groupCommit tracks the durable position and the appenders waiting for it.
//
// Invariant: every byte before synced is on stable storage — in a sealed
// segment (fsynced at rollover) or in the active segment below an fsynced
// offset. An Append is acknowledged only once its last record ends at or
// before synced, so after a crash everything acknowledged precedes the
// first invalid record of the last segment.
type groupCommit struct {
	mu      sync.Mutex
	synced  position
	waiters []waiter
	err     error // sticky: an fsync failed; nothing more is acknowledged

	kick chan struct{}
	quit chan struct{}
	done chan struct{}
}

type waiter struct {
	pos position
	ch  chan error
	// deferred marks a background waiter (vacuum's copies) that does not
	// ask for an fsync of its own yet: it rides on the group commits
	// clients start, and asks only after Options.BackgroundSyncDelay.
	deferred bool
}

func (g *groupCommit) init(synced position) {
	g.synced = synced
	g.kick = make(chan struct{}, 1)
	g.quit = make(chan struct{})
	g.done = make(chan struct{})
}

func (g *groupCommit) syncedPos() position {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.synced
}

// advance records that everything before p is durable and wakes the
// waiters it covers. It returns how many it woke.
func (g *groupCommit) advance(p position) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.advanceLocked(p)
}

func (g *groupCommit) advanceLocked(p position) int {
	if g.synced.less(p) {
		g.synced = p
	}
	kept := g.waiters[:0]
	woken := 0
	for _, w := range g.waiters {
		if g.synced.less(w.pos) {
			kept = append(kept, w)
			continue
		}
		w.ch <- nil
		woken++
	}
	clear(g.waiters[len(kept):])
	g.waiters = kept
	return woken
}

// fail wakes every waiter, now and later, with err.
func (g *groupCommit) fail(err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.failLocked(err)
}

func (g *groupCommit) failLocked(err error) {
	if g.err == nil {
		g.err = err
	}
	for _, w := range g.waiters {
		w.ch <- g.err
	}
	g.waiters = nil
}

// pending reports a waiter that asks for an fsync: any but a deferred one.
func (g *groupCommit) pending() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, w := range g.waiters {
		if !w.deferred {
			return true
		}
	}
	return false
}

// undefer makes the waiter on ch ask for an fsync.
func (g *groupCommit) undefer(ch chan error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for i := range g.waiters {
		if g.waiters[i].ch == ch {
			g.waiters[i].deferred = false
		}
	}
}

func (g *groupCommit) kickSyncer() {
	select {
	case g.kick <- struct{}{}:
	default:
	}
}

// stopSyncer ends the syncer goroutine, if one runs. Close calls it after
// in-flight appends finished, so only abandoned waiters can remain; the
// final seal wakes them.
func (g *groupCommit) stopSyncer() {
	select {
	case <-g.quit:
	default:
		close(g.quit)
	}
	if g.done != nil {
		<-g.done
	}
}

// waitDurable returns once the bytes before p are durable per the policy.
// epoch is the caller's (Recover): a caller from before a recovery gets
// ErrRestarted.
//
// Under SyncBatch a caller at background priority (iolimit.PriorityFrom)
// that finds client appends in progress first waits up to
// Options.BackgroundSyncDelay for a group commit they start to cover it,
// and only then asks for one: background fsyncs do not run ahead of, and
// so do not delay, the fsyncs clients wait for. With no client appending
// there is nobody to delay, and background asks at once.
func (s *Store) waitDurable(ctx context.Context, epoch uint64, p position) error {
	switch s.opts.Sync {
	case SyncNone:
		return s.failed()
	case SyncAlways:
		return s.syncThrough(epoch, p)
	}
	g := &s.commit
	g.mu.Lock()
	if err := g.err; err != nil {
		g.mu.Unlock()
		return err
	}
	// Recover moves the epoch on before it clears g.err (under g.mu): a
	// caller from before it sees one or the other here.
	if s.epoch.Load() != epoch {
		g.mu.Unlock()
		return ErrRestarted
	}
	if !g.synced.less(p) {
		g.mu.Unlock()
		return nil
	}
	ch := make(chan error, 1)
	background := iolimit.PriorityFrom(ctx) == iolimit.Background && s.opts.BackgroundSyncDelay > 0 &&
		s.clientAppends.Load() > 0
	g.waiters = append(g.waiters, waiter{pos: p, ch: ch, deferred: background})
	g.mu.Unlock()
	if background {
		timer := time.NewTimer(s.opts.BackgroundSyncDelay)
		select {
		case err := <-ch:
			timer.Stop()
			return err
		case <-ctx.Done():
			timer.Stop()
			return ctx.Err()
		case <-timer.C:
			g.undefer(ch)
		}
	}
	g.kickSyncer()
	select {
	case err := <-ch:
		return err
	case <-ctx.Done():
		// The records stay in the segment; the caller counts them dead.
		return ctx.Err()
	}
}

// syncLoop is the group-commit syncer. Each round cuts the active buffer,
// waits for the flusher to write it, fsyncs once and wakes every waiter
// the fsync covers. Appenders arriving during an fsync are served by the
// next round.
func (s *Store) syncLoop() {
	g := &s.commit
	defer close(g.done)
	for {
		select {
		case <-g.kick:
		case <-g.quit:
			return
		}
		for g.pending() {
			s.mu.Lock()
			epoch := s.epoch.Load() // a round of one epoch (see Recover)
			if err := s.failed(); err != nil {
				s.mu.Unlock()
				s.failRound(epoch, err)
				break
			}
			w := s.active
			target := position{w.id, w.end.Load()}
			w.cut()
			s.mu.Unlock()
			err := w.waitFlushed(target.offset)
			if err == nil {
				err = s.syncFile(w)
			}
			if err == nil {
				// Another path (a rollover's seal) may have failed an fsync
				// covering target meanwhile: after any fsync failure nothing
				// more is acknowledged (a later fsync of the same file can
				// succeed without the lost pages: the kernel reports a
				// writeback error once).
				err = s.failed()
			}
			if err != nil {
				s.failRound(epoch, err)
				break
			}
			if woken := s.advanceRound(epoch, target); woken >= 0 {
				s.stats.groupCommit(woken)
				s.ckpt.progress(target)
			}
		}
	}
}

// syncThrough is SyncAlways: the caller's own cut, flush and fsync.
func (s *Store) syncThrough(epoch uint64, p position) error {
	if err := s.failed(); err != nil {
		return err
	}
	s.mu.Lock()
	if s.epoch.Load() != epoch {
		s.mu.Unlock()
		return ErrRestarted // p may lie past the end Recover cut to
	}
	w := s.active
	if w.id != p.segment || w.sealed {
		s.mu.Unlock()
		return s.failed() // sealed segments were fsynced at rollover
	}
	w.cut()
	s.mu.Unlock()
	err := w.waitFlushed(p.offset)
	if err == nil {
		err = s.syncFile(w)
	}
	if err == nil {
		err = s.failed() // see syncLoop: no acknowledgement after a failed fsync
	}
	if err != nil {
		s.failRound(epoch, err)
		return err
	}
	if s.advanceRound(epoch, p) < 0 {
		return ErrRestarted
	}
	s.ckpt.progress(p)
	return nil
}

// syncFile fsyncs w's file unless w was sealed meanwhile (sealing fsyncs).
func (s *Store) syncFile(w *segWriter) error {
	w.syncMu.Lock()
	defer w.syncMu.Unlock()
	if w.closed {
		return nil
	}
	start := time.Now()
	if err := w.file.Sync(); err != nil {
		err = fmt.Errorf("blob: fsync segment %016x: %w", w.id, err)
		// Failed before syncMu is let go: a concurrent fsync of the same
		// file may succeed without the pages this one lost (the kernel
		// reports a writeback error once), and must find the store failed.
		s.setFailed(err)
		return err
	}
	s.stats.fsync(time.Since(start))
	return nil
}

// sealLocked writes out, fsyncs and closes w. Caller holds s.mu.
func (s *Store) sealLocked(w *segWriter) error {
	if w.sealed {
		return nil
	}
	w.cut()
	w.sealed = true
	err := w.stopFlusher()
	if err == nil {
		err = s.syncFile(w)
	}
	if err != nil {
		// Before w counts as closed: syncFile treats a closed writer as
		// synced, so a failed seal must fail the store first.
		s.setFailed(err)
	}
	w.syncMu.Lock()
	w.closed = true
	if cerr := w.file.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("blob: close segment %016x: %w", w.id, cerr)
	}
	w.syncMu.Unlock()
	s.pool.put(w.buf)
	w.buf = nil
	return err
}

// rolloverLocked seals the active segment and starts the next one. The new
// file's directory entry is synced before any record is written to it, so
// no acknowledged record can sit in a file that vanishes in a crash.
// Caller holds s.mu.
func (s *Store) rolloverLocked() (*segWriter, error) {
	old := s.active
	end := old.end.Load()
	if err := s.sealLocked(old); err != nil {
		s.setFailed(err)
		return nil, err
	}
	s.segMu.Lock()
	if seg := s.segments[old.id]; seg != nil {
		seg.writer, seg.size = nil, end
	}
	s.segMu.Unlock()
	s.commit.advance(position{old.id, end})
	s.ckpt.progress(position{old.id, end})

	w, err := s.createSegment(old.id + 1)
	if err != nil {
		s.setFailed(err)
		return nil, err
	}
	s.setActive(w)
	return w, nil
}

// Seal seals the active segment, if it holds any record, and starts the
// next: records appended from now on land in segments after every one
// that exists now.
func (s *Store) Seal() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.failed(); err != nil {
		return err
	}
	if s.active.end.Load() == 0 {
		return nil
	}
	_, err := s.rolloverLocked()
	return err
}

// createSegment creates segment id, syncs the directory and registers it
// as the active segment's file.
func (s *Store) createSegment(id uint64) (*segWriter, error) {
	f, direct, err := s.fs.Create(s.segmentPath(id), s.opts.DirectIO)
	if err != nil {
		return nil, fmt.Errorf("blob: create segment %016x: %w", id, err)
	}
	if err := s.fs.SyncDir(s.opts.Dir); err != nil {
		f.Close()
		return nil, fmt.Errorf("blob: sync dir after creating segment %016x: %w", id, err)
	}
	w := newSegWriter(id, f, direct, s.pool, s.opts.FlushQueue, 0, nil, s.setFailed)
	s.segMu.Lock()
	s.segments[id] = &segment{id: id, writer: w}
	s.segMu.Unlock()
	s.stats.segmentsCreated.Add(1)
	return w, nil
}
