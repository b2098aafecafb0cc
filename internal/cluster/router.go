package cluster

import (
	"cmp"
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/pprof"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/b3-storage/b3/internal/admin"
	"github.com/b3-storage/b3/internal/server"
)

// RouterConfig is `b3 router`: an S3 front that holds no data.
type RouterConfig struct {
	Address      string   // S3 API
	AdminAddress string   // "": none
	AdminToken   string   // required with AdminAddress
	Seeds        []string // cluster addresses of nodes of the cluster
	// RouterKey (RouterKey of the cluster secret) authenticates the
	// router to the nodes as a router: forwarded requests and the map
	// only. ClusterSecret instead makes it a member to them (older
	// setups; whoever holds its host can then act as a node). One of
	// the two; the cluster TLS files as a node's.
	RouterKey                                   string
	ClusterSecret                               string
	ClusterTLSCert, ClusterTLSKey, ClusterTLSCA string
	Domains                                     []string // virtual-host-style base domains, as the nodes'
	TLSCert, TLSKey                             string   // HTTPS for the S3 API
	DrainDelay                                  time.Duration
	Logger                                      *slog.Logger
	// Ready, if set, is called with the bound S3 address once serving.
	Ready func(s3Addr string)
}

// routerCredential is how the router authenticates to the nodes: the
// router key (routerMagic), or the cluster secret (a member's handshake).
func routerCredential(cfg RouterConfig) (magic string, key []byte, err error) {
	rk, secret := strings.TrimSpace(cfg.RouterKey), strings.TrimSpace(cfg.ClusterSecret)
	switch {
	case rk != "" && secret != "":
		return "", nil, errors.New("give the router its router key (B3_ROUTER_KEY or --router-key-file) or the cluster secret, not both")
	case rk != "":
		if len(rk) < MinSecretLen {
			return "", nil, fmt.Errorf("the router key is %d characters: it is the %d-character output of b3 router key", len(rk), len(routerKeyOf([]byte("x"))))
		}
		return routerMagic, []byte(rk), nil
	case secret != "":
		s, err := loadSecret("", cfg.ClusterSecret)
		if err != nil {
			return "", nil, err
		}
		cfg.Logger.Warn("the router holds the cluster secret: the nodes take it for a member, and whoever holds this host could move partitions or read any object's bytes; give it its router key instead (b3 router key prints it; B3_ROUTER_KEY or --router-key-file)")
		return authMagic, s, nil
	}
	return "", nil, errors.New("no router key: give the router B3_ROUTER_KEY or --router-key-file (b3 router key prints it from the cluster secret)")
}

// router is a running `b3 router`. It holds nothing but the map it
// follows and the leaders it found: every request goes, streaming, to the
// leader of the group that owns it (route.go), over the forward side of
// that node's cluster port, which carries the client's address; the node
// authenticates and authorizes the request itself. Many routers may run
// at once, and a restarted one asks the seeds for the map again.
type router struct {
	cfg   RouterConfig
	log   *slog.Logger
	ms    *mesh
	cmap  *mapState
	proxy http.Handler
	// registry is /metrics on the admin listener: the process's and
	// requests by the group they went to (requests).
	registry *prometheus.Registry
	requests *prometheus.CounterVec
}

// RunRouter serves a router until ctx ends.
func RunRouter(ctx context.Context, cfg RouterConfig, out io.Writer) error {
	if cfg.Logger == nil {
		return errors.New("router: no logger")
	}
	if len(cfg.Seeds) == 0 {
		return errors.New("--cluster-seeds: give the cluster address of at least one node of the cluster")
	}
	if cfg.AdminAddress != "" && len(cfg.AdminToken) < MinSecretLen {
		return fmt.Errorf("--admin-address needs an admin token of at least %d characters (B3_ADMIN_TOKEN or --admin-token)", MinSecretLen)
	}
	magic, key, err := routerCredential(cfg)
	if err != nil {
		return err
	}
	peerTLS, err := loadPeerTLS(Config{ClusterTLSCert: cfg.ClusterTLSCert, ClusterTLSKey: cfg.ClusterTLSKey, ClusterTLSCA: cfg.ClusterTLSCA, Logger: cfg.Logger})
	if err != nil {
		return err
	}
	lns, err := server.Listen(server.Config{Address: cfg.Address, AdminAddress: cfg.AdminAddress,
		TLSCert: cfg.TLSCert, TLSKey: cfg.TLSKey, Logger: cfg.Logger})
	if err != nil {
		return err
	}
	cmap, _ := openMapState("")
	rt := &router{cfg: cfg, log: cfg.Logger, cmap: cmap,
		ms: &mesh{http: &http.Client{Transport: transportAs(magic, key, peerTLS, protoHTTP)}, leaders: &leaderCache{}}}
	rt.proxy = newForwardProxy(rt.ms, transportAs(magic, key, peerTLS, protoForward), rt.log)
	rt.registry = admin.NewRegistry()
	rt.requests = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "b3_router_requests_total",
		Help: "S3 requests the router sent on, by the group they went to and the status class of the answer (\"error\": no group leader answered)."},
		[]string{"group", "class"})
	rt.registry.MustRegister(rt.requests, prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "b3_router_map_epoch",
		Help: "The epoch of the cluster map the router routes by (0: none yet)."}, func() float64 {
		if m := rt.cmap.load(); m != nil {
			return float64(m.Epoch)
		}
		return 0
	}), mapCollector{rt.cmap})
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go followMap(ctx, rt.ms, rt.cmap, func() []string { return mapSources(rt.cmap.load(), cfg.Seeds) }, rt.log.Warn)

	s3 := &http.Server{Handler: http.HandlerFunc(rt.serveClient), ReadHeaderTimeout: 30 * time.Second}
	servers := []*http.Server{s3}
	go func() { _ = s3.Serve(lns.S3) }()
	if lns.Admin != nil {
		adm := &http.Server{Handler: rt.adminHandler(), ReadHeaderTimeout: 30 * time.Second}
		servers = append(servers, adm)
		go func() { _ = adm.Serve(lns.Admin) }()
	}
	s3URL := lns.URL(lns.S3, lns.S3Cert)
	fmt.Fprintf(out, "b3 router\n  S3 API:  %s\n  seeds:   %s\n", s3URL, strings.Join(cfg.Seeds, ","))
	if lns.Admin != nil {
		fmt.Fprintf(out, "  admin:   %s\n", lns.URL(lns.Admin, nil))
	}
	if cfg.Ready != nil {
		cfg.Ready(lns.S3.Addr().String())
	}
	<-ctx.Done()
	if cfg.DrainDelay > 0 {
		time.Sleep(cfg.DrainDelay)
	}
	sctx, scancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer scancel()
	for _, s := range servers {
		_ = s.Shutdown(sctx)
	}
	return nil
}

