package cluster

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/b3-storage/b3/internal/testutil"
	"github.com/b3-storage/b3/internal/tlsreload"
)

// firstBytes is a listener that records the first byte each accepted
// connection sends.
type firstBytes struct {
	net.Listener
	mu    sync.Mutex
	first []byte
}

func (l *firstBytes) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &recordFirst{Conn: c, l: l}, nil
}

type recordFirst struct {
	net.Conn
	l    *firstBytes
	once sync.Once
}

func (c *recordFirst) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.once.Do(func() {
			c.l.mu.Lock()
			c.l.first = append(c.l.first, p[0])
			c.l.mu.Unlock()
		})
	}
	return n, err
}

// TestPeerTLS runs the cluster port's listener (portMux) and DialPeer
// against each other with every mix of settings: only matching mutual
// TLS (or matching plaintext) with the secret opens a connection, every
// other mix fails at once on the dialer with an error that says why and
// is logged by the listener, and with TLS the first byte on the wire is
// a TLS handshake record.
func TestPeerTLS(t *testing.T) {
	ca, otherCA := testutil.NewCA(t), testutil.NewCA(t)
	dir := t.TempDir()
	// A stranger: its certificate from another CA, trusting both (so
	// that it is the other side that refuses).
	both := filepath.Join(dir, "both.pem")
	if err := os.WriteFile(both, append(append([]byte(nil), ca.PEM...), otherCA.PEM...), 0o600); err != nil {
		t.Fatal(err)
	}
	identity := func(name string, ca *testutil.CA, bundle string, hosts ...string) *tlsreload.Certificate {
		cert, key := filepath.Join(dir, name+".pem"), filepath.Join(dir, name+"-key.pem")
		ca.IssuePeer(t, cert, key, hosts...)
		id, err := tlsreload.LoadMutual(cert, key, bundle, nil)
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	node := identity("node", ca, ca.File, "127.0.0.1")
	other := identity("other", ca, ca.File, "127.0.0.1")
	foreign := identity("foreign", otherCA, both, "127.0.0.1")
	misnamed := identity("misnamed", ca, ca.File, "node9.example", "10.9.9.9")
	secret := []byte("a-cluster-secret-of-enough-length")

	cases := []struct {
		name             string
		listener, dialer *tlsreload.Certificate
		dialHost         string // default 127.0.0.1
		secret           string // default secret
		dialErr          string // "": the connection opens
		listenerLog      string // "": none required
	}{
		{name: "plaintext both", listener: nil, dialer: nil},
		{name: "TLS both", listener: node, dialer: other},
		{name: "TLS listener, plaintext dialer", listener: node, dialer: nil,
			dialErr: "failed authentication", listenerLog: "does not open with TLS"},
		{name: "plaintext listener, TLS dialer", listener: nil, dialer: node,
			dialErr: "is it started without --cluster-tls-*", listenerLog: "opens with TLS and this node has no --cluster-tls-*"},
		{name: "dialer's certificate from another CA", listener: node, dialer: foreign,
			dialErr: "refused this node's TLS certificate", listenerLog: "certificate signed by unknown authority"},
		{name: "listener's certificate from another CA", listener: foreign, dialer: node,
			dialErr: "certificate signed by unknown authority", listenerLog: "TLS handshake failed"},
		{name: "listener's certificate for another address", listener: misnamed, dialer: node,
			dialErr: "not 127.0.0.1", listenerLog: "TLS handshake failed"},
		{name: "dialed by a name its certificate lacks", listener: node, dialer: other, dialHost: "localhost",
			dialErr: "wanted to match localhost", listenerLog: "TLS handshake failed"},
		// (The dialer checks the listener's proof first and hangs up: the
		// listener sees the connection end, and logs nothing.)
		{name: "TLS both, another secret", listener: node, dialer: other, secret: "another-secret-of-enough-length",
			dialErr: "failed authentication"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			rec := &firstBytes{Listener: ln}
			var logs testutil.Buffer
			mux := newPortMux(rec, secret, tc.listener, slog.New(slog.NewTextHandler(&logs, nil)))
			defer mux.Close()
			// It echoes the body: large writes both ways (batchedTLS).
			srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				body, _ := io.ReadAll(r.Body)
				w.Header().Set("Content-Length", strconv.Itoa(len(body)))
				w.Write(body)
			})}
			go srv.Serve(mux.http)
			defer srv.Close()

			_, port, _ := net.SplitHostPort(ln.Addr().String())
			addr := net.JoinHostPort(cmp.Or(tc.dialHost, "127.0.0.1"), port)
			dialSecret := secret
			if tc.secret != "" {
				dialSecret = []byte(tc.secret)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			conn, err := DialPeer(ctx, addr, dialSecret, tc.dialer, protoHTTP)
			if tc.dialErr == "" {
				if err != nil {
					t.Fatalf("dial: %v", err)
				}
				defer conn.Close()
				body := streamBody(3<<20 + 12345)
				req := append([]byte("PUT / HTTP/1.1\r\nHost: x\r\nContent-Length: "+strconv.Itoa(len(body))+"\r\n\r\n"), body...)
				if _, err := conn.Write(req); err != nil {
					t.Fatal(err)
				}
				resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
				if err != nil || resp.StatusCode != http.StatusOK {
					t.Fatalf("a request over the connection: %v %v", resp, err)
				}
				if echo, err := io.ReadAll(resp.Body); err != nil || !bytes.Equal(echo, body) {
					t.Fatalf("the echo of a %d-byte body: %d bytes, %v", len(body), len(echo), err)
				}
				rec.mu.Lock()
				first := rec.first
				rec.mu.Unlock()
				want := byte('b') // "b3c1"
				if tc.dialer != nil {
					want = tlsHandshakeRecord
				}
				if len(first) != 1 || first[0] != want {
					t.Fatalf("first bytes of the connections on the wire: %q, want %q", first, want)
				}
				return
			}
			if err == nil {
				conn.Close()
				t.Fatal("the connection opened")
			}
			if errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), tc.dialErr) {
				t.Fatalf("dial error %q, want one saying %q", err, tc.dialErr)
			}
			// The listener logs its side (asynchronously: it may still be
			// finishing after the dialer saw the close).
			deadline := time.Now().Add(10 * time.Second)
			for !strings.Contains(logs.String(), tc.listenerLog) {
				if time.Now().After(deadline) {
					t.Fatalf("the listener logged %q, want a line saying %q", logs.String(), tc.listenerLog)
				}
				time.Sleep(10 * time.Millisecond)
			}
		})
	}

	// A client offering TLS 1.2 at most (with a valid certificate) is
	// refused: the cluster port speaks TLS 1.3 only.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	mux := newPortMux(ln, secret, node, slog.New(slog.DiscardHandler))
	defer mux.Close()
	cfg := peerClientTLS(other, ln.Addr().String())
	cfg.MinVersion, cfg.MaxVersion = tls.VersionTLS12, tls.VersionTLS12
	if c, err := tls.Dial("tcp", ln.Addr().String(), cfg); err == nil {
		c.Close()
		t.Fatal("a TLS 1.2 handshake succeeded")
	} else if !strings.Contains(err.Error(), "protocol version") {
		t.Fatalf("TLS 1.2: %v, want a protocol version alert", err)
	}
}

