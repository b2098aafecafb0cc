package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/b3-storage/b3/internal/admin"
	"github.com/b3-storage/b3/internal/meta"
	"github.com/b3-storage/b3/internal/objstore"
	"github.com/b3-storage/b3/internal/partition"
	"github.com/b3-storage/b3/internal/s3api"
)

// The catalogue: buckets and users, cluster-wide.
//
// The first group's log decides every bucket and user (S3's bucket calls
// and `b3 admin users`/`buckets` reach its leader: route.go); every other
// group holds a copy in its own log, so that its leader authorizes and
// applies a request by the same buckets and users as the first group's.
//
// Each other group's leader asks the first group's leader for the
// catalogue (GET /_b3/v1/cluster/catalog?group=G&have=V), held until its
// version (the first group's log index of its last bucket or user change)
// passes V; when the catalogue differs from the group's own buckets and
// users, it proposes an opCatalog command carrying the whole catalogue,
// and asks again with have = that version, which tells the first group's
// leader that the group holds it.
//
// A bucket or user change returns to its client only once every other
// group of the map holds it (awaitCatalog, bounded by catalogWait): a
// policy change is in force on every group when the call returns. A
// group that does not answer within that time makes the call fail with
// 503 SlowDown; the change is made and reaches the group when it answers.
//
// Invariant: a group's catalogue only moves forward (versions are the
// first group's log indexes), and an opCatalog makes the group's buckets
// and users exactly the catalogue's: applying it twice changes nothing.
const catalogWait = 15 * time.Second

// catalog is what a group's copy is made of.
type catalog struct {
	Version uint64        `json:"version"`
	Users   []User        `json:"users"`
	Buckets []meta.Bucket `json:"buckets"`
}

// catalogState is kept by the first group's leader: its catalogue's
// version and what each other group acknowledged holding.
type catalogState struct {
	mu      sync.Mutex
	version uint64            // the first group's log index of its last catalogue change
	acked   map[string]uint64 // group → the version it holds
	changed chan struct{}     // closed (and replaced) when either moves
}

func newCatalogState() *catalogState {
	return &catalogState{acked: map[string]uint64{}, changed: make(chan struct{})}
}

func (c *catalogState) watch() (version uint64, acked map[string]uint64, changed <-chan struct{}) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.version, maps(c.acked), c.changed
}

