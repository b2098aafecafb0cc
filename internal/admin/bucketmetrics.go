package admin

import (
	"sort"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/b3-storage/b3/internal/objstore"
)

var (
	dBucketObjects = desc("b3_bucket_objects", "Objects in the bucket, as of the last usage scan; only the largest buckets (--bucket-metrics) have a series.", "bucket")
	dBucketBytes   = desc("b3_bucket_bytes", "Bytes of the bucket's objects, as of the last usage scan; only the largest buckets (--bucket-metrics) have a series.", "bucket")
	dBuckets       = desc("b3_buckets", "Buckets, as of the last usage scan.")
	dBucketScan    = desc("b3_bucket_usage_scan_timestamp_seconds", "End of the last usage scan of the metadata (0: none yet).")
)

// BucketCollector exports objects and bytes per bucket for the top
// buckets by bytes, so that the number of series stays bounded however
// many buckets there are. Counting takes a scan of every object's
// metadata, so it runs in the background at most once per interval,
// started by a scrape that finds the last one too old; a scrape reports
// the last finished scan.
type BucketCollector struct {
	store    *objstore.Store
	top      int
	interval time.Duration

	mu       sync.Mutex
	scanning bool
	at       time.Time
	buckets  int
	usage    []bucketUsage // the top, largest first
}

type bucketUsage struct {
	name           string
	objects, bytes int64
}

// NewBucketCollector exports the top buckets of store, counted at most
// once per interval.
func NewBucketCollector(store *objstore.Store, top int, interval time.Duration) *BucketCollector {
	return &BucketCollector{store: store, top: top, interval: interval}
}

// Describe implements prometheus.Collector.
func (c *BucketCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{dBucketObjects, dBucketBytes, dBuckets, dBucketScan} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *BucketCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	if !c.scanning && time.Since(c.at) >= c.interval {
		c.scanning = true
		go c.scan()
	}
	at, buckets, usage := c.at, c.buckets, c.usage
	c.mu.Unlock()
	if at.IsZero() {
		ch <- prometheus.MustNewConstMetric(dBucketScan, prometheus.GaugeValue, 0)
		return
	}
	ch <- prometheus.MustNewConstMetric(dBucketScan, prometheus.GaugeValue, float64(at.UnixNano())/1e9)
	ch <- prometheus.MustNewConstMetric(dBuckets, prometheus.GaugeValue, float64(buckets))
	for _, u := range usage {
		ch <- prometheus.MustNewConstMetric(dBucketObjects, prometheus.GaugeValue, float64(u.objects), u.name)
		ch <- prometheus.MustNewConstMetric(dBucketBytes, prometheus.GaugeValue, float64(u.bytes), u.name)
	}
}

// Scan counts now (tests; Collect starts scans by itself).
func (c *BucketCollector) Scan() {
	c.mu.Lock()
	c.scanning = true
	c.mu.Unlock()
	c.scan()
}

func (c *BucketCollector) scan() {
	all, err := c.store.ListBuckets()
	var counts map[string][2]int64
	if err == nil {
		counts, err = Usage(c.store, nil)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.scanning = false
	if err != nil {
		return // the last scan's figures stay; the next scrape retries
	}
	list := make([]bucketUsage, 0, len(all))
	for _, b := range all {
		u := counts[b.Name]
		list = append(list, bucketUsage{b.Name, u[0], u[1]})
	}
	sort.Slice(list, func(i, j int) bool {
		if list[i].bytes != list[j].bytes {
			return list[i].bytes > list[j].bytes
		}
		return list[i].name < list[j].name
	})
	c.usage, c.buckets, c.at = list[:min(len(list), c.top)], len(all), time.Now()
}
