package bench

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// Stream is one open-loop request stream: Rate requests per second, each
// running Op. Op must return when its context is canceled.
type Stream struct {
	Name string  // "upload", "download"
	Rate float64 // requests per second, > 0
	Size int64   // bytes per request, for reporting
	// Op performs request seq and returns the bytes it moved.
	Op func(ctx context.Context, seq int64) (int64, error)
}

// OpenLoop issues requests on a fixed schedule, independent of completions.
//
// Request i of a stream is due at start + i/Rate. The issuer sleeps until
// that instant and starts the request in its own goroutine, whether or not
// earlier requests have finished: a slow server makes requests pile up in
// flight, it cannot slow the arrival rate down (no coordinated omission).
// Latency is measured from the due instant, not from when the request was
// actually started, so any lateness of the issuer also counts against the
// server's latency rather than disappearing.
//
// The only back-pressure is MaxInFlight, a safety cap on goroutines: when it
// is reached the issuer waits, the wait shows up as lateness and in the
// latencies (measured from the due time), and the run is judged saturated.
type OpenLoop struct {
	Clock       Clock
	Duration    time.Duration // requests are due within [start, start+Duration)
	Drain       time.Duration // after Duration, wait at most this long for in-flight requests
	MaxInFlight int           // 0 means DefaultMaxInFlight
}

// DefaultMaxInFlight caps concurrent requests of an open-loop run.
const DefaultMaxInFlight = 4096

// StreamResult is what one stream did during an open-loop run.
type StreamResult struct {
	Stream    Stream
	Recorder  *Recorder
	Scheduled int64 // requests due within the hold window
	// InFlightAtEnd is the number of this stream's requests in flight when
	// the hold window closed: the queue the server had not worked off.
	InFlightAtEnd int64
	// Lateness of issue relative to the due time (issuer delay).
	MaxLateness time.Duration
	P99Lateness time.Duration
	Series      []SecondStats // one entry per second since start
}

// SecondStats is one second of an open-loop run for one stream. Completed and
// Bytes count requests that finished successfully in that second; Issued
// counts requests started in it; MaxInFlight is the highest number in flight
// (over all streams) seen when a request was issued in that second.
type SecondStats struct {
	Second      int     `json:"second"`
	Issued      int64   `json:"issued"`
	Completed   int64   `json:"completed"`
	Errors      int64   `json:"errors"`
	Bytes       int64   `json:"bytes"`
	MBPerSec    float64 `json:"mb_per_sec"`
	MaxInFlight int64   `json:"max_in_flight"`
	Late        int64   `json:"late"`            // requests issued more than LateThreshold after their due time
	MaxLateMS   float64 `json:"max_lateness_ms"` // worst issue lateness in that second
}

// LateThreshold is how late an issue must be to count in SecondStats.Late.
const LateThreshold = 10 * time.Millisecond

type secondSlot struct {
	issued, completed, errors, bytes, maxInFlight, late, maxLate atomic.Int64
}

func maxStore(a *atomic.Int64, v int64) {
	for {
		old := a.Load()
		if v <= old || a.CompareAndSwap(old, v) {
			return
		}
	}
}

// Run executes the streams concurrently and returns one result per stream.
// It returns when every issued request has finished, the drain deadline has
// cut off the rest (they are recorded as "unfinished"), or ctx is canceled
// (the rest are recorded as canceled); partial results are always returned.
func (o OpenLoop) Run(ctx context.Context, streams []Stream) []*StreamResult {
	return o.RunWith(ctx, streams, nil)
}

