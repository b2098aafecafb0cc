package cluster

import (
	"context"
	"log/slog"
	"time"

	"github.com/hashicorp/raft"

	"github.com/b3-storage/b3/internal/objstore"
)

// Staged bytes after an unclean end.
//
// A node finds the bytes of a command by their stage id in a table kept in
// memory (stages). A node that ends uncleanly after its log received a put
// whose bytes it staged (synced, acknowledged), and before it applied the
// put, loses that table; the bytes stay in its segments, referenced by
// nothing. The apply would then fetch them from the other members, and if
// none held them (the leader that pushed them lost its disk, the other
// follower never got them) the group would wait for bytes this node has.
//
// So at start, before raft and before any vacuum pass, when the store
// reports segments left by an unclean end (objstore.Store.Unclean), the
// node lists the puts its log holds past what the store has applied, reads
// those segments once for all of them (objstore.Store.FindStaged: the first
// complete run of each object's records), and puts what it finds back in
// the table under each put's stage id. From there they go as pushed bytes
// do: the apply takes them, and what no command takes within stageTTL is
// discarded (counted dead); a clean close releases them.
//
// Not covered: bytes whose put had not reached this node's log when it
// ended (in sync mode a follower holds the bytes a moment before the
// leader proposes the put), and the parts of multipart uploads (FindStaged
// says why). Those are fetched from the other members, as before.

// recoverStaged returns, by stage id, the bytes of the puts of logs after
// applied that this node staged before an unclean end; nil if there is
// nothing to look for or nothing was found.
func recoverStaged(ctx context.Context, store *objstore.Store, logs raft.LogStore, applied uint64, log *slog.Logger) map[uint64]*objstore.Staged {
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
	stage := map[objstore.StagedID]uint64{}
	for i := max(applied+1, first); i <= last; i++ {
		var l raft.Log
		if logs.GetLog(i, &l) != nil || l.Type != raft.LogCommand {
			continue
		}
		c, err := decodeCommand(l.Data)
		if err != nil || c.Op != opPutObject || c.Stage == 0 || c.Object == nil {
			continue
		}
		id := objstore.StagedID{Bucket: c.Object.Bucket, Key: c.Object.Key, Version: c.Object.Version}
		want[id], stage[id] = c.Object.Size, c.Stage
	}
	if len(want) == 0 {
		return nil
	}
	start := time.Now()
	found, err := store.FindStaged(ctx, want)
	if err != nil {
		log.Warn("looking for bytes staged before the unclean end: some segments could not be read; what they held is fetched from the other members", "err", err)
	}
	log.Info("bytes staged before the unclean end, found on this node's disk", "objects", len(found), "looked_for", len(want), "took", time.Since(start).Round(time.Millisecond))
	if len(found) == 0 {
		return nil
	}
	out := make(map[uint64]*objstore.Staged, len(found))
	for id, st := range found {
		out[stage[id]] = st
	}
	return out
}

// restore puts bytes staged before a restart back under their stage id.
func (s *stages) restore(found map[uint64]*objstore.Staged) {
	for id, st := range found {
		e := s.begin(id)
		if e == nil {
			st.Discard() // (cannot happen: the table is empty at start)
			continue
		}
		s.finish(id, e, st, nil)
	}
}
