package tlsreload

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"log/slog"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// Certificate is a key pair kept up to date from its files, and for
// mutual TLS (LoadMutual) the CA bundle peers' certificates must chain to.
type Certificate struct {
	certFile, keyFile string
	caFile            string // "": no CA bundle (Load)
	log               *slog.Logger

	cur  atomic.Pointer[tls.Certificate]
	pool atomic.Pointer[x509.CertPool] // of caFile; nil without one

	mu    sync.Mutex // serializes reloads
	stamp [3]fileStamp
}

type fileStamp struct {
	size    int64
	modTime time.Time
}

func stampOf(path string) fileStamp {
	st, err := os.Stat(path)
	if err != nil {
		return fileStamp{}
	}
	return fileStamp{st.Size(), st.ModTime()}
}

// Load reads the key pair from certFile (the certificate chain, leaf
// first) and keyFile. Both must be given.
func Load(certFile, keyFile string, log *slog.Logger) (*Certificate, error) {
	if certFile == "" || keyFile == "" {
		return nil, fmt.Errorf("TLS needs both a certificate and a key file (got %q and %q)", certFile, keyFile)
	}
	return load(&Certificate{certFile: certFile, keyFile: keyFile, log: log})
}

// LoadMutual is Load for mutual TLS, where the same key pair serves and
// dials: it also reads caFile, the bundle of CA certificates (PEM) a
// peer's certificate must chain to (Pool), and checks that the pair's own
// certificate chains to it, valid now, for both server and client
// authentication. All three files must be given.
func LoadMutual(certFile, keyFile, caFile string, log *slog.Logger) (*Certificate, error) {
	if certFile == "" || keyFile == "" || caFile == "" {
		return nil, fmt.Errorf("mutual TLS needs a certificate, a key and a CA file (got %q, %q and %q)", certFile, keyFile, caFile)
	}
	return load(&Certificate{certFile: certFile, keyFile: keyFile, caFile: caFile, log: log})
}

func load(c *Certificate) (*Certificate, error) {
	if c.log == nil {
		c.log = slog.Default()
	}
	if err := c.Reload(); err != nil {
		return nil, err
	}
	return c, nil
}

// Reload reads the files again and, if they hold a valid pair (and with
// LoadMutual a CA bundle it chains to), puts them in use for new
// handshakes. On error the pair and bundle in use stay.
func (c *Certificate) Reload() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	stamp := [3]fileStamp{stampOf(c.certFile), stampOf(c.keyFile), stampOf(c.caFile)}
	pair, err := tls.LoadX509KeyPair(c.certFile, c.keyFile)
	if err != nil {
		return fmt.Errorf("load TLS key pair %s, %s: %w", c.certFile, c.keyFile, err)
	}
	if pair.Leaf == nil && len(pair.Certificate) > 0 {
		pair.Leaf, _ = x509.ParseCertificate(pair.Certificate[0])
	}
	var pool *x509.CertPool
	if c.caFile != "" {
		if pool, err = readPool(c.caFile); err != nil {
			return err
		}
		if err := verifyOwn(&pair, pool); err != nil {
			return fmt.Errorf("TLS certificate %s against the CA bundle %s: %w", c.certFile, c.caFile, err)
		}
		c.pool.Store(pool)
	}
	old := c.cur.Swap(&pair)
	c.stamp = stamp
	if old != nil && pair.Leaf != nil {
		attrs := []any{"cert", c.certFile, "subject", pair.Leaf.Subject.String(),
			"serial", pair.Leaf.SerialNumber.String(), "not_after", pair.Leaf.NotAfter}
		if c.caFile != "" {
			attrs = append(attrs, "ca", c.caFile)
		}
		c.log.Info("TLS certificate reloaded", attrs...)
	}
	return nil
}

// readPool reads a PEM bundle of CA certificates; it must hold one.
func readPool(path string) (*x509.CertPool, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("load TLS CA bundle: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(data) {
		return nil, fmt.Errorf("load TLS CA bundle %s: no PEM certificate in it", path)
	}
	return pool, nil
}

// verifyOwn checks that pair's leaf chains to pool (through the
// intermediates pair carries), valid now, for both roles it plays.
func verifyOwn(pair *tls.Certificate, pool *x509.CertPool) error {
	if pair.Leaf == nil {
		return fmt.Errorf("unparsable certificate")
	}
	inter := x509.NewCertPool()
	for _, der := range pair.Certificate[1:] {
		if cert, err := x509.ParseCertificate(der); err == nil {
			inter.AddCert(cert)
		}
	}
	for _, role := range []struct {
		usage x509.ExtKeyUsage
		name  string
	}{{x509.ExtKeyUsageServerAuth, "server"}, {x509.ExtKeyUsageClientAuth, "client"}} {
		opts := x509.VerifyOptions{Roots: pool, Intermediates: inter, KeyUsages: []x509.ExtKeyUsage{role.usage}}
		if _, err := pair.Leaf.Verify(opts); err != nil {
			return fmt.Errorf("not valid as a %s certificate: %w", role.name, err)
		}
	}
	return nil
}

// changed reports whether any file looks different from the last
// successful load.
func (c *Certificate) changed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return [3]fileStamp{stampOf(c.certFile), stampOf(c.keyFile), stampOf(c.caFile)} != c.stamp
}

// Leaf returns the certificate in use.
func (c *Certificate) Leaf() *x509.Certificate { return c.cur.Load().Leaf }

// Pair returns the key pair in use.
func (c *Certificate) Pair() *tls.Certificate { return c.cur.Load() }

// Pool returns the CA bundle in use (LoadMutual; nil after Load).
func (c *Certificate) Pool() *x509.CertPool { return c.pool.Load() }

// Watch reloads when hup delivers (SIGHUP, forwarded by the caller; nil:
// none) and when the files change, checked every interval, until ctx
// ends. Failures are logged; the pair in use stays.
func (c *Certificate) Watch(ctx context.Context, interval time.Duration, hup <-chan struct{}) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
		case <-t.C:
			if !c.changed() {
				continue
			}
		}
		if err := c.Reload(); err != nil {
			c.log.Error("TLS certificate not reloaded; the previous one stays in use", "err", err)
		}
	}
}

// Config returns a server TLS configuration presenting the current pair.
func (c *Certificate) Config() *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		NextProtos: []string{"http/1.1"},
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
			return c.cur.Load(), nil
		},
	}
}

// Listen listens on addr, with TLS if cert is not nil.
func Listen(addr string, cert *Certificate) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil || cert == nil {
		return ln, err
	}
	return tls.NewListener(ln, cert.Config()), nil
}

// Scheme is "https" with a certificate, else "http".
func Scheme(cert *Certificate) string {
	if cert == nil {
		return "http"
	}
	return "https"
}
