package cluster

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/b3-storage/b3/internal/admin"
	"github.com/b3-storage/b3/internal/blob"
	"github.com/b3-storage/b3/internal/cache"
	"github.com/b3-storage/b3/internal/iolimit"
	"github.com/b3-storage/b3/internal/meta"
	"github.com/b3-storage/b3/internal/objstore"
	"github.com/b3-storage/b3/internal/partition"
	"github.com/b3-storage/b3/internal/s3api"
	"github.com/b3-storage/b3/internal/scrub"
	"github.com/b3-storage/b3/internal/server"
	"github.com/b3-storage/b3/internal/sse"
	"github.com/b3-storage/b3/internal/tlsreload"
	"github.com/b3-storage/b3/internal/vfs"
)

// Replication is when a write is acknowledged.
type Replication string

const (
	// Sync acknowledges a write once a majority of the group holds its
	// bytes durable and its command is committed (and applied here).
	Sync Replication = "sync"
	// Async acknowledges once the leader holds the bytes durable and the
	// command is committed; the bytes reach the followers afterwards.
	Async Replication = "async"
)

// Peer is one member of the replica group.
type Peer struct {
	ID       string
	Address  string // its --cluster-address
	NonVoter bool   // added, still catching up (see membership.go)
}

// ParsePeers parses "n1=host:port,n2=host:port,...".
func ParsePeers(spec string) ([]Peer, error) {
	var peers []Peer
	seen := map[string]bool{}
	for entry := range strings.SplitSeq(spec, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		id, addr, ok := strings.Cut(entry, "=")
		if !ok || id == "" || addr == "" {
			return nil, fmt.Errorf("peer %q: want id=host:port", entry)
		}
		if _, _, err := net.SplitHostPort(addr); err != nil {
			return nil, fmt.Errorf("peer %q: %v", entry, err)
		}
		if seen[id] {
			return nil, fmt.Errorf("peer id %q given twice", id)
		}
		seen[id] = true
		peers = append(peers, Peer{ID: id, Address: addr})
	}
	if len(peers) == 0 {
		return nil, errors.New("no peers given")
	}
	return peers, nil
}

