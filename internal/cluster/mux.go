package cluster

import (
	"bufio"
	"context"
	"errors"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// One port per node (--cluster-address) carries two protocols: raft's own
// RPCs (hashicorp/raft's TCP transport) and HTTP between nodes (object
// bytes, fetches, forwarded S3 requests). Every connection first passes
// the cluster-secret handshake (auth.go), whose last byte names the
// protocol: raftMagic or protoHTTP; the listener hands it to one side or
// the other. A connection that fails the handshake is closed unanswered.
const raftMagic = 0x01

// portMux splits one listener into the raft side and the HTTP side.
type portMux struct {
	ln     net.Listener
	secret []byte
	log    *slog.Logger
	raft   *chanListener
	http   *chanListener
}

func newPortMux(ln net.Listener, secret []byte, log *slog.Logger) *portMux {
	m := &portMux{ln: ln, secret: secret, log: log, raft: newChanListener(ln.Addr()), http: newChanListener(ln.Addr())}
	go m.serve()
	return m
}

func (m *portMux) serve() {
	for {
		c, err := m.ln.Accept()
		if err != nil {
			m.raft.close()
			m.http.close()
			return
		}
		go m.route(c)
	}
}

// route authenticates one connection and sorts it by the protocol it
// asks for.
func (m *portMux) route(c net.Conn) {
	br := bufio.NewReader(c)
	proto, err := serverHandshake(c, br, m.secret)
	if err != nil {
		if errors.Is(err, errAuth) {
			m.log.Warn("refused a connection to the cluster port", "from", c.RemoteAddr().String(), "err", err)
		}
		c.Close()
		return
	}
	pc := &peekedConn{Conn: c, r: br}
	switch proto {
	case raftMagic:
		m.raft.push(pc)
	case protoHTTP:
		m.http.push(pc)
	default:
		c.Close()
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
}

var _ raft.StreamLayer = raftLayer{}

func (l raftLayer) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return DialPeer(ctx, string(address), l.secret, raftMagic)
}

var errClosed = errors.New("cluster: node closed")
