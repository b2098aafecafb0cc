package admin

import (
	"context"
	"net/http"
	"net/url"
	"time"
)

// ClusterStatus is GET /admin/v1/cluster on a cluster node: the replica
// group as this node sees it, and what each member reports of itself.
type ClusterStatus struct {
	Node        string          `json:"node"` // the node answering
	Replication string          `json:"replication"`
	Leader      string          `json:"leader"` // id, "" if none known
	Term        uint64          `json:"term"`
	Members     []ClusterMember `json:"members"`
}

// ClusterMember is one member of the group.
type ClusterMember struct {
	ID             string `json:"id"`
	ClusterAddress string `json:"cluster_address"`
	Healthy        bool   `json:"healthy"` // answered within the status timeout
	Error          string `json:"error"`
	State          string `json:"state"` // Leader, Follower, Candidate; "" when down
	Term           uint64 `json:"term"`
	AppliedIndex   uint64 `json:"applied_index"`
	LastLogIndex   uint64 `json:"last_log_index"`
	// LagEntries is how many committed commands the member has still to
	// apply, against the leader's applied index; LagSeconds is how long
	// ago the member applied its last command while it lags (0 when it
	// does not).
	LagEntries uint64  `json:"lag_entries"`
	LagSeconds float64 `json:"lag_seconds"`
	// PendingPushBytes is, on the leader, the object bytes still being
	// pushed to followers (in async mode: acknowledged writes whose bytes
	// are on the leader only, or on fewer nodes than all).
	PendingPushBytes int64 `json:"pending_push_bytes"`
	// LastContactSeconds is how long ago a follower heard from the leader.
	LastContactSeconds float64 `json:"last_contact_seconds"`
	// SnapshotIndex is the log index of the member's latest snapshot
	// (taken or restored; 0: none); FirstLogIndex the oldest entry it
	// keeps (the log below was compacted into the snapshot).
	SnapshotIndex uint64 `json:"snapshot_index"`
	FirstLogIndex uint64 `json:"first_log_index"`
	// EntriesSinceStart counts the log entries this process handed to its
	// state machine (applied, or skipped as already held): after a
	// restart, those after the latest snapshot only. SnapshotsRestored
	// counts snapshots it installed from the leader.
	EntriesSinceStart uint64 `json:"entries_since_start"`
	SnapshotsRestored uint64 `json:"snapshots_restored"`
	// FillPending: the member restored a snapshot and still fetches the
	// bytes of some of its records (it serves them by fetching them
	// first meanwhile, and is not promoted to voter before it is done).
	FillPending bool `json:"fill_pending,omitempty"`
	// Suffrage is "voter", or "nonvoter" for a member added and still
	// catching up (it becomes a voter by itself), as the group's
	// configuration says; a node reporting on itself may say "removed" or
	// "waiting" (started with --join, not yet added).
	Suffrage  string `json:"suffrage,omitempty"`
	Waiting   bool   `json:"waiting,omitempty"`
	ClusterID string `json:"cluster_id,omitempty"`
}

// ClusterChange is the answer to adding or removing a member: POST
// /admin/v1/cluster/members {"id","address"}, DELETE
// /admin/v1/cluster/members/{id}. Any node takes them and has the leader
// make them.
type ClusterChange struct {
	Op       string `json:"op"` // "add" or "remove"
	ID       string `json:"id"`
	Address  string `json:"address"`
	Suffrage string `json:"suffrage"` // after the change: "nonvoter" (added) or "removed"
	Leader   string `json:"leader"`   // the node that made the change
	// Notified: the removed node was told, and stopped serving.
	Notified bool `json:"notified"`
}

// AddClusterMember adds the node id, waiting at its cluster address addr
// (b3 node --join), to the group.
func (c *Client) AddClusterMember(ctx context.Context, id, addr string) (ClusterChange, error) {
	var out ClusterChange
	err := c.do(ctx, http.MethodPost, "/admin/v1/cluster/members", map[string]string{"id": id, "address": addr}, &out)
	return out, err
}

// RemoveClusterMember removes the member id from the group.
func (c *Client) RemoveClusterMember(ctx context.Context, id string) (ClusterChange, error) {
	var out ClusterChange
	err := c.do(ctx, http.MethodDelete, "/admin/v1/cluster/members/"+url.PathEscape(id), nil, &out)
	return out, err
}

// ClusterStatus asks a node for the status of its replica group.
func (c *Client) ClusterStatus(ctx context.Context) (ClusterStatus, error) {
	var st ClusterStatus
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	err := c.do(ctx, http.MethodGet, "/admin/v1/cluster", nil, &st)
	return st, err
}