// TestLoadPeerTLS: the three files go together, and a node's own
// certificate must chain to its CA bundle for both roles.
func TestLoadPeerTLS(t *testing.T) {
	ca, otherCA := testutil.NewCA(t), testutil.NewCA(t)
	dir := t.TempDir()
	cert, key := filepath.Join(dir, "n1.pem"), filepath.Join(dir, "n1-key.pem")
	ca.IssuePeer(t, cert, key, "127.0.0.1")
	serverOnly, serverOnlyKey := filepath.Join(dir, "s.pem"), filepath.Join(dir, "s-key.pem")
	ca.Issue(t, serverOnly, serverOnlyKey)
	for _, tc := range []struct {
		name          string
		cert, key, ca string
		err           string // "": loads
		loadsNil      bool
	}{
		{name: "none", loadsNil: true},
		{name: "all three", cert: cert, key: key, ca: ca.File},
		{name: "no CA", cert: cert, key: key, err: "go together"},
		{name: "CA only", ca: ca.File, err: "go together"},
		{name: "another CA", cert: cert, key: key, ca: otherCA.File, err: "certificate signed by unknown authority"},
		{name: "no client authentication usage", cert: serverOnly, key: serverOnlyKey, ca: ca.File, err: "not valid as a client certificate"},
		{name: "the key of another pair", cert: cert, key: serverOnlyKey, ca: ca.File, err: "private key does not match"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id, err := loadPeerTLS(Config{ClusterTLSCert: tc.cert, ClusterTLSKey: tc.key, ClusterTLSCA: tc.ca, Logger: slog.New(slog.DiscardHandler)})
			switch {
			case tc.err != "":
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want one saying %q", err, tc.err)
				}
			case err != nil:
				t.Fatal(err)
			case tc.loadsNil != (id == nil):
				t.Fatalf("identity %v", id)
			}
		})
	}
}

