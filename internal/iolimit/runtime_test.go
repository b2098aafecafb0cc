package iolimit

import (
	"context"
	"testing"
	"testing/synctest"
	"time"
)

// assertNext fails unless the earliest armed timer is due at want.
func assertNext(t *testing.T, clock *ManualClock, want time.Time) {
	t.Helper()
	synctest.Wait()
	got, ok := clock.Next()
	if !ok || !got.Equal(want) {
		t.Fatalf("next timer at %v (armed %v), want %v", got.Sub(epoch), ok, want.Sub(epoch))
	}
}

func TestSetLimitsChangesRate(t *testing.T) {
	const burst = 100
	phases := []struct {
		limits Limits
		fg, bg int64 // expected bytes per phase: write foreground, read background
	}{
		{Limits{WriteBytesPerSec: 1000, ReadBytesPerSec: 1000, BackgroundReadBytesPerSec: 250}, 3000, 750},
		{Limits{WriteBytesPerSec: 4000, ReadBytesPerSec: 1000, BackgroundReadBytesPerSec: 1000}, 12000, 3000},
		{Limits{WriteBytesPerSec: 500, ReadBytesPerSec: 1000}, 1500, 3000},
		{Limits{WriteBytesPerSec: 2000, ReadBytesPerSec: 200}, 6000, 600},
	}
	synctest.Test(t, func(t *testing.T) {
		s := newSim(t, phases[0].limits, burst)
		s.loop(Write, Foreground, 250, 0)
		s.loop(Read, Background, 300, 0)
		for i, p := range phases {
			s.lim.SetLimits(p.limits)
			if got := s.lim.Limits(); got != p.limits {
				t.Fatalf("phase %d: Limits() = %+v, want %+v", i, got, p.limits)
			}
			fg0, bg0 := s.bytes(Write, Foreground), s.bytes(Read, Background)
			s.runFor(3 * time.Second)
			// One burst of slack for the bucket's content at the phase change,
			// one for the piece in flight at either end.
			assertBetween(t, "phase foreground write bytes", s.bytes(Write, Foreground)-fg0, p.fg-2*burst, p.fg+2*burst)
			assertBetween(t, "phase background read bytes", s.bytes(Read, Background)-bg0, p.bg-2*burst, p.bg+2*burst)
		}
	})
}

// TestSetLimitsWakesWaiters checks that a caller already waiting is re-timed
// by SetLimits: its remaining debt is repaid at the new rate.
func TestSetLimitsWakesWaiters(t *testing.T) {
	tests := []struct {
		name      string
		prio      Priority
		from, to  Limits
		dueBefore time.Duration // waiter's deadline under from
		dueAfter  time.Duration // under to; 0: returns at once
	}{
		{"slower to faster", Foreground, Limits{WriteBytesPerSec: 10}, Limits{WriteBytesPerSec: 1000}, 10 * time.Second, 100 * time.Millisecond},
		{"faster to slower", Foreground, Limits{WriteBytesPerSec: 1000}, Limits{WriteBytesPerSec: 10}, 100 * time.Millisecond, 10 * time.Second},
		{"limited to unlimited", Foreground, Limits{WriteBytesPerSec: 10}, Limits{}, 10 * time.Second, 0},
		{"background cap raised", Background, Limits{BackgroundWriteBytesPerSec: 10}, Limits{BackgroundWriteBytesPerSec: 1000}, 10 * time.Second, 100 * time.Millisecond},
		{"background cap removed", Background, Limits{BackgroundWriteBytesPerSec: 10}, Limits{}, 10 * time.Second, 0},
		{"background cap lowered", Background, Limits{BackgroundWriteBytesPerSec: 1000}, Limits{BackgroundWriteBytesPerSec: 10}, 100 * time.Millisecond, 10 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := newSim(t, tt.from, 100)
				ctx := WithPriority(s.ctx, tt.prio)
				if err := s.lim.WaitWrite(ctx, 100); err != nil { // empties the full bucket
					t.Fatal(err)
				}
				done := waitResult(func() error { return s.lim.WaitWrite(ctx, 100) })
				assertNext(t, s.clock, epoch.Add(tt.dueBefore))
				s.lim.SetLimits(tt.to)
				if tt.dueAfter == 0 {
					assertReturned(t, "waiter", done, nil)
					return
				}
				assertNext(t, s.clock, epoch.Add(tt.dueAfter))
				s.runFor(tt.dueAfter - time.Nanosecond)
				assertPending(t, "waiter", done)
				s.runFor(time.Nanosecond)
				assertReturned(t, "waiter", done, nil)
			})
		})
	}
}

func TestSetLimitsFromUnlimited(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newSim(t, Limits{}, 100)
		if err := s.lim.WaitWrite(s.ctx, 1<<20); err != nil {
			t.Fatal(err)
		}
		s.lim.SetLimits(Limits{WriteBytesPerSec: 100})
		if err := s.lim.WaitWrite(s.ctx, 100); err != nil { // a full bucket to start
			t.Fatal(err)
		}
		done := waitResult(func() error { return s.lim.WaitWrite(s.ctx, 100) })
		assertNext(t, s.clock, epoch.Add(time.Second))
		s.runFor(time.Second)
		assertReturned(t, "waiter", done, nil)
	})
}