// serveClient sends a client's request to the leader of the group that
// owns it, waiting up to leaderWait for a map and a leader.
func (rt *router) serveClient(w http.ResponseWriter, r *http.Request) {
	deadline := time.Now().Add(leaderWait)
	r = withFormKey(r, rt.cfg.Domains)
	for {
		why := "the router has no cluster map yet (are --cluster-seeds reachable?)"
		var g string
		if m := rt.cmap.load(); m != nil {
			g = groupOf(m, r, rt.cfg.Domains)
			sw := &statusWriter{ResponseWriter: w}
			if grp := m.Group(g); grp != nil && forwardTo(r.Context(), rt.ms, grp, sw, r, rt.proxy) {
				rt.requests.WithLabelValues(g, fmt.Sprintf("%dxx", sw.status/100)).Inc()
				return
			}
			why = "group " + g + " has no leader that answers"
		}
		if time.Now().After(deadline) || r.Context().Err() != nil {
			rt.requests.WithLabelValues(g, "error").Inc()
			slowDown(w, why)
			return
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// adminHandler: health, and the cluster's status (the map's groups and
// their members) under the admin token.
func (rt *router) adminHandler() http.Handler {
	m := http.NewServeMux()
	m.HandleFunc("GET /health/live", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	m.HandleFunc("GET /health/ready", func(w http.ResponseWriter, _ *http.Request) {
		if rt.cmap.load() == nil {
			http.Error(w, "no cluster map yet", http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	authorized := func(h http.HandlerFunc) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			tok, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
			if subtle.ConstantTimeCompare([]byte(tok), []byte(rt.cfg.AdminToken)) != 1 {
				admin.WriteJSON(w, http.StatusUnauthorized, map[string]string{"error": "a valid admin token is required"})
				return
			}
			h(w, r)
		}
	}
	setting := authorized(serveMapSetting(rt.ms, func() []string { return mapSources(rt.cmap.load(), rt.cfg.Seeds) }, rt.cmap, rt.log))
	m.Handle("GET /metrics", authorized(promhttp.HandlerFor(rt.registry, promhttp.HandlerOpts{}).ServeHTTP))
	m.Handle("/debug/pprof/", authorized(pprof.Index))
	m.Handle("/debug/pprof/profile", authorized(pprof.Profile))
	m.Handle("/debug/pprof/symbol", authorized(pprof.Symbol))
	m.Handle("/debug/pprof/trace", authorized(pprof.Trace))
	m.HandleFunc("POST /admin/v1/cluster/rebalance", setting)
	m.HandleFunc("POST /admin/v1/cluster/drain", setting)
	m.HandleFunc("GET /admin/v1/cluster", authorized(func(w http.ResponseWriter, r *http.Request) {
		cm := rt.cmap.load()
		if cm == nil {
			admin.WriteJSON(w, http.StatusServiceUnavailable, map[string]string{"error": "no cluster map yet"})
			return
		}
		st := mapStatus(r.Context(), rt.ms, cm, "", nil)
		st.Node = cmp.Or(rt.cfg.Address, "router")
		admin.WriteJSON(w, http.StatusOK, st)
	}))
	return m
}

// statusWriter remembers the status of the answer.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Flush passes flushes on: the proxy streams.
func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}
