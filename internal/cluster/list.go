package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/b3-storage/b3/internal/admin"
	"github.com/b3-storage/b3/internal/meta"
	"github.com/b3-storage/b3/internal/objstore"
	"github.com/b3-storage/b3/internal/partition"
)

// Listings across groups.
//
// A listing runs on the first group's leader (route.go), whose Store
// asks every group that owns partitions for the same page of the keys it
// owns (its own store with Keep; the others' leaders by GET
// /_b3/v1/list), all by one map epoch, and merges the pages in key order:
// a page costs O(page × groups), never O(bucket). A group answers with
// the epoch it listed by; when one differs (a move switched meanwhile)
// the listing runs again, so that every key is listed by exactly one
// group.

// listRequest is one group's part of a listing.
type listRequest struct {
	Epoch    uint64                       `json:"epoch"`
	Bucket   string                       `json:"bucket"`
	Objects  *meta.ListOptions            `json:"objects,omitempty"`
	Versions *objstore.VersionListOptions `json:"versions,omitempty"`
	Uploads  *meta.UploadListOptions      `json:"uploads,omitempty"`
}

type listAnswer struct {
	Epoch    uint64                  `json:"epoch"`
	Objects  *meta.ListResult        `json:"objects,omitempty"`
	Versions *meta.VersionListResult `json:"versions,omitempty"`
	Uploads  *meta.UploadListResult  `json:"uploads,omitempty"`
}

// errListEpoch: a group listed by another map than the caller's.
var errListEpoch = errors.New("a group listed by another map epoch")

// listGroups runs req on every group owning partitions of m and returns
// their answers; own's is listed here.
func (s *Store) listGroups(ctx context.Context, m *partition.Map, req listRequest) ([]listAnswer, error) {
	counts := m.Counts()
	var out []listAnswer
	for _, g := range m.Groups {
		if counts[g.Name] == 0 {
			continue
		}
		if g.Name == s.node.cfg.Group {
			a, err := s.listLocal(m, req)
			if err != nil {
				return nil, err
			}
			out = append(out, a)
			continue
		}
		ms := s.node.mesh()
		addr, err := ms.leaderOf(ctx, &g)
		if err != nil {
			return nil, errNoQuorum
		}
		var a listAnswer
		lctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		err = ms.postJSON(lctx, addr, "/_b3/v1/list", req, &a)
		cancel()
		if err != nil {
			ms.leaders.forget(g.Name, addr)
			return nil, fmt.Errorf("%w: list on group %s: %v", errNoQuorum, g.Name, err)
		}
		if a.Epoch != m.Epoch {
			return nil, errListEpoch
		}
		out = append(out, a)
	}
	return out, nil
}

// listLocal lists this group's own keys by m.
func (s *Store) listLocal(m *partition.Map, req listRequest) (listAnswer, error) {
	keep := func(key string) bool { return m.Owner(req.Bucket, key) == s.node.cfg.Group }
	a := listAnswer{Epoch: m.Epoch}
	var err error
	switch {
	case req.Objects != nil:
		o := *req.Objects
		o.Keep = keep
		a.Objects, err = s.Store.ListObjects(req.Bucket, o)
	case req.Versions != nil:
		o := *req.Versions
		o.Keep = keep
		a.Versions, err = s.Store.ListVersions(req.Bucket, o)
	case req.Uploads != nil:
		o := *req.Uploads
		o.Keep = keep
		a.Uploads, err = s.Store.ListUploads(req.Bucket, o)
	}
	return a, err
}

// handleList serves GET /_b3/v1/list on a group's leader: its own keys'
// page, listed by the caller's map epoch (waited for a moment if this
// node does not know it yet).
func (n *Node) handleList(w http.ResponseWriter, r *http.Request) {
	var req listRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		admin.WriteJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
		return
	}
	if !n.leading() {
		w.Header().Set(notLeaderHeader, "1")
		admin.WriteJSON(w, http.StatusServiceUnavailable, map[string]string{"error": "not the leader"})
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
	defer cancel()
	m := n.cmap.wait(ctx, req.Epoch-1)
	if m == nil {
		admin.WriteJSON(w, http.StatusServiceUnavailable, map[string]string{"error": "no map"})
		return
	}
	a, err := n.backend.listLocal(m, req)
	if err != nil {
		admin.WriteJSON(w, http.StatusInternalServerError, map[string]string{"error": err.Error()})
		return
	}
	admin.WriteJSON(w, http.StatusOK, a)
}

