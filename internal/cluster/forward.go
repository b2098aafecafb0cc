package cluster

import (
	"cmp"
	"crypto/tls"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httputil"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/raft"

	"github.com/b3-storage/b3/internal/admin"
	"github.com/b3-storage/b3/internal/partition"
)

// Forwarding S3 requests to the leader.
//
// A node that does not lead forwards each S3 request it receives on
// --address to the leader, streaming, over a connection of its own kind
// (protoForward, mux.go): the leader serves those connections with the S3
// API and nothing else. The node-to-node endpoints (/_b3/v1/...) live on
// the other HTTP side, so a client's path can never name one of them,
// whatever it asks a follower for.
//
// The request keeps what the S3 API authorizes on: its signature and
// headers as the client sent them (Host included: the signature covers
// it), and the client's own address and TLS state, which the forwarding
// node writes into forwardClientHeader and forwardTLSHeader. Those
// headers mean something only on the forward side, which only a member
// can open; there the leader moves them back into the request
// (RemoteAddr, TLS) for aws:SourceIp and aws:SecureTransport, and drops
// them. A client that sends them itself gains nothing: the forwarding
// node overwrites them, and the leader's client port never reads them.
const (
	forwardClientHeader = "X-B3-Forwarded-Client" // the client's ip:port as the receiving node saw it
	forwardTLSHeader    = "X-B3-Forwarded-Tls"    // "1": the client's connection was TLS; "0": it was not
)

type targetKey struct{}

// newProxy is the forward to the leader; serveClient puts the leader's
// cluster address in the request's context (targetKey).
func (n *Node) newProxy() *httputil.ReverseProxy {
	return newForwardProxy(n.mesh(), n.peerTransport(protoForward), n.log)
}

// newForwardProxy forwards a client's request, streaming, to the cluster
// address in its context (targetKey), over transport (protoForward).
func newForwardProxy(ms *mesh, transport http.RoundTripper, log *slog.Logger) *httputil.ReverseProxy {
	return &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			target, _ := pr.In.Context().Value(targetKey{}).(string)
			pr.Out.URL.Scheme = "http"
			pr.Out.URL.Host = target
			// The signature covers Host: keep the client's.
			pr.Out.Host = pr.In.Host
			// Rewrite drops X-Forwarded-*; a proxy in front of this
			// node may have said the client came over https.
			if p := pr.In.Header.Values("X-Forwarded-Proto"); len(p) > 0 {
				pr.Out.Header["X-Forwarded-Proto"] = p
			}
			setForwarded(pr.Out.Header, pr.In)
		},
		Transport:     transport,
		FlushInterval: -1,
		// A buffer per answer copied would be 32 KiB of garbage each.
		BufferPool: proxyBuffers,
		ModifyResponse: func(resp *http.Response) error {
			noteForwardAnswer(ms, resp)
			return nil
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			target, _ := r.Context().Value(targetKey{}).(string)
			if g, _ := r.Context().Value(targetGroupKey{}).(string); g != "" {
				ms.leaders.forget(g, target)
			}
			log.Warn("forward to the leader failed", "method", r.Method, "path", r.URL.Path, "leader", target, "err", err)
			slowDown(w, "the leader did not answer")
		},
	}
}

// proxyBuffers are the forward proxies' copy buffers.
var proxyBuffers = &bufferPool{p: sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}}

type bufferPool struct{ p sync.Pool }

func (b *bufferPool) Get() []byte  { return *b.p.Get().(*[]byte) }
func (b *bufferPool) Put(x []byte) { b.p.Put(&x) }

// forwardedHandler serves the forward side of the cluster port: S3
// requests other members received from clients, answered only while
// this node leads (never forwarded again, so a request takes at most one
// hop).
func (n *Node) forwardedHandler() http.Handler {
	// Forwarded requests are clients' work: the pacer holds this node's
	// background work back while they run, as for requests on --address.
	return n.pacer.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r, ok := asForwardedBy(r)
		if !ok {
			http.Error(w, "a forwarded request must name its client ("+forwardClientHeader+", "+forwardTLSHeader+")", http.StatusBadRequest)
			return
		}
		if why := n.notJoined(); why != "" {
			w.Header().Set(notLeaderHeader, "1")
			slowDown(w, why)
			return
		}
		r = withFormKey(r, n.cfg.Domains)
		if g := groupOf(n.cmap.load(), r, n.cfg.Domains); g != "" && g != n.cfg.Group {
			w.Header().Set(wrongGroupHeader, "1")
			slowDown(w, "group "+n.cfg.Group+" does not own this request (group "+g+" does); retry")
			return
		}
		// A node elected a moment ago may still be applying what its
		// predecessor committed (the barrier): wait for it, not longer.
		deadline := time.Now().Add(leaderWait)
		for !n.leading() {
			if n.raft.State() != raft.Leader || time.Now().After(deadline) || r.Context().Err() != nil {
				w.Header().Set(notLeaderHeader, "1")
				slowDown(w, cmp.Or(n.notServing(), "this node does not lead"))
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
		n.serveLeader(w, r)
	}))
}

// setForwarded writes into h, over whatever a client sent under those
// names, the address and TLS state of the client connection in.
func setForwarded(h http.Header, in *http.Request) {
	h.Set(forwardClientHeader, in.RemoteAddr)
	tlsState := "0"
	if in.TLS != nil {
		tlsState = "1"
	}
	h.Set(forwardTLSHeader, tlsState)
}

