package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"time"

	"github.com/hashicorp/raft"

	"github.com/b3-storage/b3/internal/admin"
	"github.com/b3-storage/b3/internal/meta"
	"github.com/b3-storage/b3/internal/objstore"
)

// Declaring object bytes lost.
//
// A command that names bytes (a put, a part, a complete that missed
// parts) is applied only once this node holds them: it takes them staged
// or fetches them from a peer, as long as it takes (fsm.bytes). In async
// mode a write is acknowledged once the leader holds its bytes and its
// command is committed; if that leader dies before any follower got the
// bytes and its disk does not come back, no member can give them, and
// every state machine waits at that command for ever: the new leader
// cannot apply what was committed before its term (its barrier), and
// serves nothing. (In sync mode a majority holds the bytes before the
// command is proposed, so any majority that can elect a leader holds a
// copy: the wait ends unless more than a minority of disks is lost.)
//
// While it waits, the apply publishes what it waits for (fsm.waiting:
// the command's index, its object, the peers asked and their answers),
// which `b3 admin cluster status` and the metrics show. An operator who
// knows the bytes are gone for good (the node that held them is not
// coming back) declares them lost: `b3 admin cluster declare-lost`
// proposes, through the leader and Raft's ordinary Apply, a command
// opDeclareLost naming the waiting command's index and object. Raft
// commits it although the state machines wait: Raft's own loop appends,
// replicates and commits, and queues what is committed for the state
// machine (128 batches of up to MaxAppendEntries entries each; once the
// group has stopped few entries come: the new leader's no-op and
// barrier, the declaration), and then:
//
//   - at the waiting command (index i): the apply, which reads the
//     committed log after i while it waits (declaredLost), sees the
//     declaration and installs the command's record hollow (no bytes;
//     objstore.Hollow), the same record every node installs, the bytes
//     aside, so later commands apply to the same state everywhere. A node
//     that still holds the bytes (the old leader, back with its disk)
//     installed them at i as usual.
//   - at the declaration (index j > i): every node removes that object
//     version, current or not, whatever its retention (ApplyRemoveLost:
//     as a DELETE of that version ID does; the newest remaining version
//     becomes current), or, for a part, aborts its upload; the bytes a
//     node held become dead (vacuum). Every node logs it, with the names.
//
// Invariants:
//   - No home-made consensus: the declaration is an ordinary command,
//     proposed by the Raft leader and committed by Raft; an apply treats
//     the bytes of i as lost only if the declaration of i is in its log
//     at or below Raft's commit index (so committed, and it will be
//     applied here next to i).
//   - The leader proposes a declaration only for the command its own
//     apply waits at, only for the object the operator was shown, and
//     only once every other member has answered, asked again at that
//     moment, that it lacks the bytes (proposeLost): one that holds them
//     is left to give them (the fetch keeps asking); one that does not
//     answer may hold them, so it must be named by the operator as gone
//     for good. A wait that is this node's own disk failing to write
//     bytes a peer gave (localFault) is never declarable: the bytes
//     exist.
//   - Between i and j the record is hollow on the nodes that lacked the
//     bytes, and no node serves it: a leader whose apply saw the
//     declaration while it waited serves only once it has applied it
//     (fsm.lostUntil, checked by watchLeadership after its barrier); a
//     peer asking for the bytes of a hollow record is told "not yet",
//     never "gone".
//   - After j, every node holds the same records (the version removed,
//     whether it held the bytes or not), a GET of it answers as for a
//     version deleted (404 NoSuchKey if none is left), and LIST agrees.
//   - A node that reaches i only after j was applied elsewhere is told
//     "gone" by those peers; it too installs the record hollow, as for
//     any bytes a later command removed (fsm.bytes).

// missing is what a waiting apply reports: the bytes of the command at
// ref.Index, asked of every other member, in vain so far.
type missing struct {
	ref   bytesRef
	op    op
	size  int64
	since time.Time
	asked []peerAnswer
}

// peerAnswer is one peer's answer to a fetch that got nothing.
type peerAnswer struct {
	Address string
	Err     error
}

// localFault returns the fault of this node's disk that kept it from
// writing bytes a peer gave, in the last round, or nil.
func (m *missing) localFault() *localFault {
	for _, a := range m.asked {
		var lf *localFault
		if errors.As(a.Err, &lf) {
			return lf
		}
	}
	return nil
}

