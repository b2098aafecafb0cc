package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"syscall"
	"time"

	"github.com/hashicorp/raft"

	"github.com/b3-storage/b3/internal/admin"
)

// Membership changes (b3 admin cluster add|remove) are Raft configuration
// changes, made by the leader (a node that does not lead forwards them to
// the one that does):
//
//	add n4=ADDR   the node at ADDR, started with --join and an empty data
//	              directory, answers GET /_b3/v1/info as n4, waiting, of
//	              no other cluster; the leader adds it as a non-voter
//	              (raft AddNonvoter). It receives the log, or the leader's
//	              snapshot and then the log, and fetches the bytes the
//	              records name, as background I/O (snapshot.go). The
//	              leader promotes it to voter (AddVoter) once it has
//	              applied the log to within promoteLag entries and holds
//	              the bytes of every record it restored (fill.go).
//	remove n2     raft RemoveServer. The removed node, once it sees a
//	              configuration without itself, records that in its
//	              cluster.json, answers S3 requests with 503 saying why, and
//	              refuses to start again. The leader tells it at once
//	              (POST /_b3/v1/removed); a node that was down then finds
//	              no leader when it returns, asks the members it knows
//	              (GET /_b3/v1/member), and the leader's committed
//	              configuration tells it.
//
// Invariants:
//   - A non-voter counts towards no majority: it neither votes nor
//     receives pushes, and a write's bytes are durable on a majority of
//     the voters before its command is proposed (quorumPeers counts
//     voters). It fetches every byte it applies.
//   - Only a node waiting to join (no Raft configuration, started with
//     --join) and answering with the requested id is added: a node of
//     another cluster, or a typo's wrong address, is refused.
//   - The leader refuses to remove the last voter.
//   - A node concludes it was removed only from a committed
//     configuration without it: its own, or the leader's answer (only a
//     node that leads, in a configuration it has committed, answers).

// promoteLag is how far behind the leader's applied index a non-voter
// may be when it is promoted: it has applied the snapshot and the log to
// within a few entries, so as a voter it does not hold up commits.
const promoteLag = 16

// memberChange is a change forwarded to the leader (POST /_b3/v1/members).
type memberChange struct {
	Op      string `json:"op"` // "add" or "remove"
	ID      string `json:"id"`
	Address string `json:"address,omitempty"`
}

// errMember is a refused change (400 to the admin client).
type errMember struct{ msg string }

func (e errMember) Error() string { return e.msg }

// changeMembers runs a change here when leading, else on the leader.
func (n *Node) changeMembers(ctx context.Context, c memberChange) (admin.ClusterChange, error) {
	if n.leading() {
		return n.applyMemberChange(ctx, c)
	}
	var out admin.ClusterChange
	err := n.postLeader(ctx, "/_b3/v1/members", c, &out, http.StatusBadRequest, func(msg string) error { return errMember{msg} })
	return out, err
}

// postLeader sends in, as JSON, to path on the leader's cluster address
// and decodes its 200 answer into out. An answer with status refusal is
// the leader refusing the request: its text becomes refused's error.
func (n *Node) postLeader(ctx context.Context, path string, in, out any, refusal int, refused func(string) error) error {
	addr, _ := n.raft.LeaderWithID()
	if addr == "" {
		return errNoQuorum
	}
	body, _ := json.Marshal(in)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+string(addr)+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	resp, err := n.peerClient.Do(req)
	if err != nil {
		return fmt.Errorf("leader %s: %w", addr, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	switch resp.StatusCode {
	case http.StatusOK:
		return json.Unmarshal(data, out)
	case refusal:
		return refused(string(bytes.TrimSpace(data)))
	default:
		return fmt.Errorf("leader %s: %s: %s", addr, resp.Status, bytes.TrimSpace(data))
	}
}

func (n *Node) handleMemberChange(w http.ResponseWriter, r *http.Request) {
	var c memberChange
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<16)).Decode(&c); err != nil {
		http.Error(w, "bad member change", http.StatusBadRequest)
		return
	}
	if !n.leading() {
		http.Error(w, "not the leader", http.StatusServiceUnavailable)
		return
	}
	out, err := n.applyMemberChange(r.Context(), c)
	var refused errMember
	switch {
	case errors.As(err, &refused):
		http.Error(w, err.Error(), http.StatusBadRequest)
	case err != nil:
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
	default:
		admin.WriteJSON(w, http.StatusOK, out)
	}
}