// Config configures one node.
type Config struct {
	ID             string
	Root           string // --data
	Address        string // S3 API
	ClusterAddress string // raft and node-to-node HTTP
	Peers          []Peer
	// Join: the node has no --peers; it waits to be added to a running
	// cluster (b3 admin cluster add) and never bootstraps one.
	Join        bool
	Replication Replication // default Sync
	// Group is the replica group this node belongs to (--group; default
	// partition.FirstGroup). The first group keeps the cluster map; a
	// node of another group names Seeds, cluster addresses of nodes
	// already in the cluster, to find it (cmap.go, follow.go).
	Group string
	Seeds []string
	// Weight is the group's share of the partitions relative to the
	// other groups' (--weight; 0: in proportion to the disk's size). The
	// group's leader reports its own.
	Weight float64

	AdminAddress, AdminToken string
	// MetricsToken, if set, is a bearer token /metrics requires (the
	// admin token works too), as on b3 server.
	MetricsToken string
	// AuthBackOff is --auth-backoff: failed authentications one client
	// address may make in a row before it is held back (server.AuthLimits).
	AuthBackOff int
	// ConsoleAddress is the web console's listener ("": none).
	ConsoleAddress string
	// TLS key pairs (PEM files) of the S3, admin and console listeners,
	// as in b3 server: each pair set serves HTTPS, reloaded on SIGHUP and
	// when the files change (checked every TLSCheckInterval).
	TLSCert, TLSKey, AdminTLSCert, AdminTLSKey, ConsoleTLSCert, ConsoleTLSKey string
	TLSCheckInterval                                                          time.Duration
	// ClusterTLSCert, ClusterTLSKey and ClusterTLSCA (PEM files; all or
	// none) make every connection between members mutual TLS
	// (peertls.go), reloaded as the other key pairs are.
	ClusterTLSCert, ClusterTLSKey, ClusterTLSCA string
	// DrainDelay: on shutdown, /health/ready fails this long while
	// requests are still served, before the listeners close.
	DrainDelay time.Duration
	// MediaHeaders: as b3 server's --media-headers.
	MediaHeaders bool
	// MaxRetention: as b3 server's --max-retention (0: s3api's default).
	// Each node's S3 API applies its own; give every member the same.
	MaxRetention time.Duration
	// LogJSON prints the banner as a JSON log line.
	LogJSON bool
	// Keys are the master keys of SSE-S3 and SSE-KMS; nil refuses those
	// (SSE-C works without). Every member must hold the same keys: a
	// record sealed on one node is opened on whichever node answers.
	Keys *sse.KeyRing
	// LoadAdminToken, if set, supplies the admin token when AdminToken is
	// empty (it keeps one in the data directory, as b3 server does).
	LoadAdminToken func(root string) (string, error)
	// AccessKey and SecretKey become the root user when the cluster first
	// elects a leader (generated if empty). Later starts ignore them.
	AccessKey, SecretKey string
	// ClusterSecret authenticates the members to each other (auth.go);
	// empty: the one kept in the data directory.
	ClusterSecret string
	Region        string
	Sync          blob.SyncPolicy
	InlineMax     int64 // objects up to this size ride in the log entry
	SegmentSize   int64

	// Regions and Domains: as b3 server's --regions (further regions
	// accepted) and --domain (virtual-host-style base domains); each
	// node's S3 API applies its own, so give every member the same.
	Regions, Domains []string
	// NewBuckets are the access settings of new buckets, as b3 server's
	// --default-object-ownership and --default-block-public-access. The
	// leader's apply: its S3 API builds the bucket record the replicated
	// command carries (followers forward CreateBucket), so the replicas
	// agree whatever each was given; give every member the same, so that
	// a change of leader changes nothing.
	NewBuckets s3api.BucketDefaults
	// AccessLog logs every request this node's S3 API serves (the
	// leader's: the ones it forwards, a follower does not serve).
	AccessLog bool
	// MetaDir and DataDir default to Root/meta and Root/segments, as in
	// b3 server.
	MetaDir, DataDir string
	// CacheBytes bounds this node's small-object cache (0: off; b3 admin
	// cache set changes it); CacheMaxObject is the largest object cached;
	// CachePolicy "lru" or "s3fifo". As b3 server's --cache-*.
	CacheBytes, CacheMaxObject int64
	CachePolicy                cache.Policy
	// BucketMetrics is how many buckets (the largest) get per-bucket
	// gauges in this node's /metrics (0: none); BucketMetricsInterval how
	// often they are counted (default 5m).
	BucketMetrics         int
	BucketMetricsInterval time.Duration

	// DirectIO writes segments with O_DIRECT where the file system allows
	// it, as b3 server does (--direct-io).
	DirectIO bool
	// MinFreeBytes is the free-space reserve of this node's disks, as on
	// b3 server (--min-free-space): writes this node would make into it
	// are refused — a client's PUT on the leader with 507, a push to a
	// follower with 507 (the leader counts that follower absent), bytes
	// an apply fetches are retried until space is freed — so the disk
	// never fills under a write and the segment store never fails.
	MinFreeBytes int64

	Limits iolimit.Limits
	// Pace sets how background work (vacuum, catch-up fetches) yields to
	// clients, as in b3 server.
	Pace            iolimit.PacerConfig
	VacuumInterval  time.Duration
	VacuumThreshold float64
	// ScrubInterval is the period of this node's scrub (package scrub;
	// damaged bytes are fetched again from a peer: scrub.go); 0: only on
	// demand.
	ScrubInterval time.Duration
	// Snapshots: a node snapshots its state once SnapshotThreshold
	// commands followed the last snapshot (checked every SnapshotInterval)
	// and keeps TrailingLogs entries of log behind it, for followers that
	// fall a little behind. 0: the defaults below.
	SnapshotThreshold uint64
	SnapshotInterval  time.Duration
	TrailingLogs      uint64
	// The leader's lifecycle sweeper: its period (default 1h), deletes per
	// second (0: unlimited), and the length of a lifecycle day (tests).
	LifecycleInterval time.Duration
	LifecycleRate     float64
	LifecycleDay      time.Duration
	Logger            *slog.Logger
	// Ready, if set, is called with the bound S3 and cluster addresses once
	// the node serves.
	Ready func(s3Addr, clusterAddr string)
}

