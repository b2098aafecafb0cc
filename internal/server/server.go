package server

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/b3-storage/b3/internal/admin"
	"github.com/b3-storage/b3/internal/authlimit"
	"github.com/b3-storage/b3/internal/blob"
	"github.com/b3-storage/b3/internal/cache"
	"github.com/b3-storage/b3/internal/iolimit"
	"github.com/b3-storage/b3/internal/objstore"
	"github.com/b3-storage/b3/internal/s3api"
	"github.com/b3-storage/b3/internal/scrub"
	"github.com/b3-storage/b3/internal/sse"
	"github.com/b3-storage/b3/internal/tlsreload"
	"github.com/b3-storage/b3/internal/vfs"
)

// Config configures a single-node server. Zero values pick the defaults
// noted. Every field has a flag, a B3_* variable and a config-file key
// (see Settings).
type Config struct {
	Address string // default "127.0.0.1:9000"
	Root    string // data root, default "./data"
	// MetaDir and DataDir default to Root/meta and Root/segments.
	MetaDir, DataDir string
	// AccessKey and SecretKey, when both set, are the root user; else the
	// credentials in Root are used (generated on first start).
	AccessKey, SecretKey string
	Users                []s3api.User // additional users
	Region               string       // default us-east-1
	Regions              []string     // further regions accepted (LocationConstraint, SigV4 scope)
	Domains              []string     // virtual-host-style base domains
	Sync                 blob.SyncPolicy
	DirectIO             bool
	SegmentSize          int64 // default blob's (1 GiB)
	Logger               *slog.Logger
	AccessLog            bool // log every request at info level
	// MediaHeaders serves media objects stored without a Content-Type by
	// their extension's type, and playlists with Cache-Control: no-cache
	// (s3api.Config.MediaHeaders; docs/HLS.md).
	MediaHeaders bool
	// MaxRetention bounds every Object Lock retention from the moment it
	// is set (s3api.Config.MaxRetention; 0: its default, 100 years).
	MaxRetention time.Duration
	// NewBuckets are the access settings of new buckets
	// (s3api.Config.NewBuckets; the zero value is AWS's defaults).
	NewBuckets s3api.BucketDefaults
	// Keys are the master keys of SSE-S3 and SSE-KMS (package sse); nil:
	// those of Root/kms-keys, generated on first start.
	Keys *sse.KeyRing

	// AdminAddress is the admin listener (API, /metrics, health, pprof);
	// "" disables it. AdminToken is its bearer token (default: generated
	// and kept in Root/admin-token).
	AdminAddress, AdminToken string
	// MetricsToken, if set, is a bearer token /metrics requires (the
	// admin token works too); "" leaves /metrics open.
	MetricsToken string

	// ConsoleAddress is the web console's listener (package console); ""
	// disables it. ConsoleTLSCert and ConsoleTLSKey, both set, make it
	// HTTPS, reloaded like the others.
	ConsoleAddress                string
	ConsoleTLSCert, ConsoleTLSKey string

	// Limits are the disk I/O limits (zero: unlimited).
	Limits iolimit.Limits
	// Pace paces background work (vacuum, lifecycle deletes) by client
	// load; zero values are iolimit's defaults.
	Pace iolimit.PacerConfig
	// VacuumThreshold is the dead ratio from which a segment is vacuumed
	// (default 0.5); VacuumInterval the period of the automatic check
	// (0: no automatic vacuum).
	VacuumThreshold float64
	VacuumInterval  time.Duration
	// ScrubInterval is the period of the scrub's passes (package scrub;
	// 0: only on demand, b3 admin scrub start).
	ScrubInterval time.Duration
	// LifecycleInterval is the sweeper's period (default 1h);
	// LifecycleRate bounds its deletes per second (0: unlimited);
	// LifecycleDay shortens a lifecycle day for tests (default 24h).
	LifecycleInterval time.Duration
	LifecycleRate     float64
	LifecycleDay      time.Duration
	// CacheBytes bounds the small-object cache (0: off); CacheMaxObject is
	// the largest object cached; CachePolicy "lru" or "s3fifo".
	CacheBytes, CacheMaxObject int64
	CachePolicy                cache.Policy
	// InlineMax is the largest object kept in its metadata record rather
	// than in the segments (0: none).
	InlineMax int64
	// MinFreeBytes is the free-space reserve of the data and metadata
	// disks: uploads that would cut into it get 507 InsufficientStorage.
	MinFreeBytes int64

	// TLSCert and TLSKey, both set, make the S3 listener HTTPS;
	// AdminTLSCert and AdminTLSKey the admin listener. The files are
	// read again on SIGHUP and when they change (checked every
	// TLSCheckInterval, default 30s), without dropping connections.
	TLSCert, TLSKey           string
	AdminTLSCert, AdminTLSKey string
	TLSCheckInterval          time.Duration
	// DrainDelay is how long, after the stop signal, /health/ready fails
	// while requests are still served, before the listener closes.
	DrainDelay time.Duration
	// LogJSON prints the banner as a JSON log line.
	LogJSON bool
	// BucketMetrics is how many buckets (the largest) get per-bucket
	// object and byte gauges (0: none, the default: their labels name
	// buckets to whoever reads /metrics); BucketMetricsInterval how often
	// they are counted (a metadata scan; default 5m).
	BucketMetrics         int
	BucketMetricsInterval time.Duration
	// AuthBackOff is how many failed authentications (wrong signatures,
	// unknown access keys, wrong console logins) one client address may
	// make in a row before its requests with credentials are held back:
	// 503 SlowDown (S3) or 429 (console) with Retry-After, a second per
	// further failure (package authlimit). 0: 10; negative: off.
	AuthBackOff int

	// Ready, if set, is called with the bound address once the server
	// accepts connections (tests listen on port 0); AdminReady and
	// ConsoleReady likewise with the admin and console listeners'.
	Ready, AdminReady, ConsoleReady func(addr string)
}

