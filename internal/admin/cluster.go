package admin

import (
	"context"
	"errors"
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
	// Group is the answering node's replica group ("" on a router).
	Group string `json:"group,omitempty"`
	// The cluster map: its epoch and partition count, every group with
	// its partitions, the moves under way, and whether none is pending
	// (no move under way or planned).
	MapEpoch   uint64         `json:"map_epoch,omitempty"`
	Partitions int            `json:"partitions,omitempty"`
	Groups     []ClusterGroup `json:"groups,omitempty"`
	Moves      []ClusterMove  `json:"moves,omitempty"`
	Balanced   bool           `json:"balanced"`
	Paused     bool           `json:"rebalance_paused,omitempty"`
}

// ClusterGroup is one replica group of the cluster map.
type ClusterGroup struct {
	Name       string  `json:"name"`
	Partitions int     `json:"partitions"` // owned now
	Target     int     `json:"target"`     // to own once balanced
	Weight     float64 `json:"weight,omitempty"`
	Capacity   int64   `json:"capacity,omitempty"`
	Draining   bool    `json:"draining,omitempty"`
	Leader     string  `json:"leader"` // id, "" if none answers as leader
	// Members: each member's id, address, health and state.
	Members []ClusterMember `json:"members"`
}

// ClusterMove is a partition moving between groups.
type ClusterMove struct {
	Partition int    `json:"partition"`
	From      string `json:"from"`
	To        string `json:"to"`
	// Fenced: the source refuses the partition's writes (503 SlowDown,
	// retried by clients) until the move switches.
	Fenced bool `json:"fenced,omitempty"`
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
	// MissingBytes: the member's state machine cannot apply the command at
	// MissingBytes.Index, whose object bytes no member it asked gave (nil:
	// it waits for none). On the leader, the group serves nothing
	// meanwhile; b3 admin cluster declare-lost is the way on.
	MissingBytes *ClusterMissing `json:"missing_bytes,omitempty"`
	// ApplyHalted, if not "", says at which command the member's apply
	// halted because its own disk failed it (full, read-only, I/O error),
	// and why: it retries until the disk takes the command.
	ApplyHalted string `json:"apply_halted,omitempty"`
	// LocalFault: the member's own disk keeps its apply from moving; it
	// does not stand for election until it recovers.
	LocalFault bool `json:"local_fault,omitempty"`
}

// ClusterMissing is what a member's apply waits for.
type ClusterMissing struct {
	Index     uint64 `json:"index"` // the command's log index
	Op        string `json:"op"`    // put, put-part, complete
	Bucket    string `json:"bucket"`
	Key       string `json:"key"`
	Version   uint64 `json:"version"`
	VersionID string `json:"version_id"` // the version as S3 shows it in a versioned bucket
	UploadID  string `json:"upload_id,omitempty"`
	Part      int    `json:"part,omitempty"`
	Size      int64  `json:"size"`
	// Since is when the apply began to wait; WaitedSeconds how long ago.
	Since         time.Time `json:"since"`
	WaitedSeconds float64   `json:"waited_seconds"`
	// Asked is every other member asked in the last round, and its answer.
	Asked []ClusterAsked `json:"asked"`
	// Local, if not "", is this node's own disk failing to write the
	// bytes a member gave (full, or an I/O error): nothing is lost, and
	// declare-lost refuses.
	Local string `json:"local,omitempty"`
}

// ClusterAsked is one member's answer to a fetch of missing bytes.
type ClusterAsked struct {
	ID      string `json:"id"`
	Address string `json:"address"`
	Answer  string `json:"answer"`
}

// ClusterLost is the answer to POST /admin/v1/cluster/lost: the bytes
// of the command at Index were declared lost by the command at
// DeclaredIndex, applied on the leader.
type ClusterLost struct {
	Index         uint64 `json:"index"`
	Op            string `json:"op"`
	Bucket        string `json:"bucket"`
	Key           string `json:"key"`
	Version       uint64 `json:"version"`
	VersionID     string `json:"version_id"`
	UploadID      string `json:"upload_id,omitempty"`
	Part          int    `json:"part,omitempty"`
	DeclaredIndex uint64 `json:"declared_index"`
	Leader        string `json:"leader"`
}

// DeclareLost has the group's leader declare lost the bytes m names,
// which its own apply waits for (it refuses with 409 otherwise).
// Members named in gone are gone for good: the leader does not wait for
// their answer (it refuses while any other member may hold the bytes).
func (c *Client) DeclareLost(ctx context.Context, m ClusterMissing, gone ...string) (ClusterLost, error) {
	var out ClusterLost
	in := map[string]any{"index": m.Index, "bucket": m.Bucket, "key": m.Key, "version": m.Version, "gone": gone}
	err := clusterOnly(c.do(ctx, http.MethodPost, "/admin/v1/cluster/lost", in, &out))
	return out, err
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
	err := clusterOnly(c.do(ctx, http.MethodPost, "/admin/v1/cluster/members", map[string]string{"id": id, "address": addr}, &out))
	return out, err
}

// RemoveClusterMember removes the member id from the group.
func (c *Client) RemoveClusterMember(ctx context.Context, id string) (ClusterChange, error) {
	var out ClusterChange
	err := clusterOnly(c.do(ctx, http.MethodDelete, "/admin/v1/cluster/members/"+url.PathEscape(id), nil, &out))
	return out, err
}

// ClusterStatus asks a node for the status of its replica group.
func (c *Client) ClusterStatus(ctx context.Context) (ClusterStatus, error) {
	var st ClusterStatus
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	err := clusterOnly(c.do(ctx, http.MethodGet, "/admin/v1/cluster", nil, &st))
	return st, err
}

// SetRebalance pauses (or resumes) the start of partition moves; moves
// under way finish. It returns the cluster map's status.
func (c *Client) SetRebalance(ctx context.Context, paused bool) (ClusterStatus, error) {
	var st ClusterStatus
	err := clusterOnly(c.do(ctx, http.MethodPost, "/admin/v1/cluster/rebalance", map[string]bool{"paused": paused}, &st))
	return st, err
}

// CancelMoves ends the partition moves under way where they are and
// pauses the start of new ones: for a destination that cannot finish
// (its partitions stay fenced, unwritable, until it does). The sources
// keep the partitions. It returns the cluster map's status.
func (c *Client) CancelMoves(ctx context.Context) (ClusterStatus, error) {
	var st ClusterStatus
	err := clusterOnly(c.do(ctx, http.MethodPost, "/admin/v1/cluster/rebalance", map[string]bool{"cancel": true}, &st))
	return st, err
}

// DrainGroup has group's partitions move to the other groups (drain), or
// stops that (drain false).
func (c *Client) DrainGroup(ctx context.Context, group string, drain bool) (ClusterStatus, error) {
	var st ClusterStatus
	err := clusterOnly(c.do(ctx, http.MethodPost, "/admin/v1/cluster/drain", map[string]any{"group": group, "drain": drain}, &st))
	return st, err
}

// ErrNotCluster is a cluster call made to a single server.
var ErrNotCluster = errors.New("this is a single b3 server, not a b3 node: it has no replica group (the cluster commands are for b3 node; docs/CLUSTER.md)")

// clusterOnly turns the 404 of a single server, which has no cluster
// endpoints, into ErrNotCluster.
func clusterOnly(err error) error {
	var status *StatusError
	if errors.As(err, &status) && status.Code == http.StatusNotFound && status.Message == "" {
		return ErrNotCluster
	}
	return err
}
