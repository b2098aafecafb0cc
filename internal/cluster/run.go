package cluster

import (
	"bytes"
	"cmp"
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"os"
	"slices"
	"strconv"
	"time"

	"github.com/hashicorp/raft"

	"github.com/b3-storage/b3/internal/admin"
	"github.com/b3-storage/b3/internal/authlimit"
	"github.com/b3-storage/b3/internal/hls"
	"github.com/b3-storage/b3/internal/iolimit"
	"github.com/b3-storage/b3/internal/partition"
	"github.com/b3-storage/b3/internal/s3api"
	"github.com/b3-storage/b3/internal/scrub"
	"github.com/b3-storage/b3/internal/server"
)

// Run starts the node and serves until ctx is done; then it shuts down:
// listeners close, raft stops (no more applies), the store closes.
func Run(ctx context.Context, cfg Config, out io.Writer) error {
	if cfg.Replication == "" {
		cfg.Replication = Sync
	}
	if cfg.Replication != Sync && cfg.Replication != Async {
		return fmt.Errorf("--replication %q: want sync or async", cfg.Replication)
	}
	if cfg.Region == "" {
		cfg.Region = "us-east-1"
	}
	if cfg.Group == "" {
		cfg.Group = partition.FirstGroup
	}
	if err := checkGroupConfig(cfg); err != nil {
		return err
	}
	if cfg.LifecycleInterval <= 0 {
		cfg.LifecycleInterval = time.Hour
	}
	if cfg.Logger == nil {
		return errors.New("cluster: no logger")
	}
	if err := cfg.Limits.Validate(); err != nil {
		return err
	}
	// A second process on a data directory in use is told so first
	// (rather than that its ports are taken, as they will be): the lock is
	// tried and let go, then taken for good by open.
	if _, err := os.Stat(cfg.Root); err == nil {
		unlock, err := server.LockDataDir(cfg.Root)
		if err != nil {
			return err
		}
		unlock()
	}
	// Every port is bound before the data directory is touched: a node
	// that cannot serve (a port in use) leaves no bootstrapped directory
	// behind, and starts cleanly once the port is free.
	clusterLn, err := net.Listen("tcp", cfg.ClusterAddress)
	if err != nil {
		return fmt.Errorf("listen on --cluster-address %s: %w", cfg.ClusterAddress, err)
	}
	// The S3, admin and console listeners and their key pairs, as b3
	// server binds them.
	lns, err := server.Listen(server.Config{Address: cfg.Address, AdminAddress: cfg.AdminAddress, ConsoleAddress: cfg.ConsoleAddress,
		TLSCert: cfg.TLSCert, TLSKey: cfg.TLSKey, AdminTLSCert: cfg.AdminTLSCert, AdminTLSKey: cfg.AdminTLSKey,
		ConsoleTLSCert: cfg.ConsoleTLSCert, ConsoleTLSKey: cfg.ConsoleTLSKey, Logger: cfg.Logger})
	if err != nil {
		clusterLn.Close()
		return err
	}
	n, err := open(cfg)
	if err != nil {
		clusterLn.Close()
		lns.Close()
		return err
	}
	mux := newPortMux(clusterLn, n.secret, n.peerTLS, n.log)
	// Raft restores its latest snapshot inside NewRaft (records only: the
	// filler fetches bytes later), and a node with a Raft state first asks
	// whether it is still a member: a signal meanwhile ends the start.
	started := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
			n.close()
		case <-started:
		}
	}()
	err = n.startRaft(mux)
	close(started)
	if err != nil {
		mux.Close()
		lns.Close()
		_ = n.shutdown()
		return fmt.Errorf("start raft: %w", err)
	}
	n.backend = newStore(n)
	n.store.SetLifecycleActions(leaderLifecycle{n.backend})
	requests := admin.NewRequestMetrics(n.registry)
	n.registry.MustRegister(&admin.StoreCollector{Store: n.store, Limiter: n.limiter}, n.collector())
	if n.scrubber, err = n.newScrubber(); err != nil {
		mux.Close()
		lns.Close()
		_ = n.shutdown()
		return err
	}
	n.registry.MustRegister(&scrub.Collector{Scrubber: n.scrubber})
	if cfg.BucketMetrics > 0 {
		n.registry.MustRegister(admin.NewBucketCollector(n.store, cfg.BucketMetrics, cmp.Or(cfg.BucketMetricsInterval, 5*time.Minute)))
	}
	observe := requests.Observe
	if cfg.AccessLog {
		observe = server.AccessLog(n.log, observe)
	}
	n.api = s3api.New(n.backend, s3api.Config{Region: cfg.Region, Regions: cfg.Regions, Domains: cfg.Domains, Directory: n.users.dir, MediaHeaders: cfg.MediaHeaders,
		MaxRetention: cfg.MaxRetention, NewBuckets: cfg.NewBuckets, Logger: cfg.Logger, Observe: observe, VersionKey: VersionKey(n.secret),
		// The leader sees each client's own address (forward.go), so the
		// back-off holds back the failing client, not a whole follower.
		AuthLimiter: authlimit.New(server.AuthLimits(cfg.AuthBackOff)), Keys: cfg.Keys})
	admin.RegisterLLHLS(n.registry, n.api.LLHLSCounts)
	proxy := n.newProxy()
	servers := []*http.Server{
		newHTTPServer(n.pacer.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { n.serveClient(w, r, proxy) })), cfg),
		newHTTPServer(n.peerHandler(), cfg),
		newHTTPServer(n.forwardedHandler(), cfg),
		newHTTPServer(n.routerHandler(), cfg),
	}
	go func() { _ = servers[0].Serve(lns.S3) }()
	go func() { _ = servers[1].Serve(mux.http) }()
	go func() { _ = servers[2].Serve(mux.forward) }()
	go func() { _ = servers[3].Serve(mux.routerHTTP) }()
	var adminH http.Handler
	var adminAPI *admin.Server
	if cfg.AdminAddress != "" || cfg.ConsoleAddress != "" {
		if adminH, adminAPI, err = n.adminHandler(); err != nil && cfg.AdminAddress != "" {
			lns.Close()
			return n.stop(servers, mux, err)
		}
	}
	if lns.Admin != nil {
		admSrv := newHTTPServer(adminH, cfg)
		servers = append(servers, admSrv)
		go func() { _ = admSrv.Serve(lns.Admin) }()
	}
	s3URL := lns.URL(lns.S3, lns.S3Cert)
	if consoleSrv := n.startConsole(lns.Console, servers[0].Handler, adminH, s3URL); consoleSrv != nil {
		servers = append(servers, consoleSrv)
	}
	certs := lns.Certs()
	if n.peerTLS != nil {
		certs = append(certs, n.peerTLS)
	}
	server.WatchCertificates(n.closing, n.log, cmp.Or(cfg.TLSCheckInterval, time.Minute), certs)
	if n.cfg.VacuumInterval > 0 { // the configured one, or a runtime override
		n.store.StartVacuum(n.cfg.VacuumInterval)
	}
	n.wg.Add(10)
	go func() {
		defer n.wg.Done()
		n.scrubber.Run(n.closing)
	}()
	go n.keepMap()
	go n.watchLocalFaults()
	go func() {
		defer n.wg.Done()
		n.fsm.fill.run(n.closing)
	}()
	go n.watchLeadership()
	go n.watchMembers()
	go n.prefetchLoop()
	go n.expireStages()
	go n.releaseFound()
	go func() {
		defer n.wg.Done()
		n.pacer.Run(n.closing, n.store.PaceSignals())
	}()

	n.printBanner(out, lns, s3URL, clusterLn.Addr().String())
	if cfg.Ready != nil {
		cfg.Ready(lns.S3.Addr().String(), clusterLn.Addr().String())
	}
	<-ctx.Done()
	if adminAPI != nil {
		adminAPI.SetClosing()
	}
	if cfg.DrainDelay > 0 {
		n.log.Info("draining: /health/ready fails, requests are still served", "drain_delay", cfg.DrainDelay)
		time.Sleep(cfg.DrainDelay)
	}
	n.log.Info("shutting down: waiting for requests in flight")
	if err := n.stop(servers, mux, nil); err != nil {
		return err
	}
	n.log.Info("shut down cleanly")
	return nil
}