// lostBytes is a declaration's payload: the command at Index, whose bytes
// no member holds, and what it wrote.
type lostBytes struct {
	Index    uint64 `json:"index"`
	Op       op     `json:"op"` // put, put-part or complete
	Bucket   string `json:"bucket"`
	Key      string `json:"key"`
	Version  uint64 `json:"version"`
	UploadID string `json:"upload_id,omitempty"`
	Part     int    `json:"part,omitempty"`
	// Actor is who declared it (the admin request's actor), for the logs.
	Actor string `json:"actor,omitempty"`
}

// errLost: the bytes an apply waits for were declared lost (committed
// later in the log).
var errLost = errors.New("cluster: bytes declared lost")

// errRefused is a declaration the leader turns down (409 to the admin
// client): nothing waits for those bytes.
type errRefused struct{ msg string }

func (e errRefused) Error() string { return e.msg }

// lostMark is in the encoding of every declaration (its JSON op), so a
// scan of the log decodes only the entries that may be one.
var lostMark = []byte(`"op":"` + string(opDeclareLost) + `"`)

// lostScan is what declaredLost has read of the committed log (the
// apply goroutine's own): every entry below next, and the declarations
// among them still ahead of the apply.
type lostScan struct {
	next  uint64
	found map[uint64]declared // by the index of the command declared lost
}

// declared is a declaration read from the log, and its own index.
type declared struct {
	lost *lostBytes
	at   uint64
}

// fetchApplying fetches the bytes of c, the command at ref.Index, for its
// apply (Node.fetch). While no peer gives them it publishes what it waits
// for and, once it has waited lostScanAfter, looks every lostPoll for a
// committed declaration that they are lost: then it returns errLost (or
// the bytes, if the fetch got them meanwhile: the declaration removes
// them anyway).
func (f *fsm) fetchApplying(c *command, ref bytesRef) (*objstore.Staged, error) {
	w := missing{ref: ref, op: c.Op, since: time.Now()}
	switch {
	case c.Part != nil:
		w.size = c.Part.Size
	case c.Object != nil:
		w.size = c.Object.Size
	}
	defer f.waiting.Store(nil)
	ctx, cancel := context.WithCancel(f.node.closing)
	defer cancel()
	type fetched struct {
		st  *objstore.Staged
		err error
	}
	done := make(chan fetched, 1)
	go func() {
		st, err := f.node.fetchWatched(ctx, ref, func(asked []peerAnswer) {
			cp := w
			cp.asked = asked
			f.waiting.Store(&cp)
		})
		done <- fetched{st, err}
	}()
	t := time.NewTicker(lostPoll)
	defer t.Stop()
	for {
		var l *lostBytes
		var j uint64
		select {
		case r := <-done:
			return r.st, r.err
		case <-t.C:
			if st := f.node.stages.takeFound(ctx, c, ref); st != nil {
				// The scan after an unclean end has ended, and found them.
				cancel()
				if r := <-done; r.err == nil && r.st != nil {
					r.st.Discard()
				}
				return st, nil
			}
			if f.waiting.Load() == nil || time.Since(w.since) < lostScanAfter {
				continue // a round that failed, for a while: a declaration is possible
			}
			if l, j = f.declaredLost(ref.Index); l == nil {
				continue
			}
			f.noteLost(j)
			cancel()
			if r := <-done; r.err == nil {
				return r.st, nil
			}
		}
		f.log.Warn("the bytes this command waits for were declared lost: its record is installed without them until the declaration removes it",
			"index", ref.Index, "bucket", ref.Bucket, "key", ref.Key, "version", ref.Version, "declared_at", j, "declared_by", l.Actor)
		return nil, errLost
	}
}

const (
	// lostPoll is how often a waiting apply looks for a declaration.
	lostPoll = 250 * time.Millisecond
	// lostScanAfter is how long an apply waits before it looks: a
	// declaration follows a wait the operator saw, and a catch-up's short
	// waits read no log.
	lostScanAfter = time.Second
)

// noteLost records that a record is hollow here until the declaration at
// index j is applied: this node does not serve before (watchLeadership).
func (f *fsm) noteLost(j uint64) {
	if j > f.lostUntil.Load() {
		f.lostUntil.Store(j)
	}
}