// asForwardedBy returns r as the client sent it to the member that
// forwarded it: the client's address and TLS state from the forward
// headers, which it removes. ok is false if they are missing or malformed
// (a member of another build, or a bug): the request is refused rather
// than judged with the forwarding node's address.
func asForwardedBy(r *http.Request) (_ *http.Request, ok bool) {
	addr, tlsState := r.Header.Get(forwardClientHeader), r.Header.Get(forwardTLSHeader)
	if _, err := netip.ParseAddrPort(addr); err != nil {
		return r, false
	}
	r = r.WithContext(r.Context()) // a shallow copy whose fields are ours
	r.RemoteAddr = addr
	switch tlsState {
	case "1":
		// The client's TLS ended at the forwarding node; what the S3 API
		// asks of r.TLS is only whether there was one.
		r.TLS = &tls.ConnectionState{HandshakeComplete: true}
	case "0":
		r.TLS = nil
	default:
		return r, false
	}
	r.Header.Del(forwardClientHeader)
	r.Header.Del(forwardTLSHeader)
	return r, true
}

// The admin API's cluster-wide changes.
//
// An admin request that changes buckets or users (leaderAdminPatterns) is
// made by the leader, whose admin API writes through the log (its
// BucketWriter is the replicated Store): a member that does not lead
// checks the caller's admin token, then hands the request to the leader
// on the node-to-node side (adminForwardPrefix). The leader runs it as its
// own admin API would, under its own token: the caller was authorized by
// the member it called, and only a member can reach that side.
const adminForwardPrefix = "/_b3/v1/admin/"

var leaderAdminPatterns = []string{
	"PUT /admin/v1/buckets/{bucket}/owner",
	"PUT /admin/v1/buckets/{bucket}/hls",
	"DELETE /admin/v1/buckets/{bucket}",
	"DELETE /admin/v1/users/{accessKey}",
}

// setAdminLeader makes inner, called with token, the handler of admin
// changes forwarded to this node.
func (n *Node) setAdminLeader(inner http.Handler, token string) {
	m := http.NewServeMux()
	for _, pattern := range leaderAdminPatterns {
		m.Handle(pattern, inner)
	}
	var h http.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Header.Set("Authorization", "Bearer "+token)
		m.ServeHTTP(w, r)
	})
	n.adminLeader.Store(&h)
}

// adminOnLeader runs an admin change here when this node leads, and has
// the leader run it otherwise.
func (n *Node) adminOnLeader(w http.ResponseWriter, r *http.Request) {
	if n.leading() && n.firstGroup() {
		(*n.adminLeader.Load()).ServeHTTP(w, r)
		return
	}
	// Buckets and users are the first group's (catalog.go).
	addr, err := n.catalogLeader(r.Context())
	if err != nil {
		admin.WriteJSON(w, http.StatusServiceUnavailable, map[string]string{"error": "no leader elected; retry"})
		return
	}
	target := "http://" + addr + strings.TrimSuffix(adminForwardPrefix, "/") + r.URL.EscapedPath()
	if r.URL.RawQuery != "" {
		target += "?" + r.URL.RawQuery
	}
	req, err := http.NewRequestWithContext(r.Context(), r.Method, target, r.Body)
	if err != nil {
		admin.WriteJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
		return
	}
	req.ContentLength = r.ContentLength
	req.Header.Set("Content-Type", r.Header.Get("Content-Type"))
	req.Header.Set(admin.ActorHeader, r.Header.Get(admin.ActorHeader))
	setForwarded(req.Header, r)
	resp, err := n.peerClient.Do(req)
	if err != nil {
		admin.WriteJSON(w, http.StatusServiceUnavailable, map[string]string{"error": fmt.Sprintf("the leader %s did not answer: %v; retry", addr, err)})
		return
	}
	defer resp.Body.Close()
	w.Header().Set("Content-Type", resp.Header.Get("Content-Type"))
	w.WriteHeader(resp.StatusCode)
	_, _ = io.Copy(w, resp.Body)
}

// handleAdminForward serves an admin change another member forwarded
// (adminOnLeader), while this node leads.
func (n *Node) handleAdminForward(w http.ResponseWriter, r *http.Request) {
	h := n.adminLeader.Load()
	switch {
	case h == nil:
		admin.WriteJSON(w, http.StatusServiceUnavailable, map[string]string{"error": "the leader " + n.cfg.ID + " has no admin API (start every node with an admin token)"})
		return
	case !n.firstGroup():
		// Buckets and users are the first group's (catalog.go).
		admin.WriteJSON(w, http.StatusMisdirectedRequest, map[string]string{"error": "admin changes are made by group " + partition.FirstGroup + "'s leader"})
		return
	case !n.leading():
		admin.WriteJSON(w, http.StatusServiceUnavailable, map[string]string{"error": "this node no longer leads; retry"})
		return
	}
	r, ok := asForwardedBy(r) // the operator's address, for the audit log
	if !ok {
		admin.WriteJSON(w, http.StatusBadRequest, map[string]string{"error": "a forwarded admin change must name its client"})
		return
	}
	r.URL.Path = "/" + strings.TrimPrefix(r.URL.Path, adminForwardPrefix)
	r.URL.RawPath = ""
	(*h).ServeHTTP(w, r)
}
