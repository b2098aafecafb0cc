package admin

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	dto "github.com/prometheus/client_model/go"

	"github.com/b3-storage/b3/internal/blob"
	"github.com/b3-storage/b3/internal/iolimit"
	"github.com/b3-storage/b3/internal/objstore"
	"github.com/b3-storage/b3/internal/s3api"
)

// NewRegistry returns a registry with the Go runtime and process
// collectors.
func NewRegistry() *prometheus.Registry {
	r := prometheus.NewRegistry()
	r.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return r
}

// RequestMetrics count S3 requests; Observe is s3api.Config.Observe.
type RequestMetrics struct {
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	bytesIn  *prometheus.CounterVec
	bytesOut *prometheus.CounterVec
}

// NewRequestMetrics registers the request metrics in r.
func NewRequestMetrics(r prometheus.Registerer) *RequestMetrics {
	m := &RequestMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "b3_s3_requests_total", Help: "S3 requests by operation and HTTP status.",
		}, []string{"operation", "status"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "b3_s3_request_duration_seconds", Help: "S3 request latency, first byte in to last byte out, by operation.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60},
		}, []string{"operation"}),
		bytesIn: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "b3_s3_received_bytes_total", Help: "Request body bytes received (as declared), by operation.",
		}, []string{"operation"}),
		bytesOut: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "b3_s3_sent_bytes_total", Help: "Response body bytes sent, by operation.",
		}, []string{"operation"}),
	}
	r.MustRegister(m.requests, m.latency, m.bytesIn, m.bytesOut)
	return m
}

// Observe records one finished request.
func (m *RequestMetrics) Observe(info s3api.RequestInfo) {
	op := info.Operation
	if op == "" {
		op = "unknown"
	}
	m.requests.WithLabelValues(op, strconv.Itoa(info.Status)).Inc()
	m.latency.WithLabelValues(op).Observe(info.Duration.Seconds())
	if info.BytesIn > 0 {
		m.bytesIn.WithLabelValues(op).Add(float64(info.BytesIn))
	}
	m.bytesOut.WithLabelValues(op).Add(float64(info.BytesOut))
}

// RegisterLLHLS registers the Low-Latency HLS metrics, read from counts
// (s3api.Server.LLHLSCounts) at scrape time.
func RegisterLLHLS(r prometheus.Registerer, counts func() s3api.LLHLSCounts) {
	for _, m := range []struct {
		name, help string
		counter    bool
		value      func(s3api.LLHLSCounts) float64
	}{
		{"b3_llhls_held_requests", "Low-Latency HLS playlist requests held until a playlist write reaches them.", false,
			func(c s3api.LLHLSCounts) float64 { return float64(c.HeldPlaylists) }},
		{"b3_llhls_playlist_requests_held_total", "Low-Latency HLS playlist requests (_HLS_msn) that were held because the playlist had not reached them.", true,
			func(c s3api.LLHLSCounts) float64 { return float64(c.HeldPlaylistsTotal) }},
		{"b3_llhls_held_part_requests", "Low-Latency HLS GETs of preload-hinted parts held until the part's upload begins or it is stored.", false,
			func(c s3api.LLHLSCounts) float64 { return float64(c.HeldParts) }},
		{"b3_llhls_part_requests_held_total", "Low-Latency HLS GETs of preload-hinted parts that were held because the part did not exist yet.", true,
			func(c s3api.LLHLSCounts) float64 { return float64(c.HeldPartsTotal) }},
		{"b3_llhls_part_requests_streamed_total", "Low-Latency HLS GETs answered with an upload's body while it was in flight.", true,
			func(c s3api.LLHLSCounts) float64 { return float64(c.StreamedParts) }},
	} {
		value := func() float64 { return m.value(counts()) }
		if m.counter {
			r.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: m.name, Help: m.help}, value))
		} else {
			r.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: m.name, Help: m.help}, value))
		}
	}
}

// StoreCollector reads the engine's counters at scrape time: disk I/O by
// priority, fsyncs and group commits, segments, vacuum, lifecycle, cache,
// pebble, free space.
type StoreCollector struct {
	Store   *objstore.Store
	Limiter *iolimit.Limiter
	// Dirs are the directories whose file systems' free space
	// b3_disk_free_bytes reports (the least); none: the free-space
	// reserve's last measure, if it takes any.
	Dirs []string
}

func desc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc(name, help, labels, nil)
}

