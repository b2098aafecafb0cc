package iolimit

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// limitsFor sets the total and background rate of one direction only.
func limitsFor(dir Direction, total, background int64) Limits {
	if dir == Read {
		return Limits{ReadBytesPerSec: total, BackgroundReadBytesPerSec: background}
	}
	return Limits{WriteBytesPerSec: total, BackgroundWriteBytesPerSec: background}
}

func TestRateHeldForAnyRequestSize(t *testing.T) {
	const (
		rateBps = 1000
		burst   = 100
		window  = 5 * time.Second
		ideal   = int64(rateBps * 5)
	)
	for _, size := range []int{1, 37, burst - 1, burst, burst + 1, 250, 10 * burst, 100 * burst} {
		for _, workers := range []int{1, 3} {
			for _, prio := range []Priority{Foreground, Background} {
				dir := Write
				if size%2 == 1 {
					dir = Read
				}
				name := fmt.Sprintf("%v/%v/size=%d/workers=%d", dir, prio, size, workers)
				t.Run(name, func(t *testing.T) {
					synctest.Test(t, func(t *testing.T) {
						s := newSim(t, limitsFor(dir, rateBps, 0), burst)
						var ws []*worker
						for range workers {
							ws = append(ws, s.loop(dir, prio, size, 0))
						}
						s.runFor(window)

						// The bucket starts full: burst + rate×window is the hard
						// ceiling; each worker may have one piece still owed.
						granted := s.bytes(dir, prio)
						assertBetween(t, "granted bytes", granted, ideal-int64(workers)*burst, ideal+burst)
						var completed int64
						for _, w := range ws {
							completed += w.completed.Load()
						}
						if completed > granted {
							t.Errorf("calls returned for %d bytes, only %d granted", completed, granted)
						}
						if size > int(ideal+burst) && completed != 0 {
							t.Errorf("a %d-byte call returned within %v at %d B/s", size, window, rateBps)
						}
						other := Read + Write - dir
						if got := s.lim.Stats().Get(other, prio).Bytes; got != 0 {
							t.Errorf("%v bytes = %d, want 0 (no %v worker)", other, got, other)
						}
					})
				})
			}
		}
	}
}

func TestUnlimitedReturnsAtOnce(t *testing.T) {
	tests := []struct {
		name   string
		limits Limits
		dir    Direction
		prio   Priority
	}{
		{"zero limits, foreground", Limits{}, Write, Foreground},
		{"zero limits, background", Limits{}, Read, Background},
		{"other direction limited", Limits{ReadBytesPerSec: 1}, Write, Foreground},
		{"only background capped, foreground", Limits{BackgroundReadBytesPerSec: 1}, Read, Foreground},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := NewManualClock(epoch)
			l := New(tt.limits, WithClock(clock), WithBurst(1))
			ctx := WithPriority(context.Background(), tt.prio)
			for range 100 {
				if err := l.Wait(ctx, tt.dir, 1<<30); err != nil {
					t.Fatalf("Wait = %v", err)
				}
			}
			if clock.Pending() != 0 || !clock.Now().Equal(epoch) {
				t.Errorf("unlimited wait armed %d timers, clock at %v", clock.Pending(), clock.Now())
			}
			c := l.Stats().Get(tt.dir, tt.prio)
			if c.Bytes != 100<<30 || c.Waits != 0 || c.WaitTime != 0 {
				t.Errorf("stats = %+v, want 100 GiB granted without waits", c)
			}
		})
	}
}

func TestNilLimiterIsUnlimited(t *testing.T) {
	var l *Limiter
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := l.WaitRead(ctx, 1<<40); err != nil {
		t.Errorf("nil WaitRead = %v", err)
	}
	if err := l.WaitWrite(WithPriority(ctx, Background), 1<<40); err != nil {
		t.Errorf("nil WaitWrite = %v", err)
	}
	l.SetLimits(Limits{ReadBytesPerSec: 1})
	if got := l.Limits(); got != (Limits{}) {
		t.Errorf("nil Limits() = %+v", got)
	}
	if got := l.Stats(); got != (Stats{}) {
		t.Errorf("nil Stats() = %+v", got)
	}
}

func TestWaitRejectsUnknownDirection(t *testing.T) {
	l := New(Limits{ReadBytesPerSec: 1})
	if err := l.Wait(context.Background(), Direction(7), 1); err == nil || !strings.Contains(err.Error(), "Direction(7)") {
		t.Errorf("Wait(Direction(7)) = %v, want an unknown-direction error", err)
	}
}