// declaredLost returns the committed declaration that the bytes of the
// command at index are lost, and its own index, or nil if there is none
// (yet). It reads the log forward from where it stopped (at least from
// index+1) up to Raft's commit index, and keeps the declarations it
// finds for the commands still ahead. Only the apply goroutine calls it.
func (f *fsm) declaredLost(index uint64) (*lostBytes, uint64) {
	n := f.node
	if n == nil || n.raft == nil {
		return nil, 0
	}
	for k := range f.scan.found {
		if k < index {
			delete(f.scan.found, k) // applied past: its declaration came next to it
		}
	}
	f.scan.next = max(f.scan.next, index+1)
	for commit := n.raft.CommitIndex(); f.scan.next <= commit; f.scan.next++ {
		var l raft.Log
		if err := n.entries.GetLog(f.scan.next, &l); err != nil {
			break // look again at the next round
		}
		if l.Type != raft.LogCommand || !bytes.Contains(l.Data, lostMark) {
			continue
		}
		c, err := decodeCommand(l.Data)
		if err != nil || c.Op != opDeclareLost || c.Lost == nil {
			continue
		}
		if f.scan.found == nil {
			f.scan.found = map[uint64]declared{}
		}
		if _, ok := f.scan.found[c.Lost.Index]; !ok { // the first one counts
			f.scan.found[c.Lost.Index] = declared{lost: c.Lost, at: l.Index}
		}
	}
	if d, ok := f.scan.found[index]; ok {
		return d.lost, d.at
	}
	return nil, 0
}

// applyHollow installs the record of c (at index), whose bytes were
// declared lost, without them: what every node installs at index, the
// bytes aside. The declaration, later in the log, removes it.
func (f *fsm) applyHollow(c *command, index uint64) (*meta.Object, error) {
	switch c.Op {
	case opPutObject:
		obj := *c.Object
		obj.Extents, obj.Inline = nil, nil
		return &obj, f.store.ApplyPutObject(&obj, index)
	case opPutPart:
		part := *c.Part
		part.Extents = nil
		return nil, f.store.ApplyPutPart(c.Name, c.Key, &part, index)
	case opComplete:
		// The object's size is its parts' (their records are the same on
		// every node, hollow or not).
		var size int64
		for _, num := range c.Numbers {
			if p, err := f.store.Meta().GetPart(c.UploadID, num); err == nil {
				size += p.Size
			}
		}
		obj := *c.Object
		return &obj, f.store.ApplyCompleteUpload(&obj, c.UploadID, c.Numbers, &objstore.Staged{Size: size}, index)
	}
	return nil, fmt.Errorf("cluster: %s has no bytes to declare lost", c.Op)
}

// applyLost applies a declaration: the version is removed (a part's
// upload aborted) on every node, whether it held the bytes or not.
func (f *fsm) applyLost(l *lostBytes, index uint64) error {
	if l == nil {
		return errors.New("cluster: a declaration of lost bytes without its object")
	}
	attrs := []any{"index", index, "lost_index", l.Index, "op", string(l.Op), "bucket", l.Bucket, "key", l.Key,
		"version", l.Version, "declared_by", l.Actor}
	var err error
	if l.Op == opPutPart {
		attrs = append(attrs, "upload_id", l.UploadID, "part", l.Part)
		err = f.store.ApplyAbortUpload(l.Bucket, l.Key, l.UploadID, index)
		if errors.Is(err, objstore.ErrNoSuchUpload) {
			err = nil // completed or aborted since: a later declaration covers a complete
		}
		attrs = append(attrs, "outcome", "upload aborted")
	} else {
		var removed *meta.Object
		removed, err = f.store.ApplyRemoveLost(l.Bucket, l.Key, l.Version, index)
		if errors.Is(err, objstore.ErrNoSuchBucket) {
			err = nil
		}
		outcome := "no such version left"
		if removed != nil {
			outcome = "version removed"
			attrs = append(attrs, "version_id", objstore.VersionID(removed), "size", removed.Size)
		}
		attrs = append(attrs, "outcome", outcome)
	}
	if err != nil {
		f.log.Error("apply a declaration of lost bytes", append(attrs, "err", err)...)
		return err
	}
	f.log.Warn("object bytes declared lost", attrs...)
	return nil
}