var (
	dIOBytes       = desc("b3_disk_io_bytes_total", "Segment file bytes read and written through the I/O limiter, by direction and priority (metadata I/O is pebble's: see b3_pebble_*).", "direction", "priority")
	dIOWaits       = desc("b3_disk_io_waits_total", "Segment I/O calls that had to wait at the I/O limiter, by direction and priority.", "direction", "priority")
	dIOWaitSeconds = desc("b3_disk_io_wait_seconds_total", "Time segment I/O spent waiting at the I/O limiter, by direction and priority.", "direction", "priority")
	dIOLimit       = desc("b3_disk_io_limit_bytes_per_second", "Segment I/O limits in force, bytes per second (0 = unlimited).", "direction", "class")
	dFsync         = desc("b3_segment_fsync_duration_seconds", "Latency of segment file fsyncs (group commits, seals, vacuum); metadata fsyncs are b3_pebble_wal_fsync_duration_seconds.")
	dGroupBatch    = desc("b3_group_commit_batch_size", "Writers served per group-commit fsync of the segment log.")
	dAppended      = desc("b3_segment_appended_bytes_total", "Record bytes appended to segments.")
	dReadBytes     = desc("b3_segment_read_bytes_total", "Bytes read from segment files.")
	dCorrupt       = desc("b3_segment_corrupt_records_total", "Records found corrupt.")
	dMisdirected   = desc("b3_segment_misdirected_records_total", "Valid records a read refused: another object's, or out of place (metadata and segments disagree). Also counted corrupt.")
	dSegments      = desc("b3_segments", "Segment files.")
	dSegBytes      = desc("b3_segment_bytes", "Bytes in segment files.")
	dSegDead       = desc("b3_segment_dead_bytes", "Dead bytes in segment files (reclaimable by vacuum).")
	dVacRunning    = desc("b3_vacuum_running", "1 while a vacuum pass runs.")
	dVacRemoved    = desc("b3_vacuum_segments_removed_total", "Segments removed by vacuum.")
	dVacReclaimed  = desc("b3_vacuum_reclaimed_bytes_total", "Segment bytes freed by vacuum.")
	dVacCopied     = desc("b3_vacuum_copied_bytes_total", "Live bytes copied forward by vacuum.")
	dVacLast       = desc("b3_vacuum_last_pass_timestamp_seconds", "End of the last vacuum pass (0: none).")
	dLcExpired     = desc("b3_lifecycle_expired_objects_total", "Objects deleted by the lifecycle sweeper.")
	dLcAborted     = desc("b3_lifecycle_aborted_uploads_total", "Multipart uploads aborted by the lifecycle sweeper.")
	dLcPasses      = desc("b3_lifecycle_passes_total", "Lifecycle sweeper passes.")
	dLcReeval      = desc("b3_lifecycle_reevaluated_objects_total", "Object expiry instants recomputed after a rule change.")
	dCacheHits     = desc("b3_cache_hits_total", "Object cache hits.")
	dCacheMisses   = desc("b3_cache_misses_total", "Object cache misses.")
	dCacheEvict    = desc("b3_cache_evictions_total", "Object cache evictions.")
	dCacheInval    = desc("b3_cache_invalidations_total", "Object cache entries dropped by a write or delete.")
	dCacheBytes    = desc("b3_cache_bytes", "Bytes held by the object cache.")
	dCacheEntries  = desc("b3_cache_entries", "Objects held by the object cache.")
	dCacheMax      = desc("b3_cache_max_bytes", "Bound of the object cache in force (--cache-size, or b3 admin cache set); 0: off.")
	dPaceRate      = desc("b3_background_pace_bytes_per_second", "Background work (bytes read + written) allowed per second now; 0 = unpaced, full speed.")
	dPaceMin       = desc("b3_background_pace_min_bytes_per_second", "Floor of the background pace under sustained client load.")
	dPaceReason    = desc("b3_background_pace_reason", "1 for the reason the background pace is what it is, 0 for the others.", "reason")
	dPaceInFlight  = desc("b3_background_pace_client_requests_in_flight", "S3 requests in flight, as the pacer counts them.")
	dPaceUtil      = desc("b3_background_pace_client_utilization", "Fraction of the last pacer interval with at least one S3 request in flight.")
	dPaceWork      = desc("b3_background_pace_work_bytes_total", "Background work granted by the pacer (segment bytes read + written, plus metadata operations).")
	dPaceWait      = desc("b3_background_pace_wait_seconds_total", "Time background jobs spent waiting for the pacer.")
	dPaceThrottled = desc("b3_background_pace_throttled_seconds_total", "Time the background pace was below full speed.")
	dFreeBytes     = desc("b3_disk_free_bytes", "Free space available to b3 on the file system of its metadata or segments, whichever has less, measured at scrape time.")

	dPebbleCompactions = desc("b3_pebble_compactions_total", "Compactions pebble (the metadata store) has run.")
	dPebbleDebt        = desc("b3_pebble_compaction_debt_bytes", "Bytes pebble estimates it must compact to reach a stable shape.")
	dPebbleReadAmp     = desc("b3_pebble_read_amplification", "Sorted runs a metadata read may consult (L0 sublevels plus non-empty levels).")
	dPebbleFlushes     = desc("b3_pebble_flushes_total", "Memtable flushes of pebble.")
	dPebbleWALBytes    = desc("b3_pebble_wal_written_bytes_total", "Bytes written to pebble's write-ahead log.")
	dPebbleWALFsync    = desc("b3_pebble_wal_fsync_duration_seconds", "Latency of pebble's write-ahead log fsyncs (metadata commits).")
	dPebbleDisk        = desc("b3_pebble_disk_usage_bytes", "Disk space of pebble's files (live and obsolete).")
)

