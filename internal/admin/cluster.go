package admin

import (
	"context"
	"net/http"
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
}

// ClusterStatus asks a node for the status of its replica group.
func (c *Client) ClusterStatus(ctx context.Context) (ClusterStatus, error) {
	var st ClusterStatus
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	err := c.do(ctx, http.MethodGet, "/admin/v1/cluster", nil, &st)
	return st, err
}
