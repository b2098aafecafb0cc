package cluster

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"

	"github.com/b3-storage/b3/internal/meta"
	"github.com/b3-storage/b3/internal/objstore"
)

// fsm applies committed commands to the local store. It has no I/O of its
// own beyond objstore's and the user file, except one: a put whose bytes
// this node lacks fetches them from a peer first (Node.fetch), because a
// record must never reference bytes the node does not hold.
//
// Invariants:
//   - Commands are applied in log order, one batch at a time (raft calls
//     ApplyBatch from one goroutine).
//   - Each store change commits with its log index (objstore's stamp);
//     after a restart raft replays the log from its latest snapshot (or
//     the start), and every command at or below the stamp found at open
//     (skipTo) is skipped, so none is applied twice. A restored snapshot
//     moves skipTo to its index.
//   - A command's outcome depends only on the command and the state before
//     it, never on this node's clock or counters.
type fsm struct {
	node  *Node
	store *objstore.Store
	// fill is the filler of records restored without their bytes (nil:
	// none, in tests); Restore marks it before it installs any.
	fill  *filler
	users *userState
	// maps is the cluster map (cmap.go): on the first group's members,
	// the one its log holds (firstGroup); on the others, the one they
	// follow, which their log and snapshots only move forward.
	maps       *mapState
	firstGroup bool
	log        *slog.Logger
	skipTo     uint64
	applied    atomic.Uint64 // last index applied (or skipped)
	// appliedAt is when the last command was applied (unix ns), for the
	// lag a status reports.
	appliedAt atomic.Int64
	// handled counts the entries raft handed to Apply since this process
	// started (applied or skipped): after a restart, those after the
	// latest snapshot only.
	handled atomic.Uint64
	// snapshotIndex is the index of the last snapshot taken or restored.
	snapshotIndex atomic.Uint64
	// restored counts snapshots installed into the store (not counting a
	// restart's, which finds the store already there).
	restored atomic.Uint64
	// waiting is what the apply waits for while no peer gives the bytes
	// of its command (nil: it does not wait; lost.go).
	waiting atomic.Pointer[missing]
	scan    lostScan // the apply goroutine's own (declaredLost)
	// lostUntil is the index of the latest declaration whose record this
	// node installed hollow: it serves only once it applied past it.
	lostUntil atomic.Uint64
	// halted is the command the apply has halted at on a fault of this
	// node's disk (nil: none; applyHalting).
	halted atomic.Pointer[halt]
}

// applyResult is what Apply returns to the proposer (on the leader).
type applyResult struct {
	obj *meta.Object
	del objstore.DeleteResult // of a deletion (versioning.go)
	err error
}

func (f *fsm) Apply(l *raft.Log) any { return f.ApplyBatch([]*raft.Log{l})[0] }

// ApplyBatch applies the commands raft committed together (up to
// MaxAppendEntries), in order. Consecutive puts of small objects (inline,
// no bytes to wait for) to one bucket, each of another key, commit as one
// meta batch stamped with the last one's index (objstore.ApplyPutObjects):
// a crash loses all of them or none, and the log replays what it lost.
// Configuration entries change nothing here (raft keeps the
// configuration), as with Apply, which raft never calls for them.
func (f *fsm) ApplyBatch(logs []*raft.Log) []any {
	out := make([]any, len(logs))
	var group []int // positions in logs of the puts waiting to commit together
	var cmds []*command
	flush := func() {
		f.applyGroup(logs, group, cmds, out)
		group, cmds = group[:0], cmds[:0]
	}
	for i, l := range logs {
		if l.Type != raft.LogCommand {
			flush()
			continue
		}
		f.handled.Add(1)
		if l.Index <= f.skipTo {
			flush()
			out[i] = applyResult{}
			f.noteApplied(l.Index)
			continue
		}
		c, err := decodeCommand(l.Data)
		if err != nil {
			// Only this binary writes commands; an undecodable one means a
			// newer version wrote it. Applying the rest would diverge.
			panic(fmt.Sprintf("cluster: log entry %d: %v", l.Index, err))
		}
		if groupable(c) {
			if len(cmds) > 0 && !joins(cmds, c) {
				flush()
			}
			group, cmds = append(group, i), append(cmds, c)
			continue
		}
		flush()
		out[i] = f.applyHalting(c, l.Index)
		if f.node != nil && f.node.catalog != nil && catalogOp(c) {
			f.node.catalog.note("", l.Index)
		}
		f.noteApplied(l.Index)
	}
	flush()
	return out
}

