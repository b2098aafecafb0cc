package testutil

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/b3-storage/b3/internal/admin"
)

// ClusterOptions configure StartCluster. Zero values pick the defaults.
type ClusterOptions struct {
	Nodes       int    // default 3
	Replication string // "sync" (default) or "async"
	Args        []string
	// Env is added to every node's environment.
	Env []string
	// NodeArgs, if set, adds flags of node i's own (after Args).
	NodeArgs func(i int, n *ClusterNode) []string
	// Secret is the cluster secret (B3_CLUSTER_SECRET) the nodes start
	// with (default TestClusterSecret).
	Secret    string
	AccessKey string // default "TESTACCESSKEY0000000"
	SecretKey string // default "test/secret/key/000000000000000000000000"
	// Network, if set, runs node i inside Network.Nodes[i] on fixed ports
	// of its address; the test reaches it from the hub namespace.
	Network *Network
	// CA, if set, serves every node's S3 API over HTTPS with a certificate
	// it issued (Cluster.TLSCert, TLSKey); the cluster's clients trust it.
	CA *CA
	// ClusterCA, if set, makes every connection between nodes mutual TLS
	// (--cluster-tls-*): each node gets a certificate it issued for the
	// host of its cluster address (Cluster.ClusterTLS).
	ClusterCA *CA
	// FirstID numbers the nodes from n(FirstID+1) (another group of a
	// cluster of several, whose ids differ from the first group's).
	FirstID int
	// BeforeStart, if set, is called once the nodes' addresses are
	// chosen, before the first node starts (a test that watches their
	// ports from the first connection).
	BeforeStart func(*Cluster)
}

// TLSFiles are a key pair and a CA bundle (PEM files).
type TLSFiles struct{ Cert, Key, CA string }

// TestClusterSecret is the cluster secret of test clusters.
const TestClusterSecret = "test-cluster-secret-0000"

// ClusterNode is one member of a test cluster.
type ClusterNode struct {
	ID          string
	Data        string
	S3Addr      string
	ClusterAddr string
	AdminAddr   string
	// ConsoleAddr is the node's web console ("" in namespaces: none).
	ConsoleAddr string
	// Join: started with --join instead of --peers (added by AddNode; a
	// member once b3 admin cluster add added it).
	Join bool
	Proc *Process // the current (or last) process
	logs []string // output of the node's earlier processes
	// Dial opens connections to the node's addresses (from the hub
	// namespace when the cluster runs in namespaces).
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// Scheme of the S3 API: "https" with ClusterOptions.CA.
	Scheme string
}

// Client returns an S3 client of the node, with the given timeout per
// request.
func (c *Cluster) Client(i int, timeout time.Duration) *s3.Client {
	return s3ClientTransport(c.Nodes[i].Endpoint(), c.opts.AccessKey, c.opts.SecretKey, timeout, func(tr *http.Transport) {
		tr.DialContext = c.Nodes[i].Dial
		if c.opts.CA != nil {
			tr.TLSClientConfig = &tls.Config{RootCAs: c.opts.CA.Pool(), MinVersion: tls.VersionTLS12}
		}
	})
}

// InsideClient returns an S3 client that reaches node i from inside its
// own namespace (on its loopback), partitioned or not.
func (c *Cluster) InsideClient(i int, timeout time.Duration) *s3.Client {
	return S3ClientDial("http://127.0.0.1:9000", c.opts.AccessKey, c.opts.SecretKey, timeout, DialIn(c.opts.Network.Nodes[i]))
}

// Endpoint is the node's S3 endpoint URL.
func (n *ClusterNode) Endpoint() string { return n.Scheme + "://" + n.S3Addr }

// Cluster is a replica group of `b3 node` processes.
type Cluster struct {
	t          testing.TB
	bin        string
	opts       ClusterOptions
	peers      string
	AdminToken string
	Nodes      []*ClusterNode
	// Secrets holds the cluster secret node i starts with (a test may
	// change it before a Start).
	Secrets []string
	// TLSCert and TLSKey are the S3 listeners' files with
	// ClusterOptions.CA.
	TLSCert, TLSKey string
	// ClusterTLS holds node i's --cluster-tls-* files with
	// ClusterOptions.ClusterCA (the zero value: none; a test may change
	// them before a Start).
	ClusterTLS []TLSFiles
}