// RunWith is Run with a hook called once the streams have started, with the
// results being filled (for a progress display; read only their recorders).
func (o OpenLoop) RunWith(ctx context.Context, streams []Stream, started func([]*StreamResult)) []*StreamResult {
	maxInFlight := o.MaxInFlight
	if maxInFlight <= 0 {
		maxInFlight = DefaultMaxInFlight
	}
	start := o.Clock.Now()
	end := start.Add(o.Duration)
	nSlots := int((o.Duration+o.Drain)/time.Second) + 2

	// opCtx outlives the hold window by the drain; canceling it (drain
	// expired or the run was interrupted) makes every in-flight Op return.
	opCtx, cancelOps := context.WithCancel(ctx)
	defer cancelOps()
	var drainExpired atomic.Bool

	var inFlight atomic.Int64
	sem := make(chan struct{}, maxInFlight)
	var ops sync.WaitGroup
	var issuers sync.WaitGroup
	results := make([]*StreamResult, len(streams))
	for si, st := range streams {
		res := &StreamResult{Stream: st, Recorder: NewRecorder()}
		results[si] = res
		slots := make([]secondSlot, nSlots)
		slotOf := func(t time.Time) *secondSlot {
			i := int(t.Sub(start) / time.Second)
			return &slots[max(0, min(i, nSlots-1))]
		}
		lateness := NewRecorder()
		streamInFlight := new(atomic.Int64)
		issuers.Add(1)
		go func() {
			defer issuers.Done()
			var scheduled int64
			defer func() { res.InFlightAtEnd = streamInFlight.Load() }()
			defer func() { res.Scheduled = scheduled }()
			interval := float64(time.Second) / st.Rate
			for seq := int64(0); ; seq++ {
				due := start.Add(time.Duration(float64(seq) * interval))
				if !due.Before(end) {
					// Sample the queue when the hold window closes.
					_ = o.Clock.SleepUntil(ctx, end)
					return
				}
				if o.Clock.SleepUntil(ctx, due) != nil {
					return
				}
				select {
				case sem <- struct{}{}:
				case <-ctx.Done():
					return
				}
				issued := o.Clock.Now()
				late := issued.Sub(due)
				scheduled++
				lateness.Issue()
				lateness.Done(late, 0, nil)
				res.Recorder.Issue()
				slot := slotOf(issued)
				slot.issued.Add(1)
				maxStore(&slot.maxInFlight, inFlight.Add(1))
				streamInFlight.Add(1)
				if late > LateThreshold {
					slot.late.Add(1)
				}
				maxStore(&slot.maxLate, int64(late))
				ops.Add(1)
				go func(seq int64, due time.Time) {
					defer ops.Done()
					n, err := st.Op(opCtx, seq)
					done := o.Clock.Now()
					inFlight.Add(-1)
					streamInFlight.Add(-1)
					<-sem
					if err != nil && drainExpired.Load() && ctx.Err() == nil {
						err = errDrained
					}
					res.Recorder.Done(done.Sub(due), n, err)
					s := slotOf(done)
					if err != nil {
						s.errors.Add(1)
						return
					}
					s.completed.Add(1)
					s.bytes.Add(n)
				}(seq, due)
			}
		}()
		defer func() {
			lat := lateness.Cell(0).Latency
			res.MaxLateness = time.Duration(lat.Max * 1e6)
			res.P99Lateness = time.Duration(lat.P99 * 1e6)
			res.Series = seriesOf(slots, start, o.Clock.Now())
		}()
	}
	if started != nil {
		started(results)
	}
	issuers.Wait()

	// Drain: wait for the in-flight requests, but not past end+Drain.
	allDone := make(chan struct{})
	go func() { ops.Wait(); close(allDone) }()
	drainCtx, stopDrain := context.WithCancel(ctx)
	go func() {
		select {
		case <-allDone:
			stopDrain()
		case <-drainCtx.Done():
		}
	}()
	_ = o.Clock.SleepUntil(drainCtx, end.Add(o.Drain)) // returns early when all are done
	stopDrain()
	select {
	case <-allDone:
	default:
		// Deadline reached (or run interrupted) with requests still out;
		// the ops classify themselves as unfinished or canceled.
		drainExpired.Store(true)
	}
	cancelOps()
	<-allDone
	return results
}

// seriesOf converts the per-second slots up to the last second that saw
// activity (or the current time) into the exported series.
func seriesOf(slots []secondSlot, start, now time.Time) []SecondStats {
	last := int(now.Sub(start) / time.Second)
	for i := len(slots) - 1; i > last; i-- {
		s := &slots[i]
		if s.issued.Load()+s.completed.Load()+s.errors.Load() > 0 {
			last = i
			break
		}
	}
	last = min(last, len(slots)-1)
	out := make([]SecondStats, 0, last+1)
	for i := 0; i <= last; i++ {
		s := &slots[i]
		out = append(out, SecondStats{
			Second:      i,
			Issued:      s.issued.Load(),
			Completed:   s.completed.Load(),
			Errors:      s.errors.Load(),
			Bytes:       s.bytes.Load(),
			MBPerSec:    float64(s.bytes.Load()) / 1e6,
			MaxInFlight: s.maxInFlight.Load(),
			Late:        s.late.Load(),
			MaxLateMS:   float64(s.maxLate.Load()) / 1e6,
		})
	}
	return out
}