func TestCancelForegroundGivesBackItsPiece(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newSim(t, Limits{WriteBytesPerSec: 100}, 100)
		ctx, cancel := context.WithCancel(s.ctx)
		// 1000 bytes: 100 at once from the full bucket, then 100 per second.
		done := waitResult(func() error { return s.lim.WaitWrite(ctx, 1000) })
		s.runFor(3500 * time.Millisecond)
		assertPending(t, "1000-byte write", done)
		cancel()
		assertReturned(t, "cancelled write", done, context.Canceled)
		if got := s.bytes(Write, Foreground); got != 400 {
			t.Errorf("granted %d bytes before cancel, want 400 (pieces due at 0s..3s)", got)
		}
		if got := s.clock.Pending(); got != 0 {
			t.Errorf("%d timers still armed after cancel", got)
		}
		// The piece due at 4s was given back: a new 100-byte call finds the
		// 50 bytes accrued since 3s and is due at 4s, not 5s.
		next := waitResult(func() error { return s.lim.WaitWrite(s.ctx, 100) })
		assertNext(t, s.clock, epoch.Add(4*time.Second))
		s.runFor(500 * time.Millisecond)
		assertReturned(t, "next write", next, nil)
	})
}

func TestCancelBackground(t *testing.T) {
	tests := []struct {
		name  string
		setup func(s *sim) // leaves the direction so that a new background call blocks
	}{
		{"parked behind foreground", func(s *sim) {
			go s.lim.WaitWrite(s.ctx, 300) // empties the bucket and waits 2s
		}},
		{"waiting for its own cap", func(s *sim) {
			s.lim.SetLimits(Limits{BackgroundWriteBytesPerSec: 1})
			ctx := WithPriority(s.ctx, Background)
			if err := s.lim.WaitWrite(ctx, 100); err != nil {
				s.t.Error(err)
			}
		}},
		{"queued for the turn", func(s *sim) {
			s.lim.SetLimits(Limits{BackgroundWriteBytesPerSec: 1})
			s.loop(Write, Background, 100, 0)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := newSim(t, Limits{WriteBytesPerSec: 100}, 100)
				tt.setup(s)
				synctest.Wait()
				before := s.lim.Stats()
				ctx, cancel := context.WithCancel(WithPriority(s.ctx, Background))
				done := waitResult(func() error { return s.lim.WaitWrite(ctx, 10) })
				assertPending(t, "background write", done)
				cancel()
				assertReturned(t, "cancelled background write", done, context.Canceled)
				after := s.lim.Stats()
				if after.Write.Background.Bytes != before.Write.Background.Bytes {
					t.Errorf("cancelled background call was granted %d bytes",
						after.Write.Background.Bytes-before.Write.Background.Bytes)
				}
			})
		})
	}
}

// TestCancelledForegroundReleasesBackground: background parked behind a
// foreground waiter proceeds once that waiter gives up.
func TestCancelledForegroundReleasesBackground(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newSim(t, Limits{WriteBytesPerSec: 100}, 100)
		if err := s.lim.WaitWrite(s.ctx, 100); err != nil {
			t.Fatal(err)
		}
		fgCtx, cancelFG := context.WithCancel(s.ctx)
		fg := waitResult(func() error { return s.lim.WaitWrite(fgCtx, 100) })
		assertPending(t, "foreground write", fg)
		bg := waitResult(func() error { return s.lim.WaitWrite(WithPriority(s.ctx, Background), 50) })
		assertPending(t, "background write", bg)
		// Parked background polls nothing: the only timer is foreground's.
		if got := s.clock.Pending(); got != 1 {
			t.Errorf("%d timers armed, want 1 (foreground's)", got)
		}
		cancelFG()
		assertReturned(t, "cancelled foreground write", fg, context.Canceled)
		// Background needs its 50 bytes above the 50-byte headroom: 1s.
		assertNext(t, s.clock, epoch.Add(time.Second))
		s.runFor(time.Second)
		assertReturned(t, "background write", bg, nil)
	})
}

func TestDoneContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newSim(t, Limits{ReadBytesPerSec: 100, BackgroundReadBytesPerSec: 10}, 100)
		ctx, cancel := context.WithCancel(s.ctx)
		cancel()
		for _, prio := range []Priority{Foreground, Background} {
			if err := s.lim.WaitRead(WithPriority(ctx, prio), 1); err != context.Canceled {
				t.Errorf("%v WaitRead(cancelled ctx) = %v, want context.Canceled", prio, err)
			}
		}
		if st := s.lim.Stats(); st != (Stats{}) {
			t.Errorf("stats after cancelled calls = %+v, want zero", st)
		}
		// Unlimited calls never look at ctx.
		if err := s.lim.WaitWrite(ctx, 1); err != nil {
			t.Errorf("unlimited WaitWrite(cancelled ctx) = %v, want nil", err)
		}
	})
}

// TestDeadline uses the bubble's own clock for the context deadline: the
// waiter, due in 10s on the limiter's ManualClock, gives up after 1s.
func TestDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newSim(t, Limits{WriteBytesPerSec: 10}, 100)
		ctx, cancel := context.WithTimeout(s.ctx, time.Second)
		defer cancel()
		if err := s.lim.WaitWrite(ctx, 100); err != nil {
			t.Fatal(err)
		}
		done := waitResult(func() error { return s.lim.WaitWrite(ctx, 100) })
		assertPending(t, "write", done)
		time.Sleep(time.Second)
		assertReturned(t, "write past deadline", done, context.DeadlineExceeded)
	})
}