// applyMemberChange runs a change on the leader.
func (n *Node) applyMemberChange(ctx context.Context, c memberChange) (admin.ClusterChange, error) {
	out := admin.ClusterChange{Op: c.Op, ID: c.ID, Address: c.Address, Leader: n.cfg.ID}
	var cur *Peer
	voters := 0
	for _, p := range n.members() {
		if p.ID == c.ID {
			cur = &p
		}
		if !p.NonVoter {
			voters++
		}
	}
	switch c.Op {
	case "add":
		if c.ID == "" || c.Address == "" {
			return out, errMember{"add: want id=host:port"}
		}
		if cur != nil {
			return out, errMember{fmt.Sprintf("%s is already a member (at %s)", c.ID, cur.Address)}
		}
		info, err := n.peerInfo(ctx, c.Address)
		if err != nil {
			return out, errMember{fmt.Sprintf("no b3 node answers at %s: %v", c.Address, err)}
		}
		switch {
		case info.ID != c.ID:
			return out, errMember{fmt.Sprintf("the node at %s is %s, not %s", c.Address, info.ID, c.ID)}
		case !info.Waiting:
			return out, errMember{fmt.Sprintf("%s at %s is not waiting to join (start it with --join and an empty --data)", c.ID, c.Address)}
		case info.ClusterID != "" && info.ClusterID != n.clusterID():
			return out, errMember{fmt.Sprintf("%s belongs to another cluster (%s)", c.ID, info.ClusterID)}
		}
		if err := n.raft.AddNonvoter(raft.ServerID(c.ID), raft.ServerAddress(c.Address), 0, applyTimeout).Error(); err != nil {
			return out, fmt.Errorf("%w: add %s: %v", errNoQuorum, c.ID, err)
		}
		n.log.Info("member added as a non-voter", "id", c.ID, "address", c.Address)
		out.Suffrage = "nonvoter"
	case "remove":
		if cur == nil {
			return out, errMember{fmt.Sprintf("%s is not a member", c.ID)}
		}
		if !cur.NonVoter && voters <= 1 {
			return out, errMember{fmt.Sprintf("%s is the last voter", c.ID)}
		}
		out.Address = cur.Address
		if err := n.raft.RemoveServer(raft.ServerID(c.ID), 0, applyTimeout).Error(); err != nil {
			return out, fmt.Errorf("%w: remove %s: %v", errNoQuorum, c.ID, err)
		}
		n.log.Info("member removed", "id", c.ID, "address", cur.Address)
		out.Suffrage = "removed"
		// Tell it: raft stops replicating to it before the change
		// commits, so it may never learn the commit by itself.
		if c.ID != n.cfg.ID {
			out.Notified = n.tellRemoved(ctx, cur.Address) == nil
		}
	default:
		return out, errMember{fmt.Sprintf("unknown change %q", c.Op)}
	}
	return out, nil
}

// watchMembers runs every second: on the leader it promotes the
// non-voters that caught up; on every node it notes the cluster this
// node joined, and its own removal.
func (n *Node) watchMembers() {
	defer n.wg.Done()
	t := time.NewTicker(time.Second)
	defer t.Stop()
	member := false // seen in a configuration
	leaderless := 0 // seconds without a leader, as a member
	for {
		select {
		case <-n.closing.Done():
			return
		case <-t.C:
		}
		servers, ok := n.committedServers()
		if !ok {
			continue
		}
		in := false
		for _, s := range servers {
			in = in || s.ID == raft.ServerID(n.cfg.ID)
		}
		switch {
		case in:
			member = true
			n.learnClusterID()
			if addr, _ := n.raft.LeaderWithID(); addr != "" {
				leaderless = 0
			} else if leaderless++; leaderless%askMemberEvery == 0 && !n.removed.Load() {
				n.askMembership(servers)
			}
		case member || len(servers) > 0 && !n.cfg.Join:
			n.noteRemoved()
		}
		if n.leading() {
			for _, s := range servers {
				if s.Suffrage != raft.Voter {
					n.promote(s)
				}
			}
		}
	}
}

// committedServers returns this node's latest Raft configuration if it is
// committed (ok false otherwise: an entry of a deposed leader may yet be
// replaced, so membership is not judged by it).
func (n *Node) committedServers() ([]raft.Server, bool) {
	f := n.raft.GetConfiguration()
	if f.Error() != nil {
		return nil, false
	}
	stats := n.raft.Stats()
	confAt, _ := strconv.ParseUint(stats["latest_configuration_index"], 10, 64)
	commit, _ := strconv.ParseUint(stats["commit_index"], 10, 64)
	return f.Configuration().Servers, confAt <= commit
}

// askMemberEvery is how many seconds a member hears from no leader before
// it asks the others whether it is still a member, and then again.
const askMemberEvery = 3

// memberAnswer is the leader's answer to GET /_b3/v1/member?id=&address=:
// whether that node is in the leader's committed configuration, at that
// address.
type memberAnswer struct {
	Member bool `json:"member"`
}