// Describe implements prometheus.Collector.
func (c *StoreCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{dIOBytes, dIOWaits, dIOWaitSeconds, dIOLimit, dFsync,
		dPebbleCompactions, dPebbleDebt, dPebbleReadAmp, dPebbleFlushes, dPebbleWALBytes, dPebbleWALFsync, dPebbleDisk,
		dGroupBatch, dAppended, dReadBytes, dCorrupt, dMisdirected, dSegments, dSegBytes, dSegDead, dVacRunning, dVacRemoved,
		dVacReclaimed, dVacCopied, dVacLast, dLcExpired, dLcAborted, dLcPasses, dLcReeval, dCacheHits, dCacheMisses,
		dCacheEvict, dCacheInval, dCacheBytes, dCacheEntries, dCacheMax, dFreeBytes,
		dPaceRate, dPaceMin, dPaceReason, dPaceInFlight, dPaceUtil, dPaceWork, dPaceWait, dPaceThrottled} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *StoreCollector) Collect(ch chan<- prometheus.Metric) {
	counter := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, labels...)
	}
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}

	io := c.Limiter.Stats()
	for _, dir := range []iolimit.Direction{iolimit.Read, iolimit.Write} {
		for _, p := range []iolimit.Priority{iolimit.Foreground, iolimit.Background} {
			k := io.Get(dir, p)
			counter(dIOBytes, float64(k.Bytes), dir.String(), p.String())
			counter(dIOWaits, float64(k.Waits), dir.String(), p.String())
			counter(dIOWaitSeconds, k.WaitTime.Seconds(), dir.String(), p.String())
		}
	}
	l := c.Limiter.Limits()
	gauge(dIOLimit, float64(l.ReadBytesPerSec), "read", "total")
	gauge(dIOLimit, float64(l.WriteBytesPerSec), "write", "total")
	gauge(dIOLimit, float64(l.BackgroundReadBytesPerSec), "read", "background")
	gauge(dIOLimit, float64(l.BackgroundWriteBytesPerSec), "write", "background")

	bs := c.Store.Blob().Stats()
	ch <- fsyncHistogram(bs)
	ch <- groupBatchHistogram(bs)
	counter(dAppended, float64(bs.BytesAppended))
	counter(dReadBytes, float64(bs.BytesRead))
	counter(dCorrupt, float64(bs.CorruptRecords))
	counter(dMisdirected, float64(bs.MisdirectedRecords))

	var segs, size, dead float64
	for _, seg := range c.Store.Segments() {
		segs++
		size += float64(seg.Size)
		dead += float64(seg.DeadBytes)
	}
	gauge(dSegments, segs)
	gauge(dSegBytes, size)
	gauge(dSegDead, dead)

	vs := c.Store.VacuumStatus()
	running := 0.0
	if vs.Running {
		running = 1
	}
	gauge(dVacRunning, running)
	counter(dVacRemoved, float64(vs.SegmentsRemoved))
	counter(dVacReclaimed, float64(vs.BytesReclaimed))
	counter(dVacCopied, float64(vs.BytesCopied))
	last := 0.0
	if !vs.LastPass.IsZero() {
		last = float64(vs.LastPass.UnixNano()) / 1e9
	}
	gauge(dVacLast, last)

	ps := vs.Pace
	gauge(dPaceRate, float64(ps.BytesPerSec))
	gauge(dPaceMin, float64(ps.MinBytesPerSec))
	for _, r := range iolimit.PaceReasons {
		v := 0.0
		if r == ps.Reason {
			v = 1
		}
		gauge(dPaceReason, v, string(r))
	}
	gauge(dPaceInFlight, float64(ps.ClientsInFlight))
	gauge(dPaceUtil, ps.ClientUtilization)
	counter(dPaceWork, float64(ps.Work))
	counter(dPaceWait, ps.WaitTime.Seconds())
	counter(dPaceThrottled, ps.ThrottledTime.Seconds())

	ls := c.Store.LifecycleStatus()
	counter(dLcExpired, float64(ls.Expired))
	counter(dLcAborted, float64(ls.Aborted))
	counter(dLcPasses, float64(ls.Passes))
	counter(dLcReeval, float64(ls.Reevaluated))

	cs := c.Store.CacheStats()
	counter(dCacheHits, float64(cs.Hits))
	counter(dCacheMisses, float64(cs.Misses))
	counter(dCacheEvict, float64(cs.Evictions))
	counter(dCacheInval, float64(cs.Invalidations))
	gauge(dCacheBytes, float64(cs.Bytes))
	gauge(dCacheEntries, float64(cs.Entries))
	gauge(dCacheMax, float64(cs.MaxBytes))
	if free, ok := c.freeBytes(); ok {
		gauge(dFreeBytes, float64(free))
	}
	c.collectPebble(ch)
}

