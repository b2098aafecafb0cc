package cluster

import (
	"context"
	"strconv"
	"time"

	"github.com/hashicorp/raft"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/b3-storage/b3/internal/partition"
)

// collector exports the node's replication state on /metrics.
func (n *Node) collector() prometheus.Collector { return nodeCollector{n} }

type nodeCollector struct{ n *Node }

var (
	descLeader  = prometheus.NewDesc("b3_cluster_leader", "1 while this node leads its replica group and serves S3.", nil, nil)
	descTerm    = prometheus.NewDesc("b3_cluster_term", "Raft term this node is in.", nil, nil)
	descApplied = prometheus.NewDesc("b3_cluster_applied_index", "Last Raft log index applied to this node's store.", nil, nil)
	descLast    = prometheus.NewDesc("b3_cluster_last_log_index", "Last Raft log index stored on this node.", nil, nil)
	descPending = prometheus.NewDesc("b3_cluster_pending_push_bytes",
		"Object bytes this leader is still pushing to followers; in async mode, acknowledged bytes not yet on every follower.", nil, nil)
	descContact  = prometheus.NewDesc("b3_cluster_last_contact_seconds", "Seconds since this follower last heard from the leader.", nil, nil)
	descSnap     = prometheus.NewDesc("b3_cluster_snapshot_index", "Log index of this node's latest Raft snapshot, taken or restored (0: none).", nil, nil)
	descFirst    = prometheus.NewDesc("b3_cluster_first_log_index", "Oldest Raft log index this node keeps; the log below is compacted into the snapshot.", nil, nil)
	descHandled  = prometheus.NewDesc("b3_cluster_entries_since_start_total", "Log entries handed to this node's state machine since the process started (applied or skipped as held).", nil, nil)
	descRestore  = prometheus.NewDesc("b3_cluster_snapshots_restored_total", "Snapshots this node installed from its leader since the process started.", nil, nil)
	descLagBytes = prometheus.NewDesc("b3_cluster_replication_lag_bytes",
		"Object bytes the leader has applied (in async mode: acknowledged) that the member has not; the leader exports every member's, a follower its own.", []string{"member"}, nil)
	descLagSeconds = prometheus.NewDesc("b3_cluster_replication_lag_seconds",
		"Age of the oldest command the leader has applied and the member has not (0: none).", []string{"member"}, nil)
	descPrefetch = prometheus.NewDesc("b3_cluster_catchup_prefetched_bytes_total",
		"Object bytes this node fetched from peers ahead of applying their commands (catch-up).", nil, nil)
	descTLSExpiry = prometheus.NewDesc("b3_cluster_tls_cert_expiry_timestamp_seconds",
		"When the certificate this node presents on its cluster port (--cluster-tls-cert, as last loaded) expires, in Unix seconds; only with cluster TLS.", nil, nil)
	descBlocked = prometheus.NewDesc("b3_cluster_apply_blocked_seconds",
		"How long this node's state machine has waited at one command for object bytes that no member it asked gave (0: it does not wait); on the leader the group serves nothing meanwhile (b3 admin cluster status, declare-lost).", nil, nil)
	descLocalFault = prometheus.NewDesc("b3_cluster_local_fault",
		"1 while this node's own disk (full, or failing) keeps its state machine from applying bytes a member holds: it does not stand for election and hands leadership over until it recovers.", nil, nil)
	descBlockedIndex = prometheus.NewDesc("b3_cluster_apply_blocked_index",
		"Log index of the command whose bytes this node's state machine waits for (0: none).", nil, nil)

	// Several groups (cmap.go, move.go): the map as this node knows it.
	descMapEpoch   = prometheus.NewDesc("b3_cluster_map_epoch", "Epoch of the cluster map this node knows.", nil, nil)
	descPartitions = prometheus.NewDesc("b3_cluster_group_partitions", "Partitions each group owns, by the map this node knows.", []string{"group"}, nil)
	descTargets    = prometheus.NewDesc("b3_cluster_group_target_partitions", "Partitions each group is to own once balanced (its share by weight or capacity).", []string{"group"}, nil)
	descMoving     = prometheus.NewDesc("b3_cluster_moving_partitions",
		"Partitions under way from one group to another; fenced ones refuse reads and writes until they switch.", []string{"from", "to", "fenced"}, nil)
	descReceived = prometheus.NewDesc("b3_cluster_partitions_received_total", "Partitions moves brought to this node's group while it led (since the process started).", nil, nil)
	descCopied   = prometheus.NewDesc("b3_cluster_move_records_copied_total", "Records this node copied from another group while receiving partitions (since the process started).", nil, nil)
)