// handleMember answers a node that asks whether it is still a member.
// Only a leader answers, from a configuration it has committed.
func (n *Node) handleMember(w http.ResponseWriter, r *http.Request) {
	servers, ok := n.committedServers()
	if !n.leading() || !ok {
		http.Error(w, "not a leader with a committed configuration", http.StatusServiceUnavailable)
		return
	}
	id, addr := r.URL.Query().Get("id"), r.URL.Query().Get("address")
	member := slices.ContainsFunc(servers, func(s raft.Server) bool {
		return s.ID == raft.ServerID(id) && s.Address == raft.ServerAddress(addr)
	})
	admin.WriteJSON(w, http.StatusOK, memberAnswer{Member: member})
}

// askMembership asks the other servers of this node's configuration
// whether it is still a member: it was maybe removed while it was down,
// and nobody could tell it. The leader's answer decides.
func (n *Node) askMembership(servers []raft.Server) {
	q := url.Values{"id": {n.cfg.ID}, "address": {n.cfg.ClusterAddress}}
	for _, s := range servers {
		if s.ID == raft.ServerID(n.cfg.ID) {
			continue
		}
		ans, leads, err := n.askMember(string(s.Address), q)
		if err != nil || !leads {
			continue // down, or not the leader
		}
		if !ans.Member {
			n.log.Warn("the leader's configuration lacks this node: it was removed while it was away", "leader", s.ID)
			n.noteRemoved()
		}
		return
	}
}

// membershipWait bounds how long a node with a Raft state waits, before
// raft starts, for an answer to whether it is still a member.
const membershipWait = 2 * time.Second

