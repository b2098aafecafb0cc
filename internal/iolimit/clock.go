package iolimit

import (
	"slices"
	"sync"
	"time"
)

// Clock is the limiter's source of time. The real clock is the default;
// tests pass a ManualClock (WithClock) so that simulated seconds cost
// nothing and no assertion depends on the wall clock.
type Clock interface {
	Now() time.Time
	// NewTimer returns a timer that delivers once on C after d.
	NewTimer(d time.Duration) Timer
}

// Timer is the part of *time.Timer the limiter uses.
type Timer interface {
	C() <-chan time.Time
	// Stop prevents the timer from firing; it reports whether it was armed.
	Stop() bool
}

type realClock struct{}

func (realClock) Now() time.Time                 { return time.Now() }
func (realClock) NewTimer(d time.Duration) Timer { return realTimer{time.NewTimer(d)} }

type realTimer struct{ t *time.Timer }

func (r realTimer) C() <-chan time.Time { return r.t.C }
func (r realTimer) Stop() bool          { return r.t.Stop() }

// ManualClock is a Clock that moves only when told to (AdvanceTo, Advance).
// Timers whose deadline is reached fire during the advance, in deadline
// order. It is safe for concurrent use.
//
// A deterministic simulation alternates "let every goroutine block"
// (testing/synctest.Wait) with "jump to the next deadline" (Next,
// AdvanceTo): each waiter then sees exactly the instants it asked for.
type ManualClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*manualTimer // armed timers, unordered
}

// NewManualClock returns a ManualClock reading start.
func NewManualClock(start time.Time) *ManualClock {
	return &ManualClock{now: start}
}

// Now returns the clock's current time.
func (c *ManualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// NewTimer returns a timer firing when the clock reaches Now()+d. A timer
// with d <= 0 has fired already.
func (c *ManualClock) NewTimer(d time.Duration) Timer {
	t := &manualTimer{clock: c, c: make(chan time.Time, 1)}
	c.mu.Lock()
	defer c.mu.Unlock()
	t.when = c.now.Add(d)
	if d <= 0 {
		t.c <- c.now
		return t
	}
	c.timers = append(c.timers, t)
	return t
}

// Advance moves the clock forward by d.
func (c *ManualClock) Advance(d time.Duration) {
	c.AdvanceTo(c.Now().Add(d))
}

// AdvanceTo moves the clock to t (never backwards) and fires every timer
// whose deadline is at or before t.
func (c *ManualClock) AdvanceTo(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t.Before(c.now) {
		return
	}
	c.now = t
	var due []*manualTimer
	c.timers = slices.DeleteFunc(c.timers, func(mt *manualTimer) bool {
		if mt.when.After(t) {
			return false
		}
		due = append(due, mt)
		return true
	})
	slices.SortFunc(due, func(a, b *manualTimer) int { return a.when.Compare(b.when) })
	for _, mt := range due {
		mt.c <- t // capacity 1 and fired at most once: never blocks
	}
}

// Next returns the earliest deadline of an armed timer, if any.
func (c *ManualClock) Next() (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.timers) == 0 {
		return time.Time{}, false
	}
	earliest := c.timers[0].when
	for _, mt := range c.timers[1:] {
		if mt.when.Before(earliest) {
			earliest = mt.when
		}
	}
	return earliest, true
}

// Pending returns the number of armed timers.
func (c *ManualClock) Pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.timers)
}

type manualTimer struct {
	clock *ManualClock
	when  time.Time // guarded by clock.mu
	c     chan time.Time
}

func (t *manualTimer) C() <-chan time.Time { return t.c }

func (t *manualTimer) Stop() bool {
	c := t.clock
	c.mu.Lock()
	defer c.mu.Unlock()
	before := len(c.timers)
	c.timers = slices.DeleteFunc(c.timers, func(mt *manualTimer) bool { return mt == t })
	return len(c.timers) != before
}
