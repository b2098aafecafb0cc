package admin

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/pprof"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/b3-storage/b3/internal/iolimit"
	"github.com/b3-storage/b3/internal/meta"
	"github.com/b3-storage/b3/internal/objstore"
	"github.com/b3-storage/b3/internal/scrub"
	"github.com/b3-storage/b3/internal/sse"
)

// UserStore manages access keys. Implementations persist changes and make
// them visible to the S3 API before returning.
type UserStore interface {
	List() []User
	Add(name string) (User, error)
	Remove(accessKey string) error
}

// ErrNoSuchUser is returned by UserStore.Remove for an unknown or
// non-removable key.
var ErrNoSuchUser = errors.New("admin: no such removable user")

// BucketWriter makes the changes of buckets and objects the admin API
// asks for (bucket owners, deletions, emptying a bucket). On b3 server it
// is the store itself; on b3 node it is the replicated store, so that a
// change reaches every member through the log (and the node leads: other
// members forward these requests to the leader).
type BucketWriter interface {
	UpdateBucket(name string, fn func(*meta.Bucket) error) error
	DeleteBucket(name string) error
	DeleteObject(bucket, key string) (*meta.Object, error)
	DeleteVersioned(bucket, key, versionID string, bypassGovernance bool) (objstore.DeleteResult, error)
	AbortUpload(bucket, key, uploadID string) error
}

// ErrUserConflict is returned (wrapped, saying why) by UserStore.Add for a
// name that is another user's name or access key: names and access keys
// share one namespace (s3api.UserConflict). The API answers 409.
var ErrUserConflict = errors.New("user name refused")

// Config configures the admin API.
type Config struct {
	Store *objstore.Store
	// Writes, if set, makes every change of buckets and objects instead
	// of Store (reads and node-local work stay on Store).
	Writes  BucketWriter
	Limiter *iolimit.Limiter // nil: limits cannot be set
	Users   UserStore        // nil: user management disabled
	Token   string           // bearer token; must not be empty
	// MetricsToken, if set, is a bearer token /metrics requires (the
	// admin token is accepted too); "" leaves /metrics open.
	MetricsToken string
	// Registry is where /metrics reads from (default: a new registry with
	// the Go and process collectors).
	Registry *prometheus.Registry
	// Ready reports whether the S3 API accepts requests (default: always).
	Ready  func() bool
	Logger *slog.Logger
	// Context bounds passes started on demand (vacuum, lifecycle).
	Context context.Context
	// Overrides, if set, keeps runtime changes (limits, vacuum auto/stop)
	// over restarts; Configured are the values they override.
	Overrides  OverrideStore
	Configured Configured
	// KMS, if set, reports the master keys and runs key rotation (the
	// S3 API's: package s3api); nil answers 404.
	KMS KMS
	// Usage, if set, counts objects and bytes per bucket instead of a
	// scan of Store: a node of a cluster of several groups counts every
	// group's.
	Usage func(ctx context.Context) (map[string][2]int64, error)
	// Scrub, if set, is the store's scrubber (b3 admin scrub); nil
	// answers 404.
	Scrub *scrub.Scrubber
}

// KMS is the key ring's side of the admin API (b3 admin kms).
type KMS interface {
	KMSStatus() sse.KMSStatus
	StartRotation(ctx context.Context, from, to string) error
}

// RotateRequest asks for a key rotation: data keys sealed under From
// ("": every SSE-S3 key not under To) sealed again under To ("": the
// default key).
type RotateRequest struct {
	From string `json:"from"`
	To   string `json:"to"`
}

// Server is the admin HTTP handler.
type Server struct {
	cfg     Config
	mux     *http.ServeMux
	started time.Time
	closing atomic.Bool

	overridesMu sync.Mutex // serializes read-modify-write of the overrides
}