// BenchmarkPeerConn streams 1 MiB blocks (as a pushed body travels) over
// one cluster-port connection on loopback, plain and with TLS, the
// reader discarding: the wire cost of a pushed MiB on both ends.
//
//	go test ./internal/cluster -run '^$' -bench PeerConn -benchtime 2000x
func BenchmarkPeerConn(b *testing.B) {
	ca := testutil.NewCA(b)
	dir := b.TempDir()
	cert, key := filepath.Join(dir, "n.pem"), filepath.Join(dir, "n-key.pem")
	ca.IssuePeer(b, cert, key, "127.0.0.1")
	id, err := tlsreload.LoadMutual(cert, key, ca.File, slog.New(slog.DiscardHandler))
	if err != nil {
		b.Fatal(err)
	}
	secret := []byte("a-cluster-secret-of-enough-length")
	for _, tc := range []struct {
		name string
		id   *tlsreload.Certificate
	}{{"plain", nil}, {"tls", id}} {
		b.Run(tc.name, func(b *testing.B) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			mux := newPortMux(ln, secret, tc.id, slog.New(slog.DiscardHandler))
			defer mux.Close()
			done := make(chan int64)
			go func() {
				c, err := mux.http.Accept()
				if err != nil {
					done <- 0
					return
				}
				n, _ := io.CopyBuffer(io.Discard, c, make([]byte, 1<<20))
				c.Close()
				done <- n
			}()
			conn, err := DialPeer(context.Background(), ln.Addr().String(), secret, tc.id, protoHTTP)
			if err != nil {
				b.Fatal(err)
			}
			block := make([]byte, 1<<20)
			b.SetBytes(int64(len(block)))
			b.ResetTimer()
			for range b.N {
				if _, err := conn.Write(block); err != nil {
					b.Fatal(err)
				}
			}
			conn.Close()
			if n := <-done; n != int64(b.N*len(block)) {
				b.Fatalf("read %d bytes, want %d", n, b.N*len(block))
			}
		})
	}
}

// failOnce is a connection whose first write fails.
type failOnce struct {
	net.Conn
	failed bool
	wrote  int
}

func (c *failOnce) Write(p []byte) (int, error) {
	if !c.failed {
		c.failed = true
		return 0, errors.New("write failed")
	}
	c.wrote += len(p)
	return len(p), nil
}

// TestCoalescerKeepsItsError: once collected records failed to reach the
// socket, the stream has a gap, and nothing more may be written after it.
func TestCoalescerKeepsItsError(t *testing.T) {
	under := &failOnce{}
	c := &coalescer{Conn: under}
	c.hold()
	if _, err := c.Write([]byte("a record")); err != nil {
		t.Fatalf("a collected write: %v", err)
	}
	if err := c.release(); err == nil {
		t.Fatal("the failed flush was not reported")
	}
	if _, err := c.Write([]byte("the next record")); err == nil || under.wrote != 0 {
		t.Fatalf("a write after the gap: %v, %d bytes reached the socket", err, under.wrote)
	}
}
