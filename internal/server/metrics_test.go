package server

import (
	"bytes"
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	dto "github.com/prometheus/client_model/go"

	"github.com/b3-storage/b3/internal/blob"
)

func labelsOf(m *dto.Metric) map[string]string {
	out := map[string]string{}
	for _, l := range m.GetLabel() {
		out[l.GetName()] = l.GetValue()
	}
	return out
}

// TestOperatorMetrics: build info; objects and bytes for the largest
// buckets only (bounded), none with the switch off; pebble's metrics;
// segment fsync latency as a histogram; free space measured even without
// a free-space reserve.
func TestOperatorMetrics(t *testing.T) {
	n := startNode(t, Config{Sync: blob.SyncBatch, MinFreeBytes: 0, BucketMetrics: 2, BucketMetricsInterval: 10 * time.Millisecond})
	c := n.client(t, "", "")
	ctx := context.Background()
	sizes := map[string]int{"small": 1, "medium": 2, "large": 3} // objects of 1 KiB
	for bucket, count := range sizes {
		if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
			t.Fatal(err)
		}
		for i := range count {
			if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(string(rune('a' + i))),
				Body: bytes.NewReader(make([]byte, 8<<10))}); err != nil {
				t.Fatal(err)
			}
		}
	}
	var families map[string]*dto.MetricFamily
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		families = scrape(t, n.adminEndpoint)
		if sample(families, "b3_bucket_usage_scan_timestamp_seconds", nil) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no bucket usage scan within 30s")
		}
	}
	got := map[string]float64{}
	for _, m := range families["b3_bucket_objects"].GetMetric() {
		got[labelsOf(m)["bucket"]] = m.GetGauge().GetValue()
	}
	if len(got) != 2 || got["large"] != 3 || got["medium"] != 2 {
		t.Fatalf("b3_bucket_objects: %v, want the two largest buckets (large 3, medium 2)", got)
	}
	if b := sample(families, "b3_bucket_bytes", map[string]string{"bucket": "large"}); b != 3*8<<10 {
		t.Fatalf("b3_bucket_bytes{large} = %v", b)
	}
	if b := sample(families, "b3_buckets", nil); b != 3 {
		t.Fatalf("b3_buckets = %v", b)
	}

	bi := families["b3_build_info"].GetMetric()
	if len(bi) != 1 || labelsOf(bi[0])["goversion"] != runtime.Version() || labelsOf(bi[0])["version"] == "" || labelsOf(bi[0])["revision"] == "" {
		t.Fatalf("b3_build_info: %v", bi)
	}
	fsync := families["b3_segment_fsync_duration_seconds"]
	if fsync.GetType() != dto.MetricType_HISTOGRAM || fsync.GetMetric()[0].GetHistogram().GetSampleCount() == 0 {
		t.Fatalf("segment fsync histogram: %v", fsync)
	}
	if sample(families, "b3_pebble_wal_fsync_duration_seconds", nil) <= 0 {
		t.Fatal("pebble WAL fsync histogram empty after synced writes")
	}
	for _, name := range []string{"b3_pebble_compactions_total", "b3_pebble_read_amplification", "b3_pebble_compaction_debt_bytes", "b3_pebble_disk_usage_bytes"} {
		if families[name] == nil {
			t.Errorf("%s missing", name)
		}
	}
	if free := sample(families, "b3_disk_free_bytes", nil); free <= 0 {
		t.Fatalf("b3_disk_free_bytes = %v without a reserve, want the free space", free)
	}
	n.stop()

	off := startNode(t, Config{Sync: blob.SyncNone})
	for name := range scrape(t, off.adminEndpoint) {
		if len(name) > len("b3_bucket") && name[:len("b3_bucket")] == "b3_bucket" {
			t.Errorf("%s exported with bucket metrics off", name)
		}
	}
}