// identity is DATA/cluster.json: which node and which cluster a data
// directory belongs to. Written at the first start; checked at every later
// one, so that a directory is never served under another node's id or
// joined to another cluster. A node started with --join records its
// cluster once it is added (until then ClusterID is empty); a node removed
// from its cluster records that, and never starts again.
type identity struct {
	NodeID    string `json:"node_id"`
	ClusterID string `json:"cluster_id"`
	// Group is the node's replica group ("" in directories made before
	// there were groups: the first).
	Group   string `json:"group,omitempty"`
	Removed string `json:"removed,omitempty"` // why and when, once removed
}

const identityFile = "cluster.json"

// clusterID names a cluster by its bootstrap peer list.
func clusterID(peers []Peer) string {
	var parts []string
	for _, p := range peers {
		parts = append(parts, p.ID+"="+p.Address)
	}
	sort.Strings(parts)
	sum := sha256.Sum256([]byte(strings.Join(parts, ",")))
	return hex.EncodeToString(sum[:8])
}

// checkIdentity refuses a data directory that belongs to another node or
// cluster, or holds a single server's data, or a removed node's, and
// records the identity of a new one. It returns the identity.
func checkIdentity(cfg Config) (identity, error) {
	want := identity{NodeID: cfg.ID, Group: cfg.Group}
	if !cfg.Join {
		self := -1
		for i, p := range cfg.Peers {
			if p.ID == cfg.ID {
				self = i
			}
		}
		if self < 0 {
			return want, fmt.Errorf("--id %s is not in --peers", cfg.ID)
		}
		want.ClusterID = clusterID(cfg.Peers)
	}
	path := filepath.Join(cfg.Root, identityFile)
	data, err := os.ReadFile(path)
	switch {
	case err == nil:
		var have identity
		if err := json.Unmarshal(data, &have); err != nil {
			return want, fmt.Errorf("%s is malformed: %v", path, err)
		}
		if have.NodeID != want.NodeID {
			return want, fmt.Errorf("data directory %s belongs to node %q, not %q: start it with --id %s, or give this node its own directory", cfg.Root, have.NodeID, want.NodeID, have.NodeID)
		}
		if have.Removed != "" {
			return want, removedError(cfg, have.Removed)
		}
		if g := cmp.Or(have.Group, partition.FirstGroup); g != cfg.Group {
			return want, fmt.Errorf("data directory %s belongs to group %s, not %s: start it with --group %s", cfg.Root, g, cfg.Group, g)
		}
		if !cfg.Join && have.ClusterID != want.ClusterID {
			return want, fmt.Errorf("data directory %s belongs to another cluster (id %s; these --peers make %s): start it with the --peers it was created with (or --join, if it was added with b3 admin cluster add)", cfg.Root, have.ClusterID, want.ClusterID)
		}
		return have, nil
	case !errors.Is(err, fs.ErrNotExist):
		return want, fmt.Errorf("read %s: %w", path, err)
	}
	entries, err := os.ReadDir(cfg.Root)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return want, err
	}
	if len(entries) > 0 {
		return want, fmt.Errorf("data directory %s is not empty and has no %s (a b3 server's data?): a node needs an empty directory of its own", cfg.Root, identityFile)
	}
	if err := os.MkdirAll(cfg.Root, vfs.DirPerm); err != nil {
		return want, err
	}
	return want, writeIdentity(cfg.Root, want)
}

// removedError is why a removed node does not start.
func removedError(cfg Config, why string) error {
	return fmt.Errorf("node %s was removed from its cluster (%s): its data directory %s is not served again; to add this machine back, start it with an empty --data and --join, then b3 admin cluster add", cfg.ID, why, cfg.Root)
}