// defaults fills the zero values that have one.
func (cfg *Config) defaults() {
	if cfg.Address == "" {
		cfg.Address = "127.0.0.1:9000"
	}
	if cfg.Root == "" {
		cfg.Root = "data"
	}
	if cfg.Region == "" {
		cfg.Region = "us-east-1"
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.LifecycleInterval <= 0 {
		cfg.LifecycleInterval = time.Hour
	}
	if cfg.TLSCheckInterval <= 0 {
		cfg.TLSCheckInterval = 30 * time.Second
	}
	if cfg.BucketMetricsInterval <= 0 {
		cfg.BucketMetricsInterval = 5 * time.Minute
	}
}

// authLimits configures the failed-authentication back-off.
func (cfg *Config) authLimits() authlimit.Config { return AuthLimits(cfg.AuthBackOff) }

// AuthLimits is the failed-authentication back-off of --auth-backoff n
// (0: the default, 10; below 0: off), for b3 server and b3 node alike.
func AuthLimits(n int) authlimit.Config {
	n = cmp.Or(n, 10)
	return authlimit.Config{AddrBurst: n, KeyBurst: 10 * n, Off: n < 0}
}

// ShutdownTimeout bounds the graceful shutdown: requests still running
// after it are cut.
const ShutdownTimeout = 30 * time.Second

// Run serves until ctx is done, then shuts down gracefully and closes the
// store. The banner (endpoint, credentials, an example) goes to out.
//
// Start, in order: the data directory is locked (a second server on it
// fails naming the first one's pid); TLS key pairs are loaded; the
// listeners are bound; the store opens; only then are credentials and the
// admin token generated (on a first start), so a start that fails leaves
// none behind.
//
// Shutdown, in order: readiness turns false and stays so for DrainDelay
// while requests are still served (load balancers see it and move
// clients away first); the listener closes and requests in flight finish
// (up to ShutdownTimeout); background passes stop; the store closes,
// which syncs segments and metadata. A request acknowledged before that
// is durable (it was synced before its answer).
//
// SIGUSR1 starts a vacuum pass; SIGHUP reloads the TLS key pairs.
func Run(ctx context.Context, cfg Config, out io.Writer) (err error) {
	cfg.defaults()
	if err := cfg.Validate(); err != nil {
		return err
	}
	defMeta, defData := objstore.DefaultDirs(cfg.Root)
	if cfg.MetaDir == "" {
		cfg.MetaDir = defMeta
	}
	if cfg.DataDir == "" {
		cfg.DataDir = defData
	}
	for _, dir := range []string{cfg.Root, cfg.MetaDir, cfg.DataDir} {
		if err := os.MkdirAll(dir, vfs.DirPerm); err != nil {
			return fmt.Errorf("create %s: %w", dir, err)
		}
		// Directories made by an older b3, or by hand, keep their mode:
		// say so rather than change what the operator may have chosen.
		if st, err := os.Stat(dir); err == nil && st.Mode().Perm()&0o077 != 0 {
			cfg.Logger.Warn("data directory is open to other local users; b3 creates its directories 0700 (chmod 700 to match)",
				"dir", dir, "mode", st.Mode().Perm())
		}
	}
	unlock, err := LockDataDir(cfg.Root)
	if err != nil {
		return err
	}
	defer unlock()

	// Every listener is bound before anything is generated or opened.
	lns, err := Listen(cfg)
	if err != nil {
		return err
	}
	defer lns.Close()

	overrides, err := OpenOverrideStore(cfg.Root)
	if err != nil {
		return err
	}
	configured := admin.Configured{Limits: cfg.Limits, VacuumInterval: cfg.VacuumInterval, CacheBytes: cfg.CacheBytes}
	applied, err := overrides.apply(&cfg)
	if err != nil {
		return err
	}
	if len(applied) > 0 {
		cfg.Logger.Info("runtime settings changed through the admin API override the configuration (b3 admin settings)",
			"overridden", applied, "file", filepath.Join(cfg.Root, OverridesFile))
	}

	pacer := iolimit.NewPacer(cfg.Pace)
	limiter := iolimit.New(cfg.Limits, iolimit.WithPacer(pacer))
	objCache := cache.New[objstore.CachedObject](cache.Options{
		MaxBytes: cfg.CacheBytes, MaxObjectSize: cfg.CacheMaxObject, Policy: cfg.CachePolicy})
	store, err := objstore.Open(objstore.Options{
		MetaDir: cfg.MetaDir, DataDir: cfg.DataDir,
		Sync: cfg.Sync, DirectIO: cfg.DirectIO, SegmentSize: cfg.SegmentSize, Logger: cfg.Logger,
		Limiter: limiter, VacuumThreshold: cfg.VacuumThreshold,
		LifecycleDay: cfg.LifecycleDay, Cache: objCache, MinFreeBytes: cfg.MinFreeBytes,
		InlineMax: cfg.InlineMax,
	})
	if err != nil {
		return err
	}
	// Closed last: every path below that returns closes the store.
	defer func() {
		if cerr := store.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("close store: %w", cerr)
		}
	}()

	root, created, err := rootUser(cfg)
	if err != nil {
		return err
	}
	root.Admin = true // MinIO's root: every bucket, whoever owns it
	users, err := openUserStore(cfg.Root, append([]s3api.User{root}, cfg.Users...), cfg.Logger)
	if err != nil {
		return err
	}
	adminToken := cfg.AdminToken
	if adminToken == "" {
		if adminToken, err = LoadOrCreateAdminToken(cfg.Root); err != nil {
			return err
		}
	}

	registry := admin.NewRegistry()
	requests := admin.NewRequestMetrics(registry)
	registry.MustRegister(&admin.StoreCollector{Store: store, Limiter: limiter, Dirs: []string{cfg.MetaDir, cfg.DataDir}})
	admin.RegisterBuildInfo(registry)
	if cfg.BucketMetrics > 0 {
		registry.MustRegister(admin.NewBucketCollector(store, cfg.BucketMetrics, cfg.BucketMetricsInterval))
	}
	observe := requests.Observe
	if cfg.AccessLog {
		observe = AccessLog(cfg.Logger, observe)
	}
	versionKey, err := LoadOrCreateVersionKey(cfg.Root)
	if err != nil {
		return err
	}
	keys := cfg.Keys
	if keys == nil {
		if keys, err = LoadOrCreateKeyRing(cfg.Root); err != nil {
			return err
		}
	}
	api := s3api.New(store, s3api.Config{Region: cfg.Region, Regions: cfg.Regions, Domains: cfg.Domains, Directory: users.dir,
		MediaHeaders: cfg.MediaHeaders, MaxRetention: cfg.MaxRetention, NewBuckets: cfg.NewBuckets, Logger: cfg.Logger, Observe: observe, VersionKey: versionKey,
		AuthLimiter: authlimit.New(cfg.authLimits()), Keys: keys})
	admin.RegisterLLHLS(registry, api.LLHLSCounts)

	var ready atomic.Bool
	passCtx, cancelPasses := context.WithCancel(context.Background())
	defer cancelPasses()
	scrubber, err := scrub.New(scrub.Config{Engine: store, State: StateFile(filepath.Join(cfg.Root, ScrubStateFile)),
		Interval: cfg.ScrubInterval, Logger: cfg.Logger})
	if err != nil {
		return err
	}
	registry.MustRegister(&scrub.Collector{Scrubber: scrubber})
	adminAPI, err := admin.New(admin.Config{Store: store, Limiter: limiter, Users: users, Token: adminToken, MetricsToken: cfg.MetricsToken,
		Registry: registry, Ready: ready.Load, Logger: cfg.Logger, Context: passCtx,
		Overrides: overrides, Configured: configured, KMS: api, Scrub: scrubber})
	if err != nil {
		return err
	}

	s3Handler := pacer.Handler(api)
	srv := NewHTTPServer(s3Handler, cfg.Logger)
	s3URL := lns.URL(lns.S3, lns.S3Cert)
	consoleSrv := startConsole(passCtx, cfg, lns.Console, consoleDeps{s3: s3Handler, s3URL: s3URL,
		admin: adminAPI, adminToken: adminToken, root: root.AccessKey, registry: registry, store: store})
	var adminSrv *http.Server
	if lns.Admin != nil {
		adminSrv = NewHTTPServer(adminAPI, cfg.Logger)
		go func() { _ = adminSrv.Serve(lns.Admin) }()
	}

	pacerDone := make(chan struct{})
	go func() {
		defer close(pacerDone)
		pacer.Run(passCtx, store.PaceSignals())
	}()
	if cfg.VacuumInterval > 0 {
		store.StartVacuum(cfg.VacuumInterval)
	}
	store.StartLifecycle(cfg.LifecycleInterval, cfg.LifecycleRate)
	scrubDone := make(chan struct{})
	go func() {
		defer close(scrubDone)
		scrubber.Run(passCtx)
	}()
	handleSignals(passCtx, cfg, adminAPI)
	WatchCertificates(passCtx, cfg.Logger, cfg.TLSCheckInterval, lns.Certs())

	adminURL, consoleURL := "", ""
	if lns.Admin != nil {
		adminURL = lns.URL(lns.Admin, lns.AdminCert)
	}
	if lns.Console != nil {
		consoleURL = lns.URL(lns.Console, lns.ConsoleCert)
	}
	printBanner(out, cfg, s3URL, adminURL, consoleURL, root, created)
	ready.Store(true)
	if cfg.Ready != nil {
		cfg.Ready(lns.S3.Addr().String())
	}
	if cfg.AdminReady != nil && lns.Admin != nil {
		cfg.AdminReady(lns.Admin.Addr().String())
	}
	if cfg.ConsoleReady != nil && lns.Console != nil {
		cfg.ConsoleReady(lns.Console.Addr().String())
	}

	served := make(chan error, 1)
	go func() { served <- srv.Serve(lns.S3) }()
	select {
	case err = <-served:
	case <-ctx.Done():
		ready.Store(false)
		adminAPI.SetClosing()
		if cfg.DrainDelay > 0 {
			cfg.Logger.Info("draining: /health/ready fails, requests are still served", "drain_delay", cfg.DrainDelay)
			select {
			case <-time.After(cfg.DrainDelay):
			case err = <-served:
			}
		}
		cfg.Logger.Info("shutting down: waiting for requests in flight")
		shutdownCtx, cancel := context.WithTimeout(context.Background(), ShutdownTimeout)
		if serr := srv.Shutdown(shutdownCtx); serr != nil {
			srv.Close()
		}
		cancel()
		if err == nil {
			err = <-served
		}
	}
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	cancelPasses()
	<-pacerDone
	<-scrubDone
	if adminSrv != nil {
		adminSrv.Close()
	}
	closeServer(consoleSrv)
	if err == nil {
		defer cfg.Logger.Info("shut down cleanly")
	}
	return err
}