// missingView is m as the admin API shows it.
func (n *Node) missingView(m *missing) *admin.ClusterMissing {
	if m == nil {
		return nil
	}
	ids := map[string]string{}
	for _, p := range n.members() {
		ids[p.Address] = p.ID
	}
	v := &admin.ClusterMissing{Index: m.ref.Index, Op: string(m.op), Bucket: m.ref.Bucket, Key: m.ref.Key,
		Version: m.ref.Version, VersionID: n.clientVersionID(m.ref.Version), UploadID: m.ref.UploadID, Part: m.ref.Part,
		Size: m.size, Since: m.since.UTC(), WaitedSeconds: time.Since(m.since).Seconds()}
	for _, a := range m.asked {
		answer := "no answer"
		if a.Err != nil {
			answer = a.Err.Error()
		}
		v.Asked = append(v.Asked, admin.ClusterAsked{ID: ids[a.Address], Address: a.Address, Answer: answer})
	}
	if lf := m.localFault(); lf != nil {
		v.Local = lf.err.Error()
	}
	return v
}

// lostRequest asks the leader to declare the bytes it waits for lost
// (POST /admin/v1/cluster/lost, forwarded as POST /_b3/v1/lost): the
// index and object the operator was shown, so that nothing else is.
type lostRequest struct {
	Index   uint64 `json:"index"`
	Bucket  string `json:"bucket"`
	Key     string `json:"key"`
	Version uint64 `json:"version"`
	Actor   string `json:"actor,omitempty"`
	// Gone names members the operator knows are gone for good: the
	// declaration does not wait for their answer.
	Gone []string `json:"gone,omitempty"`
}

// declareLost runs a declaration here when this node is Raft's leader
// (whether or not it serves: it does not, while it waits), else on the
// leader.
func (n *Node) declareLost(ctx context.Context, req lostRequest) (admin.ClusterLost, error) {
	if n.raft.State() == raft.Leader {
		return n.proposeLost(req)
	}
	var out admin.ClusterLost
	err := n.postLeader(ctx, "/_b3/v1/lost", req, &out, http.StatusConflict, func(msg string) error { return errRefused{msg} })
	return out, err
}

// handleLost takes a declaration forwarded by another member.
func (n *Node) handleLost(w http.ResponseWriter, r *http.Request) {
	var req lostRequest
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<16)).Decode(&req); err != nil {
		http.Error(w, "bad declaration", http.StatusBadRequest)
		return
	}
	if n.raft.State() != raft.Leader {
		http.Error(w, "not the leader", http.StatusServiceUnavailable)
		return
	}
	out, err := n.proposeLost(req)
	writeLost(w, out, err, func(code int, msg string) { http.Error(w, msg, code) })
}

// writeLost answers a declaration: 409 refused, 503 not committed.
func writeLost(w http.ResponseWriter, out admin.ClusterLost, err error, fail func(code int, msg string)) {
	var refused errRefused
	switch {
	case errors.As(err, &refused):
		fail(http.StatusConflict, err.Error())
	case err != nil:
		fail(http.StatusServiceUnavailable, err.Error())
	default:
		admin.WriteJSON(w, http.StatusOK, out)
	}
}