// New returns the admin handler.
func New(cfg Config) (*Server, error) {
	if cfg.Token == "" {
		return nil, errors.New("admin: empty token")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Context == nil {
		cfg.Context = context.Background()
	}
	if cfg.Registry == nil {
		cfg.Registry = NewRegistry()
	}
	if cfg.Writes == nil {
		cfg.Writes = cfg.Store
	}
	s := &Server{cfg: cfg, mux: http.NewServeMux(), started: time.Now()}
	m := s.mux
	m.HandleFunc("GET /health/live", func(w http.ResponseWriter, _ *http.Request) { WriteJSON(w, 200, map[string]string{"status": "live"}) })
	m.HandleFunc("GET /health/ready", s.ready)
	metrics := promhttp.HandlerFor(cfg.Registry, promhttp.HandlerOpts{})
	if cfg.MetricsToken != "" {
		metrics = s.authAny(metrics, cfg.MetricsToken, cfg.Token)
	}
	m.Handle("GET /metrics", metrics)
	m.Handle("/debug/pprof/", s.auth(http.HandlerFunc(pprof.Index)))
	m.Handle("/debug/pprof/cmdline", s.auth(http.HandlerFunc(pprof.Cmdline)))
	m.Handle("/debug/pprof/profile", s.auth(http.HandlerFunc(pprof.Profile)))
	m.Handle("/debug/pprof/symbol", s.auth(http.HandlerFunc(pprof.Symbol)))
	m.Handle("/debug/pprof/trace", s.auth(http.HandlerFunc(pprof.Trace)))
	api := func(pattern string, h func(http.ResponseWriter, *http.Request) error) {
		m.Handle(pattern, s.auth(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if err := h(w, r); err != nil {
				status := http.StatusInternalServerError
				var he *httpError
				if errors.As(err, &he) {
					status = he.status
				} else {
					cfg.Logger.Error("admin request failed", "method", r.Method, "path", r.URL.Path, "err", err)
				}
				WriteJSON(w, status, map[string]string{"error": err.Error()})
			}
		})))
	}
	api("GET /admin/v1/stats", s.stats)
	api("GET /admin/v1/users", s.listUsers)
	api("POST /admin/v1/users", s.addUser)
	api("DELETE /admin/v1/users/{accessKey}", s.removeUser)
	api("GET /admin/v1/vacuum", s.vacuumStatus)
	api("POST /admin/v1/vacuum/start", s.vacuumStart)
	api("POST /admin/v1/vacuum/stop", s.vacuumStop)
	api("POST /admin/v1/vacuum/auto", s.vacuumAuto)
	api("GET /admin/v1/limits", s.getLimits)
	api("PUT /admin/v1/limits", s.setLimits)
	api("GET /admin/v1/buckets", s.listBuckets)
	api("PUT /admin/v1/buckets/{bucket}/owner", s.setBucketOwner)
	api("PUT /admin/v1/buckets/{bucket}/hls", s.setBucketHLS)
	api("DELETE /admin/v1/buckets/{bucket}", s.deleteBucket)
	api("GET /admin/v1/settings", s.getSettings)
	api("DELETE /admin/v1/settings/overrides", s.resetSettings)
	api("GET /admin/v1/cache", s.cacheStats)
	api("PUT /admin/v1/cache", s.setCache)
	api("POST /admin/v1/lifecycle/run", s.lifecycleRun)
	api("GET /admin/v1/scrub", s.scrubStatus)
	api("POST /admin/v1/scrub/start", s.scrubStart)
	api("GET /admin/v1/kms", s.kmsStatus)
	api("POST /admin/v1/kms/rotate", s.kmsRotate)
	return s, nil
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// SetClosing makes /health/ready fail (the server is draining).
func (s *Server) SetClosing() { s.closing.Store(true) }

type httpError struct {
	status int
	msg    string
}

func (e *httpError) Error() string { return e.msg }

func badRequest(format string, args ...any) error {
	return &httpError{http.StatusBadRequest, fmt.Sprintf(format, args...)}
}

func (s *Server) auth(h http.Handler) http.Handler { return s.authAny(h, s.cfg.Token) }