func writeIdentity(root string, id identity) error {
	data, _ := json.MarshalIndent(id, "", "  ")
	return server.WriteFileSync(filepath.Join(root, identityFile), append(data, '\n'), 0o600)
}

// Node is one running cluster member.
type Node struct {
	cfg Config
	// identity is DATA/cluster.json as read or written at start; idMu
	// guards it once running (a joining node learns its cluster id, a
	// removed one records its removal).
	idMu     sync.Mutex
	identity identity
	log      *slog.Logger
	store    *objstore.Store
	limiter  *iolimit.Limiter
	pacer    *iolimit.Pacer
	raft     *raft.Raft
	trans    *raft.NetworkTransport // raft's, closed after raft in shutdown
	fsm      *fsm
	logs     *logStore
	// entries is logs behind a cache of the latest entries (logCacheSize),
	// the log store raft and this package read from: the leader reads each
	// new entry back once per follower to send it, a follower once to
	// apply it, and both find it in memory.
	entries raft.LogStore
	users   *userState
	// unlock releases the data directory (server.LockDataDir).
	unlock func()
	// overrides keeps runtime settings (limits, vacuum) over restarts;
	// configured are the values they override.
	overrides  *server.OverrideStore
	configured admin.Configured

	// startPeers is the group before raft runs (members).
	startPeers []Peer
	secret     []byte // the cluster secret (auth.go)
	// peerTLS is the key pair and CA bundle of the cluster port
	// (peertls.go); nil: no TLS between members.
	peerTLS    *tlsreload.Certificate
	stages     *stages
	peerClient *http.Client
	// cmap is the cluster map as this node knows it (cmap.go): its log's
	// on the first group, followed from the first group's members on
	// the others (follow.go).
	cmap *mapState
	// leaders caches other groups' leaders (follow.go).
	leaders leaderCache
	// mapMu serializes this leader's map changes (changeMap).
	mapMu sync.Mutex
	// catalog: the version of the buckets and users, and what other
	// groups hold of them (catalog.go); following: another group's leader
	// runs followCatalog.
	catalog   *catalogState
	following atomic.Bool
	// fenceMu: a client's write holds it (read) from its owner check to
	// its commit; a fence takes it (move.go). receiving: this leader runs
	// the moves to its group; moved counts the partitions it received.
	fenceMu   sync.RWMutex
	receiving atomic.Bool
	moved     atomic.Int64
	copied    atomic.Int64 // records a sync copied here (move.go)
	clearing  atomic.Bool  // clearStaleMarks runs (bucketdelete.go)
	api       *s3api.Server
	backend   *Store
	// adminLeader serves the admin API's cluster-wide changes forwarded
	// by other members (forward.go); nil until the admin API is set up,
	// and on a node without one.
	adminLeader atomic.Pointer[http.Handler]
	// faulty: this node's disk keeps its apply from moving
	// (localfault.go): it abstains from elections and is not ready.
	faulty atomic.Bool
	// lastHandOver is when this node last handed leadership over because
	// its disk was full (unix ns; localfault.go).
	lastHandOver atomic.Int64

	// readyTerm is the term in which this node led and applied everything
	// committed before it (a barrier); 0 when not leading. Ids allocated
	// while leading carry it, so they are unique across leaders.
	readyTerm atomic.Uint64
	idCounter atomic.Uint64
	pending   atomic.Int64 // bytes being pushed to followers
	removed   atomic.Bool  // removed from the group: serves no S3
	// prefetched counts bytes fetched ahead of the apply (prefetch.go).
	prefetched atomic.Int64
	pushes     tracker
	sweeping   bool // the lifecycle sweeper runs here (watchLeadership's)
	lagKnown   lagKnown
	registry   *prometheus.Registry
	scrubber   *scrub.Scrubber // scrub.go

	closing context.Context
	close   context.CancelFunc
	wg      sync.WaitGroup

	// leaderMu guards leaderAddr and leaderChanged, which is closed (and
	// replaced) when the leader this node knows changes: requests it
	// forwarded to the old one are then cut at once.
	leaderMu      sync.Mutex
	leaderAddr    raft.ServerAddress
	leaderChanged chan struct{}
}