// StartCluster starts a group on free loopback ports, waits until it has
// a leader that serves S3, and stops every process when the test ends
// (printing their output if the test failed).
func StartCluster(t testing.TB, opts ClusterOptions) *Cluster {
	t.Helper()
	if opts.Nodes == 0 {
		opts.Nodes = 3
	}
	if opts.Replication == "" {
		opts.Replication = "sync"
	}
	if opts.Secret == "" {
		opts.Secret = TestClusterSecret
	}
	if opts.AccessKey == "" {
		opts.AccessKey, opts.SecretKey = "TESTACCESSKEY0000000", "test/secret/key/000000000000000000000000"
	}
	c := &Cluster{t: t, bin: Binary(t), opts: opts, AdminToken: "test-admin-token"}
	root := t.TempDir()
	scheme := "http"
	if opts.CA != nil {
		scheme = "https"
		c.TLSCert, c.TLSKey = filepath.Join(root, "cert.pem"), filepath.Join(root, "key.pem")
		opts.CA.Issue(t, c.TLSCert, c.TLSKey)
	}
	var peers []string
	for i := range opts.Nodes {
		n := &ClusterNode{
			ID:     fmt.Sprintf("n%d", opts.FirstID+i+1),
			Data:   filepath.Join(root, fmt.Sprintf("n%d", opts.FirstID+i+1)),
			Dial:   (&net.Dialer{}).DialContext,
			Scheme: scheme,
		}
		if nw := opts.Network; nw != nil {
			n.S3Addr, n.ClusterAddr, n.AdminAddr = nw.IPs[i]+":9000", nw.IPs[i]+":9100", nw.IPs[i]+":9200"
			n.Dial = DialIn(nw.Hub)
		} else {
			n.S3Addr, n.ClusterAddr, n.AdminAddr = FreeAddr(t), FreeAddr(t), FreeAddr(t)
			n.ConsoleAddr = FreeAddr(t)
		}
		c.Nodes = append(c.Nodes, n)
		c.Secrets = append(c.Secrets, opts.Secret)
		c.ClusterTLS = append(c.ClusterTLS, c.issuePeer(n))
		peers = append(peers, n.ID+"="+n.ClusterAddr)
	}
	c.peers = strings.Join(peers, ",")
	t.Cleanup(c.stopAll)
	if opts.BeforeStart != nil {
		opts.BeforeStart(c)
	}
	for i := range c.Nodes {
		if err := c.Start(i); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := c.Leader(ctx); err != nil {
		t.Fatalf("no leader: %v", err)
	}
	// Serving S3 through every node: the leader has applied the root
	// user, and each follower knows the leader to forward to.
	for i := range c.Nodes {
		s3c := c.Client(i, 10*time.Second)
		for {
			_, err := s3c.ListBuckets(ctx, &s3.ListBucketsInput{})
			if err == nil {
				break
			}
			if ctx.Err() != nil {
				t.Fatalf("%s does not serve S3: %v", c.Nodes[i].ID, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	return c
}

// Keys returns the root user's credentials.
func (c *Cluster) Keys() (accessKey, secretKey string) { return c.opts.AccessKey, c.opts.SecretKey }

// Args returns the command line of node i (for tests that start it by
// other means).
func (c *Cluster) Args(i int) []string {
	n := c.Nodes[i]
	s3Addr, adminAddr := n.S3Addr, n.AdminAddr
	if c.opts.Network != nil {
		// Also on the namespace's loopback, for InsideClient.
		s3Addr, adminAddr = "0.0.0.0:9000", "0.0.0.0:9200"
	}
	group := []string{"--peers", c.peers}
	if n.Join {
		group = []string{"--join"}
	}
	args := []string{"node", "--id", n.ID, "--data", n.Data, "--address", s3Addr,
		"--cluster-address", n.ClusterAddr, "--admin-address", adminAddr,
		"--console-address", n.ConsoleAddr, "--replication", c.opts.Replication, "--drain-delay", "0s"}
	args = append(args, group...)
	if c.opts.CA != nil {
		args = append(args, "--tls-cert", c.TLSCert, "--tls-key", c.TLSKey)
	}
	if f := c.ClusterTLS[i]; f != (TLSFiles{}) {
		args = append(args, "--cluster-tls-cert", f.Cert, "--cluster-tls-key", f.Key, "--cluster-tls-ca", f.CA)
	}
	args = append(args, c.opts.Args...)
	if c.opts.NodeArgs != nil {
		args = append(args, c.opts.NodeArgs(i, n)...)
	}
	return args
}

// issuePeer issues n's cluster certificate with ClusterOptions.ClusterCA
// (none without).
func (c *Cluster) issuePeer(n *ClusterNode) TLSFiles {
	ca := c.opts.ClusterCA
	if ca == nil {
		return TLSFiles{}
	}
	host, _, err := net.SplitHostPort(n.ClusterAddr)
	if err != nil {
		c.t.Fatal(err)
	}
	dir := filepath.Dir(n.Data)
	f := TLSFiles{Cert: filepath.Join(dir, n.ID+"-cluster.pem"), Key: filepath.Join(dir, n.ID+"-cluster-key.pem"), CA: ca.File}
	ca.IssuePeer(c.t, f.Cert, f.Key, host)
	return f
}

// Start (re)starts node i with its data directory and ports.
func (c *Cluster) Start(i int) error {
	n := c.Nodes[i]
	if n.Proc != nil {
		if !n.Proc.Exited() {
			return fmt.Errorf("%s is running", n.ID)
		}
		n.logs = append(n.logs, n.Proc.Output.String())
	}
	bin, args := c.bin, c.Args(i)
	if c.opts.Network != nil {
		argv := Exec(c.opts.Network.Nodes[i], append([]string{bin}, args...)...)
		bin, args = argv[0], argv[1:]
	}
	p, err := Start(n.ID, bin, args, append([]string{
		"B3_ACCESS_KEY=" + c.opts.AccessKey, "B3_SECRET_KEY=" + c.opts.SecretKey, "B3_ADMIN_TOKEN=" + c.AdminToken,
		"B3_CLUSTER_SECRET=" + c.Secrets[i],
	}, c.opts.Env...))
	if err != nil {
		return err
	}
	n.Proc = p
	// Serving: this process printed its banner (after every listener is
	// bound) and the admin listener answers. The banner ties the answer to
	// this process, not to whatever else may hold the port.
	banner := "b3 node " + n.ID + ": S3 API on"
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if p.Exited() {
			return fmt.Errorf("%s exited: %v\n%s", n.ID, p.Wait(0), p.Output.String())
		}
		if strings.Contains(p.Output.String(), banner) {
			if _, err := c.Status(i); err == nil {
				return nil
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("%s did not start within 30s:\n%s", n.ID, p.Output.String())
}

// AddNode starts a new node with an empty data directory and --join on
// free loopback ports, and returns its index. It waits to be added to the
// group (b3 admin cluster add; see AdminCLI). Not for clusters in network
// namespaces.
func (c *Cluster) AddNode() (int, error) {
	i := len(c.Nodes)
	id := fmt.Sprintf("n%d", i+1)
	n := &ClusterNode{ID: id, Data: filepath.Join(filepath.Dir(c.Nodes[0].Data), id), Join: true, Dial: (&net.Dialer{}).DialContext, Scheme: c.Nodes[0].Scheme,
		S3Addr: FreeAddr(c.t), ClusterAddr: FreeAddr(c.t), AdminAddr: FreeAddr(c.t), ConsoleAddr: FreeAddr(c.t)}
	c.Nodes = append(c.Nodes, n)
	c.Secrets = append(c.Secrets, c.opts.Secret)
	c.ClusterTLS = append(c.ClusterTLS, c.issuePeer(n))
	return i, c.Start(i)
}

// AdminCLI runs `b3 admin` against node i's admin API and returns its
// standard output (and, on failure, an error with its standard error).
func (c *Cluster) AdminCLI(ctx context.Context, i int, args ...string) ([]byte, error) {
	return c.AdminCLIInput(ctx, i, "", args...)
}

// AdminCLIInput is AdminCLI with stdin as the command's standard input
// (a confirmation's answer).
func (c *Cluster) AdminCLIInput(ctx context.Context, i int, stdin string, args ...string) ([]byte, error) {
	argv := append([]string{"admin", "--endpoint", "http://" + c.Nodes[i].AdminAddr, "--token", c.AdminToken}, args...)
	cmd := exec.CommandContext(ctx, c.bin, argv...)
	cmd.Stdin = strings.NewReader(stdin)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return out, fmt.Errorf("b3 %s: %v: %s", strings.Join(argv, " "), err, stderr.String())
	}
	return out, nil
}

// Kill sends SIGKILL to node i.
func (c *Cluster) Kill(i int) { c.Nodes[i].Proc.Kill() }

// Running reports whether node i's process is alive.
func (c *Cluster) Running(i int) bool { return c.Nodes[i].Proc != nil && !c.Nodes[i].Proc.Exited() }

// Status asks node i for the status of the group.
func (c *Cluster) Status(i int) (admin.ClusterStatus, error) {
	tr := &http.Transport{DialContext: c.Nodes[i].Dial}
	defer tr.CloseIdleConnections()
	cl := &admin.Client{Endpoint: "http://" + c.Nodes[i].AdminAddr, Token: c.AdminToken, HTTP: &http.Client{Timeout: 5 * time.Second, Transport: tr}}
	return cl.ClusterStatus(context.Background())
}

// Leader waits until a running node reports a leader that is running, and
// returns its index.
func (c *Cluster) Leader(ctx context.Context) (int, error) {
	for {
		for i := range c.Nodes {
			if !c.Running(i) {
				continue
			}
			st, err := c.Status(i)
			if err != nil || st.Leader == "" {
				continue
			}
			for j, n := range c.Nodes {
				if n.ID == st.Leader && c.Running(j) {
					return j, nil
				}
			}
		}
		select {
		case <-ctx.Done():
			return -1, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// WaitConverged waits until every running node has applied as much of the
// log as the leader and holds the bytes of every record (none still
// filling after a snapshot restore).
func (c *Cluster) WaitConverged(ctx context.Context) error {
	for {
		l, err := c.Leader(ctx)
		if err != nil {
			return err
		}
		st, err := c.Status(l)
		if err == nil {
			done := true
			for _, m := range st.Members {
				for i, n := range c.Nodes {
					if n.ID == m.ID && c.Running(i) && (!m.Healthy || m.LagEntries > 0 || m.AppliedIndex == 0 || m.FillPending) {
						done = false
					}
				}
			}
			if done {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return errors.New("cluster did not converge")
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Stop stops every node gracefully and reports the first failure.
func (c *Cluster) Stop() error {
	var errs []error
	for _, n := range c.Nodes {
		if n.Proc != nil && !n.Proc.Exited() {
			if err := n.Proc.Stop(30 * time.Second); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", n.ID, err))
			}
		}
	}
	return errors.Join(errs...)
}

// Output is everything the node's processes wrote so far, earlier runs
// first.
func (n *ClusterNode) Output() string {
	out := strings.Join(n.logs, "\n--- restart ---\n")
	if n.Proc != nil {
		out += "\n--- last run ---\n" + n.Proc.Output.String()
	}
	return out
}

func (c *Cluster) stopAll() {
	_ = c.Stop()
	if c.t.Failed() {
		for _, n := range c.Nodes {
			out := n.Output()
			if len(out) > 32<<10 {
				out = out[len(out)-32<<10:]
			}
			c.t.Logf("output of %s (last 32 KiB):\n%s", n.ID, out)
		}
	}
}

// StartRouter starts `b3 router` on a free loopback port with the router
// key of c's cluster secret (as `b3 router key` prints it), asking seeds
// for the map, and returns it and its S3 endpoint; it is stopped when the
// test ends.
func (c *Cluster) StartRouter(seeds []string, args ...string) (*Process, string) {
	c.t.Helper()
	return c.StartRouterAt(FreeAddr(c.t), seeds, args...)
}

// RouterKey is `b3 router key` of the cluster's secret.
func (c *Cluster) RouterKey() string {
	c.t.Helper()
	cmd := exec.Command(c.bin, "router", "key")
	cmd.Env = append(os.Environ(), "B3_CLUSTER_SECRET="+c.opts.Secret)
	out, err := cmd.Output()
	if err != nil {
		c.t.Fatalf("b3 router key: %v", err)
	}
	return strings.TrimSpace(string(out))
}

// StartRouterAt is StartRouter on addr (a router started again where a
// killed one was).
func (c *Cluster) StartRouterAt(addr string, seeds []string, args ...string) (*Process, string) {
	c.t.Helper()
	argv := append([]string{"router", "--address", addr, "--cluster-seeds", strings.Join(seeds, ","), "--drain-delay", "0s"}, args...)
	p, err := Start("router-"+addr, c.bin, argv, []string{"B3_ROUTER_KEY=" + c.RouterKey(), "B3_ADMIN_TOKEN=" + c.AdminToken})
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(func() {
		_ = p.Stop(10 * time.Second)
		if c.t.Failed() {
			c.t.Logf("router %s output:\n%s", addr, p.Output.String())
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(p.Output.String(), "S3 API:") {
		if p.Exited() || time.Now().After(deadline) {
			c.t.Fatalf("router did not start: %v\n%s", p.Wait(0), p.Output.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	return p, "http://" + addr
}

// ClientOf returns an S3 client of endpoint with c's root user.
func (c *Cluster) ClientOf(endpoint string, timeout time.Duration) *s3.Client {
	return s3ClientTransport(endpoint, c.opts.AccessKey, c.opts.SecretKey, timeout, func(*http.Transport) {})
}
