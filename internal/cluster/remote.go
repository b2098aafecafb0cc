package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
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

// deleteElsewhere has the leader of the group owning the key decide req.
func (s *Store) deleteElsewhere(ctx context.Context, req remoteDelete) (remoteAnswer, error) {
	var ans remoteAnswer
	err := s.askOwner(ctx, req.Bucket, req.Key, "/_b3/v1/delete", req, func(resp *http.Response) error {
		defer resp.Body.Close()
		return json.NewDecoder(resp.Body).Decode(&ans)
	})
	return ans, err
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
		e := remoteErrorOf(err)
		if e.Status == http.StatusInternalServerError {
			n.log.Error("delete of a key asked by another group", "bucket", req.Bucket, "key", req.Key, "err", err)
		}
		admin.WriteJSON(w, e.Status, remoteAnswer{Error: e})
		return
	}
	admin.WriteJSON(w, http.StatusOK, ans)
}

// Reads of keys another group owns.
//
// A copy's source (CopyObject, UploadPartCopy) is named in a header and
// may be a key of another group than the destination's, whose leader runs
// the copy; and an authorization that reads an object's tags
// (s3:ExistingObjectTag) may name one (DeleteObjects). Those reads go to
// the owner's leader (POST /_b3/v1/read): "head" answers HeadObject or
// HeadVersion, "open" the record OpenObject or OpenVersion finds with its
// outcome, "read" streams the stored bytes of one version, a range the
// caller chose from that record — the bytes as stored (ciphertext of an
// encrypted object), so that the caller reads them as it reads its own.
// The caller has authorized the request; the record the owner answers is
// the one the caller's checks judge.

// remoteRead is a read asked of the owner's leader.
type remoteRead struct {
	Op        string `json:"op"` // "head", "open" or "read"
	Bucket    string `json:"bucket"`
	Key       string `json:"key"`
	VersionID string `json:"versionId,omitempty"` // "": the current record
	// Of "read": the version the caller judged, and the bytes.
	Version uint64 `json:"version,omitempty"`
	Offset  int64  `json:"offset,omitempty"`
	Length  int64  `json:"length,omitempty"`
}

// errChanged: the key's record is no longer the version a read named.
var errChanged = &s3api.APIError{Code: "SlowDown", Status: 503, Message: "The object changed while it was read; retry."}

// remoteSentinels are the objstore errors callers test for by identity.
var remoteSentinels = []error{objstore.ErrNoSuchKey, objstore.ErrNoSuchVersion, objstore.ErrNoSuchBucket,
	objstore.ErrDeleteMarker, objstore.ErrInvalidVersionID}

// errOf is e as the caller's code tests for it: an objstore sentinel
// where the code is one's, else the S3 error.
func (e *remoteError) errOf() error {
	if e == nil {
		return nil
	}
	if e.Code == changedCode {
		return errChanged
	}
	for _, s := range remoteSentinels {
		if code, _, msg := s3api.ErrorCode(s); code == e.Code && msg == e.Message {
			return s
		}
	}
	return &s3api.APIError{Code: e.Code, Status: e.Status, Message: e.Message}
}

// changedCode carries errChanged across the hop as itself (its 503 would
// be retried by askOwner with the same stale version, and come back as
// another error): the caller reads the record again (openElsewhere).
const changedCode = "B3RecordChanged"

func remoteErrorOf(err error) *remoteError {
	if errors.Is(err, errChanged) {
		return &remoteError{Code: changedCode, Status: http.StatusConflict, Message: err.Error()}
	}
	code, status, msg := s3api.ErrorCode(err)
	return &remoteError{Code: code, Status: status, Message: msg}
}

// askOwner sends req to the leader of the group owning bucket/key, for a
// few seconds while leaders move and the map changes, and returns the
// answer once one is not a 503; decode reads a 200's body.
func (s *Store) askOwner(ctx context.Context, bucket, key, path string, req any, decode func(*http.Response) error) error {
	ms := s.node.mesh()
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	var last error = errNoQuorum
	for attempt := 0; attempt < 8; attempt++ {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				return last
			case <-time.After(time.Duration(attempt) * 100 * time.Millisecond):
			}
		}
		group := s.ownerElsewhere(bucket, key)
		g := s.node.cmap.load().Group(group)
		if group == "" || g == nil {
			return errWrongGroup // this group's now: the client retries
		}
		addr, err := ms.leaderOf(ctx, g)
		if err != nil {
			last = errNoQuorum
			continue
		}
		body, _ := json.Marshal(req)
		hr, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+path, bytes.NewReader(body))
		if err != nil {
			return err
		}
		resp, err := ms.http.Do(hr)
		if err != nil {
			ms.leaders.forget(group, addr)
			last = errNoQuorum
			continue
		}
		if resp.StatusCode == http.StatusOK {
			return decode(resp) // decode closes the body
		}
		var ans remoteAnswer
		_ = json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&ans)
		resp.Body.Close()
		if ans.Error == nil {
			ans.Error = &remoteError{Code: "SlowDown", Status: 503, Message: "the owner answered " + resp.Status}
		}
		if ans.Error.Status != http.StatusServiceUnavailable {
			return ans.Error.errOf()
		}
		ms.leaders.forget(group, addr) // not the leader, not the owner, fenced: again
		last = ans.Error.errOf()
	}
	return last
}