// leaderEpoch returns a channel closed when the known leader changes.
func (n *Node) leaderEpoch() <-chan struct{} {
	n.leaderMu.Lock()
	defer n.leaderMu.Unlock()
	return n.leaderChanged
}

func (n *Node) noteLeader() {
	addr, _ := n.raft.LeaderWithID()
	n.leaderMu.Lock()
	defer n.leaderMu.Unlock()
	if addr != n.leaderAddr {
		n.leaderAddr = addr
		close(n.leaderChanged)
		n.leaderChanged = make(chan struct{})
	}
}

// open starts the store and raft; Run serves them.
func open(cfg Config) (_ *Node, err error) {
	id, err := checkIdentity(cfg)
	if err != nil {
		return nil, err
	}
	if cfg.Join && len(cfg.Peers) > 0 {
		return nil, errors.New("--join and --peers exclude each other")
	}
	// Checked after the identity, which wants a new node's directory
	// empty: the lock file is the first thing in it.
	unlock, err := server.LockDataDir(cfg.Root)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			unlock()
		}
	}()
	overrides, err := server.OpenOverrideStore(cfg.Root)
	if err != nil {
		return nil, err
	}
	configured := admin.Configured{Limits: cfg.Limits, VacuumInterval: cfg.VacuumInterval, CacheBytes: cfg.CacheBytes}
	overridden, err := overrides.Apply(&cfg.Limits, &cfg.VacuumInterval, &cfg.CacheBytes)
	if err != nil {
		return nil, err
	}
	if len(overridden) > 0 {
		cfg.Logger.Info("runtime settings changed through the admin API override the configuration (b3 admin settings)",
			"overridden", overridden, "file", filepath.Join(cfg.Root, server.OverridesFile))
	}
	secret, err := loadSecret(cfg.Root, cfg.ClusterSecret)
	if err != nil {
		return nil, err
	}
	if err := keepSecret(cfg.Root, secret); err != nil {
		return nil, err
	}
	peerTLS, err := loadPeerTLS(cfg)
	if err != nil {
		return nil, err
	}
	n := &Node{cfg: cfg, identity: id, log: cfg.Logger, secret: secret, stages: newStages(), registry: admin.NewRegistry(), leaderChanged: make(chan struct{}),
		unlock: unlock, overrides: overrides, configured: configured}
	n.peerTLS = peerTLS
	n.closing, n.close = context.WithCancel(context.Background())
	n.peerClient = &http.Client{Transport: n.peerTransport(protoHTTP)}
	if n.users, err = openUserState(cfg.Root); err != nil {
		return nil, err
	}
	if n.cmap, err = openMapState(cfg.Root); err != nil {
		return nil, err
	}
	for _, clash := range n.users.clashes() { // users added before names were checked
		n.log.Warn("user names clash: a policy or grant naming one applies to both; remove or replace one of them (docs/SECURITY.md)", "clash", clash)
	}
	n.pacer = iolimit.NewPacer(cfg.Pace)
	n.limiter = iolimit.New(cfg.Limits, iolimit.WithPacer(n.pacer))
	metaDir, dataDir := objstore.DefaultDirs(cfg.Root)
	metaDir, dataDir = cmp.Or(cfg.MetaDir, metaDir), cmp.Or(cfg.DataDir, dataDir)
	n.store, err = objstore.Open(objstore.Options{
		MetaDir: metaDir, DataDir: dataDir, Sync: cfg.Sync, DirectIO: cfg.DirectIO, SegmentSize: cfg.SegmentSize,
		Logger: cfg.Logger, Limiter: n.limiter, VacuumThreshold: cfg.VacuumThreshold, LifecycleDay: cfg.LifecycleDay,
		MinFreeBytes: cfg.MinFreeBytes,
		Cache: cache.New[objstore.CachedObject](cache.Options{
			MaxBytes: cfg.CacheBytes, MaxObjectSize: cfg.CacheMaxObject, Policy: cfg.CachePolicy}),
	})
	if err != nil {
		return nil, err
	}
	applied, err := n.store.Applied()
	if err != nil {
		n.store.Close()
		return nil, err
	}
	n.catalog = newCatalogState()
	n.catalog.note("", applied) // changes before a restart: at most that
	n.fsm = &fsm{node: n, store: n.store, users: n.users, log: cfg.Logger, skipTo: applied}
	n.fsm.maps, n.fsm.firstGroup = n.cmap, n.firstGroup()
	n.fsm.fill = newFiller(n.store, n.fetch, n.fsm.applied.Load, cfg.Root, cfg.Logger)
	if n.logs, err = openLogStore(filepath.Join(cfg.Root, "raft"), cfg.Logger); err != nil {
		n.store.Close()
		return nil, err
	}
	n.entries, _ = raft.NewLogCache(logCacheSize, n.logs) // (fails only for a capacity <= 0)
	n.stages.adopt(scanStaged(context.Background(), n.store, cfg.Logger))
	return n, nil
}