// spread returns the map when the cluster has several groups (nil: one,
// whose listing is this store's).
func (s *Store) spread() (*partition.Map, bool) {
	m := s.node.cmap.load()
	return m, m != nil && len(m.Groups) > 1
}

// listRetries bounds the runs of a listing that meets a map change.
const listRetries = 3

// ListObjects lists the bucket's keys across the groups (see above).
func (s *Store) ListObjects(bucket string, o meta.ListOptions) (*meta.ListResult, error) {
	if _, spread := s.spread(); !spread {
		return s.Store.ListObjects(bucket, o)
	}
	answers, err := s.listAcross(listRequest{Bucket: bucket, Objects: &o})
	if err != nil {
		return nil, err
	}
	var pages []*meta.ListResult
	for _, a := range answers {
		if a.Objects != nil {
			pages = append(pages, a.Objects)
		}
	}
	return mergeObjects(pages, o.MaxKeys), nil
}

// listAcross runs req on every group by one map epoch, again if a group
// listed by another.
func (s *Store) listAcross(req listRequest) ([]listAnswer, error) {
	if _, err := s.GetBucket(req.Bucket); err != nil {
		return nil, err
	}
	for attempt := 0; ; attempt++ {
		m := s.node.cmap.load()
		req.Epoch = m.Epoch
		answers, err := s.listGroups(s.node.closing, m, req)
		if errors.Is(err, errListEpoch) {
			if attempt < listRetries {
				time.Sleep(100 * time.Millisecond)
				continue
			}
			err = errMoving // partitions keep moving: the client retries
		}
		return answers, err
	}
}

// mergeObjects merges the groups' pages of one listing: entries (objects
// and common prefixes, a prefix once) in key order, up to max.
func mergeObjects(pages []*meta.ListResult, max int) *meta.ListResult {
	in := make([]page[*meta.Object], len(pages))
	for i, pg := range pages {
		in[i] = page[*meta.Object]{items: pg.Objects, prefixes: pg.CommonPrefixes, truncated: pg.IsTruncated}
	}
	m := merge(in, max, func(o *meta.Object) string { return o.Key })
	out := &meta.ListResult{Objects: m.items, CommonPrefixes: m.prefixes, IsTruncated: m.truncated}
	if m.truncated {
		out.NextMarker = m.lastKey
	}
	return out
}

// page is one group's page of a listing: items (objects or versions) and
// common prefixes, each in key order.
type page[T any] struct {
	items     []T
	prefixes  []string
	truncated bool
}

// merged is the merge of pages: lastKey is the last entry's key (or
// prefix), last the last item if the page ended on one.
type merged[T any] struct {
	page[T]
	lastKey string
	last    *T
}