// groupable: a put of an object held in the command itself.
func groupable(c *command) bool {
	return c.Op == opPutObject && c.Stage == 0 && c.Object != nil
}

// joins reports whether c may commit in one batch with cmds: same bucket,
// another key.
func joins(cmds []*command, c *command) bool {
	if cmds[0].Object.Bucket != c.Object.Bucket {
		return false
	}
	for _, o := range cmds {
		if o.Object.Key == c.Object.Key {
			return false
		}
	}
	return true
}

// applyGroup applies the puts at positions group of logs, one meta batch
// for all if it can, else one at a time (a failure in one batch undoes
// them all, and each must get its own answer).
func (f *fsm) applyGroup(logs []*raft.Log, group []int, cmds []*command, out []any) {
	if len(group) == 0 {
		return
	}
	last := logs[group[len(group)-1]].Index
	if len(group) > 1 {
		objs := make([]*meta.Object, len(cmds))
		for j, c := range cmds {
			objs[j] = c.Object
		}
		if f.store.ApplyPutObjects(objs, last) == nil {
			for j, i := range group {
				out[i] = applyResult{obj: objs[j]}
			}
			f.noteApplied(last)
			return
		}
	}
	for j, i := range group {
		out[i] = f.applyHalting(cmds[j], logs[i].Index)
		f.noteApplied(logs[i].Index)
	}
}

// applyHalting applies c. An error of this node's own disk (isLocalFault:
// full, read-only, I/O) is no outcome of the command — the other
// replicas installed it — so the apply does not go past it: it halts
// here, says so (the log, fsm.halted: cluster status, the readiness
// check, b3_cluster_local_fault through watchLocalFaults), and tries
// again until it succeeds or the node stops. A store change commits with
// its index or not at all, so a failed try leaves nothing behind.
// Any other error is the command's outcome, the same on every replica.
func (f *fsm) applyHalting(c *command, index uint64) applyResult {
	backoff := 100 * time.Millisecond
	for attempt := 0; ; attempt++ {
		res, ok := f.applyVersioned(c, index)
		if !ok {
			obj, err := f.apply(c, index)
			res = applyResult{obj: obj, err: err}
		}
		if res.err == nil || !isLocalFault(res.err) || f.node == nil {
			if attempt > 0 {
				f.halted.Store(nil)
				f.log.Info("the apply goes on: this node's disk took the command", "index", index, "op", string(c.Op), "tries", attempt+1)
			}
			return res
		}
		if attempt == 0 {
			f.halted.Store(&halt{index: index, op: c.Op, err: res.err, since: time.Now()})
		}
		if attempt%50 == 0 {
			f.log.Error("the apply halts: this node's disk failed a command the group committed; retrying (free space, or replace the disk)",
				"index", index, "op", string(c.Op), "err", res.err, "tries", attempt+1)
		}
		select {
		case <-f.node.closing.Done():
			return res // not applied: the store's stamp is below index, and a restart applies it again
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, 5*time.Second)
	}
}

// halt is a command this node's apply has halted at (applyHalting).
type halt struct {
	index uint64
	op    op
	err   error
	since time.Time
}

func (f *fsm) noteApplied(index uint64) {
	f.applied.Store(index)
	f.appliedAt.Store(time.Now().UnixNano())
}