func maps(m map[string]uint64) map[string]uint64 {
	out := make(map[string]uint64, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// note records a catalogue change at index (the apply's), or a group's
// acknowledgment (group != "").
func (c *catalogState) note(group string, index uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if group == "" {
		c.version = max(c.version, index)
	} else {
		c.acked[group] = max(c.acked[group], index)
	}
	close(c.changed)
	c.changed = make(chan struct{})
}

// catalogOp reports whether c changes the catalogue.
func catalogOp(c *command) bool {
	switch c.Op {
	case opCreateBucket, opPutBucket, opDeleteBucket, opAddUser, opRemoveUser:
		return true
	}
	return false
}

// snapshotCatalog returns this node's buckets and users.
func (n *Node) snapshotCatalog(version uint64) (*catalog, error) {
	bs, err := n.store.ListBuckets()
	if err != nil {
		return nil, err
	}
	return &catalog{Version: version, Users: n.users.snapshot(), Buckets: bs}, nil
}

// handleCatalog serves GET /_b3/v1/cluster/catalog?group=G&have=V on the
// first group's leader: the catalogue once its version passes V (held up
// to mapWait; 204 if it does not).
func (n *Node) handleCatalog(w http.ResponseWriter, r *http.Request) {
	if !n.firstGroup() || !n.leading() {
		w.Header().Set(notLeaderHeader, "1")
		admin.WriteJSON(w, http.StatusServiceUnavailable, map[string]string{"error": "ask the leader of group " + partition.FirstGroup})
		return
	}
	group := r.URL.Query().Get("group")
	have, _ := strconv.ParseUint(r.URL.Query().Get("have"), 10, 64)
	if group != "" {
		n.catalog.note(group, have)
	}
	ctx, cancel := context.WithTimeout(r.Context(), mapWait)
	defer cancel()
	for {
		version, _, changed := n.catalog.watch()
		if version > have {
			break
		}
		select {
		case <-changed:
			continue
		case <-ctx.Done():
			w.WriteHeader(http.StatusNoContent)
			return
		}
	}
	// The version is read before the buckets: the copy is at least as new.
	version, _, _ := n.catalog.watch()
	c, err := n.snapshotCatalog(version)
	if err != nil {
		admin.WriteJSON(w, http.StatusInternalServerError, map[string]string{"error": err.Error()})
		return
	}
	admin.WriteJSON(w, http.StatusOK, c)
}

// awaitCatalog waits until every other group of the map holds the
// catalogue at version (or later); run by the first group's leader after
// a change. A group that does not within catalogWait is named in the
// error.
func (n *Node) awaitCatalog(ctx context.Context, version uint64) error {
	return n.awaitCatalogOf(ctx, version, "")
}

// awaitCatalogOf is awaitCatalog for one group only ("": every group
// but drained ones); a switch waits so for its destination, which
// owns nothing before and may have been drained.
func (n *Node) awaitCatalogOf(ctx context.Context, version uint64, only string) error {
	m := n.cmap.load()
	if m == nil || len(m.Groups) == 1 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, catalogWait)
	defer cancel()
	for {
		_, acked, changed := n.catalog.watch()
		var behind []string
		m := n.cmap.load()
		counts := m.Counts()
		for _, g := range m.Groups {
			if only != "" && g.Name != only {
				continue
			}
			if only == "" && g.Draining && counts[g.Name] == 0 {
				continue // drained: it may be stopped; a switch to it waits for its copy (handleMoveChange)
			}
			if g.Name != n.cfg.Group && acked[g.Name] < version {
				behind = append(behind, g.Name)
			}
		}
		if len(behind) == 0 {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return &s3api.APIError{Code: "SlowDown", Status: http.StatusServiceUnavailable,
				Message: fmt.Sprintf("The change is made, but groups %v do not hold it yet; it reaches them when they answer.", behind)}
		}
	}
}

// followCatalog keeps this group's copy of the catalogue; run by another
// group's leader while it leads.
func (n *Node) followCatalog(ctx context.Context) {
	var have uint64
	for ctx.Err() == nil && n.leading() {
		c, err := n.fetchCatalog(ctx, have)
		if err != nil {
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
			continue
		}
		if c == nil {
			continue // no change within mapWait
		}
		if !n.holdsCatalog(c) {
			if _, err := n.propose(&command{Op: opCatalog, Catalog: c}); err != nil {
				n.log.Warn("apply the cluster's buckets and users", "version", c.Version, "err", err)
				select {
				case <-ctx.Done():
				case <-time.After(5 * time.Second):
				}
				continue
			}
		}
		// Held once every write checked against an older catalogue has
		// committed: a bucket's deletion mark then stops them all
		// (bucketdelete.go).
		n.fenceMu.Lock()
		//lint:ignore SA2001 an empty critical section: every write checked before is committed
		n.fenceMu.Unlock()
		have = c.Version
	}
}

// fetchCatalog asks the first group's leader for the catalogue past have
// (nil: none came).
func (n *Node) fetchCatalog(ctx context.Context, have uint64) (*catalog, error) {
	ms := n.mesh()
	addr, err := n.firstGroupLeader(ctx)
	if err != nil {
		return nil, err
	}
	data, err := ms.poll(ctx, addr, "/_b3/v1/cluster/catalog?group="+n.cfg.Group+"&have="+strconv.FormatUint(have, 10))
	if err != nil {
		ms.leaders.forget(partition.FirstGroup, addr)
		return nil, err
	}
	if data == nil {
		return nil, nil
	}
	var c catalog
	if err := json.Unmarshal(data, &c); err != nil {
		return nil, err
	}
	return &c, nil
}

// holdsCatalog reports whether this node's buckets and users are c's.
func (n *Node) holdsCatalog(c *catalog) bool {
	mine, err := n.snapshotCatalog(c.Version)
	if err != nil {
		return false
	}
	users := slices.Clone(c.Users)
	slices.SortFunc(users, func(a, b User) int { return strings.Compare(a.AccessKey, b.AccessKey) })
	return reflect.DeepEqual(norm(mine.Buckets), norm(c.Buckets)) && reflect.DeepEqual(mine.Users, users)
}

// norm makes buckets comparable: by name, empty slices as nil, times in UTC.
func norm(bs []meta.Bucket) []meta.Bucket {
	out := slices.Clone(bs)
	slices.SortFunc(out, func(a, b meta.Bucket) int { return strings.Compare(a.Name, b.Name) })
	for i := range out {
		data, _ := json.Marshal(out[i])
		var b meta.Bucket
		_ = json.Unmarshal(data, &b)
		b.Created = b.Created.UTC()
		out[i] = b
	}
	return out
}

// applyCatalog makes this node's buckets and users c's (opCatalog). A
// bucket the catalogue no longer has is deleted only if this group holds
// nothing of it; otherwise it stays, and the error says so (DeleteBucket
// asks every group first: catalog.go does not race it yet).
func (f *fsm) applyCatalog(c *catalog, index uint64) error {
	if c == nil {
		return errors.New("cluster: catalog command without a catalog")
	}
	if err := f.users.replace(c.Users); err != nil {
		return err
	}
	have, err := f.store.ListBuckets()
	if err != nil {
		return err
	}
	keep := map[string]bool{}
	for i := range c.Buckets {
		b := &c.Buckets[i]
		keep[b.Name] = true
		exists := slices.ContainsFunc(have, func(x meta.Bucket) bool { return x.Name == b.Name })
		if err := f.store.ApplyPutBucket(b, !exists, index); err != nil {
			return err
		}
	}
	var errs []error
	for _, b := range have {
		if !keep[b.Name] {
			if err := f.store.ApplyDeleteBucket(b.Name, index); err != nil {
				errs = append(errs, fmt.Errorf("bucket %s, deleted in the cluster, stays here: %w", b.Name, err))
			}
		}
	}
	return errors.Join(errs...)
}

// catalogVersion is the version of this node's catalogue (the first
// group's: the index of its last bucket or user change it applied).
func (n *Node) catalogVersion() uint64 {
	v, _, _ := n.catalog.watch()
	return v
}

// catalogLeader returns the cluster address of the node that decides
// bucket and user changes: the first group's leader.
func (n *Node) catalogLeader(ctx context.Context) (string, error) {
	if n.firstGroup() {
		addr, id := n.raft.LeaderWithID()
		if addr == "" || string(id) == n.cfg.ID {
			return "", errNoQuorum
		}
		return string(addr), nil
	}
	return n.firstGroupLeader(ctx)
}

// firstGroupLeader returns the cluster address of the first group's
// leader, as another group's node finds it.
func (n *Node) firstGroupLeader(ctx context.Context) (string, error) {
	g := n.cmap.load().Group(partition.FirstGroup)
	if g == nil {
		return "", errNoQuorum
	}
	return n.mesh().leaderOf(ctx, g)
}

// othersHoldNothing checks, before the first group deletes bucket, that
// no other group holds an object of it (a group's leader answers for its
// group, GET /_b3/v1/cluster/bucket-empty). A write that reaches another
// group between the check and the deletion keeps the bucket there (the
// opCatalog apply says so in the log): the fence that closes this window
// is not built yet (docs/CLUSTER.md).
func (n *Node) othersHoldNothing(bucket string) error {
	m := n.cmap.load()
	if m == nil || len(m.Groups) == 1 {
		return nil
	}
	ms := n.mesh()
	counts := m.Counts()
	for _, g := range m.Groups {
		if g.Name == n.cfg.Group || counts[g.Name] == 0 {
			continue // what a group owning nothing holds is no bucket's (move.go)
		}
		ctx, cancel := context.WithTimeout(n.closing, 5*time.Second)
		addr, err := ms.leaderOf(ctx, &g)
		var ans struct{ Empty bool }
		if err == nil {
			err = getJSON(ctx, ms.http, addr, "/_b3/v1/cluster/bucket-empty?bucket="+url.QueryEscape(bucket), &ans)
		}
		cancel()
		switch {
		case err != nil:
			ms.leaders.forget(g.Name, addr)
			return &s3api.APIError{Code: "SlowDown", Status: http.StatusServiceUnavailable,
				Message: "Group " + g.Name + " does not answer whether it holds objects of the bucket; retry."}
		case !ans.Empty:
			return objstore.ErrBucketNotEmpty
		}
	}
	return nil
}

// handleBucketEmpty answers whether this group holds no object of a
// bucket; on its leader.
func (n *Node) handleBucketEmpty(w http.ResponseWriter, r *http.Request) {
	if !n.leading() {
		w.Header().Set(notLeaderHeader, "1")
		admin.WriteJSON(w, http.StatusServiceUnavailable, map[string]string{"error": "not the leader"})
		return
	}
	empty, err := n.store.Meta().BucketEmpty(r.URL.Query().Get("bucket"))
	if err != nil {
		admin.WriteJSON(w, http.StatusInternalServerError, map[string]string{"error": err.Error()})
		return
	}
	admin.WriteJSON(w, http.StatusOK, map[string]bool{"Empty": empty})
}

// usage counts objects and bytes per bucket across the groups: each
// group's leader counts the keys of the partitions its group owns
// (GET /_b3/v1/usage), never what a move left behind; the admin API's
// bucket list and object counts (b3 admin buckets, stats --objects).
func (n *Node) usage(ctx context.Context) (map[string][2]int64, error) {
	m := n.cmap.load()
	if m == nil || len(m.Groups) == 1 {
		return admin.Usage(n.store, nil)
	}
	ms := n.mesh()
	total := map[string][2]int64{}
	counts := m.Counts()
	for _, g := range m.Groups {
		if counts[g.Name] == 0 {
			continue
		}
		ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		addr, err := ms.leaderOf(ctx, &g)
		var part map[string][2]int64
		if err == nil {
			err = getJSON(ctx, ms.http, addr, "/_b3/v1/usage", &part)
		}
		cancel()
		if err != nil {
			ms.leaders.forget(g.Name, addr)
			return nil, fmt.Errorf("usage of group %s: %w", g.Name, err)
		}
		for b, u := range part {
			t := total[b]
			total[b] = [2]int64{t[0] + u[0], t[1] + u[1]}
		}
	}
	return total, nil
}

// handleUsage serves GET /_b3/v1/usage: this group's objects and bytes
// per bucket, of the partitions it owns; on its leader.
func (n *Node) handleUsage(w http.ResponseWriter, r *http.Request) {
	if !n.leading() {
		w.Header().Set(notLeaderHeader, "1")
		admin.WriteJSON(w, http.StatusServiceUnavailable, map[string]string{"error": "not the leader"})
		return
	}
	m := n.cmap.load()
	out, err := admin.Usage(n.store, func(bucket, key string) bool { return m == nil || m.Owner(bucket, key) == n.cfg.Group })
	if err != nil {
		admin.WriteJSON(w, http.StatusInternalServerError, map[string]string{"error": err.Error()})
		return
	}
	admin.WriteJSON(w, http.StatusOK, out)
}