// AccessLog returns observe that also logs every request at info level
// (--access-log; b3 server and b3 node log the same line).
func AccessLog(log *slog.Logger, observe func(s3api.RequestInfo)) func(s3api.RequestInfo) {
	return func(info s3api.RequestInfo) {
		observe(info)
		log.Info("request", "request_id", info.ID, "op", info.Operation, "method", info.Method,
			"path", info.Path, "status", info.Status, "in", info.BytesIn, "out", info.BytesOut,
			"duration", info.Duration, "access_key", info.AccessKey, "remote", info.Remote)
	}
}

// handleSignals starts a vacuum pass on SIGUSR1 until ctx ends.
func handleSignals(ctx context.Context, cfg Config, adminAPI *admin.Server) {
	usr1 := make(chan os.Signal, 1)
	signal.Notify(usr1, syscall.SIGUSR1)
	go func() {
		defer signal.Stop(usr1)
		for {
			select {
			case <-ctx.Done():
				return
			case <-usr1:
				cfg.Logger.Info("SIGUSR1: starting a vacuum pass")
				if err := adminAPI.StartVacuumPass(0); err != nil {
					cfg.Logger.Info("SIGUSR1: vacuum not started", "err", err)
				}
			}
		}
	}()
}

// WatchCertificates reloads the TLS key pairs on SIGHUP, and when their
// files change (checked every interval), until ctx ends. b3 server and
// b3 node both watch theirs here.
//
// SIGHUP is taken even without key pairs: a reload (systemctl reload)
// must not end the process.
func WatchCertificates(ctx context.Context, log *slog.Logger, interval time.Duration, certs []*tlsreload.Certificate) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	hups := make([]chan struct{}, len(certs))
	for i, c := range certs {
		hups[i] = make(chan struct{}, 1)
		go c.Watch(ctx, interval, hups[i])
	}
	go func() {
		defer signal.Stop(hup)
		for {
			select {
			case <-ctx.Done():
				return
			case <-hup:
				log.Info("SIGHUP: reloading TLS certificates", "count", len(certs))
				for _, h := range hups {
					select {
					case h <- struct{}{}:
					default:
					}
				}
			}
		}
	}()
}

