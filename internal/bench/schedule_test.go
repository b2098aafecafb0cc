package bench

import (
	"context"
	"runtime"
	"sync"
	"testing"
	"time"
)

// scheduleHarness drives an OpenLoop under a fake clock. Its operation
// records the clock when it starts and returns at once, except the requests
// listed in stall, which block until released.
type scheduleHarness struct {
	t       *testing.T
	clock   *fakeClock
	start   time.Time
	started chan int64
	release map[int64]chan struct{}
	results chan []*StreamResult
	done    chan []*StreamResult

	mu       sync.Mutex
	issuedAt map[int64]time.Duration
}

func newScheduleHarness(t *testing.T, loop OpenLoop, rate float64, stall ...int64) *scheduleHarness {
	h := &scheduleHarness{
		t: t, clock: newFakeClock(), started: make(chan int64, 100),
		release: map[int64]chan struct{}{}, issuedAt: map[int64]time.Duration{},
		results: make(chan []*StreamResult, 1), done: make(chan []*StreamResult, 1),
	}
	h.start = h.clock.Now()
	for _, s := range stall {
		h.release[s] = make(chan struct{})
	}
	loop.Clock = h.clock
	stream := Stream{Name: "upload", Rate: rate, Size: 1000, Op: func(ctx context.Context, seq int64) (int64, error) {
		h.mu.Lock()
		h.issuedAt[seq] = h.clock.Now().Sub(h.start)
		h.mu.Unlock()
		h.started <- seq
		if ch, ok := h.release[seq]; ok {
			select {
			case <-ch:
			case <-ctx.Done():
				return 0, ctx.Err()
			}
		}
		return 1000, nil
	}}
	go func() {
		h.done <- loop.RunWith(context.Background(), []Stream{stream}, func(r []*StreamResult) { h.results <- r })
	}()
	return h
}

// waitCompleted blocks until n requests have been recorded as finished, so
// the next Advance cannot overtake a completion (the fake clock would then
// charge it extra latency).
func (h *scheduleHarness) waitCompleted(res *StreamResult, n int64) {
	for {
		ok, failed, _ := res.Recorder.Counts()
		if ok+failed >= n {
			return
		}
		runtime.Gosched()
	}
}

func (h *scheduleHarness) expectStart(want int64) {
	h.t.Helper()
	if got := <-h.started; got != want {
		h.t.Fatalf("started request %d, want %d", got, want)
	}
}

// TestOpenLoopIssuesOnScheduleDespiteStall: request 2 stalls for 1.3 s of
// fake time; requests 3..9 must still start exactly at their due instants,
// and request 2's latency must include the whole stall.
func TestOpenLoopIssuesOnScheduleDespiteStall(t *testing.T) {
	const interval = 100 * time.Millisecond
	h := newScheduleHarness(t, OpenLoop{Duration: time.Second, Drain: 10 * time.Second}, 10, 2)
	res := (<-h.results)[0]
	completed := int64(0)
	for i := int64(0); i < 10; i++ {
		h.expectStart(i)
		if i != 2 {
			completed++
		}
		h.waitCompleted(res, completed)
		h.clock.WaitSleepers(1) // the issuer waits for the next due time (or the window's end)
		h.clock.Advance(interval)
	}
	// Now at 1.0 s: the window is closed, request 2 is still out; the run
	// is draining. Let the stall last until 1.5 s.
	h.clock.WaitSleepers(1)
	h.clock.Advance(500 * time.Millisecond)
	close(h.release[2])
	<-h.done

	for i := int64(0); i < 10; i++ {
		if got, want := h.issuedAt[i], time.Duration(i)*interval; got != want {
			t.Errorf("request %d started at %v, want %v (its due time)", i, got, want)
		}
	}
	cell := res.Recorder.Cell(time.Second)
	if cell.Issued != 10 || cell.Ops != 10 || cell.Errors != 0 {
		t.Fatalf("issued %d ok %d errors %d, want 10/10/0", cell.Issued, cell.Ops, cell.Errors)
	}
	// Request 2 was due at 0.2 s and finished at 1.5 s.
	if cell.Latency.Max != 1300 {
		t.Errorf("max latency %v ms, want 1300 (the stall, from the due time)", cell.Latency.Max)
	}
	if cell.Latency.P50 != 0 {
		t.Errorf("median latency %v ms, want 0: unstalled requests finish at once", cell.Latency.P50)
	}
	if res.MaxLateness != 0 {
		t.Errorf("max issue lateness %v, want 0", res.MaxLateness)
	}
	if res.InFlightAtEnd != 1 {
		t.Errorf("in flight at end of window = %d, want 1 (the stalled request)", res.InFlightAtEnd)
	}
	want := []SecondStats{
		{Second: 0, Issued: 10, Completed: 9, Bytes: 9000, MBPerSec: 0.009, MaxInFlight: 2},
		{Second: 1, Completed: 1, Bytes: 1000, MBPerSec: 0.001},
	}
	if len(res.Series) != len(want) {
		t.Fatalf("series %+v, want %+v", res.Series, want)
	}
	for i := range want {
		if res.Series[i] != want[i] {
			t.Errorf("second %d: %+v, want %+v", i, res.Series[i], want[i])
		}
	}
	// A mixed cell's rates count the hold only: the stalled request, done
	// in the drain, counts in ops and latency but not in ops/s.
	drained := holdRates(&cell, res.Series, time.Second)
	if cell.OpsPerSec != 9 || cell.MBPerSec != 0.009 || drained != 1 || cell.Ops != 10 {
		t.Errorf("hold rates %v ops/s %v MB/s, %d drained, %d ops; want 9, 0.009, 1, 10",
			cell.OpsPerSec, cell.MBPerSec, drained, cell.Ops)
	}
}