// merge takes the entries of pages (items by keyOf, common prefixes, a
// prefix once whatever the pages it is in) in key order, up to max (as
// meta.ListOptions.MaxKeys); truncated if entries are left or a page was.
// A key's items are all in one page (a key is in one group), so they stay
// in their page's order.
func merge[T any](pages []page[T], max int, keyOf func(T) string) merged[T] {
	limit := max
	if limit < 0 || limit > meta.DefaultMaxKeys {
		limit = meta.DefaultMaxKeys
	}
	var out merged[T]
	type pos struct{ item, prefix int }
	at := make([]pos, len(pages))
	next := func(i int) (key string, isPrefix, ok bool) {
		pg, a := pages[i], at[i]
		switch {
		case a.item < len(pg.items) && a.prefix < len(pg.prefixes):
			if k := keyOf(pg.items[a.item]); pg.prefixes[a.prefix] >= k {
				return k, false, true
			}
			return pg.prefixes[a.prefix], true, true
		case a.item < len(pg.items):
			return keyOf(pg.items[a.item]), false, true
		case a.prefix < len(pg.prefixes):
			return pg.prefixes[a.prefix], true, true
		}
		return "", false, false
	}
	for count := 0; ; count++ {
		best, bestKey, bestIsPrefix := -1, "", false
		for i := range pages {
			if k, isPrefix, ok := next(i); ok && (best < 0 || k < bestKey) {
				best, bestKey, bestIsPrefix = i, k, isPrefix
			}
		}
		if best < 0 {
			break
		}
		if count == limit {
			out.truncated = true
			break
		}
		if bestIsPrefix {
			for i := range pages {
				if k, isPrefix, ok := next(i); ok && isPrefix && k == bestKey {
					at[i].prefix++
				}
			}
			out.prefixes = append(out.prefixes, bestKey)
			out.last = nil
		} else {
			item := pages[best].items[at[best].item]
			at[best].item++
			out.items = append(out.items, item)
			out.last = &item
		}
		out.lastKey = bestKey
	}
	for _, pg := range pages {
		out.truncated = out.truncated || pg.truncated
	}
	return out
}

// ListVersions lists the bucket's versions across the groups: a key's
// versions are all in one group, so pages merge by key.
func (s *Store) ListVersions(bucket string, o objstore.VersionListOptions) (*meta.VersionListResult, error) {
	if _, spread := s.spread(); !spread {
		return s.Store.ListVersions(bucket, o)
	}
	answers, err := s.listAcross(listRequest{Bucket: bucket, Versions: &o})
	if err != nil {
		return nil, err
	}
	var pages []*meta.VersionListResult
	for _, a := range answers {
		if a.Versions != nil {
			pages = append(pages, a.Versions)
		}
	}
	return mergeVersions(pages, o.MaxKeys), nil
}

// mergeVersions merges the groups' pages of versions, as mergeObjects.
func mergeVersions(pages []*meta.VersionListResult, max int) *meta.VersionListResult {
	in := make([]page[*meta.Object], len(pages))
	for i, pg := range pages {
		in[i] = page[*meta.Object]{items: pg.Versions, prefixes: pg.CommonPrefixes, truncated: pg.IsTruncated}
	}
	m := merge(in, max, func(o *meta.Object) string { return o.Key })
	out := &meta.VersionListResult{Versions: m.items, CommonPrefixes: m.prefixes, IsTruncated: m.truncated}
	if m.truncated {
		out.NextKeyMarker = m.lastKey
		if m.last != nil {
			out.NextVersionMarker = (*m.last).Version
		}
	}
	return out
}

// ListUploads lists the bucket's multipart uploads across the groups: a
// key's uploads are all in one group, so pages merge by key.
func (s *Store) ListUploads(bucket string, o meta.UploadListOptions) (*meta.UploadListResult, error) {
	if _, spread := s.spread(); !spread {
		return s.Store.ListUploads(bucket, o)
	}
	answers, err := s.listAcross(listRequest{Bucket: bucket, Uploads: &o})
	if err != nil {
		return nil, err
	}
	in := make([]page[*meta.Upload], 0, len(answers))
	for _, a := range answers {
		if pg := a.Uploads; pg != nil {
			in = append(in, page[*meta.Upload]{items: pg.Uploads, prefixes: pg.CommonPrefixes, truncated: pg.IsTruncated})
		}
	}
	max := o.MaxUploads
	if max <= 0 {
		max = meta.DefaultMaxKeys
	}
	m := merge(in, max, func(u *meta.Upload) string { return u.Key })
	out := &meta.UploadListResult{Uploads: m.items, CommonPrefixes: m.prefixes, IsTruncated: m.truncated}
	if m.truncated {
		out.NextKeyMarker = m.lastKey
		if m.last != nil {
			out.NextUploadIDMarker = (*m.last).UploadID
		}
	}
	return out, nil
}
