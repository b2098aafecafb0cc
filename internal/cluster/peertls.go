package cluster

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"syscall"

	"github.com/b3-storage/b3/internal/tlsreload"
)

// Encryption between nodes (--cluster-tls-cert, --cluster-tls-key,
// --cluster-tls-ca; docs/CLUSTER.md). With them, every connection to and
// from the cluster port is mutual TLS 1.3 before anything else, and the
// cluster-secret handshake (auth.go) runs inside it:
//
//	TCP │ TLS 1.3 handshake, both sides present a certificate │ "b3c1" challenge │ protocol │ Raft or HTTP
//	                                                           └──────────── encrypted ────────────────┘
//
// What each side checks:
//   - the dialer: the listener's certificate chains to the CA bundle and
//     names the host the dialer dialed (the host part of the member's
//     address in the Raft configuration, i.e. of --peers or of b3 admin
//     cluster add): an IP SAN for an IP address, a DNS SAN for a name;
//   - the listener: the dialer's certificate chains to the CA bundle (any
//     name: a dialer's source address is the kernel's choice, and every
//     member may do what any other may);
//   - both, as without TLS: the cluster secret.
//
// The secret stays: a certificate from the same CA that was issued for
// something else (another cluster, another service of the same private
// CA) opens no connection without it, and the secret alone opens none
// without a certificate.
//
// Both sides must agree. A listener tells a TLS connection from a
// plaintext one by its first byte (a TLS record of type handshake, 0x16,
// against "b3c1"), and one that does not match its own settings is closed
// at once and logged, so a misconfigured member fails fast and says why
// on both nodes, never hangs. The key pair and the bundle are reloaded
// with the other listeners' (SIGHUP, a file change): new connections
// present and check the new ones; open ones go on.
const tlsHandshakeRecord = 0x16

// loadPeerTLS loads the node's cluster key pair and CA bundle; nil
// without --cluster-tls-*.
func loadPeerTLS(cfg Config) (*tlsreload.Certificate, error) {
	if cfg.ClusterTLSCert == "" && cfg.ClusterTLSKey == "" && cfg.ClusterTLSCA == "" {
		return nil, nil
	}
	if cfg.ClusterTLSCert == "" || cfg.ClusterTLSKey == "" || cfg.ClusterTLSCA == "" {
		return nil, errors.New("--cluster-tls-cert, --cluster-tls-key and --cluster-tls-ca go together: give all three (or none), on every node")
	}
	id, err := tlsreload.LoadMutual(cfg.ClusterTLSCert, cfg.ClusterTLSKey, cfg.ClusterTLSCA, cfg.Logger)
	if err != nil {
		return nil, fmt.Errorf("cluster TLS: %w", err)
	}
	return id, nil
}

// peerServerTLS is the listener's side, built per connection so that a
// reload applies to the next handshake.
func peerServerTLS(id *tlsreload.Certificate) *tls.Config {
	return &tls.Config{
		MinVersion:   tls.VersionTLS13,
		Certificates: []tls.Certificate{*id.Pair()},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    id.Pool(),
	}
}

// peerClientTLS is the dialer's side for a member at addr.
func peerClientTLS(id *tlsreload.Certificate, addr string) *tls.Config {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	pair := id.Pair()
	return &tls.Config{
		MinVersion: tls.VersionTLS13,
		ServerName: host, // an IP address is checked against the IP SANs
		RootCAs:    id.Pool(),
		// Always the node's pair, even if the listener names other CAs
		// (tls would send none): the listener then says what it refused.
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return pair, nil },
	}
}

// dialTLS runs the dialer's TLS handshake on c (closed on failure).
func dialTLS(ctx context.Context, c net.Conn, id *tlsreload.Certificate, addr string) (net.Conn, error) {
	raw := &coalescer{Conn: c}
	tc := tls.Client(raw, peerClientTLS(id, addr))
	if err := tc.HandshakeContext(ctx); err != nil {
		c.Close()
		if errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) {
			return nil, fmt.Errorf("TLS handshake: %w (the peer closed the connection: is it started without --cluster-tls-*?)", err)
		}
		return nil, fmt.Errorf("TLS handshake: %w", err)
	}
	return &batchedTLS{Conn: tc, raw: raw}, nil
}

// refusedCertificate tells a TLS alert from the peer (which, in TLS 1.3,
// reaches a dialer at its first read, after its own handshake ended: the
// listener refused the dialer's certificate) from other failures.
func refusedCertificate(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "remote error"
}

// A TLS connection writes each record (16 KiB of data at most) to the
// socket by itself: a 1 MiB block of a pushed body would take 64 system
// calls where the plain connection takes one. So under each TLS
// connection sits a coalescer, and batchedTLS has it collect the records
// of one large Write and hand them to the socket in writes of up to
// coalesceMax. Small writes (Raft's RPCs, HTTP headers) go straight
// through, as do the records TLS writes by itself (alerts, close).
const (
	coalesceMax   = 256 << 10
	recordPayload = 16 << 10
)

var coalescePool = sync.Pool{New: func() any { b := make([]byte, 0, coalesceMax+recordPayload+256); return &b }}

// coalescer is the socket under a TLS connection.
type coalescer struct {
	net.Conn
	mu      sync.Mutex
	holding bool    // a batchedTLS Write is under way
	buf     *[]byte // what it wrote so far (from coalescePool)
	// err is the first failed write of collected records: the stream
	// has a gap, and every later write fails (as tls does for its own).
	err error
}

func (c *coalescer) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return 0, c.err
	}
	if !c.holding {
		return c.Conn.Write(p)
	}
	if c.buf == nil {
		c.buf = coalescePool.Get().(*[]byte)
	}
	*c.buf = append(*c.buf, p...)
	if len(*c.buf) >= coalesceMax {
		return len(p), c.flushLocked()
	}
	return len(p), nil
}

func (c *coalescer) hold() {
	c.mu.Lock()
	c.holding = true
	c.mu.Unlock()
}

// release writes what was collected and returns the buffer to the pool
// (an idle connection keeps none).
func (c *coalescer) release() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.holding = false
	err := c.flushLocked()
	if c.buf != nil {
		coalescePool.Put(c.buf)
		c.buf = nil
	}
	return err
}

func (c *coalescer) flushLocked() error {
	if c.err != nil || c.buf == nil || len(*c.buf) == 0 {
		return c.err
	}
	_, c.err = c.Conn.Write(*c.buf)
	*c.buf = (*c.buf)[:0]
	return c.err
}

// batchedTLS is a TLS connection whose large writes reach the socket in
// few system calls; Write returns once they did.
type batchedTLS struct {
	*tls.Conn
	raw *coalescer
}

func (c *batchedTLS) Write(p []byte) (int, error) {
	if len(p) <= recordPayload {
		return c.Conn.Write(p)
	}
	c.raw.hold()
	n, err := c.Conn.Write(p)
	if ferr := c.raw.release(); err == nil && ferr != nil {
		err = ferr
	}
	return n, err
}
