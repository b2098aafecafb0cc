package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/b3-storage/b3/internal/admin"
	"github.com/b3-storage/b3/internal/blob"
	"github.com/b3-storage/b3/internal/cluster"
	"github.com/b3-storage/b3/internal/server"
)

// runNode is "b3 node": one member of a replica group (see
// docs/CLUSTER.md), until SIGINT or SIGTERM.
func runNode(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "certs" {
		return runNodeCerts(args[1:], stdout, stderr)
	}
	cfg, code := parseNode(args, os.LookupEnv, stderr)
	if code >= 0 {
		return code
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := cluster.Run(ctx, cfg, stdout); err != nil {
		fmt.Fprintf(stderr, "b3 node: %v\n", err)
		return 1
	}
	return 0
}

// nodeShared are the settings b3 node takes from b3 server: the same
// flags, B3_* variables and config file keys, parsed and checked by the
// server's code (server.SharedFlags).
var nodeShared = []string{"direct-io", "log-level", "log-format", "media-headers", "max-retention", "drain-delay",
	"tls-cert", "tls-key", "admin-tls-cert", "admin-tls-key", "console-tls-cert", "console-tls-key", "tls-check-interval",
	"meta-dir", "data-dir", "regions", "domain", "access-log", "access-key", "secret-key", "secret-key-file", "admin-token",
	"metrics-token", "auth-backoff", "default-object-ownership", "default-block-public-access",
	"vacuum-threshold", "scrub-interval", "bucket-metrics", "bucket-metrics-interval", "cache-size", "cache-max-object", "cache-policy",
	"kms-keys", "kms-keys-file"}

// nodeExceptions are the settings of b3 server that b3 node does not
// take, and why (docs/CLUSTER.md lists them; TestNodeTakesServerSettings
// keeps this table, the flags and the docs in step). Every other setting
// of b3 server is a flag of b3 node.
var nodeExceptions = map[string]string{
	"users": "users are the cluster's, replicated through the log (b3 admin users add on any node); extra users known to one node only would sign requests the leader refuses",
}

// parseNode resolves b3 node's settings from its flags, the B3_*
// environment and the YAML file of --config (server.LoadFlags: flag over
// variable over file over default). code is -1 when cfg is ready to run,
// else the exit code (0 after --help).
func parseNode(args []string, getenv func(string) (string, bool), stderr io.Writer) (cfg cluster.Config, code int) {
	fs := flag.NewFlagSet("b3 node", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: b3 node --id ID --data DIR --cluster-address ADDR (--peers LIST | --join) [flags]")
		fmt.Fprintln(stderr, "       b3 node certs --out DIR --nodes LIST   (a CA and key pairs for --cluster-tls-*)")
		fmt.Fprintln(stderr, "\nEvery flag is also a B3_* environment variable (--cache-size: B3_CACHE_SIZE) and a key of the\nYAML file given by --config (precedence in that order).\n\nflags:")
		fs.PrintDefaults()
	}
	var (
		peers, replication, fsync  string
		inlineMax, vacuumI         string
		limits                     [4]string
		pacing                     bool
		minRate                    string
		lcInterval, lcDay, segSize string
		secretFile                 string
		minFree                    string
		seeds                      string
	)
	fs.String("config", "", "YAML config file: keys are the flag names (B3_CONFIG)")
	fs.StringVar(&cfg.ID, "id", "", "this node's id, one of --peers, or new with --join (required)")
	fs.StringVar(&cfg.Root, "data", "", "data directory of this node (required; a new node needs an empty one)")
	fs.StringVar(&cfg.Address, "address", "127.0.0.1:9000", "S3 API listen address")
	fs.StringVar(&cfg.ClusterAddress, "cluster-address", "", "address for raft and node-to-node traffic; must match this node's entry in --peers")
	fs.StringVar(&peers, "peers", "", "the replica group: id=host:port,... (the same list on every node; used on the first start)")
	fs.BoolVar(&cfg.Join, "join", false, "no --peers: wait to be added to a running cluster (b3 admin cluster add ID=CLUSTER-ADDRESS)")
	fs.StringVar(&cfg.Group, "group", "g1", "this node's replica group; the first group (g1) keeps the cluster map, another one joins it through --cluster-seeds")
	fs.StringVar(&seeds, "cluster-seeds", "", "cluster addresses (host:port,...) of nodes already in the cluster; required with a --group other than g1")
	fs.Float64Var(&cfg.Weight, "weight", 0, "this group's share of the partitions relative to other groups' (0: in proportion to the disk's size)")
	fs.StringVar(&replication, "replication", "sync", "sync: acknowledge once a majority holds a write; async: once the leader does")
	fs.StringVar(&cfg.AdminAddress, "admin-address", "", "admin API listen address (b3 admin; its token: --admin-token, else generated into <data>/admin-token)")
	fs.StringVar(&cfg.ConsoleAddress, "console-address", "127.0.0.1:9002", "web console listen address (\"\" disables); log in with any user's access key and secret key")
	fs.StringVar(&cfg.Region, "region", "us-east-1", "S3 region")
	fs.StringVar(&fsync, "fsync", "batch", "durability: batch (group commit), always, none (benchmarks only)")
	fs.StringVar(&inlineMax, "inline-max", "4KiB", "objects up to this size ride in the log entry and live in metadata")
	fs.StringVar(&vacuumI, "vacuum-interval", "10m", "period of this node's automatic vacuum check (0: off)")
	fs.StringVar(&limits[0], "read-limit", "0", "disk read bytes/s, all priorities (0 = unlimited)")
	fs.StringVar(&limits[1], "write-limit", "0", "disk write bytes/s, all priorities (0 = unlimited)")
	fs.StringVar(&limits[2], "background-read-limit", "0", "disk read bytes/s of vacuum and catch-up (0 = what clients leave)")
	fs.StringVar(&limits[3], "background-write-limit", "0", "disk write bytes/s of vacuum and catch-up (0 = what clients leave)")
	fs.BoolVar(&pacing, "background-pacing", true, "pace vacuum and catch-up by client load: full speed when clients are idle, --background-min-rate under load")
	fs.StringVar(&minRate, "background-min-rate", "8MiB", "background work (bytes read + written) per second kept under sustained client load")
	fs.Uint64Var(&cfg.SnapshotThreshold, "snapshot-threshold", cluster.DefaultSnapshotThreshold, "commands after the last Raft snapshot that make the next one")
	fs.DurationVar(&cfg.SnapshotInterval, "snapshot-interval", cluster.DefaultSnapshotInterval, "how often to check --snapshot-threshold")
	fs.Uint64Var(&cfg.TrailingLogs, "trailing-logs", cluster.DefaultTrailingLogs, "log entries kept behind a snapshot, for followers a little behind")
	fs.StringVar(&secretFile, "cluster-secret-file", "", "file holding the cluster secret (default: B3_CLUSTER_SECRET, else the one kept in --data)")
	fs.StringVar(&cfg.ClusterTLSCert, "cluster-tls-cert", "", "this node's certificate (PEM) for mutual TLS between nodes, with --cluster-tls-key and --cluster-tls-ca (all nodes or none; b3 node certs makes them)")
	fs.StringVar(&cfg.ClusterTLSKey, "cluster-tls-key", "", "the key of --cluster-tls-cert (PEM)")
	fs.StringVar(&cfg.ClusterTLSCA, "cluster-tls-ca", "", "CA certificates (PEM) the other nodes' certificates must chain to")
	fs.StringVar(&segSize, "segment-size", "1GiB", "segment file size")
	fs.StringVar(&minFree, "min-free-space", "1GiB", "free-space reserve of this node's disks: a PUT that would cut into it gets 507 InsufficientStorage, a push to this node is refused (the group goes on with the others), and bytes it would fetch wait until space is freed (0 = off)")
	fs.StringVar(&lcInterval, "lifecycle-interval", "1h", "period of the leader's lifecycle pass (rule changes and a new leader start one at once)")
	fs.Float64Var(&cfg.LifecycleRate, "lifecycle-rate", 1000, "lifecycle deletes and aborts per second (0 = unlimited)")
	fs.StringVar(&lcDay, "lifecycle-day", "24h", "length of a lifecycle day; DEBUG/TESTS ONLY: e.g. 1s makes Days=1 mean one second")
	shared := server.SharedFlags(fs, nodeShared...)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return cfg, 0
		}
		return cfg, 2
	}
	fail := func(format string, a ...any) (cluster.Config, int) {
		fmt.Fprintf(stderr, "b3 node: "+format+"\n", a...)
		return cfg, 2
	}
	if err := server.LoadFlags(fs, getenv); err != nil {
		return fail("%v", err)
	}
	if cfg.ID == "" || cfg.Root == "" || cfg.ClusterAddress == "" || (peers == "") == !cfg.Join {
		return fail("--id, --data, --cluster-address and one of --peers (a new cluster, or a member of one) or --join (a node to add) are required")
	}
	var err error
	if !cfg.Join {
		if cfg.Peers, err = cluster.ParsePeers(peers); err != nil {
			return fail("--peers: %v", err)
		}
	}
	for _, p := range cfg.Peers {
		if p.ID == cfg.ID && p.Address != cfg.ClusterAddress {
			return fail("--cluster-address %s, but --peers gives %s for %s", cfg.ClusterAddress, p.Address, cfg.ID)
		}
	}
	cfg.Seeds = splitList(seeds)
	cfg.Replication = cluster.Replication(replication)
	if cfg.Sync, err = blob.ParseSyncPolicy(fsync); err != nil {
		return fail("--fsync: %v", err)
	}
	if cfg.InlineMax, err = server.ParseBytes(inlineMax); err != nil {
		return fail("--inline-max: %v", err)
	}
	if cfg.VacuumInterval, err = time.ParseDuration(vacuumI); err != nil {
		return fail("--vacuum-interval: %v", err)
	}
	if cfg.MinFreeBytes, err = server.ParseBytes(minFree); err != nil || cfg.MinFreeBytes < 0 {
		return fail("--min-free-space %q: want a size of 0 or more", minFree)
	}
	if cfg.SegmentSize, err = server.ParseBytes(segSize); err != nil || cfg.SegmentSize <= 0 {
		return fail("--segment-size %q: want a size above 0", segSize)
	}
	if cfg.LifecycleInterval, err = time.ParseDuration(lcInterval); err != nil || cfg.LifecycleInterval <= 0 {
		return fail("--lifecycle-interval %q: want a duration above 0", lcInterval)
	}
	if cfg.LifecycleDay, err = time.ParseDuration(lcDay); err != nil || cfg.LifecycleDay <= 0 {
		return fail("--lifecycle-day %q: want a duration above 0", lcDay)
	}
	for i, dst := range []*int64{&cfg.Limits.ReadBytesPerSec, &cfg.Limits.WriteBytesPerSec,
		&cfg.Limits.BackgroundReadBytesPerSec, &cfg.Limits.BackgroundWriteBytesPerSec} {
		if *dst, err = server.ParseBytes(limits[i]); err != nil {
			return fail("limit %q: %v", limits[i], err)
		}
	}
	cfg.Pace.Off = !pacing
	if cfg.Pace.MinBytesPerSec, err = server.ParseBytes(minRate); err != nil {
		return fail("--background-min-rate: %v", err)
	}
	sc, out, err := shared()
	if err != nil {
		return fail("%v", err)
	}
	cfg.TLSCert, cfg.TLSKey, cfg.AdminTLSCert, cfg.AdminTLSKey = sc.TLSCert, sc.TLSKey, sc.AdminTLSCert, sc.AdminTLSKey
	cfg.ConsoleTLSCert, cfg.ConsoleTLSKey, cfg.TLSCheckInterval = sc.ConsoleTLSCert, sc.ConsoleTLSKey, sc.TLSCheckInterval
	cfg.DrainDelay, cfg.MediaHeaders, cfg.LogJSON = sc.DrainDelay, sc.MediaHeaders, sc.LogJSON
	cfg.MaxRetention, cfg.NewBuckets = sc.MaxRetention, sc.NewBuckets
	cfg.DirectIO = sc.DirectIO
	cfg.MetaDir, cfg.DataDir = sc.MetaDir, sc.DataDir
	cfg.Regions, cfg.Domains, cfg.AccessLog = sc.Regions, sc.Domains, sc.AccessLog
	cfg.VacuumThreshold, cfg.ScrubInterval = sc.VacuumThreshold, sc.ScrubInterval
	cfg.BucketMetrics, cfg.BucketMetricsInterval = sc.BucketMetrics, sc.BucketMetricsInterval
	cfg.CacheBytes, cfg.CacheMaxObject, cfg.CachePolicy = sc.CacheBytes, sc.CacheMaxObject, sc.CachePolicy
	cfg.Logger = out.NewLogger(stderr).With("node", cfg.ID)
	// The root user's keys and the admin token: --access-key,
	// --secret-key, --admin-token or, as before, B3_ACCESS_KEY,
	// B3_SECRET_KEY, B3_ADMIN_TOKEN.
	cfg.AccessKey, cfg.SecretKey, cfg.AdminToken = sc.AccessKey, sc.SecretKey, sc.AdminToken
	cfg.MetricsToken, cfg.AuthBackOff = sc.MetricsToken, sc.AuthBackOff
	cfg.Keys = sc.Keys
	for _, w := range out.Warnings {
		cfg.Logger.Warn(w)
	}
	if cfg.ClusterSecret, err = clusterSecret(getenv, secretFile); err != nil {
		return fail("%v", err)
	}
	cfg.LoadAdminToken = server.LoadOrCreateAdminToken
	return cfg, -1
}

