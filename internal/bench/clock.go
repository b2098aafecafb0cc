package bench

import (
	"context"
	"time"
)

// Clock is the scheduler's source of time. The real clock is used in runs;
// tests substitute a fake one to prove, without sleeping, that requests are
// issued at their intended instants and that latency includes stalls.
type Clock interface {
	Now() time.Time
	// SleepUntil blocks until the clock reaches t or ctx is done, and
	// returns ctx.Err() in the latter case. It returns at once if t has
	// passed.
	SleepUntil(ctx context.Context, t time.Time) error
}

// RealClock is the wall clock (monotonic readings).
type RealClock struct{}

// Now returns time.Now().
func (RealClock) Now() time.Time { return time.Now() }

// SleepUntil sleeps until t or until ctx is done.
func (RealClock) SleepUntil(ctx context.Context, t time.Time) error {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err()
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
