package cluster

import (
	"errors"
	"time"

	"github.com/hashicorp/raft"

	"github.com/b3-storage/b3/internal/objstore"
	"github.com/b3-storage/b3/internal/s3api"
)

// A node whose own disk fails it.
//
// A node whose disk is full (within --min-free-space, or the file system
// itself) or returns I/O errors cannot write the bytes its apply needs:
// its state machine waits at that command (fetchWatched keeps retrying:
// a localFault), although a member holds the bytes. Such a node must not
// hold the group up:
//
//   - as leader it serves nothing (it cannot apply what it commits): it
//     hands leadership to a healthy member with raft's own leadership
//     transfer, within seconds; a leader whose disk is within the
//     reserve, stuck or not, hands over too (every write would get 507
//     from it), at most every fullHandOver;
//   - as follower it does not stand for election while the fault lasts:
//     its heartbeat and election timeouts are raised (raft's
//     ReloadConfig) so that it never times out its leader, and are put
//     back once its apply moves again;
//   - its readiness check fails and b3_cluster_local_fault is 1, so that
//     load balancers and operators see it; clients still get answers
//     through the others.
//
// Nothing else changes: it stays a voter, receives the log, and catches
// up once space is freed (deletes, vacuum, an operator's cleanup) or its
// disk is replaced, without a restart. With --min-free-space the disk
// never actually fills under a write, so the segment store never fails.
const (
	// faultGrace is how long a local fault must last before the node
	// steps down and abstains: a vacuum pass may free space in a moment.
	faultGrace = 2 * time.Second
	// abstainTimeout is a follower's heartbeat timeout while it abstains:
	// longer than any fault an operator lets run unseen.
	abstainTimeout = 24 * time.Hour
)

// localFaultAt returns the log index at which this node's apply has
// waited at least faultGrace on its own disk, or 0.
func (n *Node) localFaultAt() uint64 {
	if h := n.fsm.halted.Load(); h != nil && time.Since(h.since) >= faultGrace {
		return h.index
	}
	m := n.fsm.waiting.Load()
	if m != nil && m.localFault() != nil && time.Since(m.since) >= faultGrace {
		return m.ref.Index
	}
	return 0
}

// stillWaitsAt reports whether the apply still waits at index (its last
// round may have failed otherwise: free space comes and goes around the
// reserve, and the fault ends only once the apply moves past it).
func (n *Node) stillWaitsAt(index uint64) bool {
	if h := n.fsm.halted.Load(); h != nil && h.index == index {
		return true
	}
	m := n.fsm.waiting.Load()
	return m != nil && m.ref.Index == index
}

// watchLocalFaults steps down and abstains from elections while this
// node's disk keeps its apply from moving, and stands again once it
// moves.
func (n *Node) watchLocalFaults() {
	defer n.wg.Done()
	normal := n.raft.ReloadableConfig()
	t := time.NewTicker(500 * time.Millisecond)
	defer t.Stop()
	var fullSince time.Time
	var faultIndex uint64
	for {
		select {
		case <-n.closing.Done():
			return
		case <-t.C:
		}
		fault := false
		if at := n.localFaultAt(); at != 0 {
			fault, faultIndex = true, at
		} else if n.faulty.Load() {
			fault = n.stillWaitsAt(faultIndex)
		}
		if fault != n.faulty.Load() {
			rc := n.raft.ReloadableConfig()
			rc.HeartbeatTimeout, rc.ElectionTimeout = normal.HeartbeatTimeout, normal.ElectionTimeout
			if fault {
				rc.HeartbeatTimeout, rc.ElectionTimeout = abstainTimeout, abstainTimeout
				n.log.Error("this node's disk keeps its apply from moving (b3 admin cluster status): it does not stand for election, and hands leadership over, until it recovers",
					"index", faultIndex)
			} else {
				n.log.Info("this node's apply moves again: it stands for election again")
			}
			if err := n.raft.ReloadConfig(rc); err != nil {
				n.log.Warn("raft: reload the election timeouts", "err", err)
			}
			n.faulty.Store(fault)
		}
		if n.raft.State() != raft.Leader {
			fullSince = time.Time{}
			continue
		}
		switch {
		case fault:
			n.handOver("this node cannot apply what the group commits")
		case n.full():
			// Not stuck, but every write would get 507 here: another
			// member may have room.
			if fullSince.IsZero() {
				fullSince = time.Now()
			}
			if time.Since(fullSince) >= faultGrace && n.mayHandOver() {
				n.handOver("this node's disk is within its free-space reserve (--min-free-space)")
			}
		default:
			fullSince = time.Time{}
		}
	}
}

// fullHandOver is the least time between two hand-overs of a leader
// whose disk is full: a group whose disks are all full keeps a leader,
// for reads and for the deletes that free space.
const fullHandOver = 30 * time.Second

// mayHandOver reports whether this full or failing leader may hand
// leadership over now (it has a voter to hand it to, and has not done so within
// fullHandOver), and if so counts it as done.
func (n *Node) mayHandOver() bool {
	if len(n.followers()) == 0 {
		return false
	}
	now := time.Now().UnixNano()
	last := n.lastHandOver.Load()
	return now-last >= int64(fullHandOver) && n.lastHandOver.CompareAndSwap(last, now)
}

// errFullHandOver answers a write a full leader refuses while it hands
// leadership to a member that may have room: 503, so that the client
// retries (through any node) and lands on the new leader.
var errFullHandOver = &s3api.APIError{Code: "SlowDown", Status: 503,
	Message: "This node's disk is within its free-space reserve; leadership moves to a member with room. Retry."}

// errFailingHandOver answers a write whose bytes this leader's disk
// failed to take (an I/O error, a read-only or full file system), while
// it hands leadership over.
var errFailingHandOver = &s3api.APIError{Code: "SlowDown", Status: 503,
	Message: "This node's disk failed the write; leadership moves to a healthy member. Retry."}

// ownDiskFailed is what a client's write gets when reserving space for
// its bytes, or staging them, here failed with err: a fault of this leader's own disk hands
// leadership over (at most every fullHandOver) and asks the client to
// retry; anything else is err.
func (n *Node) ownDiskFailed(err error) error {
	if !isLocalFault(err) || !n.mayHandOver() {
		return err
	}
	n.log.Error("this leader's disk is full or failing under a client's write", "err", err)
	go n.handOver("this node's disk is full (--min-free-space) or failing")
	if errors.Is(err, objstore.ErrStorageFull) {
		return errFullHandOver
	}
	return errFailingHandOver
}

// Reserve takes size bytes of this node's free-space reserve for a
// client's write (objstore). A leader within the reserve answers the
// first such write with errFullHandOver and hands leadership over; while
// it may not hand over again (fullHandOver), or has no one to hand it
// to, writes get 507 InsufficientStorage, as on b3 server.
func (s *Store) Reserve(size int64) (release func(), err error) {
	release, err = s.Store.Reserve(size)
	if err != nil {
		return nil, s.node.ownDiskFailed(err)
	}
	return release, nil
}

// full reports whether this node's disks are within the free-space
// reserve.
func (n *Node) full() bool {
	free := n.store.FreeBytes()
	return free >= 0 && free < n.cfg.MinFreeBytes
}

func (n *Node) handOver(why string) {
	n.log.Warn("handing leadership over: "+why, "term", n.raft.CurrentTerm())
	if err := n.raft.LeadershipTransfer().Error(); err != nil {
		n.log.Warn("leadership transfer", "err", err)
	}
}
