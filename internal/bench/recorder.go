package bench

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// Histogram bounds: 1 ns to 1 hour at 3 significant digits, so a 512-byte
// buffered write() (about a microsecond) and a stalled multi-minute upload
// land in the same histogram with 0.1% resolution.
const (
	histMin    = 1
	histMax    = int64(time.Hour)
	histDigits = 3
)

// Recorder accumulates the outcome of one cell's operations. It is safe for
// concurrent use. Counters are atomics so the progress line can read them
// while workers record; the histogram sits behind a mutex held only for
// RecordValue (tens of nanoseconds), which is far below the cost of any
// operation measured here.
//
// Invariant: Issued() == ok + errors + canceled once every issued operation
// has been recorded.
type Recorder struct {
	issued   atomic.Int64
	ok       atomic.Int64
	failed   atomic.Int64
	canceled atomic.Int64
	bytes    atomic.Int64

	mu     sync.Mutex
	hist   *hdrhistogram.Histogram
	errs   map[string]int64
	maxRaw int64 // exact maximum; the histogram's max is rounded to its bucket
}

// NewRecorder returns an empty recorder.
func NewRecorder() *Recorder {
	return &Recorder{
		hist: hdrhistogram.New(histMin, histMax, histDigits),
		errs: make(map[string]int64),
	}
}

// Issue counts an operation as started. Every Issue is matched by exactly one
// Done.
func (r *Recorder) Issue() { r.issued.Add(1) }

// Done records a finished operation: its latency, the bytes it moved and its
// error (nil on success). Latency and bytes of failed operations are not
// added to the histogram or throughput; they are counted by error type.
// Operations stopped by the run's own cancellation count as canceled, not as
// errors: the server did not fail them.
func (r *Recorder) Done(latency time.Duration, bytes int64, err error) {
	if err != nil {
		kind := ClassifyError(err)
		if kind == errCanceled {
			r.canceled.Add(1)
		} else {
			r.failed.Add(1)
		}
		r.mu.Lock()
		r.errs[kind]++
		r.mu.Unlock()
		return
	}
	r.ok.Add(1)
	r.bytes.Add(bytes)
	v := int64(latency)
	if v < 0 {
		v = 0 // the histogram holds zero exactly; only its resolution starts at histMin
	}
	if v > histMax {
		v = histMax
	}
	r.mu.Lock()
	_ = r.hist.RecordValue(v) // cannot fail: v is clamped into range
	if v > r.maxRaw {
		r.maxRaw = v
	}
	r.mu.Unlock()
}

// Counts returns the live counters (for the progress line).
func (r *Recorder) Counts() (ok, failed, bytes int64) {
	return r.ok.Load(), r.failed.Load(), r.bytes.Load()
}

// Issued returns the number of operations started.
func (r *Recorder) Issued() int64 { return r.issued.Load() }

// Cell summarises the recorder into a result cell measured over elapsed.
// Identification fields (Op, Size, ...) are left for the caller.
func (r *Recorder) Cell(elapsed time.Duration) Cell {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := Cell{
		Issued:   r.issued.Load(),
		Ops:      r.ok.Load(),
		Errors:   r.failed.Load(),
		Canceled: r.canceled.Load(),
		Bytes:    r.bytes.Load(),
		Seconds:  elapsed.Seconds(),
		Latency:  latencyOf(r.hist, r.maxRaw),
	}
	if len(r.errs) > 0 {
		c.ErrorsByType = make(map[string]int64, len(r.errs))
		for k, v := range r.errs {
			c.ErrorsByType[k] = v
		}
	}
	if c.Seconds > 0 {
		c.OpsPerSec = float64(c.Ops) / c.Seconds
		c.MBPerSec = float64(c.Bytes) / 1e6 / c.Seconds
	}
	return c
}

func latencyOf(h *hdrhistogram.Histogram, maxRaw int64) Latency {
	if h.TotalCount() == 0 {
		return Latency{}
	}
	ms := func(ns int64) float64 { return float64(ns) / 1e6 }
	l := Latency{
		Count: h.TotalCount(),
		Mean:  h.Mean() / 1e6,
		P50:   ms(h.ValueAtQuantile(50)),
		P90:   ms(h.ValueAtQuantile(90)),
		P99:   ms(h.ValueAtQuantile(99)),
		P995:  ms(h.ValueAtQuantile(99.5)),
		P999:  ms(h.ValueAtQuantile(99.9)),
		Max:   ms(maxRaw),
	}
	// ValueAtQuantile reports the upper end of a bucket, which may exceed
	// the exact maximum by up to the histogram's 0.1% resolution; clamp so
	// that P50 <= ... <= P99.9 <= Max holds exactly.
	for _, p := range []*float64{&l.P50, &l.P90, &l.P99, &l.P995, &l.P999} {
		if *p > l.Max {
			*p = l.Max
		}
	}
	return l
}