func (f *fsm) apply(c *command, index uint64) (*meta.Object, error) {
	switch c.Op {
	case opPutObject:
		if c.Stage == 0 {
			return c.Object, f.store.ApplyPutObject(c.Object, index)
		}
		ref, _ := c.bytesRef(index)
		st, err := f.bytes(c, ref)
		if errors.Is(err, errGone) || errors.Is(err, errLost) {
			return f.applyHollow(c, index)
		}
		if err != nil {
			return nil, err
		}
		obj := *c.Object
		obj.Extents, obj.Size, obj.Inline = st.Extents, st.Size, nil
		if err := f.store.ApplyPutObject(&obj, index); err != nil {
			f.node.keepForRetry(ref, st)
			return nil, err
		}
		f.node.installedBytes(st)
		return &obj, nil
	case opDeleteObject:
		return f.store.ApplyDeleteObject(c.Name, c.Key, index)
	case opExpire:
		return f.store.ApplyExpireObject(c.Name, c.Key, c.Version, index)
	case opUpdateObject:
		return c.Object, f.store.ApplyUpdateObject(c.Object, index)
	case opCreateBucket:
		return nil, f.store.ApplyPutBucket(c.Bucket, true, index)
	case opPutBucket:
		return nil, f.store.ApplyPutBucket(c.Bucket, false, index)
	case opDeleteBucket:
		if c.Marked {
			if b, err := f.store.GetBucket(c.Name); err == nil && !b.Deleting {
				return nil, errMarkCleared // another leader cleared it: the emptiness it asked may be stale
			}
		}
		return nil, f.store.ApplyDeleteBucket(c.Name, index)
	case opCreateUpload:
		return nil, f.store.ApplyCreateUpload(c.Upload, index)
	case opPutPart:
		ref, _ := c.bytesRef(index)
		st, err := f.bytes(c, ref)
		if errors.Is(err, errGone) || errors.Is(err, errLost) {
			return f.applyHollow(c, index)
		}
		if err != nil {
			return nil, err
		}
		part := *c.Part
		part.Extents, part.Size = st.Extents, st.Size
		if err := f.store.ApplyPutPart(c.Name, c.Key, &part, index); err != nil {
			f.node.keepForRetry(ref, st)
			return nil, err
		}
		f.node.installedBytes(st)
		return nil, nil
	case opComplete:
		return f.complete(c, index)
	case opAbort:
		return nil, f.store.ApplyAbortUpload(c.Name, c.Key, c.UploadID, index)
	case opAddUser, opRemoveUser:
		return nil, f.users.apply(c)
	case opDeclareLost:
		return nil, f.applyLost(c.Lost, index)
	case opMap:
		return nil, f.applyMap(c)
	case opCatalog:
		return nil, f.applyCatalog(c.Catalog, index)
	case opMigrate:
		return nil, f.applyMigrate(c, index)
	case opDrop:
		return nil, f.applyDrop(c, index)
	}
	return nil, fmt.Errorf("cluster: unknown command %q", c.Op)
}

// complete installs a multipart object from the local parts or, if this
// node missed some (it skipped superseded part commands while catching
// up), from the whole object fetched from a peer.
func (f *fsm) complete(c *command, index uint64) (*meta.Object, error) {
	obj := *c.Object
	have, err := f.store.HasParts(c.UploadID, c.Numbers)
	if err != nil && !errors.Is(err, meta.ErrNotFound) {
		return nil, err
	}
	var whole *objstore.Staged
	if !have {
		up, err := f.store.GetUpload(obj.Bucket, obj.Key, c.UploadID)
		if err != nil {
			return nil, err
		}
		whole, err = f.fetchApplying(c, bytesRef{Bucket: obj.Bucket, Key: obj.Key, Version: up.Version, Index: index})
		if errors.Is(err, errLost) {
			return f.applyHollow(c, index)
		}
		if errors.Is(err, errGone) {
			return nil, f.store.ApplyAbortUpload(obj.Bucket, obj.Key, c.UploadID, index)
		}
		if err != nil {
			return nil, err
		}
	}
	err = f.store.ApplyCompleteUpload(&obj, c.UploadID, c.Numbers, whole, index)
	if whole != nil {
		if err != nil {
			whole.Discard() // fetched whole from a peer, which holds it
		} else {
			whole.Release()
		}
		f.node.stages.settled(whole) // not from the found runs (a multipart ETag is no MD5), but never kept open by it
	}
	return &obj, err
}

// bytes returns the staged bytes of ref, c's: the leader's own or those
// pushed here, else fetched from a peer. errGone: superseded (a later
// command removes that version); errLost: declared lost (lost.go). For
// both the apply installs the record without its bytes (hollow), the
// same record every node installs, so that the commands up to the one
// that removes it apply to the same state everywhere.
func (f *fsm) bytes(c *command, ref bytesRef) (*objstore.Staged, error) {
	if st := f.node.takePushed(ref); st != nil {
		return st, nil
	}
	if st := f.node.stages.takeFound(f.node.closing, c, ref); st != nil {
		return st, nil
	}
	return f.fetchApplying(c, ref)
}

