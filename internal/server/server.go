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
	"path/filepath"
	"time"

	"github.com/b3-storage/b3/internal/blob"
	"github.com/b3-storage/b3/internal/objstore"
	"github.com/b3-storage/b3/internal/s3api"
)

// Config configures a single-node server. Zero values pick the defaults
// noted.
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
	Domains              []string     // virtual-host-style base domains
	Sync                 blob.SyncPolicy
	DirectIO             bool
	Logger               *slog.Logger
	// Ready, if set, is called with the bound address once the server
	// accepts connections (tests listen on port 0).
	Ready func(addr string)
}

// ShutdownTimeout bounds the graceful shutdown: requests still running
// after it are cut.
const ShutdownTimeout = 30 * time.Second

// Run serves until ctx is done, then shuts down gracefully and closes the
// store. The banner (endpoint, credentials, an example) goes to out.
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
	defMeta, defData := objstore.DefaultDirs(cfg.Root)
	if cfg.MetaDir == "" {
		cfg.MetaDir = defMeta
	}
	if cfg.DataDir == "" {
		cfg.DataDir = defData
	}
	for _, dir := range []string{cfg.Root, cfg.MetaDir, cfg.DataDir} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("create %s: %w", dir, err)
		}
	}

	root, created, err := rootUser(cfg)
	if err != nil {
		return err
	}
	users := append([]s3api.User{root}, cfg.Users...)

	store, err := objstore.Open(objstore.Options{
		MetaDir: cfg.MetaDir, DataDir: cfg.DataDir,
		Sync: cfg.Sync, DirectIO: cfg.DirectIO, Logger: cfg.Logger,
	})
	if err != nil {
		return err
	}
	api := s3api.New(store, s3api.Config{Region: cfg.Region, Domains: cfg.Domains, Users: users, Logger: cfg.Logger})

	ln, err := net.Listen("tcp", cfg.Address)
	if err != nil {
		store.Close()
		return fmt.Errorf("listen on %s: %w", cfg.Address, err)
	}
	srv := &http.Server{
		Handler: api,
		// No ReadTimeout or WriteTimeout: they bound the whole request,
		// and a multi-GB upload or download legitimately takes long.
		ReadHeaderTimeout: 30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    1 << 20,
		ErrorLog:          slog.NewLogLogger(cfg.Logger.Handler(), slog.LevelWarn),
	}
	printBanner(out, cfg, ln.Addr().String(), root, created)
	if cfg.Ready != nil {
		cfg.Ready(ln.Addr().String())
	}

	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err = <-served:
	case <-ctx.Done():
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
	if cerr := store.Close(); cerr != nil && err == nil {
		err = fmt.Errorf("close store: %w", cerr)
	}
	return err
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

func printBanner(out io.Writer, cfg Config, addr string, root s3api.User, created bool) {
	endpoint := "http://" + addr
	fmt.Fprintf(out, "b3 server: S3 API on %s (region %s)\n", endpoint, cfg.Region)
	fmt.Fprintf(out, "  metadata: %s\n  segments: %s (fsync: %s)\n", abs(cfg.MetaDir), abs(cfg.DataDir), cfg.Sync)
	where := "from flags/environment"
	if cfg.AccessKey == "" {
		where = "kept in " + filepath.Join(abs(cfg.Root), CredentialsFile)
		if created {
			where = "generated, " + where
		}
	}
	fmt.Fprintf(out, "  access key: %s\n  secret key: %s\n  (%s)\n", root.AccessKey, root.SecretKey, where)
	fmt.Fprintf(out, "try:\n  AWS_ACCESS_KEY_ID=%s AWS_SECRET_ACCESS_KEY=%s AWS_REGION=%s aws --endpoint-url %s s3 ls\n",
		root.AccessKey, root.SecretKey, cfg.Region, endpoint)
}

func abs(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}