// printBanner prints where the node listens: text, or with LogJSON one
// JSON log line whose message is the text's first line.
func (n *Node) printBanner(out io.Writer, lns *server.Listeners, s3URL, clusterAddr string) {
	cfg := n.cfg
	clusterOn := clusterAddr
	if n.peerTLS != nil {
		clusterOn += " with mutual TLS"
	}
	first := fmt.Sprintf("b3 node %s: S3 API on %s, cluster on %s (replication %s)", cfg.ID, s3URL, clusterOn, cfg.Replication)
	users := UsersFile + " (root user: B3_ACCESS_KEY/B3_SECRET_KEY of the first leader, else generated)"
	adminURL, consoleURL := "", ""
	if lns.Admin != nil {
		adminURL = lns.URL(lns.Admin, lns.AdminCert)
	}
	if lns.Console != nil {
		consoleURL = lns.URL(lns.Console, lns.ConsoleCert)
	}
	if cfg.LogJSON {
		attrs := []any{"node", cfg.ID, "s3_endpoint", s3URL, "cluster_address", clusterAddr, "cluster_tls", n.peerTLS != nil,
			"replication", string(cfg.Replication), "data", cfg.Root, "users", users}
		if adminURL != "" {
			attrs = append(attrs, "admin_endpoint", adminURL)
		}
		if consoleURL != "" {
			attrs = append(attrs, "console_endpoint", consoleURL)
		}
		if n.waiting() {
			attrs = append(attrs, "waiting", fmt.Sprintf("b3 admin cluster add %s=%s", cfg.ID, clusterAddr))
		}
		slog.New(slog.NewJSONHandler(out, nil)).Info(first, attrs...)
		return
	}
	fmt.Fprintln(out, first)
	if adminURL != "" {
		fmt.Fprintf(out, "  admin: %s\n", adminURL)
	}
	if consoleURL != "" {
		fmt.Fprintf(out, "  console: %s\n", consoleURL)
	}
	if n.waiting() {
		fmt.Fprintf(out, "  waiting to be added: b3 admin cluster add %s=%s (through any node of the cluster)\n", cfg.ID, clusterAddr)
	}
	fmt.Fprintf(out, "  data: %s\n  users: %s\n", cfg.Root, users)
}