// Snapshot defaults: a snapshot every 8192 commands (checked every 2
// minutes), and 10240 entries of log kept behind it. A snapshot holds
// records, not bytes: it is cheap to take, and the log it replaces is the
// cost of every restart.
const (
	DefaultSnapshotThreshold = 8192
	DefaultSnapshotInterval  = 2 * time.Minute
	DefaultTrailingLogs      = 10240
)

// logCacheSize is how many of the latest log entries are kept in memory
// (Node.entries): several batches of MaxAppendEntries, a few MiB of small
// objects riding in their commands.
const logCacheSize = 1024

func (n *Node) raftConfig() *raft.Config {
	conf := raft.DefaultConfig()
	conf.LocalID = raft.ServerID(n.cfg.ID)
	conf.SnapshotThreshold = cmp.Or(n.cfg.SnapshotThreshold, DefaultSnapshotThreshold)
	conf.SnapshotInterval = cmp.Or(n.cfg.SnapshotInterval, DefaultSnapshotInterval)
	conf.TrailingLogs = cmp.Or(n.cfg.TrailingLogs, DefaultTrailingLogs)
	conf.Logger = hclog.New(&hclog.LoggerOptions{Name: "raft." + n.cfg.ID, Level: hclog.Warn, Output: os.Stderr, JSONFormat: n.cfg.LogJSON})
	return conf
}

// startRaft starts consensus on the mux's raft side, bootstrapping the
// group from --peers on the very first start.
func (n *Node) startRaft(mux *portMux) error {
	conf := n.raftConfig()
	trans := raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
		Stream: raftLayer{mux.raft, n.secret, n.peerTLS}, MaxPool: 8, Timeout: 10 * time.Second, Logger: conf.Logger,
	})
	snaps, err := openSnapshotStore(n.cfg.Root, conf.Logger)
	if err != nil {
		return err
	}
	// Raft restores its latest snapshot inside NewRaft; a store behind it
	// fetches bytes (fill.go) from the members that snapshot names.
	n.startPeers = n.cfg.Peers
	if list, err := snaps.List(); err == nil && len(list) > 0 {
		n.startPeers = nil
		for _, s := range list[0].Configuration.Servers {
			n.startPeers = append(n.startPeers, Peer{ID: string(s.ID), Address: string(s.Address)})
		}
	}
	existing, err := raft.HasExistingState(n.entries, n.logs, snaps)
	if err != nil {
		return err
	}
	if existing {
		// Removed while it was down? Asked before raft runs, so that a
		// removed node never campaigns.
		if err := n.checkMembership(); err != nil {
			return err
		}
	}
	if !existing && !n.cfg.Join {
		var servers []raft.Server
		for _, p := range n.cfg.Peers {
			servers = append(servers, raft.Server{ID: raft.ServerID(p.ID), Address: raft.ServerAddress(p.Address), Suffrage: raft.Voter})
		}
		if err := raft.BootstrapCluster(conf, n.entries, n.logs, snaps, trans, raft.Configuration{Servers: servers}); err != nil {
			return fmt.Errorf("bootstrap: %w", err)
		}
	}
	n.raft, err = raft.NewRaft(conf, n.fsm, n.entries, n.logs, snaps, trans)
	n.trans = trans
	return err
}