// freeBytes is the least free space over Dirs, or the reserve's measure.
func (c *StoreCollector) freeBytes() (int64, bool) {
	least, ok := int64(0), false
	for _, dir := range c.Dirs {
		if free, err := diskFree(dir); err == nil && (!ok || free < least) {
			least, ok = free, true
		}
	}
	if !ok {
		if free := c.Store.FreeBytes(); free >= 0 {
			return free, true
		}
	}
	return least, ok
}

func (c *StoreCollector) collectPebble(ch chan<- prometheus.Metric) {
	m := c.Store.Meta().Metrics()
	ch <- prometheus.MustNewConstMetric(dPebbleCompactions, prometheus.CounterValue, float64(m.Compact.Count))
	ch <- prometheus.MustNewConstMetric(dPebbleDebt, prometheus.GaugeValue, float64(m.Compact.EstimatedDebt))
	ch <- prometheus.MustNewConstMetric(dPebbleReadAmp, prometheus.GaugeValue, float64(m.ReadAmp()))
	ch <- prometheus.MustNewConstMetric(dPebbleFlushes, prometheus.CounterValue, float64(m.Flush.Count))
	ch <- prometheus.MustNewConstMetric(dPebbleWALBytes, prometheus.CounterValue, float64(m.WAL.BytesWritten))
	ch <- prometheus.MustNewConstMetric(dPebbleDisk, prometheus.GaugeValue, float64(m.DiskSpaceUsage()))
	if h := m.LogWriter.FsyncLatency; h != nil {
		var pm dto.Metric
		if h.Write(&pm) == nil && pm.Histogram != nil {
			ch <- rebucket(dPebbleWALFsync, pm.Histogram)
		}
	}
}

// rebucket turns pebble's WAL fsync histogram (nanoseconds, a hundred
// fine buckets) into one in seconds over blob.FsyncBounds, so that the
// two fsync histograms compare bucket for bucket. A bound gets the count
// of pebble's largest bucket at or below it.
func rebucket(d *prometheus.Desc, h *dto.Histogram) prometheus.Metric {
	buckets := map[float64]uint64{}
	for _, bound := range blob.FsyncBounds {
		var cum uint64
		for _, b := range h.GetBucket() {
			if b.GetUpperBound() <= float64(bound.Nanoseconds()) {
				cum = b.GetCumulativeCount()
			}
		}
		buckets[bound.Seconds()] = cum
	}
	return prometheus.MustNewConstHistogram(d, h.GetSampleCount(), h.GetSampleSum()/1e9, buckets)
}

// fsyncHistogram exports blob's segment fsync latency histogram.
func fsyncHistogram(bs blob.Stats) prometheus.Metric {
	buckets := map[float64]uint64{}
	var cum uint64
	for i, bound := range blob.FsyncBounds {
		cum += uint64(bs.FsyncHist[i])
		buckets[bound.Seconds()] = cum
	}
	total := cum + uint64(bs.FsyncHist[len(blob.FsyncBounds)]) // not bs.Fsyncs: read at another instant
	return prometheus.MustNewConstHistogram(dFsync, total, float64(bs.FsyncNanos)/1e9, buckets)
}

// groupBatchHistogram turns blob's power-of-two batch counts into a
// Prometheus histogram: bucket i holds batches of 2^i .. 2^(i+1)-1 writers.
func groupBatchHistogram(bs blob.Stats) prometheus.Metric {
	buckets := map[float64]uint64{}
	var cum uint64
	for i := 0; i < blob.BatchBuckets-1; i++ {
		cum += uint64(bs.GroupBatchHist[i])
		buckets[float64(int(1)<<(i+1)-1)] = cum
	}
	total := cum + uint64(bs.GroupBatchHist[blob.BatchBuckets-1])
	return prometheus.MustNewConstHistogram(dGroupBatch, total, float64(bs.GroupWaiters), buckets)
}
