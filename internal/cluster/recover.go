package cluster

import (
	"context"
	"log/slog"

	"github.com/hashicorp/raft"

	"github.com/b3-storage/b3/internal/objstore"
)

// Staged bytes after an unclean end.
//
// A node finds the bytes of a command by their stage id in a table kept in
// memory (stages). A node that ends uncleanly between staging a write's
// bytes (synced, acknowledged to the leader) and applying its command
// loses that table; the bytes stay in its segments, referenced by
// nothing. The apply would then fetch them from the other members, and
// if none holds them (the leader that pushed them lost its disk, the other
// follower never got them) the group would wait for bytes this node has.
//
// So at start, when the store reports segments left by an unclean end
// (objstore.Store.Unclean), the node lists the puts in its log past what
// the store has applied: the commands whose bytes it may have staged. The
// first apply that misses such a command's bytes in the table searches
// those segments once for all of them (objstore.Store.FindStaged: the
// first complete run of each object's records) and takes its own from
// what was found; later ones take theirs. Once the apply has passed the
// last of those commands, what no command took is discarded (counted
// dead). Parts of multipart uploads are not searched (FindStaged says
// why): they are fetched as before.
type stageRecovery struct {
	upTo  uint64 // the log's last index at start: later commands were never staged here
	want  map[objstore.StagedID]int64
	found map[objstore.StagedID]*objstore.Staged
	done  bool // searched
	log   *slog.Logger
}

// planRecovery lists the puts of logs after applied whose bytes this node
// may have staged before an unclean end; nil if there is nothing to look
// for. It runs before raft starts.
func planRecovery(store *objstore.Store, logs raft.LogStore, applied uint64, log *slog.Logger) *stageRecovery {
	if !store.Unclean() {
		return nil
	}
	first, err := logs.FirstIndex()
	if err != nil {
		return nil
	}
	last, err := logs.LastIndex()
	if err != nil || last <= applied {
		return nil
	}
	want := map[objstore.StagedID]int64{}
	for i := max(applied+1, first); i <= last; i++ {
		var l raft.Log
		if logs.GetLog(i, &l) != nil || l.Type != raft.LogCommand {
			continue
		}
		c, err := decodeCommand(l.Data)
		if err != nil || !recoverable(c) {
			continue
		}
		want[stagedID(c)] = c.Object.Size
	}
	if len(want) == 0 {
		return nil
	}
	return &stageRecovery{upTo: last, want: want, log: log}
}

func recoverable(c *command) bool { return c.Op == opPutObject && c.Stage != 0 && c.Object != nil }

func stagedID(c *command) objstore.StagedID {
	return objstore.StagedID{Bucket: c.Object.Bucket, Key: c.Object.Key, Version: c.Object.Version}
}

// take returns the bytes of c, the command at index, found on this node's
// own disk, searching at the first call; nil if they are not there. Only
// the apply goroutine calls it.
func (r *stageRecovery) take(ctx context.Context, store *objstore.Store, c *command, index uint64) *objstore.Staged {
	if r == nil || index > r.upTo || !recoverable(c) {
		return nil
	}
	if !r.done {
		r.done = true
		found, err := store.FindStaged(ctx, r.want)
		if err != nil {
			r.log.Warn("looking for bytes staged before the unclean end failed: they are fetched from the other members", "err", err)
		}
		r.found = found
		r.log.Info("bytes staged before the unclean end, found on this node's disk", "objects", len(found), "looked_for", len(r.want))
	}
	id := stagedID(c)
	st := r.found[id]
	delete(r.found, id)
	return st
}

// end discards what no command took once the apply has reached upTo, and
// reports whether it did (the recovery is over).
func (r *stageRecovery) end(applied uint64) bool {
	if applied < r.upTo {
		return false
	}
	for _, st := range r.found {
		st.Discard()
	}
	r.found = nil
	return true
}