// watchLeadership marks the node ready to take writes once it leads and
// has applied everything committed before its term, and unready as soon
// as it does not lead.
func (n *Node) watchLeadership() {
	defer n.wg.Done()
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	led := false
	for {
		select {
		case <-n.closing.Done():
			return
		case <-t.C:
		}
		n.noteLeader()
		if n.raft.State() != raft.Leader {
			if led {
				// The writes held LL-HLS requests wait for land on the
				// new leader now: answer them (503, retryable).
				n.api.ReleaseHeld()
				led = false
			}
			n.readyTerm.Store(0)
			n.lifecycleLeading(false)
			continue
		}
		led = true
		term := n.raft.CurrentTerm()
		if n.readyTerm.Load() == term {
			continue
		}
		if err := n.raft.Barrier(5 * time.Second).Error(); err != nil {
			continue
		}
		if n.raft.CurrentTerm() != term || n.raft.State() != raft.Leader {
			continue
		}
		if n.fsm.lostUntil.Load() > n.fsm.applied.Load() {
			continue // a record declared lost is still hollow here: another barrier, past its declaration (lost.go)
		}
		n.readyTerm.Store(term)
		n.log.Info("leading", "term", term)
		if _, ok := n.users.root(); !ok && n.firstGroup() {
			n.proposeRoot() // another group's users are the first group's (catalog.go)
		}
		n.lifecycleLeading(true)
	}
}

// proposeRoot makes the first leader's root user the cluster's.
func (n *Node) proposeRoot() {
	root := newUser("root")
	if n.cfg.AccessKey != "" && n.cfg.SecretKey != "" {
		root.AccessKey, root.SecretKey = n.cfg.AccessKey, n.cfg.SecretKey
	}
	root.Root = true
	if _, err := n.propose(&command{Op: opAddUser, User: &root}); err != nil {
		n.log.Warn("propose root user", "err", err)
	}
}

// leading reports whether this node may serve S3 requests itself.
func (n *Node) leading() bool {
	t := n.readyTerm.Load()
	return t != 0 && n.raft.State() == raft.Leader && n.raft.CurrentTerm() == t
}

// nextID returns an id unique across the cluster's history: the term this
// node leads in, and a counter. Only one node leads in a term.
func (n *Node) nextID() (uint64, error) {
	t := n.readyTerm.Load()
	if t == 0 {
		return 0, errNotLeader
	}
	return t<<32 | (n.idCounter.Add(1) & 0xffffffff), nil
}

// applyTimeout bounds the wait for a command to commit and apply. Raft
// itself gives up sooner when the leader loses its quorum (the lease).
const applyTimeout = 10 * time.Second

// propose replicates c through the log and returns its outcome here.
func (n *Node) propose(c *command) (*meta.Object, error) {
	res := n.proposeResult(c)
	return res.obj, res.err
}

// proposeResult is propose with the whole outcome of the apply. A
// client's write of a key commits only in the group that owns the key's
// partition, and not while the partition is fenced (move.go).
func (n *Node) proposeResult(c *command) applyResult {
	if bucket, key := keyOf(c); bucket != "" {
		n.fenceMu.RLock()
		defer n.fenceMu.RUnlock()
		if err := n.checkOwner(bucket, key); err != nil {
			return applyResult{err: err}
		}
		if err := n.checkBucketWrite(c, bucket); err != nil {
			return applyResult{err: err}
		}
	}
	f := n.raft.Apply(c.encode(), applyTimeout)
	done := make(chan error, 1)
	go func() { done <- f.Error() }()
	select {
	case err := <-done:
		if err != nil {
			return applyResult{err: fmt.Errorf("%w: %v", errNoQuorum, err)}
		}
	case <-time.After(applyTimeout):
		return applyResult{err: fmt.Errorf("%w: no commit within %s", errNoQuorum, applyTimeout)}
	}
	return f.Response().(applyResult)
}

