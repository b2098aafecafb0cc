package scrub

import (
	"github.com/prometheus/client_golang/prometheus"
)

// MaxListedMetrics bounds the b3_scrub_damaged_object series: the list is
// in b3 admin scrub status and the log.
const MaxListedMetrics = 100

// Collector exports a Scrubber's counts and damaged list to Prometheus.
type Collector struct{ Scrubber *Scrubber }

var (
	descRunning   = prometheus.NewDesc("b3_scrub_running", "1 while a scrub pass runs.", nil, nil)
	descPasses    = prometheus.NewDesc("b3_scrub_passes_total", "Scrub passes finished by this process.", nil, nil)
	descLastEnd   = prometheus.NewDesc("b3_scrub_last_pass_end_timestamp_seconds", "When the last scrub pass ended (0: never).", nil, nil)
	descSegments  = prometheus.NewDesc("b3_scrub_segments_checked_total", "Segments the scrub read whole.", nil, nil)
	descRecords   = prometheus.NewDesc("b3_scrub_records_checked_total", "Segment records whose CRCs the scrub verified.", nil, nil)
	descBytes     = prometheus.NewDesc("b3_scrub_bytes_checked_total", "Segment bytes the scrub read.", nil, nil)
	descObjects   = prometheus.NewDesc("b3_scrub_objects_checked_total", "Object versions whose extents the scrub checked.", nil, nil)
	descCorrupt   = prometheus.NewDesc("b3_scrub_corrupt_records_total", "Segment records (or unreadable segment tails) the scrub found corrupt, referenced or not.", nil, nil)
	descMetaKeys  = prometheus.NewDesc("b3_scrub_metadata_keys_checked_total", "Metadata keys (and their values) the scrub read, pebble verifying every block.", nil, nil)
	descRepaired  = prometheus.NewDesc("b3_scrub_repaired_total", "Damaged object versions repaired from a replica.", nil, nil)
	descDamaged   = prometheus.NewDesc("b3_scrub_damaged_objects", "Object versions known damaged and not repaired (b3 admin scrub status).", nil, nil)
	descDamagedID = prometheus.NewDesc("b3_scrub_damaged_object", "1 for each object version known damaged (at most 100 series; the full list: b3 admin scrub status).", []string{"bucket", "key", "version"}, nil)
)

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descRunning, descPasses, descLastEnd, descSegments, descRecords, descBytes, descObjects, descCorrupt, descMetaKeys, descRepaired, descDamaged, descDamagedID} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	st := c.Scrubber.Status()
	totals, passes := c.Scrubber.Totals()
	gauge := func(d *prometheus.Desc, v float64) { ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v) }
	counter := func(d *prometheus.Desc, v int64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v))
	}
	running := 0.0
	if st.Running {
		running = 1
	}
	gauge(descRunning, running)
	counter(descPasses, passes)
	lastEnd := 0.0
	if end := c.Scrubber.LastPassEnd(); !end.IsZero() {
		lastEnd = float64(end.UnixNano()) / 1e9
	}
	gauge(descLastEnd, lastEnd)
	counter(descSegments, totals.SegmentsChecked)
	counter(descRecords, totals.RecordsChecked)
	counter(descBytes, totals.BytesChecked)
	counter(descObjects, totals.Checked)
	counter(descCorrupt, totals.CorruptRecords)
	counter(descMetaKeys, totals.MetadataKeys)
	counter(descRepaired, totals.Repaired)
	gauge(descDamaged, float64(max(int64(len(st.Damaged)), st.Counts.Damaged)))
	for i, d := range st.Damaged {
		if i == MaxListedMetrics {
			break
		}
		ch <- prometheus.MustNewConstMetric(descDamagedID, prometheus.GaugeValue, 1, d.Bucket, d.Key, d.Version)
	}
}
