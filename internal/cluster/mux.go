package cluster

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/raft"

	"github.com/b3-storage/b3/internal/tlsreload"
)

// One port per node (--cluster-address) carries three protocols: raft's
// own RPCs (hashicorp/raft's TCP transport), HTTP between nodes (object
// bytes, fetches, membership, users: the node-to-node endpoints) and S3
// requests forwarded to the leader on clients' behalf. Every connection
// first passes TLS if the node has it (peertls.go), then the
// cluster-secret handshake (auth.go), whose last byte names the protocol:
// raftMagic, protoHTTP or protoForward; the listener hands it to that
// side. A connection that fails the handshake is closed unanswered.
//
// Invariant: a request that came from a client travels only on the
// forward side, whose handler is the S3 API (forward.go); the
// node-to-node endpoints are served on the HTTP side alone, which only a
// process holding the cluster secret can open. Keeping them on separate
// connections, not separate paths, is what makes the boundary: no path,
// header or host a client chooses can move a request from one side to
// the other.
const raftMagic = 0x01

// portMux splits one listener into the raft side and the HTTP side.
type portMux struct {
	ln        net.Listener
	secret    []byte
	routerKey []byte                 // routerKeyOf(secret)
	tls       *tlsreload.Certificate // nil: no TLS (peertls.go)
	log       *slog.Logger
	raft      *chanListener
	http      *chanListener
	forward   *chanListener
	// routerHTTP: a router's HTTP side, served by routerHandler.
	routerHTTP *chanListener
}

func newPortMux(ln net.Listener, secret []byte, tlsID *tlsreload.Certificate, log *slog.Logger) *portMux {
	m := &portMux{ln: ln, secret: secret, routerKey: routerKeyOf(secret), tls: tlsID, log: log,
		raft: newChanListener(ln.Addr()), http: newChanListener(ln.Addr()), forward: newChanListener(ln.Addr()),
		routerHTTP: newChanListener(ln.Addr())}
	go m.serve()
	return m
}

func (m *portMux) serve() {
	for {
		c, err := m.ln.Accept()
		if err != nil {
			m.raft.close()
			m.http.close()
			m.forward.close()
			m.routerHTTP.close()
			return
		}
		go m.route(c)
	}
}

// route authenticates one connection (TLS first, if the node has it:
// peertls.go) and sorts it by the protocol it asks for.
func (m *portMux) route(c net.Conn) {
	_ = c.SetDeadline(time.Now().Add(handshakeTimeout))
	var conn net.Conn = c
	br := bufio.NewReader(c)
	first, err := br.Peek(1)
	if err != nil {
		c.Close()
		return
	}
	refuse := func(why string, attrs ...any) {
		m.log.Warn("refused a connection to the cluster port: "+why, append([]any{"from", c.RemoteAddr().String()}, attrs...)...)
		c.Close()
	}
	switch isTLS := first[0] == tlsHandshakeRecord; {
	case isTLS && m.tls == nil:
		refuse("it opens with TLS and this node has no --cluster-tls-*: start every node with the same cluster TLS settings")
		return
	case !isTLS && m.tls != nil:
		refuse("it does not open with TLS and this node requires it (--cluster-tls-*): start every node with the same cluster TLS settings")
		return
	case isTLS:
		raw := &coalescer{Conn: &peekedConn{Conn: c, r: br}}
		tc := tls.Server(raw, peerServerTLS(m.tls))
		if err := tc.Handshake(); err != nil {
			if errors.Is(err, io.EOF) { // a probe, or a dialer gone
				c.Close()
			} else {
				refuse("TLS handshake failed", "err", err)
			}
			return
		}
		conn = &batchedTLS{Conn: tc, raw: raw}
		br = bufio.NewReader(conn)
	}
	proto, router, err := serverHandshake(conn, br, m.secret, m.routerKey)
	if err != nil {
		if errors.Is(err, errAuth) {
			m.log.Warn("refused a connection to the cluster port", "from", c.RemoteAddr().String(), "err", err)
		}
		conn.Close()
		return
	}
	pc := &peekedConn{Conn: conn, r: br}
	switch {
	case router && proto == protoHTTP:
		m.routerHTTP.push(pc)
		return
	case router && proto == protoForward:
		m.forward.push(pc)
		return
	case router:
		refuse("a router asked for another protocol than HTTP or forward", "protocol", proto)
		return
	}
	switch proto {
	case raftMagic:
		m.raft.push(pc)
	case protoHTTP:
		m.http.push(pc)
	case protoForward:
		m.forward.push(pc)
	default:
		conn.Close()
	}
}

func (m *portMux) Close() error { return m.ln.Close() }

// peekedConn is a connection whose first bytes sit in a bufio.Reader.
type peekedConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *peekedConn) Read(p []byte) (int, error) { return c.r.Read(p) }

// chanListener is a net.Listener fed by the mux.
type chanListener struct {
	addr   net.Addr
	conns  chan net.Conn
	once   sync.Once
	closed chan struct{}
}

func newChanListener(addr net.Addr) *chanListener {
	return &chanListener{addr: addr, conns: make(chan net.Conn), closed: make(chan struct{})}
}

func (l *chanListener) push(c net.Conn) {
	select {
	case l.conns <- c:
	case <-l.closed:
		c.Close()
	}
}

func (l *chanListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.closed:
		return nil, net.ErrClosed
	}
}

func (l *chanListener) close()         { l.once.Do(func() { close(l.closed) }) }
func (l *chanListener) Close() error   { l.close(); return nil }
func (l *chanListener) Addr() net.Addr { return l.addr }

// raftLayer is raft's StreamLayer over the mux: it accepts the raft side
// and dials peers through the handshake.
type raftLayer struct {
	*chanListener
	secret []byte
	tls    *tlsreload.Certificate
}

var _ raft.StreamLayer = raftLayer{}

func (l raftLayer) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return DialPeer(ctx, string(address), l.secret, l.tls, raftMagic)
}

var errClosed = errors.New("cluster: node closed")
