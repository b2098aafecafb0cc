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
//   - Commands are applied in log order, one at a time (raft calls Apply
//     from one goroutine).
//   - Each store change commits with its log index (objstore's stamp);
//     after a restart raft replays the log from the start (there are no
//     snapshots) and every command at or below the stamp found at open
//     (skipTo) is skipped, so none is applied twice.
//   - A command's outcome depends only on the command and the state before
//     it, never on this node's clock or counters.
type fsm struct {
	node    *Node
	store   *objstore.Store
	users   *userState
	log     *slog.Logger
	skipTo  uint64
	applied atomic.Uint64 // last index applied (or skipped)
	// appliedAt is when the last command was applied (unix ns), for the
	// lag a status reports.
	appliedAt atomic.Int64
}

// applyResult is what Apply returns to the proposer (on the leader).
type applyResult struct {
	obj *meta.Object
	err error
}

func (f *fsm) Apply(l *raft.Log) any {
	defer func() {
		f.applied.Store(l.Index)
		f.appliedAt.Store(time.Now().UnixNano())
	}()
	if l.Index <= f.skipTo {
		return applyResult{}
	}
	c, err := decodeCommand(l.Data)
	if err != nil {
		// Only this binary writes commands; an undecodable one means a
		// newer version wrote it. Applying the rest would diverge.
		panic(fmt.Sprintf("cluster: log entry %d: %v", l.Index, err))
	}
	obj, err := f.apply(c, l.Index)
	return applyResult{obj: obj, err: err}
}

func (f *fsm) apply(c *command, index uint64) (*meta.Object, error) {
	switch c.Op {
	case opPutObject:
		if c.Stage == 0 {
			return c.Object, f.store.ApplyPutObject(c.Object, index)
		}
		ref, _ := c.bytesRef(index)
		st, err := f.bytes(ref)
		if err != nil {
			return nil, err
		}
		if st == nil { // superseded: a later command replaces the key
			return c.Object, nil
		}
		obj := *c.Object
		obj.Extents, obj.Size, obj.Inline = st.Extents, st.Size, nil
		if err := f.store.ApplyPutObject(&obj, index); err != nil {
			st.Discard()
			return nil, err
		}
		st.Release()
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
		return nil, f.store.ApplyDeleteBucket(c.Name, index)
	case opCreateUpload:
		return nil, f.store.ApplyCreateUpload(c.Upload, index)
	case opPutPart:
		ref, _ := c.bytesRef(index)
		st, err := f.bytes(ref)
		if err != nil {
			return nil, err
		}
		if st == nil {
			return nil, nil
		}
		part := *c.Part
		part.Extents, part.Size = st.Extents, st.Size
		if err := f.store.ApplyPutPart(c.Name, c.Key, &part, index); err != nil {
			st.Discard()
			return nil, err
		}
		st.Release()
		return nil, nil
	case opComplete:
		return f.complete(c, index)
	case opAbort:
		return nil, f.store.ApplyAbortUpload(c.Name, c.Key, c.UploadID, index)
	case opAddUser, opRemoveUser:
		return nil, f.users.apply(c)
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
		whole, err = f.node.fetch(f.node.closing, bytesRef{Bucket: obj.Bucket, Key: obj.Key, Version: up.Version, Index: index})
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
			whole.Discard()
		} else {
			whole.Release()
		}
	}
	return &obj, err
}

// bytes returns the staged bytes of ref: the leader's own or those pushed
// here, else fetched from a peer. nil, nil: superseded, skip the command.
func (f *fsm) bytes(ref bytesRef) (*objstore.Staged, error) {
	if st := f.node.stages.take(f.node.closing, ref.Stage, pushWait); st != nil {
		return st, nil
	}
	st, err := f.node.fetch(f.node.closing, ref)
	if errors.Is(err, errGone) {
		return nil, nil
	}
	return st, err
}

// pushWait is how long bytes still arriving by push may make no progress
// before an apply that needs them stops waiting and fetches them instead
// (the leader that pushed them may be cut off, the connection hanging).
const pushWait = 2 * time.Second

// Snapshot is not supported: the log is kept whole (SnapshotThreshold is
// set out of reach), and a replica catches up by replaying it. See
// docs/CLUSTER.md, "What is not done".
func (f *fsm) Snapshot() (raft.FSMSnapshot, error) {
	return nil, errors.New("cluster: snapshots are not implemented")
}

func (f *fsm) Restore(rc io.ReadCloser) error {
	rc.Close()
	return errors.New("cluster: snapshots are not implemented")
}

var _ raft.FSM = (*fsm)(nil)