func (c nodeCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descLeader, descTerm, descApplied, descLast, descPending, descContact, descSnap, descFirst, descHandled, descRestore, descPrefetch, descLagBytes, descLagSeconds, descTLSExpiry, descBlocked, descBlockedIndex, descLocalFault,
		descMapEpoch, descPartitions, descTargets, descMoving, descReceived, descCopied} {
		ch <- d
	}
}

func (c nodeCollector) Collect(ch chan<- prometheus.Metric) {
	n := c.n
	if n.raft == nil {
		return
	}
	info := n.info()
	leader := 0.0
	if n.leading() {
		leader = 1
	}
	gauge := func(d *prometheus.Desc, v float64) { ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v) }
	gauge(descLeader, leader)
	fault := 0.0
	if n.faulty.Load() {
		fault = 1
	}
	gauge(descLocalFault, fault)
	gauge(descTerm, float64(info.Term))
	gauge(descApplied, float64(info.AppliedIndex))
	gauge(descLast, float64(info.LastLogIndex))
	gauge(descPending, float64(info.PendingPushBytes))
	gauge(descSnap, float64(info.SnapshotIndex))
	gauge(descFirst, float64(info.FirstLogIndex))
	ch <- prometheus.MustNewConstMetric(descHandled, prometheus.CounterValue, float64(info.EntriesSinceStart))
	ch <- prometheus.MustNewConstMetric(descRestore, prometheus.CounterValue, float64(info.SnapshotsRestored))
	ch <- prometheus.MustNewConstMetric(descPrefetch, prometheus.CounterValue, float64(n.prefetched.Load()))
	if n.peerTLS != nil {
		gauge(descTLSExpiry, float64(n.peerTLS.Leaf().NotAfter.Unix()))
	}
	var blocked, blockedIndex float64
	if m := info.MissingBytes; m != nil {
		blocked, blockedIndex = m.WaitedSeconds, float64(m.Index)
	}
	gauge(descBlocked, blocked)
	gauge(descBlockedIndex, blockedIndex)
	ctx, cancel := context.WithTimeout(n.closing, 2*time.Second)
	defer cancel()
	for id, lag := range n.lags(ctx) {
		ch <- prometheus.MustNewConstMetric(descLagBytes, prometheus.GaugeValue, float64(lag.Bytes), id)
		ch <- prometheus.MustNewConstMetric(descLagSeconds, prometheus.GaugeValue, lag.Seconds, id)
	}
	if n.raft.State() != raft.Leader {
		gauge(descContact, info.LastContactSeconds)
	}
	collectMap(ch, n.cmap.load(), true)
	ch <- prometheus.MustNewConstMetric(descReceived, prometheus.CounterValue, float64(n.moved.Load()))
	ch <- prometheus.MustNewConstMetric(descCopied, prometheus.CounterValue, float64(n.copied.Load()))
}

// mapCollector exports the map a router routes by: partitions and
// targets per group, moves under way.
type mapCollector struct{ maps *mapState }

func (c mapCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descPartitions, descTargets, descMoving} {
		ch <- d
	}
}

func (c mapCollector) Collect(ch chan<- prometheus.Metric) { collectMap(ch, c.maps.load(), false) }

// collectMap reports the map's epoch, each group's partitions and
// target, and the moves under way by source, destination and fence.
func collectMap(ch chan<- prometheus.Metric, m *partition.Map, epoch bool) {
	if m == nil {
		return
	}
	if epoch { // a router has its own b3_router_map_epoch
		ch <- prometheus.MustNewConstMetric(descMapEpoch, prometheus.GaugeValue, float64(m.Epoch))
	}
	counts, targets := m.Counts(), m.Targets()
	for _, g := range m.Groups {
		ch <- prometheus.MustNewConstMetric(descPartitions, prometheus.GaugeValue, float64(counts[g.Name]), g.Name)
		ch <- prometheus.MustNewConstMetric(descTargets, prometheus.GaugeValue, float64(targets[g.Name]), g.Name)
	}
	type way struct {
		from, to string
		fenced   bool
	}
	moving := map[way]int{}
	for _, mv := range m.Moves {
		moving[way{mv.From, mv.To, mv.Fenced}]++
	}
	for w, c := range moving {
		ch <- prometheus.MustNewConstMetric(descMoving, prometheus.GaugeValue, float64(c), w.from, w.to, strconv.FormatBool(w.fenced))
	}
}
