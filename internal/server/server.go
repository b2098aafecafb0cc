package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/b3-storage/b3/internal/admin"
	"github.com/b3-storage/b3/internal/blob"
	"github.com/b3-storage/b3/internal/cache"
	"github.com/b3-storage/b3/internal/iolimit"
	"github.com/b3-storage/b3/internal/objstore"
	"github.com/b3-storage/b3/internal/s3api"
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

	// AdminAddress is the admin listener (API, /metrics, health, pprof);
	// "" disables it. AdminToken is its bearer token (default: generated
	// and kept in Root/admin-token).
	AdminAddress, AdminToken string

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

	// Ready, if set, is called with the bound address once the server
	// accepts connections (tests listen on port 0); AdminReady likewise
	// with the admin listener's.
	Ready, AdminReady func(addr string)
}

// ShutdownTimeout bounds the graceful shutdown: requests still running
// after it are cut.
const ShutdownTimeout = 30 * time.Second

// Run serves until ctx is done, then shuts down gracefully and closes the
// store. The banner (endpoint, credentials, an example) goes to out.
//
// Shutdown, in order: readiness turns false; the listener closes and
// requests in flight finish (up to ShutdownTimeout); background passes
// stop; the store closes, which syncs segments and metadata. A request
// acknowledged before that is durable (it was synced before its answer).
//
// SIGUSR1 starts a vacuum pass.
func Run(ctx context.Context, cfg Config, out io.Writer) error {
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
	if err := cfg.Limits.Validate(); err != nil {
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

	root, created, err := rootUser(cfg)
	if err != nil {
		return err
	}
	users, err := openUserStore(cfg.Root, append([]s3api.User{root}, cfg.Users...))
	if err != nil {
		return err
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
	// Closed last: every path below that returns goes through closeStore.
	closeStore := func(err error) error {
		if cerr := store.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("close store: %w", cerr)
		}
		return err
	}

	registry := admin.NewRegistry()
	requests := admin.NewRequestMetrics(registry)
	registry.MustRegister(&admin.StoreCollector{Store: store, Limiter: limiter})
	observe := requests.Observe
	if cfg.AccessLog {
		observe = func(info s3api.RequestInfo) {
			requests.Observe(info)
			cfg.Logger.Info("request", "request_id", info.ID, "op", info.Operation, "method", info.Method,
				"path", info.Path, "status", info.Status, "in", info.BytesIn, "out", info.BytesOut,
				"duration", info.Duration, "access_key", info.AccessKey, "remote", info.Remote)
		}
	}
	api := s3api.New(store, s3api.Config{Region: cfg.Region, Regions: cfg.Regions, Domains: cfg.Domains, Directory: users.dir,
		MediaHeaders: cfg.MediaHeaders, Logger: cfg.Logger, Observe: observe})

	var ready atomic.Bool
	passCtx, cancelPasses := context.WithCancel(context.Background())
	defer cancelPasses()
	adminToken := cfg.AdminToken
	if adminToken == "" {
		if adminToken, err = LoadOrCreateAdminToken(cfg.Root); err != nil {
			return closeStore(err)
		}
	}
	adminAPI, err := admin.New(admin.Config{Store: store, Limiter: limiter, Users: users, Token: adminToken,
		Registry: registry, Ready: ready.Load, Logger: cfg.Logger, Context: passCtx})
	if err != nil {
		return closeStore(err)
	}

	ln, err := net.Listen("tcp", cfg.Address)
	if err != nil {
		return closeStore(fmt.Errorf("listen on %s: %w", cfg.Address, err))
	}
	srv := newHTTPServer(pacer.Handler(api), cfg.Logger)
	var adminSrv *http.Server
	var adminLn net.Listener
	if cfg.AdminAddress != "" {
		if adminLn, err = net.Listen("tcp", cfg.AdminAddress); err != nil {
			ln.Close()
			return closeStore(fmt.Errorf("admin listener on %s: %w", cfg.AdminAddress, err))
		}
		adminSrv = newHTTPServer(adminAPI, cfg.Logger)
		go func() { _ = adminSrv.Serve(adminLn) }()
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
	usr1 := make(chan os.Signal, 1)
	signal.Notify(usr1, syscall.SIGUSR1)
	defer signal.Stop(usr1)
	go func() {
		for {
			select {
			case <-passCtx.Done():
				return
			case <-usr1:
				cfg.Logger.Info("SIGUSR1: starting a vacuum pass")
				if err := adminAPI.StartVacuumPass(0); err != nil {
					cfg.Logger.Info("SIGUSR1: vacuum not started", "err", err)
				}
			}
		}
	}()

	printBanner(out, cfg, ln.Addr().String(), root, created)
	if adminLn != nil {
		fmt.Fprintf(out, "  admin: http://%s (token in %s; /metrics, /health/ready)\n", adminLn.Addr(), tokenWhere(cfg))
	}
	ready.Store(true)
	if cfg.Ready != nil {
		cfg.Ready(ln.Addr().String())
	}
	if cfg.AdminReady != nil && adminLn != nil {
		cfg.AdminReady(adminLn.Addr().String())
	}

	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err = <-served:
	case <-ctx.Done():
		ready.Store(false)
		adminAPI.SetClosing()
		cfg.Logger.Info("shutting down: waiting for requests in flight")
		shutdownCtx, cancel := context.WithTimeout(context.Background(), ShutdownTimeout)
		err = srv.Shutdown(shutdownCtx)
		cancel()
		if err != nil {
			srv.Close()
		}
		<-served
	}
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	cancelPasses()
	<-pacerDone
	if adminSrv != nil {
		adminSrv.Close()
	}
	err = closeStore(err)
	if err == nil {
		cfg.Logger.Info("shut down cleanly")
	}
	return err
}

func newHTTPServer(h http.Handler, log *slog.Logger) *http.Server {
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

// printBanner prints where the server listens and how to reach it. The
// root secret appears only on the start that generated it (the operator
// must learn it once); a secret the operator supplied, or one kept from
// an earlier start, is never printed: the banner ends up in journald and
// container logs.
func printBanner(out io.Writer, cfg Config, addr string, root s3api.User, created bool) {
	endpoint := "http://" + addr
	fmt.Fprintf(out, "b3 server: S3 API on %s (region %s)\n", endpoint, cfg.Region)
	fmt.Fprintf(out, "  metadata: %s\n  segments: %s (fsync: %s)\n", abs(cfg.MetaDir), abs(cfg.DataDir), cfg.Sync)
	kept := filepath.Join(abs(cfg.Root), CredentialsFile)
	secret := "<secret key>"
	fmt.Fprintf(out, "  access key: %s\n", root.AccessKey)
	switch {
	case cfg.AccessKey != "":
		fmt.Fprintf(out, "  secret key: as given in flags/environment/config (not shown)\n")
	case created:
		secret = root.SecretKey
		fmt.Fprintf(out, "  secret key: %s\n  (generated, kept in %s; shown on this first start only)\n", root.SecretKey, kept)
	default:
		fmt.Fprintf(out, "  secret key: kept in %s (not shown)\n", kept)
	}
	fmt.Fprintf(out, "try:\n  AWS_ACCESS_KEY_ID=%s AWS_SECRET_ACCESS_KEY=%s AWS_REGION=%s aws --endpoint-url %s s3 ls\n",
		root.AccessKey, secret, cfg.Region, endpoint)
}

func abs(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}