// checkMembership runs before raft starts on a node that has a Raft state:
// it asks the servers of its latest known configuration whether it is
// still a member (GET /_b3/v1/member, answered by the leader only). Told
// it is not (removed while it was down), it records its removal and
// returns why it must not start: it never runs raft, so it never
// campaigns and disturbs the members with votes (or terms). It starts
// raft (nil) once told it is a member, once every other server has
// answered that it does not lead or refused the connection (no leader to
// ask: the whole group is starting, say), or after membershipWait (the
// others unreachable); watchMembers asks again later.
func (n *Node) checkMembership() error {
	servers := n.lastConfiguration()
	q := url.Values{"id": {n.cfg.ID}, "address": {n.cfg.ClusterAddress}}
	deadline := time.Now().Add(membershipWait)
	for {
		answered := 0
		for _, s := range servers {
			if s.ID == n.cfg.ID {
				continue
			}
			ans, leads, err := n.askMember(s.Address, q)
			switch {
			case err == nil && leads && ans.Member:
				return nil
			case err == nil && leads:
				n.log.Warn("the leader's configuration lacks this node: it was removed while it was away", "leader", s.ID)
				n.noteRemoved()
				n.idMu.Lock()
				defer n.idMu.Unlock()
				return removedError(n.cfg, n.identity.Removed)
			case err == nil:
				answered++ // up, not leading
			case errors.Is(err, syscall.ECONNREFUSED):
				answered++ // down
			}
		}
		if answered >= len(servers)-1 || time.Now().After(deadline) || n.closing.Err() != nil {
			return nil
		}
		select {
		case <-n.closing.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// askMember asks the node at addr whether this node is a member; leads is
// false when it answered that it does not lead.
func (n *Node) askMember(addr string, q url.Values) (ans memberAnswer, leads bool, err error) {
	ctx, cancel := context.WithTimeout(n.closing, time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/_b3/v1/member?"+q.Encode(), nil)
	if err != nil {
		return ans, false, err
	}
	resp, err := n.peerClient.Do(req)
	if err != nil {
		return ans, false, err
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK:
		return ans, true, json.NewDecoder(resp.Body).Decode(&ans)
	case http.StatusServiceUnavailable:
		return ans, false, nil
	}
	return ans, false, fmt.Errorf("%s: %s", addr, resp.Status)
}

// lastConfiguration returns the servers of the latest configuration in
// this node's Raft log, or else of its latest snapshot (or --peers): the
// members as this node last knew them, before raft runs.
func (n *Node) lastConfiguration() []Peer {
	first, err1 := n.entries.FirstIndex()
	last, err2 := n.entries.LastIndex()
	if err1 == nil && err2 == nil && first > 0 {
		for i := last; i >= first; i-- {
			var l raft.Log
			if n.entries.GetLog(i, &l) != nil || l.Type != raft.LogConfiguration {
				continue
			}
			var out []Peer
			for _, s := range raft.DecodeConfiguration(l.Data).Servers {
				out = append(out, Peer{ID: string(s.ID), Address: string(s.Address)})
			}
			return out
		}
	}
	return n.startPeers
}

// promote makes a non-voter a voter once it has caught up.
func (n *Node) promote(s raft.Server) {
	ctx, cancel := context.WithTimeout(n.closing, 2*time.Second)
	defer cancel()
	info, err := n.peerInfo(ctx, string(s.Address))
	if err != nil || info.AppliedIndex+promoteLag < n.fsm.applied.Load() || info.FillPending {
		return
	}
	if err := n.raft.AddVoter(s.ID, s.Address, 0, applyTimeout).Error(); err != nil {
		n.log.Warn("promote to voter", "id", s.ID, "err", err)
		return
	}
	n.log.Info("member promoted to voter", "id", s.ID, "applied", info.AppliedIndex)
}

// clusterID returns the id of the cluster this node belongs to ("" for a
// node waiting to join).
func (n *Node) clusterID() string {
	n.idMu.Lock()
	defer n.idMu.Unlock()
	return n.identity.ClusterID
}

// learnClusterID records, on a node that joined, the leader's cluster id.
func (n *Node) learnClusterID() {
	if n.clusterID() != "" {
		return
	}
	addr, id := n.raft.LeaderWithID()
	if addr == "" || string(id) == n.cfg.ID {
		return
	}
	ctx, cancel := context.WithTimeout(n.closing, 2*time.Second)
	defer cancel()
	info, err := n.peerInfo(ctx, string(addr))
	if err != nil || info.ClusterID == "" {
		return
	}
	n.idMu.Lock()
	defer n.idMu.Unlock()
	next := n.identity
	next.ClusterID = info.ClusterID
	if err := writeIdentity(n.cfg.Root, next); err != nil {
		n.log.Warn("record the cluster joined", "err", err)
		return
	}
	n.identity = next
	n.log.Info("joined cluster", "cluster", next.ClusterID)
}

// noteRemoved records that this node is no longer a member: it stops
// serving, and refuses to start again with this data directory.
func (n *Node) noteRemoved() {
	n.idMu.Lock()
	defer n.idMu.Unlock()
	if n.identity.Removed != "" {
		return
	}
	next := n.identity
	next.Removed = "removed by b3 admin cluster remove, seen " + time.Now().UTC().Format(time.RFC3339)
	if err := writeIdentity(n.cfg.Root, next); err != nil {
		n.log.Warn("record the removal", "err", err)
	}
	n.identity = next
	n.removed.Store(true)
	n.log.Warn("this node was removed from the cluster: it no longer serves S3 requests")
}

func (n *Node) tellRemoved(ctx context.Context, addr string) error {
	ctx, cancel := context.WithTimeout(ctx, 8*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+"/_b3/v1/removed", nil)
	if err != nil {
		return err
	}
	resp, err := n.peerClient.Do(req)
	if err != nil {
		n.log.Warn("tell a removed node", "address", addr, "err", err)
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", addr, resp.Status)
	}
	return nil
}

// handleRemoved is the leader telling this node it was removed. The node
// believes it once its own latest configuration lacks it too: the leader
// sends the change to a removed node last, and maybe just after telling
// it, so it waits for that a little.
func (n *Node) handleRemoved(w http.ResponseWriter, r *http.Request) {
	deadline := time.Now().Add(5 * time.Second)
	for {
		f := n.raft.GetConfiguration()
		if err := f.Error(); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		servers := f.Configuration().Servers
		in := slices.ContainsFunc(servers, func(s raft.Server) bool { return s.ID == raft.ServerID(n.cfg.ID) })
		if len(servers) > 0 && !in {
			n.noteRemoved()
			w.WriteHeader(http.StatusOK)
			return
		}
		if time.Now().After(deadline) || r.Context().Err() != nil {
			http.Error(w, "this node is still in its latest configuration", http.StatusConflict)
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waiting reports whether this node waits to be added (--join, no Raft
// configuration yet).
func (n *Node) waiting() bool {
	if !n.cfg.Join {
		return false
	}
	f := n.raft.GetConfiguration()
	return f.Error() == nil && len(f.Configuration().Servers) == 0
}

// refuseRemoved answers a request on a removed node, or one waiting to
// join, and reports whether it did.
func (n *Node) refuseRemoved(w http.ResponseWriter) bool {
	var why string
	switch {
	case n.removed.Load():
		why = fmt.Sprintf("node %s was removed from its cluster (b3 admin cluster remove); send requests to the other nodes", n.cfg.ID)
	case n.waiting():
		why = fmt.Sprintf("node %s waits to be added to a cluster (b3 admin cluster add %s=%s)", n.cfg.ID, n.cfg.ID, n.cfg.ClusterAddress)
	default:
		return false
	}
	h := w.Header()
	h.Set("Content-Type", "application/xml")
	w.WriteHeader(http.StatusServiceUnavailable)
	fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?>`+"\n"+`<Error><Code>ServiceUnavailable</Code><Message>%s.</Message></Error>`, why)
	return true
}