// NewHTTPServer is the http.Server of every b3 listener (b3 server's and
// b3 node's): header and idle timeouts, no whole-request ones, errors
// logged through log.
func NewHTTPServer(h http.Handler, log *slog.Logger) *http.Server {
	return &http.Server{
		Handler: h,
		// No ReadTimeout or WriteTimeout: they bound the whole request,
		// and a multi-GB upload or download legitimately takes long.
		ReadHeaderTimeout: 30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    1 << 20,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
}

func tokenWhere(cfg Config) string {
	if cfg.AdminToken != "" {
		return "flags/environment"
	}
	return filepath.Join(abs(cfg.Root), AdminTokenFile)
}

func rootUser(cfg Config) (s3api.User, bool, error) {
	switch {
	case cfg.AccessKey != "" && cfg.SecretKey != "":
		return s3api.User{Name: "root", AccessKey: cfg.AccessKey, SecretKey: cfg.SecretKey}, false, nil
	case cfg.AccessKey != "" || cfg.SecretKey != "":
		return s3api.User{}, false, errors.New("give both --access-key and --secret-key, or neither")
	}
	return LoadOrCreateCredentials(cfg.Root)
}

// printBanner prints where the server listens and how to reach it: text,
// or with LogJSON one JSON log line. The root secret appears only on the
// start that generated it (the operator must learn it once); a secret the
// operator supplied, or one kept from an earlier start, is never printed:
// the banner ends up in journald and container logs.
func printBanner(out io.Writer, cfg Config, s3URL, adminURL, consoleURL string, root s3api.User, created bool) {
	kept := filepath.Join(abs(cfg.Root), CredentialsFile)
	secretNote, secret := "kept in "+kept+" (not shown)", "<secret key>"
	switch {
	case cfg.AccessKey != "":
		secretNote = "as given in flags/environment/config (not shown)"
	case created:
		secret = root.SecretKey
		secretNote = "generated, kept in " + kept + "; shown on this first start only"
	}
	try := fmt.Sprintf("AWS_ACCESS_KEY_ID=%s AWS_SECRET_ACCESS_KEY=%s AWS_REGION=%s aws --endpoint-url %s s3 ls",
		root.AccessKey, secret, cfg.Region, s3URL)
	if cfg.LogJSON {
		attrs := []any{"s3_endpoint", s3URL, "region", cfg.Region, "metadata_dir", abs(cfg.MetaDir), "segments_dir", abs(cfg.DataDir),
			"fsync", cfg.Sync.String(), "access_key", root.AccessKey, "secret_key_note", secretNote}
		if created && cfg.AccessKey == "" {
			attrs = append(attrs, "secret_key", root.SecretKey)
		}
		if adminURL != "" {
			attrs = append(attrs, "admin_endpoint", adminURL, "admin_token", tokenWhere(cfg))
		}
		if consoleURL != "" {
			attrs = append(attrs, "console_endpoint", consoleURL)
		}
		slog.New(slog.NewJSONHandler(out, nil)).Info("b3 server: S3 API on "+s3URL, append(attrs, "try", try)...)
		return
	}
	fmt.Fprintf(out, "b3 server: S3 API on %s (region %s)\n", s3URL, cfg.Region)
	fmt.Fprintf(out, "  metadata: %s\n  segments: %s (fsync: %s)\n", abs(cfg.MetaDir), abs(cfg.DataDir), cfg.Sync)
	fmt.Fprintf(out, "  access key: %s\n", root.AccessKey)
	if created && cfg.AccessKey == "" {
		fmt.Fprintf(out, "  secret key: %s\n  (%s)\n", root.SecretKey, secretNote)
	} else {
		fmt.Fprintf(out, "  secret key: %s\n", secretNote)
	}
	if adminURL != "" {
		fmt.Fprintf(out, "  admin: %s (token in %s; /metrics, /health/ready)\n", adminURL, tokenWhere(cfg))
	}
	if consoleURL != "" {
		fmt.Fprintf(out, "  console: %s (log in with an access key and secret key)\n", consoleURL)
	}
	fmt.Fprintf(out, "try:\n  %s\n", try)
}

func abs(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}
