package testutil

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// Network is a set of network namespaces for a cluster test: one per node,
// each with a veth pair whose other end sits on a bridge in a hub
// namespace. Nothing is added to the test's own namespace: the test
// reaches the nodes by dialing from inside the hub (Dial). Cut and Heal
// take a node's link down and up: the node is then partitioned from its
// peers and from clients outside its namespace.
type Network struct {
	Tag   string // unique per network, prefix of every name
	Hub   string // hub namespace
	Nodes []string
	IPs   []string // node i's address
}

var netSeq atomic.Uint32

func ipCmd(args ...string) error {
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return nil
}

// NewNetwork creates n node namespaces joined by a bridge. It needs root
// and iproute2. Close removes everything.
func NewNetwork(n int) (*Network, error) {
	seq := netSeq.Add(1)
	tag := fmt.Sprintf("b3t%d-%d", os.Getpid()%100000, seq)
	// 10.213.X.0/24, X from the pid and sequence: private, and only ever
	// configured inside these namespaces.
	subnet := fmt.Sprintf("10.213.%d", (os.Getpid()+int(seq))%250+1)
	nw := &Network{Tag: tag, Hub: tag + "-hub"}
	steps := [][]string{
		{"netns", "add", nw.Hub},
		{"-n", nw.Hub, "link", "set", "lo", "up"},
		{"-n", nw.Hub, "link", "add", "br0", "type", "bridge"},
		{"-n", nw.Hub, "addr", "add", subnet + ".254/24", "dev", "br0"},
		{"-n", nw.Hub, "link", "set", "br0", "up"},
	}
	for i := range n {
		ns := fmt.Sprintf("%s-n%d", tag, i+1)
		ip := fmt.Sprintf("%s.%d", subnet, i+1)
		nw.Nodes = append(nw.Nodes, ns)
		nw.IPs = append(nw.IPs, ip)
		host := fmt.Sprintf("h%d", i+1)
		steps = append(steps,
			[]string{"netns", "add", ns},
			[]string{"-n", ns, "link", "set", "lo", "up"},
			[]string{"-n", nw.Hub, "link", "add", host, "type", "veth", "peer", "name", "eth0", "netns", ns},
			[]string{"-n", nw.Hub, "link", "set", host, "master", "br0"},
			[]string{"-n", nw.Hub, "link", "set", host, "up"},
			[]string{"-n", ns, "addr", "add", ip + "/24", "dev", "eth0"},
			[]string{"-n", ns, "link", "set", "eth0", "up"},
		)
	}
	for _, s := range steps {
		if err := ipCmd(s...); err != nil {
			nw.Close()
			return nil, err
		}
	}
	return nw, nil
}

// Cut takes node i's link down: it can reach nobody, nobody reaches it.
func (nw *Network) Cut(i int) error {
	return ipCmd("-n", nw.Hub, "link", "set", fmt.Sprintf("h%d", i+1), "down")
}

// Heal brings node i's link back.
func (nw *Network) Heal(i int) error {
	return ipCmd("-n", nw.Hub, "link", "set", fmt.Sprintf("h%d", i+1), "up")
}

// Close deletes the namespaces (and with them the links).
func (nw *Network) Close() {
	for _, ns := range append([]string{nw.Hub}, nw.Nodes...) {
		_ = ipCmd("netns", "delete", ns)
	}
}

// Exec returns the command line that runs argv inside namespace ns.
func Exec(ns string, argv ...string) []string {
	return append([]string{"ip", "netns", "exec", ns}, argv...)
}

// DialIn returns a dial function that opens connections from inside
// namespace ns: the socket is created on a thread switched into ns, and
// stays there.
func DialIn(ns string) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		target, err := os.Open("/run/netns/" + ns)
		if err != nil {
			return nil, err
		}
		defer target.Close()
		runtime.LockOSThread()
		orig, err := os.Open(fmt.Sprintf("/proc/self/task/%d/ns/net", unix.Gettid()))
		if err != nil {
			runtime.UnlockOSThread()
			return nil, err
		}
		defer orig.Close()
		if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			return nil, fmt.Errorf("enter %s: %w", ns, err)
		}
		conn, dialErr := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err := unix.Setns(int(orig.Fd()), unix.CLONE_NEWNET); err != nil {
			// The thread is in the wrong namespace: leave it locked, so
			// that it ends with this goroutine instead of serving others.
			if conn != nil {
				conn.Close()
			}
			return nil, fmt.Errorf("leave %s: %w", ns, err)
		}
		runtime.UnlockOSThread()
		return conn, dialErr
	}
}
