package cluster

import (
	"context"
	"errors"
	"time"

	"github.com/hashicorp/raft"

	"github.com/b3-storage/b3/internal/objstore"
)

// Catch-up fetches ahead of the apply.
//
// A node that was away has, once the leader resent it the log, many
// commands in its log that it has not applied, and lacks the bytes of
// most of them. Fetching those inside the apply, one at a time, leaves
// both disks and the network idle between objects. The prefetcher reads
// the log ahead of the apply and fetches the bytes of the commands to
// come, prefetchParallel at a time and at most prefetchAhead bytes past
// the last applied command, into the stages the apply takes them from
// (stages.take waits for a fetch under way as for a push).
//
// Invariants:
//   - A prefetch is only a hint: the apply still fetches for itself what
//     a prefetch did not deliver (it failed, was superseded, or started
//     too late), so a record never waits on a prefetch that cannot end,
//     and never references bytes the node lacks.
//   - Bytes fetched for a command that is never applied (the entry was
//     replaced by a new leader's) are unclaimed stages and expire
//     (stageTTL), like a dead leader's pushes.
//   - Entries younger than prefetchFresh are left alone: their bytes are
//     normally on their way by push (begun before the command was even
//     proposed in sync mode, at once in async mode), and fetching them
//     too would write them twice. So is the entry the apply is at.
const (
	prefetchParallel = 4
	prefetchAhead    = 128 << 20
	prefetchFresh    = 250 * time.Millisecond
	prefetchTick     = 50 * time.Millisecond
)

// prefetched is a fetch started for the command at index.
type prefetched struct {
	index uint64
	size  int64
}

func (n *Node) prefetchLoop() {
	defer n.wg.Done()
	slots := make(chan struct{}, prefetchParallel)
	var (
		next  uint64
		ahead []prefetched // started, in log order
		bytes int64        // their sizes
	)
	t := time.NewTicker(prefetchTick)
	defer t.Stop()
	for {
		select {
		case <-n.closing.Done():
			return
		case <-t.C:
		}
		applied := n.fsm.applied.Load()
		for len(ahead) > 0 && ahead[0].index <= applied {
			bytes -= ahead[0].size
			ahead = ahead[1:]
		}
		// applied+1 is the apply's own: it fetches that one itself.
		next = max(next, applied+2, n.fsm.skipTo+1)
		last, err := n.entries.LastIndex()
		if err != nil {
			continue
		}
		for ; next <= last && bytes < prefetchAhead; next++ {
			ref, size, fresh, ok := n.prefetchable(next)
			if fresh {
				break // later entries are no older: look again next tick
			}
			if !ok || n.stages.has(ref.Stage) {
				continue
			}
			select {
			case slots <- struct{}{}:
			case <-n.closing.Done():
				return
			}
			if next <= n.fsm.applied.Load() {
				<-slots // the apply got there first and fetched for itself
				continue
			}
			e := n.stages.begin(ref.Stage)
			if e == nil { // a push began meanwhile
				<-slots
				continue
			}
			ahead = append(ahead, prefetched{index: next, size: size})
			bytes += size
			n.wg.Add(1)
			go func() {
				defer n.wg.Done()
				defer func() { <-slots }()
				st, err := n.fetchOnce(n.closing, ref, e)
				n.stages.finish(ref.Stage, e, st, err)
				if err == nil {
					n.prefetched.Add(st.Size)
				}
				if err != nil && !errors.Is(err, errGone) && n.closing.Err() == nil {
					n.log.Debug("prefetch", "stage", ref.Stage, "err", err)
				}
			}()
		}
	}
}

// prefetchable reads log entry index: the bytes it needs (ok), their
// size, and whether it is too fresh to fetch.
func (n *Node) prefetchable(index uint64) (ref bytesRef, size int64, fresh, ok bool) {
	var l raft.Log
	if err := n.entries.GetLog(index, &l); err != nil || l.Type != raft.LogCommand {
		return ref, 0, false, false
	}
	if time.Since(l.AppendedAt) < prefetchFresh {
		return ref, 0, true, false
	}
	c, err := decodeCommand(l.Data)
	if err != nil {
		return ref, 0, false, false
	}
	ref, ok = c.bytesRef(index)
	switch {
	case !ok:
	case c.Object != nil:
		size = c.Object.Size
	case c.Part != nil:
		size = c.Part.Size
	}
	return ref, size, false, ok
}

// fetchOnce asks each peer once, the one least likely to be busy with
// clients (a follower) first, counting progress into e.
func (n *Node) fetchOnce(ctx context.Context, ref bytesRef, e *stageEntry) (*objstore.Staged, error) {
	peers := n.peersLeaderFirst()
	if len(peers) > 1 {
		peers = append(peers[1:], peers[0])
	}
	var errs []error
	for _, peer := range peers {
		st, err := n.fetchFrom(ctx, peer, ref, e)
		if err == nil || errors.Is(err, errGone) {
			return st, err
		}
		errs = append(errs, err)
	}
	return nil, errors.Join(errs...)
}
