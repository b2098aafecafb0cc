package cluster

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// One port per node (--cluster-address) carries two protocols: raft's own
// RPCs (hashicorp/raft's TCP transport) and HTTP between nodes (object
// bytes, fetches, forwarded S3 requests). A raft connection opens with
// raftMagic, a byte no HTTP request starts with; the listener reads the
// first byte of each connection and hands it to one side or the other.
const raftMagic = 0x01

// portMux splits one listener into the raft side and the HTTP side.
type portMux struct {
	ln   net.Listener
	raft *chanListener
	http *chanListener
}

func newPortMux(ln net.Listener) *portMux {
	m := &portMux{ln: ln, raft: newChanListener(ln.Addr()), http: newChanListener(ln.Addr())}
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

// route sorts one connection by its first byte; a peer that sends nothing
// within the deadline is dropped.
func (m *portMux) route(c net.Conn) {
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(c)
	first, err := br.Peek(1)
	if err != nil {
		c.Close()
		return
	}
	_ = c.SetReadDeadline(time.Time{})
	if first[0] == raftMagic {
		_, _ = br.Discard(1)
		m.raft.push(&peekedConn{Conn: c, r: br})
		return
	}
	m.http.push(&peekedConn{Conn: c, r: br})
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
// and dials peers with the magic byte first.
type raftLayer struct {
	*chanListener
}

var _ raft.StreamLayer = raftLayer{}

func (raftLayer) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	c, err := net.DialTimeout("tcp", string(address), timeout)
	if err != nil {
		return nil, err
	}
	if _, err := c.Write([]byte{raftMagic}); err != nil {
		c.Close()
		return nil, fmt.Errorf("dial raft %s: %w", address, err)
	}
	return c, nil
}

var errClosed = errors.New("cluster: node closed")
