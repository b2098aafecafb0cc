package cluster

import (
	"context"
	"net/http"

	"github.com/b3-storage/b3/internal/partition"
	"github.com/b3-storage/b3/internal/s3api"
)

// Routing between groups.
//
// A request that names a key runs on the leader of the group owning the
// key's partition; one that names no key (a bucket's settings, listings,
// the bucket list) on the first group's, which holds the catalogue of
// buckets and users. Any node, and any router, sends a client's request
// straight there over the forward side of the cluster port (forward.go),
// at most one hop; the node that receives a forwarded request checks that
// its group owns it, by its own map, and answers 503 SlowDown with
// wrongGroupHeader if not, so that the sender refreshes its map and the
// client's SDK retries.
//
// Invariant: a node applies a client's write only for a partition its
// group owns in the newest map it knows; the first group's members know
// every map change when it commits (their log holds it).
const (
	wrongGroupHeader = "X-B3-Wrong-Group" // a 503's: the request reached a group that does not own it
	notLeaderHeader  = "X-B3-Not-Leader"  // a 503's: the request reached a member that does not lead
)

// groupOf returns the group a client's request runs on, by m ("": no
// map yet).
func groupOf(m *partition.Map, r *http.Request, domains []string) string {
	if m == nil {
		return ""
	}
	bucket, key := s3api.SplitTarget(r, domains)
	if bucket == "" || key == "" {
		return partition.FirstGroup
	}
	return m.Owner(bucket, key)
}

type targetGroupKey struct{}

// forwardTo sends r to the leader of group g, streaming (the proxy of
// forward.go), and reports whether it could name one; it forgets a leader
// that did not answer or no longer leads.
func forwardTo(ctx context.Context, ms *mesh, g *partition.Group, w http.ResponseWriter, r *http.Request, proxy http.Handler) bool {
	addr, err := ms.leaderOf(ctx, g)
	if err != nil {
		return false
	}
	ctx = context.WithValue(context.WithValue(ctx, targetKey{}, addr), targetGroupKey{}, g.Name)
	proxy.ServeHTTP(w, r.WithContext(ctx))
	return true
}

// noteForwardAnswer forgets the leader a forwarded request reached if it
// answered that it does not lead, or that its group does not own the
// request.
func noteForwardAnswer(ms *mesh, resp *http.Response) {
	group, _ := resp.Request.Context().Value(targetGroupKey{}).(string)
	addr, _ := resp.Request.Context().Value(targetKey{}).(string)
	if group == "" {
		return
	}
	if resp.Header.Get(notLeaderHeader) != "" || resp.Header.Get(wrongGroupHeader) != "" {
		ms.leaders.forget(group, addr)
	}
	resp.Header.Del(notLeaderHeader)
	resp.Header.Del(wrongGroupHeader)
}