// proposeLost declares lost the bytes this leader's apply waits for, if
// they are those of req, and returns once its apply has gone past that
// command. It does not wait for the declaration itself to be applied: a
// leader that died with several writes' bytes leaves the apply stopped
// again at the next one, before the declaration, until that one is
// declared too.
func (n *Node) proposeLost(req lostRequest) (admin.ClusterLost, error) {
	m := n.fsm.waiting.Load()
	if m == nil {
		return admin.ClusterLost{}, errRefused{fmt.Sprintf("leader %s waits for no bytes: nothing to declare lost", n.cfg.ID)}
	}
	if m.ref.Index != req.Index || m.ref.Bucket != req.Bucket || m.ref.Key != req.Key || m.ref.Version != req.Version {
		return admin.ClusterLost{}, errRefused{fmt.Sprintf("leader %s waits for the bytes of log index %d (%s/%s version %016x), not those of index %d (%s/%s version %016x): look again (b3 admin cluster status)",
			n.cfg.ID, m.ref.Index, m.ref.Bucket, m.ref.Key, m.ref.Version, req.Index, req.Bucket, req.Key, req.Version)}
	}
	if lf := m.localFault(); lf != nil {
		return admin.ClusterLost{}, errRefused{fmt.Sprintf("leader %s waits for bytes a member holds: its own disk could not write them (%v). Nothing is lost: free space on %s (or replace its disk); it steps down meanwhile",
			n.cfg.ID, lf.err, n.cfg.ID)}
	}
	if n.foundMayHold(m.ref) {
		return admin.ClusterLost{}, errRefused{fmt.Sprintf("leader %s may hold the bytes itself: it is looking through the segments its unclean end left (or found a run of them its apply takes next). Nothing is declared while it may; look again once its scan has ended (b3 admin cluster status)", n.cfg.ID)}
	}
	if err := n.othersLack(m.ref, req.Gone); err != nil {
		return admin.ClusterLost{}, err
	}
	l := &lostBytes{Index: m.ref.Index, Op: m.op, Bucket: m.ref.Bucket, Key: m.ref.Key, Version: m.ref.Version,
		UploadID: m.ref.UploadID, Part: m.ref.Part, Actor: req.Actor}
	n.log.Warn("declaring object bytes lost", "lost_index", l.Index, "op", string(l.Op), "bucket", l.Bucket, "key", l.Key,
		"version", l.Version, "upload_id", l.UploadID, "part", l.Part, "declared_by", l.Actor)
	out := admin.ClusterLost{Index: l.Index, Op: string(l.Op), Bucket: l.Bucket, Key: l.Key, Version: l.Version,
		VersionID: n.clientVersionID(l.Version), UploadID: l.UploadID, Part: l.Part, Leader: n.cfg.ID}
	f := n.raft.Apply((&command{Op: opDeclareLost, Lost: l}).encode(), applyTimeout)
	applied := make(chan error, 1)
	go func() { applied <- f.Error() }()
	t := time.NewTicker(lostPoll / 5)
	defer t.Stop()
	timeout := time.After(applyTimeout)
	for {
		select {
		case err := <-applied:
			if err != nil {
				return out, fmt.Errorf("%w: %v", errNoQuorum, err)
			}
			out.DeclaredIndex = f.Index()
			return out, nil
		case <-t.C:
			if n.fsm.applied.Load() >= l.Index { // past it: the declaration is committed (lostUntil is its index)
				out.DeclaredIndex = n.fsm.lostUntil.Load()
				return out, nil
			}
		case <-timeout:
			return out, fmt.Errorf("%w: the apply did not go past log index %d within %s", errNoQuorum, l.Index, applyTimeout)
		}
	}
}

// othersLack asks every other member, now, whether it holds the bytes of
// ref, and returns nil only if each answered that it lacks them (or is
// named in gone): errRefused names a member that holds them, or one that
// did not answer and may.
func (n *Node) othersLack(ref bytesRef, gone []string) error {
	ctx, cancel := context.WithTimeout(n.closing, 5*time.Second)
	defer cancel()
	for _, p := range n.members() {
		if p.ID == n.cfg.ID {
			continue
		}
		holds, err := n.peerHolds(ctx, p.Address, ref)
		switch {
		case err != nil && slices.Contains(gone, p.ID):
			continue
		case err != nil:
			return errRefused{fmt.Sprintf("member %s did not answer whether it holds the bytes (%v): it may. Bring it back, and its copy is used; if it is gone for good, say so: --gone %s", p.ID, err, p.ID)}
		case holds:
			return errRefused{fmt.Sprintf("member %s holds the bytes: nothing is lost, the group takes them from it (b3 admin cluster status shows why it has not yet)", p.ID)}
		}
	}
	return nil
}

// peerHolds asks peer whether it holds the bytes of ref (a HEAD of the
// fetch: 200 holds; 409 may hold them, among those its unclean end left;
// 404 not yet, or hollow; 410 gone, superseded).
func (n *Node) peerHolds(ctx context.Context, peer string, ref bytesRef) (bool, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodHead, "http://"+peer+"/_b3/v1/bytes?"+refQuery(ref).Encode(), nil)
	if err != nil {
		return false, err
	}
	resp, err := n.peerClient.Do(req)
	if err != nil {
		return false, err
	}
	resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK, http.StatusConflict: // 409: may hold them (errScanning)
		return true, nil
	case http.StatusNotFound, http.StatusGone:
		return false, nil
	}
	return false, fmt.Errorf("%s", resp.Status)
}

// notServing is why a node that is Raft's leader does not serve yet:
// its apply waits for bytes no member gave ("" if it does not).
func (n *Node) notServing() string {
	m := n.fsm.waiting.Load()
	if m == nil || time.Since(m.since) < pushWait {
		return ""
	}
	if lf := m.localFault(); lf != nil {
		return fmt.Sprintf("this node cannot write the bytes of %s/%s (log index %d), which a member holds: %v; it hands leadership over",
			m.ref.Bucket, m.ref.Key, m.ref.Index, lf.err)
	}
	return fmt.Sprintf("the replica group waits for the bytes of %s/%s (log index %d), which no member holds (b3 admin cluster status)",
		m.ref.Bucket, m.ref.Key, m.ref.Index)
}
