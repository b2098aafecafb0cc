package cluster

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/hashicorp/raft"

	"github.com/b3-storage/b3/internal/admin"
)

// Replication lag.
//
// A member's lag is what the leader has applied (so, in async mode,
// acknowledged) and that member has not: the object bytes of the put and
// part commands in the leader's log after the member's applied index,
// and the age of the oldest of those entries. A member that has applied
// a command holds its bytes (a record never references bytes the node
// lacks), so in async mode the lag of the most advanced follower bounds
// what the leader's loss would take with it (docs/CLUSTER.md).
//
// The leader computes it, from its own log, for every member: for a
// follower it cannot reach, from the last applied index it heard of.
// Each follower asks the leader for its own (GET /_b3/v1/lag), so that
// every node exports its lag.

// lagScanMax bounds the entries one computation reads; past it the lag
// is at least what was counted.
const lagScanMax = 100_000

// Lag is one member's replication lag.
type Lag struct {
	Bytes   int64   `json:"bytes"`
	Seconds float64 `json:"seconds"`
}

// lagSince is the lag of a member that applied the log up to applied, as
// this node (the leader) sees it.
func (n *Node) lagSince(applied uint64) Lag {
	var lag Lag
	head := n.fsm.applied.Load()
	start := max(applied+1, head-min(head, lagScanMax-1))
	for i := start; i <= head; i++ {
		var l raft.Log
		if err := n.entries.GetLog(i, &l); err != nil || l.Type != raft.LogCommand {
			continue
		}
		if lag.Seconds == 0 && !l.AppendedAt.IsZero() {
			lag.Seconds = max(time.Since(l.AppendedAt).Seconds(), 1e-9)
		}
		c, err := decodeCommand(l.Data)
		if err != nil {
			continue
		}
		switch {
		case c.Op == opPutObject && c.Object != nil:
			lag.Bytes += c.Object.Size
		case c.Op == opPutPart && c.Part != nil:
			lag.Bytes += c.Part.Size
		}
	}
	return lag
}

// lagKnown remembers the applied index the leader last heard from each
// member, for the lag of members that do not answer.
type lagKnown struct {
	mu      sync.Mutex
	applied map[string]uint64
}

func (k *lagKnown) note(id string, applied uint64) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.applied == nil {
		k.applied = map[string]uint64{}
	}
	k.applied[id] = max(k.applied[id], applied)
}

func (k *lagKnown) get(id string) uint64 {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.applied[id]
}

// lags returns the lag of every member this node can tell: all of them
// when it leads, else its own (asked of the leader; none if that fails).
func (n *Node) lags(ctx context.Context) map[string]Lag {
	out := map[string]Lag{}
	if n.raft.State() == raft.Leader {
		for _, p := range n.members() {
			if p.ID == n.cfg.ID {
				out[p.ID] = Lag{}
				continue
			}
			if m, err := n.peerInfo(ctx, p.Address); err == nil {
				n.lagKnown.note(p.ID, m.AppliedIndex)
			}
			out[p.ID] = n.lagSince(n.lagKnown.get(p.ID))
		}
		return out
	}
	addr, _ := n.raft.LeaderWithID()
	if addr == "" {
		return out
	}
	lag, err := n.askLag(ctx, string(addr))
	if err == nil {
		out[n.cfg.ID] = lag
	}
	return out
}

func (n *Node) askLag(ctx context.Context, leader string) (Lag, error) {
	var lag Lag
	return lag, n.peerGetJSON(ctx, leader, fmt.Sprintf("/_b3/v1/lag?applied=%d", n.fsm.applied.Load()), &lag)
}

// handleLag answers a follower's GET /_b3/v1/lag?applied=N (leader only).
func (n *Node) handleLag(w http.ResponseWriter, r *http.Request) {
	applied, err := strconv.ParseUint(r.URL.Query().Get("applied"), 10, 64)
	if err != nil {
		http.Error(w, "bad applied index", http.StatusBadRequest)
		return
	}
	if n.raft.State() != raft.Leader {
		http.Error(w, "not the leader", http.StatusServiceUnavailable)
		return
	}
	admin.WriteJSON(w, http.StatusOK, n.lagSince(applied))
}
