package cluster_test

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// loopCapture records what crosses the loopback interface on some TCP
// ports, as a packet capture would: an AF_PACKET socket on "lo" (root
// needed) with a BPF filter on the ports, so the kernel queues nothing
// else. For every TCP flow (one direction of a connection) it keeps the
// first bytes of its first payload, when it saw the connection's SYN
// (so the first payload is known to be the first), and which of the
// markers appeared anywhere in its payload.
type loopCapture struct {
	fd      int
	markers [][]byte
	stop    chan struct{}
	done    chan struct{}

	mu    sync.Mutex
	flows map[flowKey]*flow
}

type flowKey struct {
	src, dst netipPort
}

type netipPort struct {
	ip   [4]byte
	port uint16
}

func (p netipPort) String() string { return fmt.Sprintf("%s:%d", net.IP(p.ip[:]), p.port) }

type flow struct {
	isn     uint32 // sequence number of the SYN
	sawSYN  bool
	first   []byte // the first payload's first bytes (only when sawSYN)
	bytes   int    // payload bytes seen
	tail    []byte // the end of the payload seen last (markers across segments)
	markers map[string]bool
}

// startLoopCapture captures TCP to and from ports on lo until stop.
func startLoopCapture(t *testing.T, ports []uint16, markers ...[]byte) *loopCapture {
	t.Helper()
	lo, err := net.InterfaceByName("lo")
	if err != nil {
		t.Fatal(err)
	}
	// Protocol 0: nothing is queued until the bind below, after the
	// filter is in place.
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatalf("a packet socket (the test captures loopback traffic: run it as root): %v", err)
	}
	prog := portFilter(ports)
	if err := unix.SetsockoptSockFprog(fd, unix.SOL_SOCKET, unix.SO_ATTACH_FILTER, &unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}); err != nil {
		unix.Close(fd)
		t.Fatalf("attach the port filter: %v", err)
	}
	_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, 64<<20)
	_ = unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &unix.Timeval{Usec: 100_000})
	if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_IP), Ifindex: lo.Index}); err != nil {
		unix.Close(fd)
		t.Fatalf("bind the packet socket to lo: %v", err)
	}
	c := &loopCapture{fd: fd, markers: markers, stop: make(chan struct{}), done: make(chan struct{}), flows: map[flowKey]*flow{}}
	go c.run()
	t.Cleanup(c.close)
	return c
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

// portFilter is a classic BPF program over an IPv4 packet (a cooked
// packet socket hands the filter the network header): accept TCP whose
// source or destination port is one of ports.
func portFilter(ports []uint16) []unix.SockFilter {
	ins := func(code uint16, k uint32) unix.SockFilter { return unix.SockFilter{Code: code, K: k} }
	var p []unix.SockFilter
	p = append(p, ins(unix.BPF_LD|unix.BPF_B|unix.BPF_ABS, 9)) // protocol
	p = append(p, unix.SockFilter{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: unix.IPPROTO_TCP, Jt: 0, Jf: uint8(2*len(ports) + 3)})
	p = append(p, ins(unix.BPF_LDX|unix.BPF_B|unix.BPF_MSH, 0)) // X = IP header length
	for _, off := range []uint32{0, 2} {                        // source port, then destination port
		p = append(p, ins(unix.BPF_LD|unix.BPF_H|unix.BPF_IND, off))
		for i, port := range ports {
			// To "accept", past the ports left and the drop.
			left := len(ports) - 1 - i
			if off == 0 {
				left += 1 + len(ports) // the destination block
			}
			p = append(p, unix.SockFilter{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: uint32(port), Jt: uint8(left + 1)})
		}
	}
	p = append(p, ins(unix.BPF_RET|unix.BPF_K, 0))     // drop
	p = append(p, ins(unix.BPF_RET|unix.BPF_K, 1<<18)) // accept
	return p
}

func (c *loopCapture) run() {
	defer close(c.done)
	buf := make([]byte, 1<<17)
	for {
		select {
		case <-c.stop:
			return
		default:
		}
		n, from, err := unix.Recvfrom(c.fd, buf, 0)
		if err != nil {
			if errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EINTR) {
				continue
			}
			return
		}
		// Each packet on lo is seen leaving and arriving: take it once.
		if ll, ok := from.(*unix.SockaddrLinklayer); ok && ll.Pkttype == unix.PACKET_OUTGOING {
			continue
		}
		c.packet(buf[:n])
	}
}

// packet takes one IPv4 packet.
func (c *loopCapture) packet(p []byte) {
	if len(p) < 20 || p[9] != unix.IPPROTO_TCP {
		return
	}
	ihl := int(p[0]&0xf) * 4
	total := int(p[2])<<8 | int(p[3])
	if total >= 20 && total < len(p) { // (0: a large offloaded packet; keep it whole)
		p = p[:total]
	}
	if len(p) < ihl+20 {
		return
	}
	tcp := p[ihl:]
	off := int(tcp[12]>>4) * 4
	if len(tcp) < off {
		return
	}
	var k flowKey
	copy(k.src.ip[:], p[12:16])
	copy(k.dst.ip[:], p[16:20])
	k.src.port, k.dst.port = uint16(tcp[0])<<8|uint16(tcp[1]), uint16(tcp[2])<<8|uint16(tcp[3])
	seq := uint32(tcp[4])<<24 | uint32(tcp[5])<<16 | uint32(tcp[6])<<8 | uint32(tcp[7])
	syn := tcp[13]&0x02 != 0
	payload := tcp[off:]

	c.mu.Lock()
	defer c.mu.Unlock()
	f := c.flows[k]
	if f == nil || syn { // a new connection may reuse the ports of an old one
		f = &flow{markers: map[string]bool{}}
		c.flows[k] = f
	}
	if syn {
		f.isn, f.sawSYN = seq, true
		return
	}
	if len(payload) == 0 {
		return
	}
	if f.sawSYN && f.first == nil && seq == f.isn+1 {
		f.first = bytes.Clone(payload[:min(len(payload), 8)])
	}
	f.bytes += len(payload)
	joined := append(f.tail, payload...)
	for _, m := range c.markers {
		if bytes.Contains(joined, m) {
			f.markers[string(m)] = true
		}
	}
	f.tail = bytes.Clone(joined[max(0, len(joined)-64):])
}

// close stops the capture (it keeps what it saw).
func (c *loopCapture) close() {
	select {
	case <-c.stop:
		return
	default:
	}
	close(c.stop)
	<-c.done
	unix.Close(c.fd)
}

// drops is how many packets the kernel dropped for want of room (reading
// the count resets it).
func (c *loopCapture) drops() uint32 {
	st, err := unix.GetsockoptTpacketStats(c.fd, unix.SOL_PACKET, unix.PACKET_STATISTICS)
	if err != nil {
		return 0
	}
	return st.Drops
}

// snapshot returns the flows seen so far.
func (c *loopCapture) snapshot() map[flowKey]flow {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[flowKey]flow{}
	for k, f := range c.flows {
		out[k] = *f
	}
	return out
}

// settle gives the capture a moment to take in what was just sent.
func (c *loopCapture) settle() { time.Sleep(300 * time.Millisecond) }
