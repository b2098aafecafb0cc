package cluster

import (
	"bytes"
	"context"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"strings"

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
	if key == "" {
		key, _ = r.Context().Value(formKeyCtx{}).(string)
	}
	if bucket == "" || key == "" {
		return partition.FirstGroup
	}
	return m.Owner(bucket, key)
}

// formKeyLimit bounds what is read ahead of a browser form upload's file
// to find its key (S3 allows 20 KB of form fields).
const formKeyLimit = 1 << 20

type formKeyCtx struct{}

// withFormKey finds the key of a browser form upload (POST Object: a
// multipart form to a bucket's URL), which names it in a form field
// before the file, not in the URL: it reads the fields up to the file's
// header (at most formKeyLimit bytes), gives the request a body that
// replays them, and keeps the key — with ${filename} replaced as S3 does
// — for groupOf. A form it cannot read is left to the first group, which
// answers it as any malformed form.
func withFormKey(r *http.Request, domains []string) *http.Request {
	ct := r.Header.Get("Content-Type")
	if r.Method != http.MethodPost || !strings.HasPrefix(strings.ToLower(ct), "multipart/form-data") {
		return r
	}
	if bucket, key := s3api.SplitTarget(r, domains); bucket == "" || key != "" {
		return r
	}
	_, params, err := mime.ParseMediaType(ct)
	if err != nil || params["boundary"] == "" {
		return r
	}
	var read bytes.Buffer
	mr := multipart.NewReader(io.TeeReader(io.LimitReader(r.Body, formKeyLimit), &read), params["boundary"])
	var key, filename string
	for {
		p, err := mr.NextPart()
		if err != nil {
			break
		}
		name := strings.ToLower(p.FormName())
		if name == "file" {
			filename = p.FileName()
			break
		}
		if name == "key" {
			v, _ := io.ReadAll(io.LimitReader(p, 4096))
			key = string(v)
		}
	}
	r.Body = replayed{Reader: io.MultiReader(bytes.NewReader(read.Bytes()), r.Body), Closer: r.Body}
	if key == "" {
		return r
	}
	key = strings.ReplaceAll(key, "${filename}", filename)
	return r.WithContext(context.WithValue(r.Context(), formKeyCtx{}, key))
}

// replayed is a body whose first bytes were read ahead and are read again.
type replayed struct {
	io.Reader
	io.Closer
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