func printClusterChange(w io.Writer, ch admin.ClusterChange) {
	if ch.Op == "add" {
		fmt.Fprintf(w, "added %s (%s) as a non-voter; it receives the data and becomes a voter once it has caught up (b3 admin cluster status)\n", ch.ID, ch.Address)
		return
	}
	fmt.Fprintf(w, "removed %s (%s)", ch.ID, ch.Address)
	if !ch.Notified && ch.ID != ch.Leader {
		fmt.Fprint(w, "; it could not be told: stop it")
	}
	fmt.Fprintln(w)
}

func printClusterStatus(w io.Writer, st admin.ClusterStatus) {
	if st.MapEpoch > 0 {
		printClusterMap(w, st)
	}
	if st.Group == "" && st.Members == nil { // a router: no group of its own
		return
	}
	leader := st.Leader
	if leader == "" {
		leader = "(none)"
	}
	group := "replica group"
	if st.Group != "" {
		group += " " + st.Group
	}
	fmt.Fprintf(w, "%s: leader %s, term %d, replication %s (asked %s)\n", group, leader, st.Term, st.Replication, st.Node)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tADDRESS\tHEALTH\tSTATE\tAPPLIED\tLAG\tLAG(s)\tPUSHING")
	for _, m := range st.Members {
		health := "ok"
		if !m.Healthy {
			health = "DOWN" // why: below the table
		}
		state := m.State
		if m.Suffrage != "" && m.Suffrage != "voter" {
			state += " (" + m.Suffrage + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\t%.1f\t%d\n", m.ID, m.ClusterAddress, health, state, m.AppliedIndex, m.LagEntries, m.LagSeconds, m.PendingPushBytes)
	}
	_ = tw.Flush()
	for _, m := range st.Members {
		if !m.Healthy {
			fmt.Fprintf(w, "\n%s is DOWN: %s\n", m.ID, m.Error)
		}
		if m.ApplyHalted != "" {
			fmt.Fprintf(w, "\n%s: its apply halted at %s: its own disk failed it; it retries until the disk takes the command (free space, or replace the disk), and does not stand for election meanwhile\n", m.ID, m.ApplyHalted)
		}
		if m.MissingBytes == nil {
			continue
		}
		fmt.Fprintf(w, "\n%s: ", m.ID)
		printMissing(w, *m.MissingBytes)
		if m.ID == st.Leader && m.MissingBytes.Local == "" {
			fmt.Fprintln(w, "The group applies and serves nothing until it gets them (503 SlowDown). If the node that held them")
			fmt.Fprintln(w, "is gone for good, declare them lost: b3 admin cluster declare-lost (docs/CLUSTER.md)")
		}
	}
}

// printClusterMap prints the groups of the cluster map and the moves.
func printClusterMap(w io.Writer, st admin.ClusterStatus) {
	state := "balanced"
	switch {
	case len(st.Moves) > 0:
		state = fmt.Sprintf("%d moves under way", len(st.Moves))
	case !st.Balanced:
		state = "moves pending"
	}
	if st.Paused {
		state += ", rebalancing paused"
	}
	fmt.Fprintf(w, "cluster map: epoch %d, %d partitions, %d groups, %s\n", st.MapEpoch, st.Partitions, len(st.Groups), state)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "GROUP\tPARTITIONS\tTARGET\tLEADER\tMEMBERS\tHEALTHY\tNOTE")
	for _, g := range st.Groups {
		healthy := 0
		for _, m := range g.Members {
			if m.Healthy {
				healthy++
			}
		}
		leader, note := g.Leader, ""
		if leader == "" {
			leader = "(none)"
		}
		if g.Draining {
			note = "draining"
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%d\t%d\t%s\n", g.Name, g.Partitions, g.Target, leader, len(g.Members), healthy, note)
	}
	_ = tw.Flush()
	for _, mv := range st.Moves {
		fmt.Fprintf(w, "  moving partition %d: %s -> %s\n", mv.Partition, mv.From, mv.To)
	}
	fmt.Fprintln(w)
}

// printMissing says what a member's apply waits for, and whom it asked.
func printMissing(w io.Writer, m admin.ClusterMissing) {
	what := fmt.Sprintf("%s/%s version %s", m.Bucket, m.Key, m.VersionID)
	if m.UploadID != "" {
		what = fmt.Sprintf("part %d of upload %s of %s/%s", m.Part, m.UploadID, m.Bucket, m.Key)
	}
	waited := (time.Duration(m.WaitedSeconds) * time.Second).String()
	if m.Local != "" {
		fmt.Fprintf(w, "the apply has waited %s at log index %d (%s) for the bytes of %s (%d bytes): a member holds them, but this node's own disk could not write them (%s). Nothing is lost; free space on this node:\n",
			waited, m.Index, m.Op, what, m.Size, m.Local)
	} else {
		fmt.Fprintf(w, "the apply has waited %s at log index %d (%s) for the bytes of %s (%d bytes), which no member it asked gave:\n",
			waited, m.Index, m.Op, what, m.Size)
	}
	for _, a := range m.Asked {
		fmt.Fprintf(w, "  %s (%s): %s\n", a.ID, a.Address, a.Answer)
	}
}

// splitList returns the items of a comma-separated list, blanks dropped.
func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// clusterSecret is the contents of file if given, else B3_CLUSTER_SECRET.
func clusterSecret(getenv func(string) (string, bool), file string) (string, error) {
	if file == "" {
		s, _ := getenv("B3_CLUSTER_SECRET")
		return s, nil
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("--cluster-secret-file: %v", err)
	}
	return string(data), nil
}
