package iolimit

import (
	"testing"
	"time"
)

func TestManualClock(t *testing.T) {
	c := NewManualClock(epoch)
	fired := func(tm Timer) (time.Time, bool) {
		select {
		case at := <-tm.C():
			return at, true
		default:
			return time.Time{}, false
		}
	}

	late := c.NewTimer(3 * time.Second)
	early := c.NewTimer(time.Second)
	stopped := c.NewTimer(2 * time.Second)
	now := c.NewTimer(0)
	if at, ok := fired(now); !ok || !at.Equal(epoch) {
		t.Errorf("zero-duration timer fired %v at %v, want at once at epoch", ok, at)
	}
	if got := c.Pending(); got != 3 {
		t.Errorf("Pending() = %d, want 3", got)
	}
	if next, ok := c.Next(); !ok || !next.Equal(epoch.Add(time.Second)) {
		t.Errorf("Next() = %v, %v; want epoch+1s", next, ok)
	}
	if !stopped.Stop() || stopped.Stop() {
		t.Error("Stop() should report true once, then false")
	}

	c.Advance(999 * time.Millisecond)
	if _, ok := fired(early); ok {
		t.Error("timer fired before its deadline")
	}
	c.AdvanceTo(epoch.Add(2500 * time.Millisecond))
	if at, ok := fired(early); !ok || !at.Equal(epoch.Add(2500*time.Millisecond)) {
		t.Errorf("early timer fired %v at %v, want at the advance", ok, at)
	}
	if _, ok := fired(stopped); ok {
		t.Error("stopped timer fired")
	}
	if early.Stop() {
		t.Error("Stop() of a fired timer reported true")
	}
	c.AdvanceTo(epoch) // backwards: ignored
	if !c.Now().Equal(epoch.Add(2500 * time.Millisecond)) {
		t.Errorf("clock moved backwards to %v", c.Now())
	}
	c.Advance(time.Second)
	if _, ok := fired(late); !ok {
		t.Error("late timer did not fire")
	}
	if _, ok := c.Next(); ok || c.Pending() != 0 {
		t.Errorf("timers left armed: %d", c.Pending())
	}
}
