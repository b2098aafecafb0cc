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

// Certificate is a key pair kept up to date from its files.
type Certificate struct {
	certFile, keyFile string
	log               *slog.Logger

	cur atomic.Pointer[tls.Certificate]

	mu    sync.Mutex // serializes reloads
	stamp [2]fileStamp
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
	if log == nil {
		log = slog.Default()
	}
	c := &Certificate{certFile: certFile, keyFile: keyFile, log: log}
	if err := c.Reload(); err != nil {
		return nil, err
	}
	return c, nil
}

// Reload reads both files again and, if they hold a valid pair, puts it
// in use for new handshakes. On error the pair in use stays.
func (c *Certificate) Reload() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	stamp := [2]fileStamp{stampOf(c.certFile), stampOf(c.keyFile)}
	pair, err := tls.LoadX509KeyPair(c.certFile, c.keyFile)
	if err != nil {
		return fmt.Errorf("load TLS key pair %s, %s: %w", c.certFile, c.keyFile, err)
	}
	if pair.Leaf == nil && len(pair.Certificate) > 0 {
		pair.Leaf, _ = x509.ParseCertificate(pair.Certificate[0])
	}
	old := c.cur.Swap(&pair)
	c.stamp = stamp
	if old != nil && pair.Leaf != nil {
		c.log.Info("TLS certificate reloaded", "cert", c.certFile, "subject", pair.Leaf.Subject.String(),
			"serial", pair.Leaf.SerialNumber.String(), "not_after", pair.Leaf.NotAfter)
	}
	return nil
}

// changed reports whether either file looks different from the last
// successful load.
func (c *Certificate) changed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return stampOf(c.certFile) != c.stamp[0] || stampOf(c.keyFile) != c.stamp[1]
}

// Leaf returns the certificate in use.
func (c *Certificate) Leaf() *x509.Certificate { return c.cur.Load().Leaf }

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
