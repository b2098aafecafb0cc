package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"time"

	"github.com/b3-storage/b3/internal/admin"
	"github.com/b3-storage/b3/internal/meta"
	"github.com/b3-storage/b3/internal/objstore"
	"github.com/b3-storage/b3/internal/s3api"
)

// Deletions of keys another group owns.
//
// A request is routed by the key its URL names (route.go); DeleteObjects
// names its keys in the body, and runs on the first group's leader (its
// URL names only the bucket). That node has authenticated the request and
// authorized each key as S3 does (s3:DeleteObject, s3:DeleteObjectVersion,
// s3:BypassGovernanceRetention), with the policies every group holds
// alike; a key of another group it then deletes on that group's leader
// (POST /_b3/v1/delete on the node-to-node side of the cluster port),
// which decides the deletion as for a DELETE of that key — under its key
// lock, its version above the key's current one, Object Lock checked, its
// ownership and any fence checked at the commit — and answers the result
// or the S3 error.

// remoteDelete is one deletion asked of the owner's leader.
type remoteDelete struct {
	Bucket    string `json:"bucket"`
	Key       string `json:"key"`
	VersionID string `json:"versionId,omitempty"`
	Bypass    bool   `json:"bypassGovernance,omitempty"`
	// Plain: DeleteObject (a bucket that never had versioning), else
	// DeleteVersioned.
	Plain bool `json:"plain,omitempty"`
}

// remoteAnswer is its answer: the result, or the S3 error.
type remoteAnswer struct {
	Result objstore.DeleteResult `json:"result"`
	Object *meta.Object          `json:"object,omitempty"` // of a plain deletion
	Error  *remoteError          `json:"error,omitempty"`
}

type remoteError struct {
	Code    string `json:"code"`
	Status  int    `json:"status"`
	Message string `json:"message"`
}

// ownerElsewhere returns the group that owns bucket/key if it is not
// this node's, by this node's map ("" otherwise, and with no map).
func (s *Store) ownerElsewhere(bucket, key string) string {
	m := s.node.cmap.load()
	if m == nil {
		return ""
	}
	if g := m.Owner(bucket, key); g != s.node.cfg.Group {
		return g
	}
	return ""
}

// deleteElsewhere has the leader of group decide req; it retries, for a
// few seconds, a leader that moved and a map that changed.
func (s *Store) deleteElsewhere(ctx context.Context, group string, req remoteDelete) (remoteAnswer, error) {
	ms := s.node.mesh()
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	var last error
	for attempt := 0; attempt < 8; attempt++ {
		if attempt > 0 {
			time.Sleep(time.Duration(attempt) * 100 * time.Millisecond)
			if g := s.ownerElsewhere(req.Bucket, req.Key); g != group {
				if g == "" {
					return remoteAnswer{}, errWrongGroup // back here: the client retries
				}
				group = g
			}
		}
		g := s.node.cmap.load().Group(group)
		if g == nil {
			return remoteAnswer{}, errWrongGroup
		}
		addr, err := ms.leaderOf(ctx, g)
		if err != nil {
			last = err
			continue
		}
		var ans remoteAnswer
		if err := ms.postJSON(ctx, addr, "/_b3/v1/delete", req, &ans); err != nil {
			ms.leaders.forget(group, addr)
			last = err
			continue
		}
		if ans.Error != nil && ans.Error.Status == http.StatusServiceUnavailable {
			// Not the leader, or not the owner (any more), or fenced:
			// again, as a client would.
			ms.leaders.forget(group, addr)
			last = &s3api.APIError{Code: ans.Error.Code, Status: ans.Error.Status, Message: ans.Error.Message}
			continue
		}
		return ans, nil
	}
	s.node.log.Warn("delete a key of another group", "group", group, "bucket", req.Bucket, "key", req.Key, "err", last)
	var ae *s3api.APIError
	if errors.As(last, &ae) {
		return remoteAnswer{}, ae
	}
	return remoteAnswer{}, errNoQuorum
}

// err is ans's error, as s3api renders it.
func (ans remoteAnswer) err() error {
	if ans.Error == nil {
		return nil
	}
	return &s3api.APIError{Code: ans.Error.Code, Status: ans.Error.Status, Message: ans.Error.Message}
}

// handleDelete serves POST /_b3/v1/delete: a deletion another node
// authorized, of a key this group owns; on its leader.
func (n *Node) handleDelete(w http.ResponseWriter, r *http.Request) {
	var req remoteDelete
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&req); err != nil || req.Bucket == "" || req.Key == "" {
		admin.WriteJSON(w, http.StatusBadRequest, map[string]string{"error": "want {bucket, key, versionId, bypassGovernance, plain}"})
		return
	}
	s := n.backend
	var ans remoteAnswer
	var err error
	if !n.leading() {
		err = errNotLeader
	} else if s.ownerElsewhere(req.Bucket, req.Key) != "" {
		err = errWrongGroup // never passed on: one hop
	} else if req.Plain {
		ans.Object, err = s.deleteObjectHere(req.Bucket, req.Key)
		ans.Result.VersionID = req.VersionID
	} else {
		ans.Result, err = s.deleteVersionedHere(req.Bucket, req.Key, req.VersionID, req.Bypass)
	}
	if err != nil {
		code, status, msg := s3api.ErrorCode(err)
		if status == http.StatusInternalServerError {
			n.log.Error("delete of a key asked by another group", "bucket", req.Bucket, "key", req.Key, "err", err)
		}
		ans = remoteAnswer{Error: &remoteError{Code: code, Status: status, Message: msg}}
	}
	admin.WriteJSON(w, http.StatusOK, ans)
}