// takePushed returns the bytes staged here under ref.Stage if they are
// those ref names, else nil: pushed by the leader as it wrote them (their
// MD5 sum taken as they arrived, handleStage), or the leader's own
// (written as it computed the ETag), checked as fetched bytes are
// (fetchFrom). Bytes refused are discarded; the caller fetches them.
func (n *Node) takePushed(ref bytesRef) *objstore.Staged {
	st := n.stages.take(n.closing, ref.Stage, pushWait)
	if st == nil {
		return nil
	}
	err := ref.want.verify(st.Size, st.MD5)
	if err == nil {
		return st
	}
	st.Discard()
	n.log.Warn("refused pushed bytes; fetching them", "index", ref.Index, "bucket", ref.Bucket, "key", ref.Key, "err", err)
	return nil
}

// keepForRetry keeps bytes whose install failed (this node's store
// failed) for the retry of the apply (applyHalting), under the command's
// stage id: discarded, they could be bytes no other member holds.
func (n *Node) keepForRetry(ref bytesRef, st *objstore.Staged) {
	n.stages.putBack(ref.Stage, st)
	n.stages.settled(st)
}

// installedBytes releases bytes a record now references.
func (n *Node) installedBytes(st *objstore.Staged) {
	st.Release()
	n.stages.settled(st)
}

// pushWait is how long bytes still arriving by push may make no progress
// before an apply that needs them stops waiting and fetches them instead
// (the leader that pushed them may be cut off, the connection hanging).
const pushWait = 2 * time.Second

// Snapshot captures the state after the last applied command (see
// snapshot.go). It runs between two applies; the snapshot is written
// afterwards, from a meta View, while applies go on.
func (f *fsm) Snapshot() (raft.FSMSnapshot, error) {
	index := f.applied.Load()
	if index < f.skipTo {
		// Still replaying what the store holds: the store is ahead of
		// the log position, and a snapshot now would say otherwise.
		return nil, fmt.Errorf("cluster: replaying the log (at %d of %d): no snapshot yet", index, f.skipTo)
	}
	// The store's stamp reaches index, synced, before raft may drop the
	// log below it: a restart finds every command up to index applied.
	if err := f.store.StampApplied(index); err != nil {
		return nil, err
	}
	f.snapshotIndex.Store(index)
	s := &fsmSnapshot{index: index, view: f.store.Meta().NewView(), users: f.users.snapshot()}
	if f.maps != nil {
		s.cmap = f.maps.load()
	}
	return s, nil
}

// Restore makes the store the snapshot's state. A store already at or
// past the snapshot's index (a restart: raft restores its latest
// snapshot first) is left as it is: only the header is read. It reads
// and writes metadata only: the records whose bytes this node lacks are
// installed hollow, and the filler fetches their bytes afterwards, while
// raft goes on (fill.go). Raft holds its main loop for the duration of
// Restore when it installs a snapshot sent by the leader, so no byte
// transfer happens in here.
func (f *fsm) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	sr, err := newSnapshotReader(rc)
	if err != nil {
		return err
	}
	have, err := f.store.Applied()
	if err != nil {
		return err
	}
	if have >= sr.index {
		f.log.Info("snapshot: the store already holds it", "snapshot", sr.index, "store", have)
		f.applied.Store(max(f.applied.Load(), sr.index))
		f.snapshotIndex.Store(sr.index)
		return nil
	}
	start := time.Now()
	f.log.Info("snapshot: restoring", "index", sr.index, "store", have)
	if f.fill != nil {
		if err := f.fill.mark(); err != nil {
			return err
		}
	}
	rs, err := restoreSnapshot(sr, f.store, f.users, f.maps, f.firstGroup)
	if err != nil {
		return fmt.Errorf("cluster: restore snapshot %d: %w", sr.index, err)
	}
	if err := f.store.StampApplied(sr.index); err != nil {
		return err
	}
	f.skipTo = sr.index
	f.applied.Store(sr.index)
	f.appliedAt.Store(time.Now().UnixNano())
	f.snapshotIndex.Store(sr.index)
	f.restored.Add(1)
	f.log.Info("snapshot: restored; the bytes of the records restored without them are fetched in the background",
		"index", sr.index, "hollow_records", rs.hollow, "hollow_bytes", rs.hollowBytes, "took", time.Since(start).Round(time.Millisecond))
	if f.fill != nil {
		f.fill.kick()
	}
	return nil
}

var _ raft.BatchingFSM = (*fsm)(nil)