func TestPriorityFromContext(t *testing.T) {
	ctx := context.Background()
	if p := PriorityFrom(ctx); p != Foreground {
		t.Errorf("default priority = %v", p)
	}
	bg := WithPriority(ctx, Background)
	if p := PriorityFrom(bg); p != Background {
		t.Errorf("PriorityFrom(WithPriority(Background)) = %v", p)
	}
	if p := PriorityFrom(WithPriority(bg, Foreground)); p != Foreground {
		t.Errorf("inner WithPriority(Foreground) = %v", p)
	}
	for _, tc := range []struct {
		got, want string
	}{
		{Foreground.String(), "foreground"}, {Background.String(), "background"},
		{Priority(9).String(), "Priority(9)"},
		{Read.String(), "read"}, {Write.String(), "write"}, {Direction(3).String(), "Direction(3)"},
	} {
		if tc.got != tc.want {
			t.Errorf("String() = %q, want %q", tc.got, tc.want)
		}
	}
}

func TestLimitsValidateAndNormalise(t *testing.T) {
	bad := Limits{ReadBytesPerSec: -1, BackgroundWriteBytesPerSec: -5}
	err := bad.Validate()
	if err == nil || !strings.Contains(err.Error(), "read bytes/s is -1") ||
		!strings.Contains(err.Error(), "background write bytes/s is -5") {
		t.Errorf("Validate() = %v, want both negative rates named", err)
	}
	if err := (Limits{ReadBytesPerSec: 1}).Validate(); err != nil {
		t.Errorf("Validate(valid) = %v", err)
	}
	l := New(bad)
	if got := l.Limits(); got != (Limits{}) {
		t.Errorf("negative rates stored as %+v, want zero (unlimited)", got)
	}
	want := Limits{ReadBytesPerSec: 10, WriteBytesPerSec: 20, BackgroundReadBytesPerSec: 3, BackgroundWriteBytesPerSec: 4}
	l.SetLimits(want)
	if got := l.Limits(); got != want {
		t.Errorf("Limits() = %+v, want %+v", got, want)
	}
}

func TestDefaultBurst(t *testing.T) {
	tests := []struct {
		rate, fixed int64
		want        int
	}{
		{rate: 100 << 20, want: 10 << 20}, // DefaultBurstWindow of the rate
		{rate: 1000, want: MinBurst},
		{rate: 100 << 20, fixed: 12345, want: 12345},
		{rate: 1 << 50, want: 1<<31 - 1},
	}
	for _, tt := range tests {
		l := New(Limits{}, WithBurst(tt.fixed))
		if got := l.burstOf(tt.rate); got != tt.want {
			t.Errorf("burstOf(%d) with WithBurst(%d) = %d, want %d", tt.rate, tt.fixed, got, tt.want)
		}
	}
}

// TestLargeRequestIsSplit follows one request of 10 bursts piece by piece.
func TestLargeRequestIsSplit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newSim(t, Limits{WriteBytesPerSec: 100}, 100)
		done := waitResult(func() error { return s.lim.WaitWrite(s.ctx, 1000) })
		for piece := int64(1); piece <= 9; piece++ {
			assertPending(t, "1000-byte write", done)
			if got := s.bytes(Write, Foreground); got != piece*100 {
				t.Fatalf("after %d s granted %d bytes, want %d", piece-1, got, piece*100)
			}
			s.runFor(time.Second)
		}
		assertReturned(t, "1000-byte write", done, nil)
		if got := s.clock.Now().Sub(epoch); got != 9*time.Second {
			t.Errorf("returned after %v, want 9s (first burst free, then 100 B/s)", got)
		}
		c := s.lim.Stats().Write.Foreground
		if c.Bytes != 1000 || c.Waits != 1 || c.WaitTime != 9*time.Second {
			t.Errorf("stats = %+v, want 1000 bytes, 1 wait of 9s", c)
		}
	})
}

// TestRealClock runs the default clock inside a synctest bubble, where
// time.Now and timers are the bubble's fake time.
func TestRealClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := New(Limits{ReadBytesPerSec: 1000}, WithBurst(100))
		start := time.Now()
		if err := l.WaitRead(context.Background(), 1100); err != nil {
			t.Fatal(err)
		}
		if got := time.Since(start); got != time.Second {
			t.Errorf("1100 bytes at 1000 B/s with burst 100 took %v (bubble time), want 1s", got)
		}
	})
}
