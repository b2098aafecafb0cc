package server

import (
	"context"
	"net"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/b3-storage/b3/internal/authlimit"
	"github.com/b3-storage/b3/internal/console"
	"github.com/b3-storage/b3/internal/meta"
	"github.com/b3-storage/b3/internal/objstore"
)

// consoleDeps are what the console runs its requests through.
type consoleDeps struct {
	s3         http.Handler // the S3 port's handler, pacer included
	s3URL      string
	admin      http.Handler
	adminToken string
	root       string // the root user's access key: the console's admin
	registry   *prometheus.Registry
	store      *objstore.Store
}

// startConsole serves the web console on ln (nil: none) until ctx is done
// or the returned server is closed.
func startConsole(ctx context.Context, cfg Config, ln net.Listener, d consoleDeps) *http.Server {
	if ln == nil {
		return nil
	}
	c := console.New(console.Config{
		S3: d.s3, Region: cfg.Region, S3Endpoint: d.s3URL,
		Admin: d.admin, AdminToken: d.adminToken, IsAdmin: func(key string) bool { return key == d.root },
		Metrics: d.registry, Usage: BucketUsage(d.store), Logger: cfg.Logger,
		Logins: authlimit.New(cfg.authLimits()),
	})
	go c.Run(ctx)
	srv := console.NewHTTPServer(c, cfg.Logger)
	go func() { _ = srv.Serve(ln) }()
	return srv
}

// BucketUsage counts a bucket's objects and bytes by a metadata scan.
func BucketUsage(store *objstore.Store) func(bucket string) (int64, int64, error) {
	return func(bucket string) (objects, bytes int64, err error) {
		err = store.Meta().ScanObjects(bucket, "", func(o *meta.Object) error {
			objects++
			bytes += o.Size
			return nil
		})
		return objects, bytes, err
	}
}

func closeServer(srv *http.Server) {
	if srv != nil {
		srv.Close()
	}
}