// recordElsewhere answers a "head" or "open" of a key another group owns.
func (s *Store) recordElsewhere(ctx context.Context, req remoteRead) (*meta.Object, error) {
	var ans remoteAnswer
	err := s.askOwner(ctx, req.Bucket, req.Key, "/_b3/v1/read", req, func(resp *http.Response) error {
		defer resp.Body.Close()
		return json.NewDecoder(resp.Body).Decode(&ans)
	})
	if err != nil {
		return nil, err
	}
	return ans.Object, ans.Error.errOf()
}

// openElsewhere is OpenObject (versionID "") or OpenVersion of a key
// another group owns: the record, rng's choice, then the bytes of that
// version (again from the record if it changed in between).
func (s *Store) openElsewhere(ctx context.Context, bucket, key, versionID string, rng objstore.RangeFunc) (*meta.Object, io.ReadCloser, error) {
	for attempt := 0; ; attempt++ {
		obj, err := s.recordElsewhere(ctx, remoteRead{Op: "open", Bucket: bucket, Key: key, VersionID: versionID})
		if err != nil {
			return obj, nil, err
		}
		off, n, err := rng(obj)
		if err != nil {
			return obj, nil, err
		}
		var body io.ReadCloser
		err = s.askOwner(ctx, bucket, key, "/_b3/v1/read",
			remoteRead{Op: "read", Bucket: bucket, Key: key, VersionID: versionID, Version: obj.Version, Offset: off, Length: n},
			func(resp *http.Response) error {
				if resp.ContentLength != n {
					resp.Body.Close()
					return fmt.Errorf("read %s/%s of another group: %d bytes answered, %d asked", bucket, key, resp.ContentLength, n)
				}
				body = resp.Body
				return nil
			})
		if errors.Is(err, errChanged) && attempt < 3 {
			continue
		}
		if err != nil {
			return nil, nil, err
		}
		return obj, body, nil
	}
}

// handleRead serves POST /_b3/v1/read on the owner's leader.
func (n *Node) handleRead(w http.ResponseWriter, r *http.Request) {
	var req remoteRead
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&req); err != nil || req.Bucket == "" || req.Key == "" {
		admin.WriteJSON(w, http.StatusBadRequest, map[string]string{"error": "want {op, bucket, key, versionId, version, offset, length}"})
		return
	}
	s := n.backend
	fail := func(err error) {
		e := remoteErrorOf(err)
		if e.Status == http.StatusInternalServerError {
			n.log.Error("read of a key asked by another group", "bucket", req.Bucket, "key", req.Key, "err", err)
		}
		admin.WriteJSON(w, e.Status, remoteAnswer{Error: e})
	}
	switch {
	case !n.leading():
		fail(errNotLeader)
		return
	case s.ownerElsewhere(req.Bucket, req.Key) != "":
		fail(errWrongGroup) // never passed on: one hop
		return
	}
	open := func(rng objstore.RangeFunc) (*meta.Object, io.ReadCloser, error) {
		if req.VersionID == "" {
			return s.OpenObject(r.Context(), req.Bucket, req.Key, rng)
		}
		return s.OpenVersion(r.Context(), req.Bucket, req.Key, req.VersionID, rng)
	}
	answer := func(obj *meta.Object, err error) {
		ans := remoteAnswer{}
		if obj != nil {
			o := *obj
			o.Extents, o.Inline = nil, nil // where the bytes lie here; "read" sends them
			ans.Object = &o
		}
		if err != nil {
			ans.Error = remoteErrorOf(err)
		}
		admin.WriteJSON(w, http.StatusOK, ans)
	}
	switch req.Op {
	case "head":
		var obj *meta.Object
		var err error
		if req.VersionID == "" {
			obj, err = s.HeadObject(req.Bucket, req.Key)
		} else {
			obj, err = s.HeadVersion(req.Bucket, req.Key, req.VersionID)
		}
		answer(obj, err)
	case "open":
		obj, rc, err := open(func(*meta.Object) (int64, int64, error) { return 0, 0, nil })
		if rc != nil {
			rc.Close()
		}
		answer(obj, err)
	case "read":
		obj, rc, err := open(func(o *meta.Object) (int64, int64, error) {
			if o.Version != req.Version {
				return 0, 0, errChanged
			}
			if req.Offset < 0 || req.Length < 0 || req.Offset+req.Length > o.Size {
				return 0, 0, fmt.Errorf("%w: range %d+%d of %d bytes", errChanged, req.Offset, req.Length, o.Size)
			}
			return req.Offset, req.Length, nil
		})
		if err != nil {
			fail(err)
			return
		}
		defer rc.Close()
		_ = obj
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Content-Length", strconv.FormatInt(req.Length, 10))
		w.WriteHeader(http.StatusOK)
		if _, err := io.Copy(w, rc); err != nil {
			n.log.Warn("read of a key asked by another group: cut short", "bucket", req.Bucket, "key", req.Key, "err", err)
			panic(http.ErrAbortHandler) // the reader sees a cut stream, never a short one taken for whole
		}
	default:
		admin.WriteJSON(w, http.StatusBadRequest, map[string]string{"error": "op: head, open or read"})
	}
}