// authAny serves h to requests bearing one of tokens, 401 to others.
func (s *Server) authAny(h http.Handler, tokens ...string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got := []byte(r.Header.Get("Authorization"))
		ok := 0
		for _, t := range tokens {
			ok |= subtle.ConstantTimeCompare(got, []byte("Bearer "+t))
		}
		if ok != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="b3-admin"`)
			WriteJSON(w, http.StatusUnauthorized, map[string]string{"error": "missing or wrong admin token"})
			return
		}
		h.ServeHTTP(w, r)
	})
}

// WriteJSON answers with v as indented JSON.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

func readJSON(r *http.Request, v any) error {
	if r.ContentLength == 0 {
		return nil
	}
	dec := json.NewDecoder(http.MaxBytesReader(nil, r.Body, 1<<20))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return badRequest("request body: %v", err)
	}
	return nil
}

func (s *Server) ready(w http.ResponseWriter, _ *http.Request) {
	if s.closing.Load() || (s.cfg.Ready != nil && !s.cfg.Ready()) {
		WriteJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "not ready"})
		return
	}
	WriteJSON(w, http.StatusOK, map[string]string{"status": "ready"})
}

func (s *Server) stats(w http.ResponseWriter, r *http.Request) error {
	st := s.snapshot()
	if r.URL.Query().Get("objects") == "1" {
		counts, err := s.countObjects()
		if err != nil {
			return err
		}
		st.Objects = counts
	}
	WriteJSON(w, http.StatusOK, st)
	return nil
}

func (s *Server) snapshot() Stats {
	store := s.cfg.Store
	return Stats{
		Segments:  store.Segments(),
		Vacuum:    store.VacuumStatus(),
		Lifecycle: store.LifecycleStatus(),
		Cache:     store.CacheStats(),
		IO:        s.cfg.Limiter.Stats(),
		Limits:    s.cfg.Limiter.Limits(),
		Blob:      store.Blob().Stats(),
		Uptime:    time.Since(s.started),
	}
}

// countObjects counts what this node's store holds, as the rest of the
// stats are its own (in a cluster of several groups, records a move left
// count until they are swept; b3 admin buckets counts the cluster's).
func (s *Server) countObjects() (*ObjectCounts, error) {
	buckets, err := s.cfg.Store.ListBuckets()
	if err != nil {
		return nil, err
	}
	counts, err := Usage(s.cfg.Store, nil)
	c := &ObjectCounts{Buckets: len(buckets)}
	for _, u := range counts {
		c.Objects += u[0]
		c.Bytes += u[1]
	}
	return c, err
}

func (s *Server) listUsers(w http.ResponseWriter, _ *http.Request) error {
	if s.cfg.Users == nil {
		return &httpError{http.StatusNotImplemented, "user management is not enabled"}
	}
	WriteJSON(w, http.StatusOK, s.cfg.Users.List())
	return nil
}

func (s *Server) addUser(w http.ResponseWriter, r *http.Request) error {
	if s.cfg.Users == nil {
		return &httpError{http.StatusNotImplemented, "user management is not enabled"}
	}
	var req struct {
		Name string `json:"name"`
	}
	if err := readJSON(r, &req); err != nil {
		return err
	}
	if req.Name == "" || len(req.Name) > 64 || strings.ContainsAny(req.Name, ":,\n") {
		return badRequest("name: 1..64 characters, no ':' ',' or newline")
	}
	u, err := s.cfg.Users.Add(req.Name)
	if errors.Is(err, ErrUserConflict) {
		why := strings.TrimPrefix(err.Error(), ErrUserConflict.Error()+": ")
		return &httpError{http.StatusConflict, why + " (user names are unique and no user's access key): choose another name"}
	}
	if err != nil {
		return err
	}
	s.audit(r, "user.add", "name", u.Name, "access_key", u.AccessKey)
	WriteJSON(w, http.StatusCreated, u)
	return nil
}

// removeUser removes an access key. A user owning buckets is removed
// only with ?new_owner=<access key> (the buckets are handed over) or
// ?force=1 (they stay, reachable by the root user, until reassigned).
func (s *Server) removeUser(w http.ResponseWriter, r *http.Request) error {
	if s.cfg.Users == nil {
		return &httpError{http.StatusNotImplemented, "user management is not enabled"}
	}
	key := r.PathValue("accessKey")
	newOwner, force := r.URL.Query().Get("new_owner"), r.URL.Query().Get("force") == "1"
	names := s.userNames()
	removable := false
	for _, u := range s.cfg.Users.List() {
		removable = removable || (u.AccessKey == key && u.Managed)
	}
	if !removable { // unknown, or root / B3_USERS (configured, not managed)
		return &httpError{http.StatusNotFound, ErrNoSuchUser.Error()}
	}
	if newOwner != "" {
		if _, ok := names[newOwner]; !ok || newOwner == key {
			return badRequest("new owner %q: no such access key, or the one being removed", newOwner)
		}
	}
	owned, err := s.bucketsOf(key)
	if err != nil {
		return err
	}
	if len(owned) > 0 && newOwner == "" && !force {
		return &httpError{http.StatusConflict, fmt.Sprintf("user %s owns %d bucket(s) (%s): give a new owner (--new-owner) or --force to leave them to the root user",
			key, len(owned), strings.Join(owned, ", "))}
	}
	res := UserRemoved{AccessKey: key, NewOwner: newOwner, BucketsReassigned: []string{}, BucketsOrphaned: []string{}}
	if newOwner != "" {
		if res.BucketsReassigned, err = s.chownAll(key, newOwner); err != nil {
			return err
		}
	}
	err = s.cfg.Users.Remove(key)
	if errors.Is(err, ErrNoSuchUser) {
		return &httpError{http.StatusNotFound, err.Error()}
	}
	if err != nil {
		return err
	}
	if newOwner != "" {
		// Buckets the user created while the first pass ran.
		late, err := s.chownAll(key, newOwner)
		if err != nil {
			return err
		}
		res.BucketsReassigned = append(res.BucketsReassigned, late...)
	} else if res.BucketsOrphaned, err = s.bucketsOf(key); err != nil {
		return err
	}
	s.audit(r, "user.remove", "access_key", key, "new_owner", newOwner, "force", force,
		"buckets_reassigned", len(res.BucketsReassigned), "buckets_orphaned", len(res.BucketsOrphaned))
	WriteJSON(w, http.StatusOK, res)
	return nil
}

func (s *Server) vacuumStatus(w http.ResponseWriter, _ *http.Request) error {
	WriteJSON(w, http.StatusOK, s.cfg.Store.VacuumStatus())
	return nil
}

// StartVacuumPass starts one vacuum pass in the background (SIGUSR1 and
// POST /admin/v1/vacuum/start) and returns once it runs: the vacuum
// status says running until it ends. It returns
// objstore.ErrVacuumInProgress if one is running.
func (s *Server) StartVacuumPass(threshold float64) error {
	return s.cfg.Store.VacuumInBackground(s.cfg.Context, threshold, func(res objstore.VacuumResult, err error) {
		switch {
		case err != nil && s.cfg.Context.Err() == nil:
			s.cfg.Logger.Error("vacuum pass failed", "err", err)
		case err == nil:
			s.cfg.Logger.Info("vacuum pass done", "segments_removed", res.SegmentsRemoved,
				"bytes_reclaimed", res.BytesReclaimed, "bytes_copied", res.BytesCopied)
		}
	})
}

func (s *Server) vacuumStart(w http.ResponseWriter, r *http.Request) error {
	var req VacuumRequest
	if err := readJSON(r, &req); err != nil {
		return err
	}
	if req.Threshold < 0 || req.Threshold > 1 {
		return badRequest("threshold %v: want 0 (configured) or a ratio in (0, 1]", req.Threshold)
	}
	if err := s.StartVacuumPass(req.Threshold); err != nil {
		return &httpError{http.StatusConflict, err.Error()}
	}
	s.audit(r, "vacuum.start", "threshold", req.Threshold)
	WriteJSON(w, http.StatusAccepted, map[string]string{"status": "started"})
	return nil
}

func (s *Server) vacuumStop(w http.ResponseWriter, r *http.Request) error {
	if err := s.saveOverride(func(o *Overrides) { off := "0s"; o.VacuumInterval = &off }); err != nil {
		return err
	}
	s.cfg.Store.StopVacuum()
	s.audit(r, "vacuum.stop")
	WriteJSON(w, http.StatusOK, s.cfg.Store.VacuumStatus())
	return nil
}

func (s *Server) vacuumAuto(w http.ResponseWriter, r *http.Request) error {
	var req VacuumRequest
	if err := readJSON(r, &req); err != nil {
		return err
	}
	interval, err := time.ParseDuration(req.Interval)
	if err != nil || interval <= 0 {
		return badRequest("interval %q: want a positive duration such as 5m", req.Interval)
	}
	if err := s.saveOverride(func(o *Overrides) { v := interval.String(); o.VacuumInterval = &v }); err != nil {
		return err
	}
	s.cfg.Store.StopVacuum()
	s.cfg.Store.StartVacuum(interval)
	s.audit(r, "vacuum.auto", "interval", interval.String())
	WriteJSON(w, http.StatusOK, s.cfg.Store.VacuumStatus())
	return nil
}

func (s *Server) getLimits(w http.ResponseWriter, _ *http.Request) error {
	WriteJSON(w, http.StatusOK, s.cfg.Limiter.Limits())
	return nil
}

func (s *Server) setLimits(w http.ResponseWriter, r *http.Request) error {
	if s.cfg.Limiter == nil {
		return &httpError{http.StatusNotImplemented, "no I/O limiter configured"}
	}
	var l iolimit.Limits
	if err := readJSON(r, &l); err != nil {
		return err
	}
	if err := l.Validate(); err != nil {
		return badRequest("%v", err)
	}
	if err := s.saveOverride(func(o *Overrides) { d := LimitsDocOf(l); o.Limits = &d }); err != nil {
		return err
	}
	s.cfg.Limiter.SetLimits(l)
	s.audit(r, "limits.set", "read", l.ReadBytesPerSec, "write", l.WriteBytesPerSec,
		"background_read", l.BackgroundReadBytesPerSec, "background_write", l.BackgroundWriteBytesPerSec)
	WriteJSON(w, http.StatusOK, s.cfg.Limiter.Limits())
	return nil
}

func (s *Server) cacheStats(w http.ResponseWriter, _ *http.Request) error {
	WriteJSON(w, http.StatusOK, s.cfg.Store.CacheStats())
	return nil
}

// CacheRequest is PUT /admin/v1/cache.
type CacheRequest struct {
	MaxBytes int64 `json:"max_bytes"` // 0: off
}

// setCache resizes the object cache; a smaller size evicts at once.
func (s *Server) setCache(w http.ResponseWriter, r *http.Request) error {
	var req CacheRequest
	if err := readJSON(r, &req); err != nil {
		return err
	}
	if req.MaxBytes < 0 || req.MaxBytes > MaxCacheBytes {
		return badRequest("max_bytes %d: want 0 (off) to %d", req.MaxBytes, int64(MaxCacheBytes))
	}
	if s.cfg.Store.CacheStats().Policy == "" {
		return &httpError{http.StatusNotImplemented, "this server has no object cache"}
	}
	if err := s.saveOverride(func(o *Overrides) { o.CacheBytes = &req.MaxBytes }); err != nil {
		return err
	}
	s.cfg.Store.SetCacheSize(req.MaxBytes)
	s.audit(r, "cache.set", "max_bytes", req.MaxBytes)
	WriteJSON(w, http.StatusOK, s.cfg.Store.CacheStats())
	return nil
}

// MaxCacheBytes bounds the object cache's size set at run time (1 TiB).
const MaxCacheBytes = 1 << 40

func (s *Server) kmsStatus(w http.ResponseWriter, r *http.Request) error {
	if s.cfg.KMS == nil {
		return &httpError{http.StatusNotFound, "this server has no S3 API, so no key ring"}
	}
	WriteJSON(w, http.StatusOK, s.cfg.KMS.KMSStatus())
	return nil
}

func (s *Server) kmsRotate(w http.ResponseWriter, r *http.Request) error {
	if s.cfg.KMS == nil {
		return &httpError{http.StatusNotFound, "this server has no S3 API, so no key ring"}
	}
	var req RotateRequest
	if err := readJSON(r, &req); err != nil {
		return err
	}
	if err := s.cfg.KMS.StartRotation(s.cfg.Context, req.From, req.To); err != nil {
		return &httpError{http.StatusConflict, err.Error()}
	}
	s.audit(r, "kms.rotate", "from", req.From, "to", req.To)
	WriteJSON(w, http.StatusAccepted, s.cfg.KMS.KMSStatus())
	return nil
}

func (s *Server) lifecycleRun(w http.ResponseWriter, r *http.Request) error {
	res, err := s.cfg.Store.SweepLifecycle(r.Context())
	if err != nil {
		return err
	}
	s.audit(r, "lifecycle.run", "expired", res.Expired, "aborted", res.Aborted)
	WriteJSON(w, http.StatusOK, res)
	return nil
}
