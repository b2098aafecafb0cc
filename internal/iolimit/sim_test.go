package iolimit

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// The tests run limiters on a ManualClock inside a synctest bubble.
// synctest.Wait returns once every goroutine of the bubble is blocked (on a
// timer channel, the limiter's broadcast channel, a context); the driver
// then jumps the clock to the next timer deadline. Each step is therefore
// deterministic in what can happen, and a simulated minute costs
// milliseconds.

var epoch = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// sim is a limiter under simulation with a set of looping workers.
type sim struct {
	t      *testing.T
	clock  *ManualClock
	lim    *Limiter
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// newSim must be called inside synctest.Test. burst <= 0 keeps the default.
func newSim(t *testing.T, limits Limits, burst int64) *sim {
	t.Helper()
	clock := NewManualClock(epoch)
	ctx, cancel := context.WithCancel(context.Background())
	s := &sim{t: t, clock: clock, lim: New(limits, WithClock(clock), WithBurst(burst)), ctx: ctx, cancel: cancel}
	t.Cleanup(s.stop)
	return s
}

// worker is one looping caller; completed counts bytes of calls that returned nil.
type worker struct {
	completed atomic.Int64
}

// loop starts a worker waiting for n bytes again and again in dir at prio,
// pausing pause (on the simulated clock) between calls, until stop.
func (s *sim) loop(dir Direction, prio Priority, n int, pause time.Duration) *worker {
	w := &worker{}
	ctx := WithPriority(s.ctx, prio)
	s.wg.Go(func() {
		for {
			if err := s.lim.Wait(ctx, dir, n); err != nil {
				if ctx.Err() == nil {
					s.t.Errorf("Wait(%v, %v, %d) = %v while running", dir, prio, n, err)
				}
				return
			}
			w.completed.Add(int64(n))
			if pause > 0 && !s.sleep(ctx, pause) {
				return
			}
		}
	})
	return w
}

// sleep waits d on the simulated clock; false if ctx ended first.
func (s *sim) sleep(ctx context.Context, d time.Duration) bool {
	timer := s.clock.NewTimer(d)
	select {
	case <-timer.C():
		return true
	case <-ctx.Done():
		timer.Stop()
		return false
	}
}

// runFor advances simulated time by d, deadline by deadline, letting every
// goroutine settle at each instant.
func (s *sim) runFor(d time.Duration) { runClock(s.clock, d) }

// runClock advances clock by d, deadline by deadline, letting every
// goroutine of the bubble settle at each instant.
func runClock(clock *ManualClock, d time.Duration) {
	end := clock.Now().Add(d)
	for {
		synctest.Wait()
		next, ok := clock.Next()
		if !ok || next.After(end) {
			clock.AdvanceTo(end)
			synctest.Wait()
			return
		}
		clock.AdvanceTo(next)
	}
}

// stop cancels all workers and waits for them to return.
func (s *sim) stop() {
	s.cancel()
	s.wg.Wait()
}

func (s *sim) bytes(dir Direction, prio Priority) int64 {
	return s.lim.Stats().Get(dir, prio).Bytes
}

// assertBetween fails unless lo <= got <= hi.
func assertBetween(t *testing.T, what string, got, lo, hi int64) {
	t.Helper()
	if got < lo || got > hi {
		t.Errorf("%s = %d, want in [%d, %d]", what, got, lo, hi)
	}
}

// waitResult runs f in a goroutine of the bubble and returns a channel
// delivering its error.
func waitResult(f func() error) <-chan error {
	done := make(chan error, 1)
	go func() { done <- f() }()
	return done
}

// assertPending fails unless done is still blocked.
func assertPending(t *testing.T, what string, done <-chan error) {
	t.Helper()
	synctest.Wait()
	select {
	case err := <-done:
		t.Fatalf("%s returned %v, want still waiting", what, err)
	default:
	}
}

// assertReturned fails unless done has delivered want (nil or an error
// errors.Is-equal to want) after the bubble settled.
func assertReturned(t *testing.T, what string, done <-chan error, want error) {
	t.Helper()
	synctest.Wait()
	select {
	case err := <-done:
		if !errors.Is(err, want) {
			t.Fatalf("%s returned %v, want %v", what, err, want)
		}
	default:
		t.Fatalf("%s still waiting, want it returned %v", what, want)
	}
}
