package console

import (
	"math"
	"sort"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// historyLen is how many samples the charts keep (an hour at 5 s).
const historyLen = 720

// sample is one reading of the server's own counters and gauges.
type sample struct {
	at                  time.Time
	requests            float64 // b3_s3_requests_total, all operations
	received, sent      float64 // b3_s3_{received,sent}_bytes_total
	latencyCount        float64
	latencyBuckets      []bucket // cumulative, summed over operations
	segBytes, deadBytes float64
	freeBytes           float64 // -1: not measured
}

type bucket struct{ upper, count float64 }

// History is a ring of samples of a Prometheus registry, read by the
// operations charts. Rates and percentiles are computed between
// consecutive samples, so counters that restart at zero (a new process)
// only drop one point.
type History struct {
	mu      sync.Mutex
	samples []sample
	max     int
}

// NewHistory returns an empty history of at most n samples.
func NewHistory(n int) *History { return &History{max: n} }

// Sample reads g at now.
func (h *History) Sample(g prometheus.Gatherer, now time.Time) {
	families, err := g.Gather()
	if err != nil && len(families) == 0 {
		return
	}
	s := sample{at: now, freeBytes: -1}
	latency := map[float64]float64{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			switch f.GetName() {
			case "b3_s3_requests_total":
				s.requests += m.GetCounter().GetValue()
			case "b3_s3_received_bytes_total":
				s.received += m.GetCounter().GetValue()
			case "b3_s3_sent_bytes_total":
				s.sent += m.GetCounter().GetValue()
			case "b3_s3_request_duration_seconds":
				hist := m.GetHistogram()
				s.latencyCount += float64(hist.GetSampleCount())
				for _, b := range hist.GetBucket() {
					latency[b.GetUpperBound()] += float64(b.GetCumulativeCount())
				}
			case "b3_segment_bytes":
				s.segBytes += gaugeValue(m)
			case "b3_segment_dead_bytes":
				s.deadBytes += gaugeValue(m)
			case "b3_disk_free_bytes":
				s.freeBytes = gaugeValue(m)
			}
		}
	}
	for upper, count := range latency {
		s.latencyBuckets = append(s.latencyBuckets, bucket{upper, count})
	}
	sort.Slice(s.latencyBuckets, func(i, j int) bool { return s.latencyBuckets[i].upper < s.latencyBuckets[j].upper })
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.samples) == h.max {
		copy(h.samples, h.samples[1:])
		h.samples = h.samples[:h.max-1]
	}
	h.samples = append(h.samples, s)
}

func gaugeValue(m *dto.Metric) float64 {
	if g := m.GetGauge(); g != nil {
		return g.GetValue()
	}
	return m.GetCounter().GetValue()
}

// Series is what the charts draw: one point per interval between samples.
type Series struct {
	Time         []int64   `json:"time"` // unix milliseconds, end of the interval
	RequestsPerS []float64 `json:"requestsPerSecond"`
	ReceivedPerS []float64 `json:"receivedBytesPerSecond"`
	SentPerS     []float64 `json:"sentBytesPerSecond"`
	Latency      struct {
		P50 []float64 `json:"p50"`
		P90 []float64 `json:"p90"`
		P99 []float64 `json:"p99"`
	} `json:"latencySeconds"` // NaN-free: -1 where no request ended
	LiveBytes []float64 `json:"liveBytes"`
	DeadBytes []float64 `json:"deadBytes"`
	FreeBytes []float64 `json:"freeBytes"`
}

// Series computes the charts' points.
func (h *History) Series() Series {
	h.mu.Lock()
	samples := append([]sample(nil), h.samples...)
	h.mu.Unlock()
	var out Series
	out.Time, out.RequestsPerS, out.ReceivedPerS, out.SentPerS = []int64{}, []float64{}, []float64{}, []float64{}
	out.Latency.P50, out.Latency.P90, out.Latency.P99 = []float64{}, []float64{}, []float64{}
	out.LiveBytes, out.DeadBytes, out.FreeBytes = []float64{}, []float64{}, []float64{}
	for i := 1; i < len(samples); i++ {
		prev, cur := samples[i-1], samples[i]
		secs := cur.at.Sub(prev.at).Seconds()
		if secs <= 0 {
			continue
		}
		rate := func(a, b float64) float64 { return math.Max(0, b-a) / secs }
		out.Time = append(out.Time, cur.at.UnixMilli())
		out.RequestsPerS = append(out.RequestsPerS, rate(prev.requests, cur.requests))
		out.ReceivedPerS = append(out.ReceivedPerS, rate(prev.received, cur.received))
		out.SentPerS = append(out.SentPerS, rate(prev.sent, cur.sent))
		out.Latency.P50 = append(out.Latency.P50, quantile(prev, cur, 0.5))
		out.Latency.P90 = append(out.Latency.P90, quantile(prev, cur, 0.9))
		out.Latency.P99 = append(out.Latency.P99, quantile(prev, cur, 0.99))
		out.LiveBytes = append(out.LiveBytes, cur.segBytes-cur.deadBytes)
		out.DeadBytes = append(out.DeadBytes, cur.deadBytes)
		out.FreeBytes = append(out.FreeBytes, cur.freeBytes)
	}
	return out
}

// quantile estimates the q-quantile of the latencies of the requests that
// ended between two samples, interpolating linearly inside the histogram
// bucket it falls in (as Prometheus' histogram_quantile does); -1 if none
// ended or the counters restarted.
func quantile(prev, cur sample, q float64) float64 {
	total := cur.latencyCount - prev.latencyCount
	// Before the first request the histogram has no buckets at all.
	fresh := len(prev.latencyBuckets) == 0
	if total <= 0 || !fresh && len(cur.latencyBuckets) != len(prev.latencyBuckets) {
		return -1
	}
	rank := q * total
	lower, below := 0.0, 0.0
	for i, b := range cur.latencyBuckets {
		count := b.count
		if !fresh {
			count -= prev.latencyBuckets[i].count
		}
		if count >= rank {
			if math.IsInf(b.upper, 1) {
				return lower
			}
			inBucket := count - below
			if inBucket <= 0 {
				return b.upper
			}
			return lower + (b.upper-lower)*(rank-below)/inBucket
		}
		lower, below = b.upper, count
	}
	return lower
}