func (n *Node) stop(servers []*http.Server, mux *portMux, err error) error {
	// Requests in flight finish first (bounded): a handler must not stage
	// into a closed store.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, s := range servers {
		if s.Shutdown(ctx) != nil {
			s.Close()
		}
	}
	// Raft's transport closes before the port under it (in shutdown), so
	// that raft sees its own stop, not a failed accept.
	err = errors.Join(err, n.shutdown())
	mux.Close()
	return err
}

func newHTTPServer(h http.Handler, cfg Config) *http.Server {
	return server.NewHTTPServer(h, cfg.Logger)
}

func (n *Node) expireStages() {
	defer n.wg.Done()
	t := time.NewTicker(time.Minute)
	defer t.Stop()
	for {
		select {
		case <-n.closing.Done():
			return
		case now := <-t.C:
			n.stages.expire(now, n.fsm.waiting.Load() != nil)
		}
	}
}

// leaderWait bounds how long a request waits for an election before it is
// answered 503.
const leaderWait = 5 * time.Second

// serveClient answers an S3 request on --address: the leader serves it;
// any other node forwards it, streaming, to the leader's cluster address.
func (n *Node) serveClient(w http.ResponseWriter, r *http.Request, proxy *httputil.ReverseProxy) {
	if n.refuseRemoved(w) {
		return
	}
	if why := n.notJoined(); why != "" {
		slowDown(w, why)
		return
	}
	deadline := time.Now().Add(leaderWait)
	r = withFormKey(r, n.cfg.Domains)
	if g := groupOf(n.cmap.load(), r, n.cfg.Domains); g != "" && g != n.cfg.Group {
		n.serveOtherGroup(w, r, proxy, g, deadline)
		return
	}
	for {
		if n.leading() {
			n.serveLeader(w, r)
			return
		}
		changed := n.leaderEpoch()
		if addr, id := n.raft.LeaderWithID(); addr != "" && string(id) != n.cfg.ID {
			// Cut the forward if the leader changes meanwhile (it died or
			// was cut off: its answer may never come).
			ctx, cancel := context.WithCancel(context.WithValue(r.Context(), targetKey{}, string(addr)))
			go func() {
				select {
				case <-changed:
					cancel()
				case <-ctx.Done():
				}
			}()
			if r.Method == http.MethodGet && hls.Present(r.URL.Query()) {
				// The leader may hold a playlist request for seconds
				// (s3api/llhls.go): no load on this node's disks.
				iolimit.Idle(r.Context())
			}
			proxy.ServeHTTP(w, r.WithContext(ctx))
			cancel()
			return
		}
		if time.Now().After(deadline) || r.Context().Err() != nil {
			slowDown(w, cmp.Or(n.notServing(), "no leader elected"))
			return
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// serveOtherGroup forwards a client's request to the leader of group g,
// waiting for one until deadline.
func (n *Node) serveOtherGroup(w http.ResponseWriter, r *http.Request, proxy http.Handler, g string, deadline time.Time) {
	for {
		if grp := n.cmap.load().Group(g); grp != nil && forwardTo(r.Context(), n.mesh(), grp, w, r, proxy) {
			return
		}
		if time.Now().After(deadline) || r.Context().Err() != nil {
			slowDown(w, "group "+g+" has no leader that answers")
			return
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// serveLeader runs the request here. A read first checks that this node
// still leads (a round of heartbeats): a deposed leader that has not yet
// noticed must not answer from a stale copy.
func (n *Node) serveLeader(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		if err := n.raft.VerifyLeader().Error(); err != nil {
			slowDown(w, "leadership lost")
			return
		}
	}
	n.api.ServeHTTP(&retryAfter{ResponseWriter: w}, r)
}

// retryAfter adds Retry-After to every 503 (SlowDown) the S3 API writes.
type retryAfter struct{ http.ResponseWriter }

func (w *retryAfter) WriteHeader(code int) {
	if code == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", "1")
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *retryAfter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *retryAfter) ReadFrom(r io.Reader) (int64, error) {
	if rf, ok := w.ResponseWriter.(io.ReaderFrom); ok {
		return rf.ReadFrom(r)
	}
	return io.Copy(w.ResponseWriter, r)
}

// slowDown answers 503 SlowDown with Retry-After, as S3 does under load.
func slowDown(w http.ResponseWriter, why string) {
	h := w.Header()
	h.Set("Retry-After", "1")
	h.Set("Content-Type", "application/xml")
	w.WriteHeader(http.StatusServiceUnavailable)
	fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?>`+"\n"+`<Error><Code>SlowDown</Code><Message>Please reduce your request rate: %s; retry.</Message></Error>`, why)
}

// peerHandler serves the cluster port's HTTP side: the node-to-node
// endpoints, and nothing else (S3 requests forwarded for clients arrive on
// the forward side: forward.go). An unknown path is 404.
func (n *Node) peerHandler() http.Handler {
	m := http.NewServeMux()
	// Pushed bytes are clients' work: the pacer holds this node's
	// background work (vacuum, catch-up fetches it makes or serves) back
	// while they run, as for requests on --address.
	m.Handle("PUT /_b3/v1/stage", n.pacer.Handler(http.HandlerFunc(n.handleStage)))
	m.HandleFunc("GET /_b3/v1/bytes", n.handleBytes)
	m.HandleFunc("GET /_b3/v1/info", n.handleInfo)
	m.HandleFunc("POST /_b3/v1/users", n.handleUserCommand)
	m.HandleFunc("POST /_b3/v1/members", n.handleMemberChange)
	m.HandleFunc("POST /_b3/v1/lost", n.handleLost)
	m.HandleFunc("POST /_b3/v1/removed", n.handleRemoved)
	m.HandleFunc("GET /_b3/v1/member", n.handleMember)
	m.HandleFunc("GET /_b3/v1/lag", n.handleLag)
	m.HandleFunc("GET /_b3/v1/cluster/map", n.handleMap)
	m.HandleFunc("POST /_b3/v1/cluster/groups", n.handleGroup)
	m.HandleFunc("GET /_b3/v1/cluster/catalog", n.handleCatalog)
	m.HandleFunc("GET /_b3/v1/cluster/bucket-empty", n.handleBucketEmpty)
	m.HandleFunc("POST /_b3/v1/cluster/move", n.handleMoveChange)
	m.HandleFunc("POST /_b3/v1/move/fence", n.handleFence)
	m.HandleFunc("GET /_b3/v1/move/records", n.handleRecords)
	m.HandleFunc("POST /_b3/v1/list", n.handleList)
	m.HandleFunc("POST /_b3/v1/delete", n.handleDelete)
	m.HandleFunc("POST /_b3/v1/read", n.handleRead)
	m.HandleFunc("GET /_b3/v1/usage", n.handleUsage)
	m.HandleFunc("POST /_b3/v1/cluster/settings", n.handleMapSetting)
	m.Handle(adminForwardPrefix, http.HandlerFunc(n.handleAdminForward))
	return m
}

// routerHandler is the HTTP side a router reaches (routerMagic, auth.go):
// the map, nodes' info (finding leaders) and operators' map settings
// (b3 admin cluster rebalance|drain through a router's admin API), and
// nothing that moves, copies or decides data.
func (n *Node) routerHandler() http.Handler {
	m := http.NewServeMux()
	m.HandleFunc("GET /_b3/v1/info", n.handleInfo)
	m.HandleFunc("GET /_b3/v1/cluster/map", n.handleMap)
	m.HandleFunc("POST /_b3/v1/cluster/settings", n.handleMapSetting)
	return m
}

func (n *Node) handleInfo(w http.ResponseWriter, _ *http.Request) {
	admin.WriteJSON(w, http.StatusOK, n.info())
}

// info is what a node reports of itself (GET /_b3/v1/info).
func (n *Node) info() admin.ClusterMember {
	stats := n.raft.Stats()
	last, _ := strconv.ParseUint(stats["last_log_index"], 10, 64)
	m := admin.ClusterMember{
		ID: n.cfg.ID, ClusterAddress: n.cfg.ClusterAddress, Healthy: true,
		State: n.raft.State().String(), Term: n.raft.CurrentTerm(),
		AppliedIndex: n.fsm.applied.Load(), LastLogIndex: last,
		PendingPushBytes:  n.pending.Load(),
		SnapshotIndex:     n.fsm.snapshotIndex.Load(),
		EntriesSinceStart: n.fsm.handled.Load(),
		SnapshotsRestored: n.fsm.restored.Load(),
		FillPending:       n.fsm.fill.pending.Load(),
		MissingBytes:      n.missingView(n.fsm.waiting.Load()),
		LocalFault:        n.faulty.Load(),
	}
	if h := n.fsm.halted.Load(); h != nil {
		m.ApplyHalted = fmt.Sprintf("log index %d (%s), for %s: %v", h.index, h.op, time.Since(h.since).Round(time.Second), h.err)
	}
	m.FirstLogIndex, _ = n.entries.FirstIndex()
	m.ClusterID = n.clusterID()
	m.Suffrage = "voter"
	for _, p := range n.members() {
		if p.ID == n.cfg.ID && p.NonVoter {
			m.Suffrage = "nonvoter"
		}
	}
	switch {
	case n.removed.Load():
		m.Suffrage = "removed"
	case n.waiting():
		m.Suffrage, m.Waiting = "waiting", true
	}
	if n.raft.State() != raft.Leader {
		if lc := n.raft.LastContact(); !lc.IsZero() {
			m.LastContactSeconds = time.Since(lc).Seconds()
		}
	}
	if at := n.fsm.appliedAt.Load(); at != 0 {
		m.LagSeconds = time.Since(time.Unix(0, at)).Seconds() // made relative below
	}
	return m
}

// status gathers every member's info.
func (n *Node) status(ctx context.Context) admin.ClusterStatus {
	_, leaderID := n.raft.LeaderWithID()
	st := admin.ClusterStatus{Node: n.cfg.ID, Replication: string(n.cfg.Replication), Leader: string(leaderID), Term: n.raft.CurrentTerm()}
	var leaderApplied uint64
	members := n.members()
	if !slices.ContainsFunc(members, func(p Peer) bool { return p.ID == n.cfg.ID }) {
		// Waiting to be added, or removed: this node reports itself too.
		members = append(members, Peer{ID: n.cfg.ID, Address: n.cfg.ClusterAddress})
	}
	for _, p := range members {
		var m admin.ClusterMember
		if p.ID == n.cfg.ID {
			m = n.info()
		} else {
			var err error
			if m, err = n.peerInfo(ctx, p.Address); err != nil {
				m = admin.ClusterMember{ID: p.ID, ClusterAddress: p.Address, Error: err.Error()}
			}
		}
		if m.Suffrage != "removed" && m.Suffrage != "waiting" {
			m.Suffrage = "voter"
			if p.NonVoter {
				m.Suffrage = "nonvoter"
			}
		}
		if m.ID == string(leaderID) {
			leaderApplied = m.AppliedIndex
		}
		st.Members = append(st.Members, m)
	}
	for i := range st.Members {
		m := &st.Members[i]
		if m.Healthy && leaderApplied > m.AppliedIndex {
			m.LagEntries = leaderApplied - m.AppliedIndex
		} else {
			m.LagSeconds = 0
		}
	}
	st.Group = n.cfg.Group
	if m := n.cmap.load(); m != nil {
		ms := mapStatus(ctx, n.mesh(), m, n.cfg.Group, st.Members)
		st.MapEpoch, st.Partitions, st.Groups, st.Moves, st.Balanced, st.Paused = ms.MapEpoch, ms.Partitions, ms.Groups, ms.Moves, ms.Balanced, ms.Paused
	}
	return st
}

func (n *Node) peerInfo(ctx context.Context, addr string) (admin.ClusterMember, error) {
	var m admin.ClusterMember
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	return m, n.peerGetJSON(ctx, addr, "/_b3/v1/info", &m)
}

// peerGetJSON GETs path from a peer's cluster port into out.
func (n *Node) peerGetJSON(ctx context.Context, addr, path string, out any) error {
	return getJSON(ctx, n.peerClient, addr, path, out)
}

// adminHandler is the admin API of a single server (stats, vacuum, limits
// of this node's own store, kept over restarts as b3 server keeps them;
// users of the cluster) plus GET /admin/v1/cluster. It also returns the
// inner single-server API (SetClosing).
func (n *Node) adminHandler() (http.Handler, *admin.Server, error) {
	token := n.cfg.AdminToken
	if token == "" && n.cfg.LoadAdminToken != nil {
		var err error
		if token, err = n.cfg.LoadAdminToken(n.cfg.Root); err != nil {
			return nil, nil, err
		}
	}
	if token == "" {
		return nil, nil, errors.New("--admin-address needs an admin token (B3_ADMIN_TOKEN)")
	}
	inner, err := admin.New(admin.Config{Store: n.store, Writes: n.backend, Limiter: n.limiter, Users: nodeUsers{n}, Token: token, MetricsToken: n.cfg.MetricsToken,
		Logger: n.log, Registry: n.registry,
		Ready: func() bool { _, id := n.raft.LeaderWithID(); return id != "" && !n.faulty.Load() }, Context: n.closing,
		Overrides: n.overrides, Configured: n.configured, KMS: n.api, Usage: n.usage, Scrub: n.scrubber})
	if err != nil {
		return nil, nil, err
	}
	want := []byte("Bearer " + token)
	m := http.NewServeMux()
	authorized := func(h http.HandlerFunc) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			if subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), want) != 1 {
				admin.WriteJSON(w, http.StatusUnauthorized, map[string]string{"error": "missing or wrong admin token"})
				return
			}
			h(w, r)
		}
	}
	m.HandleFunc("GET /admin/v1/cluster", authorized(func(w http.ResponseWriter, r *http.Request) {
		admin.WriteJSON(w, http.StatusOK, n.status(r.Context()))
	}))
	m.HandleFunc("POST /admin/v1/cluster/members", authorized(func(w http.ResponseWriter, r *http.Request) {
		var in struct{ ID, Address string }
		if err := json.NewDecoder(io.LimitReader(r.Body, 1<<16)).Decode(&in); err != nil {
			admin.WriteJSON(w, http.StatusBadRequest, map[string]string{"error": "want {\"id\": ..., \"address\": ...}"})
			return
		}
		n.writeChange(w, r, memberChange{Op: "add", ID: in.ID, Address: in.Address})
	}))
	m.HandleFunc("DELETE /admin/v1/cluster/members/{id}", authorized(func(w http.ResponseWriter, r *http.Request) {
		n.writeChange(w, r, memberChange{Op: "remove", ID: r.PathValue("id")})
	}))
	m.HandleFunc("POST /admin/v1/cluster/lost", authorized(func(w http.ResponseWriter, r *http.Request) {
		var req lostRequest
		if err := json.NewDecoder(io.LimitReader(r.Body, 1<<16)).Decode(&req); err != nil || req.Bucket == "" || req.Index == 0 {
			admin.WriteJSON(w, http.StatusBadRequest, map[string]string{"error": "want {\"index\": ..., \"bucket\": ..., \"key\": ..., \"version\": ...}: what b3 admin cluster status shows the leader waits for"})
			return
		}
		req.Actor = admin.Actor(r)
		out, err := n.declareLost(r.Context(), req)
		if err == nil {
			admin.Audit(n.log, r, "cluster.declare-lost", "lost_index", out.Index, "bucket", out.Bucket, "key", out.Key,
				"version_id", out.VersionID, "declared_index", out.DeclaredIndex)
		}
		writeLost(w, out, err, func(code int, msg string) { admin.WriteJSON(w, code, map[string]string{"error": msg}) })
	}))
	setting := authorized(serveMapSetting(n.mesh(), n.mapSources, n.cmap, n.log))
	m.HandleFunc("POST /admin/v1/cluster/rebalance", setting)
	m.HandleFunc("POST /admin/v1/cluster/drain", setting)
	// Changes of buckets and users reach every member through the log,
	// proposed by the leader: another member hands them to it.
	for _, pattern := range leaderAdminPatterns {
		m.Handle(pattern, authorized(n.adminOnLeader))
	}
	n.setAdminLeader(inner, token)
	m.Handle("/", inner)
	return m, inner, nil
}

func (n *Node) writeChange(w http.ResponseWriter, r *http.Request, c memberChange) {
	out, err := n.changeMembers(r.Context(), c)
	var refused errMember
	switch {
	case errors.As(err, &refused):
		admin.WriteJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
	case err != nil:
		admin.WriteJSON(w, http.StatusServiceUnavailable, map[string]string{"error": err.Error()})
	default:
		admin.WriteJSON(w, http.StatusOK, out)
	}
}

// nodeUsers is admin.UserStore over the replicated users: changes go
// through the log, proposed here when leading or by the leader otherwise.
type nodeUsers struct{ n *Node }

func (u nodeUsers) List() []admin.User { return u.n.users.adminList() }

func (u nodeUsers) Add(name string) (admin.User, error) {
	nu := newUser(name)
	if err := u.n.userCommand(&command{Op: opAddUser, User: &nu}); err != nil {
		return admin.User{}, err
	}
	return admin.User{Name: nu.Name, AccessKey: nu.AccessKey, Secret: nu.SecretKey, Managed: true}, nil
}

func (u nodeUsers) Remove(accessKey string) error {
	return u.n.userCommand(&command{Op: opRemoveUser, User: &User{AccessKey: accessKey}})
}

func (n *Node) userCommand(c *command) error {
	if err := n.users.checkUserCommand(c); err != nil {
		return err
	}
	if n.leading() && n.firstGroup() {
		if _, err := n.propose(c); err != nil {
			return err
		}
		return n.awaitCatalog(n.closing, n.catalogVersion())
	}
	addr, err := n.catalogLeader(n.closing)
	if err != nil {
		return err
	}
	req, err := http.NewRequest(http.MethodPost, "http://"+addr+"/_b3/v1/users", bytes.NewReader(c.encode()))
	if err != nil {
		return err
	}
	resp, err := n.peerClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	switch resp.StatusCode {
	case http.StatusOK:
		return nil
	case http.StatusNotFound:
		return admin.ErrNoSuchUser
	case http.StatusConflict:
		return fmt.Errorf("%w: %s", admin.ErrUserConflict, bytes.TrimSpace(bytes.TrimPrefix(msg, []byte(admin.ErrUserConflict.Error()+": "))))
	}
	return fmt.Errorf("leader: %s: %s", resp.Status, msg)
}

func (n *Node) handleUserCommand(w http.ResponseWriter, r *http.Request) {
	data, err := io.ReadAll(io.LimitReader(r.Body, 1<<16))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	c, err := decodeCommand(data)
	if err != nil || (c.Op != opAddUser && c.Op != opRemoveUser) {
		http.Error(w, "not a user command", http.StatusBadRequest)
		return
	}
	if !n.firstGroup() {
		// Users are the first group's to decide (catalog.go): another
		// group holds a copy, made only by its catalogue commands.
		http.Error(w, "users are decided by group "+partition.FirstGroup+": ask its leader", http.StatusMisdirectedRequest)
		return
	}
	if !n.leading() {
		http.Error(w, "not the leader", http.StatusServiceUnavailable)
		return
	}
	// Members only ever forward users made by `b3 admin users add` (new
	// keys, never root): the root user is proposed by the first leader
	// itself, and a key is never given twice.
	if c.Op == opAddUser {
		if c.User == nil || c.User.Root {
			http.Error(w, "a forwarded user may not be root", http.StatusBadRequest)
			return
		}
		if n.users.has(c.User.AccessKey) {
			http.Error(w, "access key "+c.User.AccessKey+" exists", http.StatusConflict)
			return
		}
	}
	if err = n.users.checkUserCommand(c); err == nil {
		if _, err = n.propose(c); err == nil {
			err = n.awaitCatalog(r.Context(), n.catalogVersion())
		}
	}
	switch {
	case errors.Is(err, admin.ErrNoSuchUser):
		http.Error(w, err.Error(), http.StatusNotFound)
	case errors.Is(err, admin.ErrUserConflict):
		http.Error(w, err.Error(), http.StatusConflict)
	case err != nil:
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
	}
}
