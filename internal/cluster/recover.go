package cluster

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/b3-storage/b3/internal/objstore"
)

// Staged bytes after an unclean end.
//
// A node finds the bytes of a command by their stage id in a table kept in
// memory (stages). A node that ends uncleanly while it holds bytes no
// command has installed yet loses that table; the bytes stay in its
// segments, referenced by nothing. They are the bytes of puts
//
//   - its log received and it had not applied, or
//   - its log had not received yet: in sync mode a follower holds the
//     bytes a moment before the leader proposes the put, and a put
//     acknowledged by the leader and the other follower reaches this one
//     only after its restart.
//
// The apply would fetch them from the other members, and if none held them
// (the leader that pushed them lost its disk, the other follower never got
// them) the group would wait for bytes this node has.
//
// So at start, before raft and before any vacuum pass, when the store
// holds segments an unclean end left to audit, the node starts reading
// those segments once, as background I/O beside raft
// (objstore.Store.ScanStaged), and keeps every run of records it finds, by
// owner and stage tag: each stage tags its records, so the parts of one
// upload staged at the same moment come apart however their records
// interleave. An apply whose stage id is not in the table takes its bytes from
// there (stages.takeFound): a run of the command's owner and size whose
// MD5 sum is its ETag. It looks there first, and again while it fetches
// from the other members, so a scan that ends after the apply began still
// serves it. Meanwhile the scanned segments are neither audited nor
// rewritten by vacuum. Every command that can need those bytes was
// committed before the node's restart (a put whose leader died before it
// committed is never applied) or, if the group had no quorum without this
// node, soon after it; so once the scan has ended and the node has
// applied everything committed when it first heard from a leader
// (releaseFound), or at the latest after stageTTL, the runs nobody took go
// to the audit, which counts them dead unless a record references them.
//
// What the scan does not find (records whose checksums fail, a segment
// that cannot be read, untagged stages of one owner whose records
// interleave so that no way of chaining keeps one stage's run whole) is
// fetched from the other members, as before.

// scanStaged starts the scan of what an unclean end left (the last one,
// or an earlier one whose segments are not audited yet), or returns nil if
// there is nothing to scan.
func scanStaged(ctx context.Context, store *objstore.Store, log *slog.Logger) *objstore.Found {
	start := time.Now()
	found := store.ScanStaged(ctx)
	if found == nil {
		return nil
	}
	go func() {
		err := found.Wait(ctx)
		if errors.Is(err, context.Canceled) {
			return // closed before the scan ended
		}
		if err != nil {
			log.Warn("looking for bytes staged before the unclean end: some segments could not be read; what they held is fetched from the other members", "err", err)
		}
		log.Info("bytes staged before the unclean end: runs of records no record references, kept for the commands that need them", "runs", found.Runs(), "for", stageTTL, "took", time.Since(start).Round(time.Millisecond))
	}()
	return found
}

// takeFound returns the bytes of c from what the scan at start found, or
// nil: a run of its owner and size whose MD5 sum is its ETag.
func (s *stages) takeFound(ctx context.Context, c *command, ref bytesRef) *objstore.Staged {
	found := s.foundNow()
	if found == nil {
		return nil
	}
	var size int64
	var sum []byte
	switch {
	case c.Part != nil:
		size, sum = c.Part.Size, bodyMD5(c.Part.ETag, c.Encrypted)
	case c.Object != nil:
		size, sum = c.Object.Size, bodyMD5(c.Object.ETag, c.Object.SSE != nil)
	default:
		return nil
	}
	if sum == nil {
		return nil // not an MD5 sum: nothing to tell the bytes by
	}
	st := found.Take(ctx, objstore.StagedID{Bucket: ref.Bucket, Key: ref.Key, Version: ref.Version}, size, sum)
	if st != nil {
		s.mu.Lock()
		if s.taken == nil {
			s.taken = map[*objstore.Staged]bool{}
		}
		s.taken[st] = true
		s.mu.Unlock()
	}
	return st
}

// releaseFound closes what the scan at start found once the node has
// caught up: the scan has ended and the node has applied every command
// committed when it first heard from a leader. Vacuum may then audit and
// rewrite the scanned segments again.
func (n *Node) releaseFound() {
	defer n.wg.Done()
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	var target uint64
	heard := false
	for {
		select {
		case <-n.closing.Done():
			return
		case <-t.C:
		}
		found := n.stages.foundNow()
		if found == nil {
			return // none, or stageTTL closed it
		}
		if target == 0 {
			// The commit index a leader's first message brings, read a
			// tick after the node learned of that leader.
			if _, leader := n.raft.LeaderWithID(); leader == "" {
				heard = false
				continue
			}
			if !heard {
				heard = true
				continue
			}
			// Everything this node's log holds may need the runs, not
			// only what the leader counted committed.
			if target = max(n.raft.CommitIndex(), n.raft.LastIndex()); target == 0 {
				continue
			}
		}
		// Not while the apply waits for bytes: they may be among the
		// runs (a command past target, committed before this node's
		// crash, that its first leader had not yet counted committed).
		if !found.Done() || n.fsm.applied.Load() < target || n.fsm.waiting.Load() != nil {
			continue
		}
		if !n.stages.closeFound(found) {
			continue // bytes it handed out wait to be installed
		}
		n.log.Info("caught up after the unclean end: the segments it left go back to vacuum", "applied", n.fsm.applied.Load())
		n.vacuumNow("caught up after an unclean end")
		return
	}
}

// vacuumNow starts a vacuum pass at once, if vacuum runs by itself
// (--vacuum-interval): a node that caught up after an unclean end holds
// the bytes its crash left unreferenced and those it fetched again, and
// one that crashes more often than the interval would otherwise never
// reclaim them and fill its disk.
func (n *Node) vacuumNow(why string) {
	if n.cfg.VacuumInterval <= 0 {
		return
	}
	err := n.store.VacuumInBackground(n.closing, 0, func(res objstore.VacuumResult, err error) {
		if err != nil && n.closing.Err() == nil {
			n.log.Warn("vacuum pass ("+why+")", "err", err)
			return
		}
		n.log.Info("vacuum pass ("+why+")", "segments_removed", res.SegmentsRemoved, "bytes_reclaimed", res.BytesReclaimed)
	})
	if err != nil && !errors.Is(err, objstore.ErrVacuumInProgress) {
		n.log.Warn("vacuum pass ("+why+")", "err", err)
	}
}
