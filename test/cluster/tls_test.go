package cluster_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/b3-storage/b3/internal/cluster"
	"github.com/b3-storage/b3/internal/testutil"
	"github.com/b3-storage/b3/internal/tlsreload"
)

// TestClusterTLS runs a group with --cluster-tls-* (certificates from a
// CA made by the test) while capturing the loopback traffic of its
// cluster ports from before the first node starts:
//   - it works end to end: writes through a follower (forwarded, pushed),
//     reads through every node, a leader killed with SIGKILL and replaced,
//     and the killed node restarted (it asks whether it is still a member,
//     catches up and fetches the bytes it missed);
//   - nothing on a cluster port is plaintext: every connection whose start
//     was seen opens with a TLS handshake record in both directions, and no
//     object byte, peer-HTTP path or HTTP header appears there, while the
//     same capture sees them on a node's (plain) S3 port;
//   - the cluster port refuses a plaintext HTTP request, the plaintext
//     handshake even with the cluster secret, and a certificate from
//     another CA; a node restarted with a certificate from another CA, or
//     without TLS, cannot rejoin, and both sides say why;
//   - a renewed pair is taken on SIGHUP, without a restart;
//   - with its certificate back, that node rejoins and catches up.
func TestClusterTLS(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("this test captures loopback traffic (a packet socket): run it as root")
	}
	ca := testutil.NewCA(t)
	canary := bytes.Repeat([]byte("b3-plaintext-canary-0123456789/"), 1<<13) // 256 KiB: pushed, not in the log
	markers := [][]byte{canary[:31], []byte("/_b3/v1/"), []byte("HTTP/1.1 ")}
	var capture *loopCapture
	var clusterPorts []uint16
	var s3Port uint16
	c := testutil.StartCluster(t, testutil.ClusterOptions{ClusterCA: ca, BeforeStart: func(c *testutil.Cluster) {
		for _, n := range c.Nodes {
			clusterPorts = append(clusterPorts, port(t, n.ClusterAddr))
		}
		s3Port = port(t, c.Nodes[0].S3Addr)
		capture = startLoopCapture(t, append([]uint16{s3Port}, clusterPorts...), markers...)
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	for i, n := range c.Nodes {
		if out := n.Proc.Output.String(); !strings.Contains(out, "with mutual TLS") {
			t.Fatalf("%s's banner does not say its cluster port is TLS:\n%s", c.Nodes[i].ID, out)
		}
	}

	// End to end, through node 0 (whose S3 port is the capture's
	// control) and every other node.
	const bucket = "tls"
	leader, err := c.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cl := clients(c)
	if err := createBucket(ctx, cl[0], bucket); err != nil {
		t.Fatal(err)
	}
	// ("_b3/v1/control" puts a peer-HTTP path on the S3 port too.)
	want := map[string][]byte{"canary": canary, "small": []byte("small, in the log entry"), "_b3/v1/control": []byte("control")}
	for key, body := range want {
		if _, err := cl[0].PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader(body)}); err != nil {
			t.Fatal(err)
		}
	}
	readAll := func(what string) {
		t.Helper()
		for i := range c.Nodes {
			for key, body := range want {
				got, err := getRetry(ctx, cl[i], bucket, key)
				if err != nil || !bytes.Equal(got, body) {
					t.Fatalf("%s: %s through %s: %d bytes, %v", what, key, c.Nodes[i].ID, len(got), err)
				}
			}
		}
	}
	readAll("after the writes")

	// The leader killed: another takes writes, and the killed node, back,
	// catches up (it missed an object's bytes: a fetch).
	c.Kill(leader)
	survivor := (leader + 1) % 3
	missed := bytes.Repeat([]byte("b3-plaintext-canary-0123456789/"), 1<<12)
	if err := putRetry(ctx, cl[survivor], bucket, "missed", missed); err != nil {
		t.Fatalf("a write after the leader's kill: %v", err)
	}
	want["missed"] = missed
	if err := c.Start(leader); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitConverged(ctx); err != nil {
		t.Fatal(err)
	}
	readAll("after the failover")
	for i := range c.Nodes {
		if _, err := c.Status(i); err != nil { // gathered from the peers
			t.Fatal(err)
		}
	}

	// What crossed the wire.
	capture.settle()
	if d := capture.drops(); d > 0 {
		t.Logf("the capture lost %d packets (a loaded machine): checking what it saw", d)
	}
	isCluster := map[uint16]bool{}
	for _, p := range clusterPorts {
		isCluster[p] = true
	}
	tlsFlows, clusterBytes, controlMarkers := 0, 0, map[string]bool{}
	for k, f := range capture.snapshot() {
		if k.src.port == s3Port || k.dst.port == s3Port {
			for m := range f.markers {
				controlMarkers[m] = true
			}
			continue
		}
		if !isCluster[k.src.port] && !isCluster[k.dst.port] {
			continue
		}
		clusterBytes += f.bytes
		if len(f.markers) > 0 {
			t.Errorf("plaintext on the cluster port, %s → %s: %d bytes carry %q", k.src, k.dst, f.bytes, keys(f.markers))
		}
		if f.first == nil {
			continue // its start was not seen, or it carried nothing
		}
		// A TLS record: type handshake (22), version 3.x.
		if len(f.first) < 2 || f.first[0] != 0x16 || f.first[1] != 3 {
			t.Errorf("a connection on the cluster port, %s → %s, opens with %q, not a TLS handshake", k.src, k.dst, f.first)
			continue
		}
		tlsFlows++
	}
	// Both directions of: raft between every pair, peer HTTP (forwards,
	// pushes, the fetch, the membership check, status).
	t.Logf("captured %d bytes on the cluster ports; %d connection directions seen from their start, all opening with TLS", clusterBytes, tlsFlows)
	if tlsFlows < 10 {
		t.Errorf("only %d connection directions seen opening on the cluster ports", tlsFlows)
	}
	for _, m := range markers {
		if !controlMarkers[string(m)] {
			t.Errorf("the capture did not see %q on the S3 port, where it travels in the clear: it sees nothing", m)
		}
	}
	capture.close()
	if t.Failed() {
		t.FailNow()
	}

	// Refusals at the cluster port.
	leader, err = c.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	addr := c.Nodes[leader].ClusterAddr
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	_ = conn.SetDeadline(time.Now().Add(15 * time.Second))
	if _, err := io.WriteString(conn, "GET /_b3/v1/info HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	if got, err := io.ReadAll(conn); len(got) > 0 || (err != nil && !errors.Is(err, syscall.ECONNRESET)) {
		t.Fatalf("a plaintext HTTP request to the cluster port: answered %q, %v (want: closed, no answer)", got, err)
	}
	conn.Close()
	if _, err := cluster.DialPeer(ctx, addr, []byte(testutil.TestClusterSecret), nil, 'H'); err == nil {
		t.Fatal("a plaintext dialer with the cluster secret was let in")
	}
	dir := t.TempDir()
	otherCA := testutil.NewCA(t)
	// (A stranger trusts both CAs, so that the node is the one that
	// refuses its certificate.)
	both := filepath.Join(dir, "both.pem")
	if err := os.WriteFile(both, append(append([]byte(nil), ca.PEM...), otherCA.PEM...), 0o600); err != nil {
		t.Fatal(err)
	}
	identity := func(ca *testutil.CA, bundle, name string) *tlsreload.Certificate {
		cert, key := filepath.Join(dir, name+".pem"), filepath.Join(dir, name+"-key.pem")
		ca.IssuePeer(t, cert, key, "127.0.0.1")
		id, err := tlsreload.LoadMutual(cert, key, bundle, nil)
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	member := identity(ca, ca.File, "member")
	// dialMember opens a connection to node i's cluster port as a member
	// would, and returns the serial number of the certificate it showed.
	dialMember := func(i int) (*big.Int, error) {
		conn, err := cluster.DialPeer(ctx, c.Nodes[i].ClusterAddr, []byte(testutil.TestClusterSecret), member, 'H')
		if err != nil {
			return nil, err
		}
		defer conn.Close()
		return conn.(interface{ ConnectionState() tls.ConnectionState }).ConnectionState().PeerCertificates[0].SerialNumber, nil
	}
	if conn, err := cluster.DialPeer(ctx, addr, []byte(testutil.TestClusterSecret), identity(otherCA, both, "foreign"), 'H'); err == nil {
		conn.Close()
		t.Fatal("a dialer with a certificate from another CA was let in")
	} else if errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a dialer with a certificate from another CA: %v (want refused at once)", err)
	}
	if _, err := dialMember(leader); err != nil {
		t.Fatalf("a dialer with the cluster's CA and secret: %v", err)
	}
	waitOutput(ctx, t, c, leader, "does not open with TLS", "certificate signed by unknown authority")

	// A renewed pair is taken on SIGHUP, without a restart: new
	// connections see it, and the expiry metric follows.
	renewed := (leader + 2) % 3
	serial := ca.IssuePeer(t, c.ClusterTLS[renewed].Cert, c.ClusterTLS[renewed].Key, "127.0.0.1")
	if err := c.Nodes[renewed].Proc.Cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitFor(ctx, t, "the renewed certificate on a new connection", func() bool {
		got, err := dialMember(renewed)
		return err == nil && got.Cmp(serial) == 0
	})
	certPEM, err := os.ReadFile(c.ClusterTLS[renewed].Cert)
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(certPEM)
	leaf, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if got := mustMetric(t, c, renewed, "b3_cluster_tls_cert_expiry_timestamp_seconds"); got != float64(leaf.NotAfter.Unix()) {
		t.Fatalf("b3_cluster_tls_cert_expiry_timestamp_seconds %v, want the renewed certificate's %v", got, leaf.NotAfter.Unix())
	}

	// A follower restarted with a certificate from another CA, then with
	// no TLS at all: the group goes on without it, and both sides say why.
	other := (leader + 1) % 3
	good := c.ClusterTLS[other]
	for _, step := range []struct {
		name          string
		files         testutil.TLSFiles
		leaderSays    []string // in the leader's output
		itSays        []string // in its own
		certFromOther bool
	}{
		{name: "a certificate from another CA", certFromOther: true,
			leaderSays: []string{"certificate signed by unknown authority"}, itSays: []string{"certificate signed by unknown authority"}},
		{name: "no TLS",
			leaderSays: []string{"does not open with TLS"}, itSays: []string{"opens with TLS and this node has no --cluster-tls-*"}},
	} {
		c.Kill(other)
		files := testutil.TLSFiles{}
		if step.certFromOther {
			files = testutil.TLSFiles{Cert: filepath.Join(dir, "n-other.pem"), Key: filepath.Join(dir, "n-other-key.pem"), CA: otherCA.File}
			otherCA.IssuePeer(t, files.Cert, files.Key, "127.0.0.1")
		}
		c.ClusterTLS[other] = files
		mark := len(c.Nodes[leader].Proc.Output.String())
		if err := c.Start(other); err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		for i := range 3 {
			if _, err := cl[leader].PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(fmt.Sprint("w", i)), Body: strings.NewReader("x")}); err != nil {
				t.Fatalf("%s: a write: %v", step.name, err)
			}
		}
		waitOutputFrom(ctx, t, c, leader, mark, step.leaderSays...)
		waitOutput(ctx, t, c, other, step.itSays...)
		st, err := c.Status(leader)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range st.Members {
			if m.ID == c.Nodes[other].ID && m.Healthy {
				t.Fatalf("%s: the leader reaches %s: %+v", step.name, m.ID, m)
			}
		}
	}
	c.Kill(other)
	c.ClusterTLS[other] = good
	if err := c.Start(other); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitConverged(ctx); err != nil {
		t.Fatal(err)
	}
	if got, err := getRetry(ctx, cl[other], bucket, "w2"); err != nil || string(got) != "x" {
		t.Fatalf("w2 through %s, back with its certificate: %q, %v", c.Nodes[other].ID, got, err)
	}
}

func port(t *testing.T, addr string) uint16 {
	t.Helper()
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.ParseUint(p, 10, 16)
	if err != nil {
		t.Fatal(err)
	}
	return uint16(n)
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// waitOutput waits until node i's current process has printed each of
// lines.
func waitOutput(ctx context.Context, t *testing.T, c *testutil.Cluster, i int, lines ...string) {
	t.Helper()
	waitOutputFrom(ctx, t, c, i, 0, lines...)
}

// waitOutputFrom is waitOutput for what the process printed after the
// first from bytes.
func waitOutputFrom(ctx context.Context, t *testing.T, c *testutil.Cluster, i, from int, lines ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for _, line := range lines {
		for !strings.Contains(c.Nodes[i].Proc.Output.String()[from:], line) {
			if ctx.Err() != nil {
				t.Fatalf("%s did not say %q:\n%s", c.Nodes[i].ID, line, c.Nodes[i].Proc.Output.String()[from:])
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}
