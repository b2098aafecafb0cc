package bench

import (
	"context"
	"sync"
	"time"
)

// fakeClock is a Clock that moves only when the test calls Advance.
type fakeClock struct {
	mu      sync.Mutex
	cond    *sync.Cond
	now     time.Time
	waiters map[*fakeWaiter]struct{}
}

type fakeWaiter struct {
	at   time.Time
	wake chan struct{}
}

func newFakeClock() *fakeClock {
	c := &fakeClock{now: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC), waiters: map[*fakeWaiter]struct{}{}}
	c.cond = sync.NewCond(&c.mu)
	return c
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) SleepUntil(ctx context.Context, t time.Time) error {
	c.mu.Lock()
	if !t.After(c.now) {
		c.mu.Unlock()
		return ctx.Err()
	}
	w := &fakeWaiter{at: t, wake: make(chan struct{})}
	c.waiters[w] = struct{}{}
	c.cond.Broadcast()
	c.mu.Unlock()
	select {
	case <-w.wake:
		return nil
	case <-ctx.Done():
		c.mu.Lock()
		delete(c.waiters, w)
		c.cond.Broadcast()
		c.mu.Unlock()
		return ctx.Err()
	}
}

// Advance moves time forward and wakes every sleeper whose instant has come.
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	for w := range c.waiters {
		if !w.at.After(c.now) {
			delete(c.waiters, w)
			close(w.wake)
		}
	}
	c.cond.Broadcast()
}

// WaitSleepers blocks until exactly n goroutines sleep on the clock, all
// until a later instant than now.
func (c *fakeClock) WaitSleepers(n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for len(c.waiters) != n {
		c.cond.Wait()
	}
}
