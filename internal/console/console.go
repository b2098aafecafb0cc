package console

import (
	"context"
	"crypto/tls"
	"embed"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/b3-storage/b3/internal/authlimit"
)

//go:embed assets
var assets embed.FS

// Config configures the console.
type Config struct {
	// S3 is the S3 API handler (the one serving the S3 port, pacer
	// included): every bucket and object action runs through it, signed
	// as the logged-in user.
	S3 http.Handler
	// Region is the region requests are signed for (default us-east-1).
	Region string
	// S3Endpoint is the S3 API's URL ("http://127.0.0.1:9000"), where
	// presigned share links point. An unspecified host (0.0.0.0, [::]) is
	// replaced by the host the browser reached the console at.
	S3Endpoint string
	// Admin is the admin API handler and AdminToken its bearer token; nil
	// hides the operations pages.
	Admin      http.Handler
	AdminToken string
	// IsAdmin reports whether the user of accessKey may use the
	// operations pages (the root user).
	IsAdmin func(accessKey string) bool
	// Metrics is the registry the charts sample (nil: no charts).
	Metrics prometheus.Gatherer
	// Cluster says the admin API answers GET /admin/v1/cluster (b3 node).
	Cluster bool
	// Usage counts a bucket's objects and bytes (nil: not shown). The
	// console calls it only after the S3 API let the user read the
	// bucket's ACL, i.e. for the bucket's owner.
	Usage func(bucket string) (objects, bytes int64, err error)
	// SessionTTL is a session's lifetime from login (default 12h).
	SessionTTL time.Duration
	// SampleEvery is the charts' sampling period (default 5s).
	SampleEvery time.Duration
	Logger      *slog.Logger
	Now         func() time.Time
	// Logins backs off failed logins per client address and access key
	// (429 with Retry-After; default authlimit's defaults).
	Logins *authlimit.Limiter
}

// Console is the console's http.Handler.
type Console struct {
	cfg      Config
	sessions *sessions
	history  *History
	mux      *http.ServeMux
	static   http.Handler
}

// New returns the console handler. Run samples the metrics.
func New(cfg Config) *Console {
	if cfg.Region == "" {
		cfg.Region = "us-east-1"
	}
	if cfg.SessionTTL <= 0 {
		cfg.SessionTTL = 12 * time.Hour
	}
	if cfg.SampleEvery <= 0 {
		cfg.SampleEvery = 5 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logins == nil {
		cfg.Logins = authlimit.New(authlimit.Config{Now: cfg.Now})
	}
	if cfg.IsAdmin == nil {
		cfg.IsAdmin = func(string) bool { return false }
	}
	sub, _ := fs.Sub(assets, "assets")
	c := &Console{cfg: cfg, sessions: newSessions(cfg.SessionTTL, cfg.Now), history: NewHistory(historyLen),
		mux: http.NewServeMux(), static: http.FileServerFS(sub)}
	m := c.mux
	m.HandleFunc("GET /{$}", c.index)
	m.Handle("GET /assets/", http.StripPrefix("/assets/", c.static))
	m.HandleFunc("POST /api/login", c.login)
	m.HandleFunc("POST /api/logout", c.withSession(c.logout))
	m.HandleFunc("GET /api/session", c.withSession(c.session))
	m.HandleFunc("POST /api/presign", c.withSession(c.presign))
	m.HandleFunc("GET /api/usage", c.withSession(c.usage))
	m.HandleFunc("GET /api/metrics", c.withSession(c.adminOnly(c.metrics)))
	m.HandleFunc("/api/admin/", c.withSession(c.adminOnly(c.adminProxy)))
	return c
}

// Run samples the metrics for the charts until ctx is done.
func (c *Console) Run(ctx context.Context) {
	if c.cfg.Metrics == nil {
		return
	}
	t := time.NewTicker(c.cfg.SampleEvery)
	defer t.Stop()
	for {
		c.history.Sample(c.cfg.Metrics, c.cfg.Now())
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// ServeHTTP checks the origin and CSRF token of every changing request,
// then routes. /s3/ is dispatched before the mux: object keys may hold
// "..", "//" or a trailing "/", which the mux would clean and redirect.
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
	if !sameOrigin(r) {
		writeError(w, http.StatusForbidden, "cross-origin request refused")
		return
	}
	if rest, ok := strings.CutPrefix(r.URL.Path, "/s3/"); ok || r.URL.Path == "/s3" {
		c.withSession(func(w http.ResponseWriter, r *http.Request, s *session) {
			c.s3Proxy(w, r, s, rest)
		})(w, r)
		return
	}
	c.mux.ServeHTTP(w, r)
}

func (c *Console) index(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Security-Policy", pageCSP)
	w.Header().Set("Cache-Control", "no-store")
	http.ServeFileFS(w, r, assets, "assets/index.html")
}

// pageCSP is the page's policy: scripts, styles and connections to the
// console's origin only; media and images also from blob: (hls.js feeds
// the video element through a MediaSource blob URL).
const pageCSP = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' blob: data:; " +
	"media-src 'self' blob:; connect-src 'self'; worker-src 'self' blob:; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'"

// Listen opens the console's listener. With tlsConfig set, it serves
// HTTPS (the session cookie is then marked Secure).
func Listen(address string, tlsConfig *tls.Config) (net.Listener, error) {
	ln, err := net.Listen("tcp", address)
	if err != nil {
		return nil, err
	}
	if tlsConfig != nil {
		ln = tls.NewListener(ln, tlsConfig)
	}
	return ln, nil
}

// NewHTTPServer returns the console's http.Server. Uploads stream through
// it, so, as on the S3 port, no timeout bounds a whole request.
func NewHTTPServer(h http.Handler, log *slog.Logger) *http.Server {
	return &http.Server{Handler: h, ReadHeaderTimeout: 30 * time.Second, IdleTimeout: 2 * time.Minute,
		MaxHeaderBytes: 1 << 20, ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
}