// followers returns the other voters' cluster addresses: those that
// receive pushes and count towards a write's majority. Non-voters (members
// still catching up, see membership.go) fetch what they need instead.
func (n *Node) followers() []string {
	var out []string
	for _, p := range n.members() {
		if p.ID != n.cfg.ID && !p.NonVoter {
			out = append(out, p.Address)
		}
	}
	return out
}

// members returns the group as raft knows it (before raft runs: as the
// latest snapshot, or --peers, says).
func (n *Node) members() []Peer {
	if n.raft == nil {
		return n.startPeers
	}
	f := n.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		return n.startPeers
	}
	var out []Peer
	for _, s := range f.Configuration().Servers {
		out = append(out, Peer{ID: string(s.ID), Address: string(s.Address), NonVoter: s.Suffrage != raft.Voter})
	}
	return out
}

// peersLeaderFirst lists the other members, the leader first.
func (n *Node) peersLeaderFirst() []string {
	var leader raft.ServerAddress
	if n.raft != nil {
		leader, _ = n.raft.LeaderWithID()
	}
	var out []string
	if leader != "" && string(leader) != n.cfg.ClusterAddress {
		out = append(out, string(leader))
	}
	for _, a := range n.followers() {
		if a != string(leader) {
			out = append(out, a)
		}
	}
	return out
}

// quorumPeers is how many followers must hold a write's bytes before its
// command is proposed: a majority of the group, counting the leader.
func (n *Node) quorumPeers() int {
	if n.cfg.Replication == Async {
		return 0
	}
	voters := 0
	for _, p := range n.members() {
		if !p.NonVoter {
			voters++
		}
	}
	return voters/2 + 1 - 1
}

// peerTransport is HTTP to other members' cluster ports for protocol
// proto (protoHTTP: the node-to-node endpoints; protoForward: clients'
// S3 requests, forward.go): every connection authenticated (DialPeer,
// over TLS if the node has it), and pooled.
func (n *Node) peerTransport(proto byte) *http.Transport {
	return peerTransport(n.secret, n.peerTLS, proto)
}

// peerTransport is HTTP to members' cluster ports for protocol proto,
// authenticated with secret (and over TLS with peerTLS, if not nil).
func peerTransport(secret []byte, peerTLS *tlsreload.Certificate, proto byte) *http.Transport {
	return transportAs(authMagic, secret, peerTLS, proto)
}

// transportAs is peerTransport for a member (authMagic) or a router
// (routerMagic and the router key).
func transportAs(magic string, key []byte, peerTLS *tlsreload.Certificate, proto byte) *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	// Peers are near: a peer that does not answer a dial within 2 s is
	// down or cut off, and the caller has better things to try.
	t.DialContext = func(ctx context.Context, _, addr string) (net.Conn, error) {
		return dialAs(ctx, addr, magic, key, peerTLS, proto)
	}
	// Sized for load: Go's default of 2 idle connections per host makes
	// every burst open (and leave in TIME_WAIT) new connections.
	t.MaxIdleConns = 1024
	t.MaxIdleConnsPerHost = 256
	t.IdleConnTimeout = 90 * time.Second
	t.ResponseHeaderTimeout = 0
	return t
}

// Close stops the node: raft first (no more applies), then the store.
func (n *Node) shutdown() error {
	n.close()
	var errs []error
	if n.raft != nil {
		errs = append(errs, n.raft.Shutdown().Error())
	}
	if n.trans != nil {
		errs = append(errs, n.trans.Close()) // raft.Shutdown leaves it open
	}
	n.wg.Wait()
	n.store.StopLifecycle()
	n.pushes.closeAndWait()
	n.stages.discardAll()
	errs = append(errs, n.logs.Close(), n.store.Close())
	n.unlock()
	return errors.Join(errs...)
}