// approx reports whether got is want within the histogram's resolution.
func approx(got, want float64) bool {
	d := got - want
	return d <= want*0.001+1e-9 && -d <= want*0.001+1e-9
}

// TestOpenLoopLatencyCountsFromDueTime: with MaxInFlight 1 a stalled request
// holds the issuer back; the requests it delays are issued late, and their
// latency is measured from when they were due, not from when they started.
func TestOpenLoopLatencyCountsFromDueTime(t *testing.T) {
	h := newScheduleHarness(t, OpenLoop{Duration: 300 * time.Millisecond, Drain: time.Second, MaxInFlight: 1}, 10, 0)
	res := (<-h.results)[0]
	h.expectStart(0)
	h.clock.WaitSleepers(1) // issuer sleeps until request 1 is due (0.1 s)
	h.clock.Advance(100 * time.Millisecond)
	h.clock.Advance(150 * time.Millisecond) // issuer is blocked on the cap
	close(h.release[0])                     // request 0 ends at 0.25 s
	h.expectStart(1)
	h.expectStart(2)
	h.waitCompleted(res, 3)
	h.clock.WaitSleepers(1) // issuer waits for the window's end (0.3 s)
	h.clock.Advance(50 * time.Millisecond)
	<-h.done

	wantStart := []time.Duration{0, 250 * time.Millisecond, 250 * time.Millisecond}
	for i, want := range wantStart {
		if got := h.issuedAt[int64(i)]; got != want {
			t.Errorf("request %d started at %v, want %v", i, got, want)
		}
	}
	cell := res.Recorder.Cell(300 * time.Millisecond)
	// Latencies from the due times 0, 0.1, 0.2 s to 0.25 s: 250, 150, 50 ms.
	if cell.Ops != 3 || cell.Latency.Max != 250 || !approx(cell.Latency.P50, 150) {
		t.Errorf("ops %d latency max %v p50 %v ms, want 3 ops, 250 and 150", cell.Ops, cell.Latency.Max, cell.Latency.P50)
	}
	if res.MaxLateness != 150*time.Millisecond {
		t.Errorf("max lateness %v, want 150ms", res.MaxLateness)
	}
	if res.Series[0].Late != 2 {
		t.Errorf("late requests in second 0: %d, want 2", res.Series[0].Late)
	}
	if verdict, _ := DefaultRule.Judge([]*StreamResult{res}, 300*time.Millisecond); verdict != "saturated" {
		t.Errorf("verdict %s, want saturated (the client was held back 150 ms)", verdict)
	}
}
