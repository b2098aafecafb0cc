package iolimit

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// pacerSim is a Pacer driven on a ManualClock inside a synctest bubble,
// with one background job doing work in units that take simulated time,
// like a disk would: unpaced, the job runs at unit/unitTime.
type pacerSim struct {
	t      *testing.T
	clock  *ManualClock
	p      *Pacer
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	done   atomic.Int64 // bytes of work the job completed
}

const (
	simUnit     = 1000             // bytes of work per step of the job
	simUnitTime = time.Millisecond // disk time per step: full speed is 1 MB/s
	simInterval = 100 * time.Millisecond
	simMin      = 20_000 // B/s
	simMax      = 400_000
)

func newPacerSim(t *testing.T, cfg PacerConfig, signals PacerSignals) *pacerSim {
	t.Helper()
	clock := NewManualClock(epoch)
	ctx, cancel := context.WithCancel(context.Background())
	s := &pacerSim{t: t, clock: clock, p: NewPacer(cfg, WithClock(clock)), ctx: ctx, cancel: cancel}
	s.wg.Go(func() { s.p.Run(ctx, signals) })
	t.Cleanup(func() {
		s.cancel()
		s.wg.Wait()
	})
	return s
}

func simConfig() PacerConfig {
	return PacerConfig{MinBytesPerSec: simMin, MaxBytesPerSec: simMax, Interval: simInterval}
}

// job starts the background job: wait for a unit, then spend its disk time.
func (s *pacerSim) job() {
	s.wg.Go(func() {
		for {
			if err := s.p.Wait(s.ctx, simUnit); err != nil {
				return
			}
			timer := s.clock.NewTimer(simUnitTime)
			select {
			case <-timer.C():
				s.done.Add(simUnit)
			case <-s.ctx.Done():
				timer.Stop()
				return
			}
		}
	})
}

func (s *pacerSim) runFor(d time.Duration) { runClock(s.clock, d) }

// runUntil advances interval by interval until cond holds, and returns the
// simulated time it took; it fails after limit.
func (s *pacerSim) runUntil(what string, limit time.Duration, cond func(PaceStatus) bool) time.Duration {
	s.t.Helper()
	start := s.clock.Now()
	for !cond(s.p.Status()) {
		if s.clock.Now().Sub(start) >= limit {
			s.t.Fatalf("%s: not within %v; status %+v", what, limit, s.p.Status())
		}
		s.runFor(simInterval / 10)
	}
	return s.clock.Now().Sub(start)
}

func unpaced(st PaceStatus) bool { return st.BytesPerSec == 0 }
func atMinimum(st PaceStatus) bool {
	return st.BytesPerSec == simMin
}

// TestPacerFollowsClients: clients arrive, the background rate falls to
// the minimum within one interval and keeps it while they stay; clients
// go, it climbs back to full speed within the documented number of
// intervals.
func TestPacerFollowsClients(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newPacerSim(t, simConfig(), PacerSignals{})
		s.job()

		// Idle: full speed (1 MB/s of simulated disk).
		s.runFor(time.Second)
		if st := s.p.Status(); !unpaced(st) || st.Reason != ReasonIdle {
			t.Fatalf("idle: status %+v, want unpaced, %s", st, ReasonIdle)
		}
		assertBetween(t, "idle work in 1s", s.done.Load(), 950_000, 1_000_000)

		// Sustained client load.
		doneClient := s.p.Foreground()
		fall := s.runUntil("rate falls to the minimum", 2*simInterval, atMinimum)
		if st := s.p.Status(); st.Reason != ReasonClientsBusy || st.ClientsInFlight != 1 {
			t.Errorf("under load: status %+v, want %s with 1 in flight", st, ReasonClientsBusy)
		}
		t.Logf("fell to the minimum in %v", fall)

		// The minimum is kept, and not exceeded, for as long as clients stay.
		const hold = 5 * time.Second
		before := s.done.Load()
		s.runFor(hold)
		burst := int64(simMin * simInterval / time.Second)
		minimum := int64(simMin * hold / time.Second)
		assertBetween(t, "work under sustained load", s.done.Load()-before, minimum-burst-simUnit, minimum+burst+simUnit)
		if st := s.p.Status(); !atMinimum(st) {
			t.Fatalf("after %v of load: status %+v, want the minimum", hold, st)
		}

		// Clients go: back to full speed within ceil(log2(max/min))+2
		// intervals: 20 KB/s doubles five times past 400 KB/s, and the
		// interval in which they left may still count as busy.
		doneClient()
		rise := s.runUntil("rate rises to full speed", 7*simInterval, unpaced)
		t.Logf("back to full speed in %v", rise)
		before = s.done.Load()
		s.runFor(time.Second)
		assertBetween(t, "work after clients left", s.done.Load()-before, 950_000, 1_000_000)
		if st := s.p.Status(); st.ThrottledTime < hold || st.ThrottledTime > hold+2*time.Second {
			t.Errorf("throttled time %v, want about the %v of load", st.ThrottledTime, hold)
		}
	})
}

// TestPacerReasons: each signal alone moves the rate to the minimum and
// names itself; light client load does not.
func TestPacerReasons(t *testing.T) {
	tests := []struct {
		name string
		// load runs during one interval; it may set the signals' values.
		load       func(s *pacerSim, sig *fakeSignals)
		wantReason PaceReason
		wantMin    bool
	}{
		{"idle", func(s *pacerSim, _ *fakeSignals) { s.runFor(simInterval) }, ReasonIdle, false},
		{"client busy half the time", func(s *pacerSim, _ *fakeSignals) {
			done := s.p.Foreground()
			s.runFor(simInterval / 2)
			done()
			s.runFor(simInterval / 2)
		}, ReasonClientsBusy, true},
		{"client busy 1% of the time", func(s *pacerSim, _ *fakeSignals) {
			done := s.p.Foreground()
			s.runFor(simInterval / 100)
			done()
			s.runFor(simInterval * 99 / 100)
		}, ReasonIdle, false},
		{"client queued at the limiter", func(s *pacerSim, _ *fakeSignals) {
			s.p.noteQueued(time.Microsecond)
			s.runFor(simInterval)
		}, ReasonQueued, true},
		{"slow fsyncs with a client present", func(s *pacerSim, sig *fakeSignals) {
			done := s.p.Foreground()
			s.runFor(simInterval / 100)
			done()
			sig.fsyncs.Add(2)
			sig.fsyncNs.Add(int64(2 * (DefaultFsyncTarget + time.Millisecond)))
			s.runFor(simInterval * 99 / 100)
		}, ReasonFsync, true},
		{"slow fsyncs of background work alone", func(s *pacerSim, sig *fakeSignals) {
			sig.fsyncs.Add(2)
			sig.fsyncNs.Add(int64(2 * (DefaultFsyncTarget + time.Millisecond)))
			s.runFor(simInterval)
		}, ReasonIdle, false},
		{"urgent beats busy clients", func(s *pacerSim, sig *fakeSignals) {
			sig.urgent.Store(true)
			done := s.p.Foreground()
			s.runFor(simInterval)
			done()
		}, ReasonUrgent, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				sig := &fakeSignals{}
				s := newPacerSim(t, simConfig(), sig.signals())
				s.job()
				s.runFor(simInterval) // one idle interval first
				tt.load(s, sig)
				st := s.p.Status()
				if st.Reason != tt.wantReason || atMinimum(st) != tt.wantMin || !tt.wantMin && !unpaced(st) {
					t.Errorf("status %+v, want reason %s, at minimum %v", st, tt.wantReason, tt.wantMin)
				}
			})
		})
	}
}

type fakeSignals struct {
	fsyncs, fsyncNs atomic.Int64
	urgent          atomic.Bool
}

func (f *fakeSignals) signals() PacerSignals {
	return PacerSignals{
		Fsyncs: func() (int64, time.Duration) { return f.fsyncs.Load(), time.Duration(f.fsyncNs.Load()) },
		Urgent: f.urgent.Load,
	}
}

// TestPacerUnderLimiter: segment I/O at background priority passes the
// pacer (reads and writes alike), foreground I/O does not, and a client's
// wait at the limiter counts as queueing.
func TestPacerUnderLimiter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clock := NewManualClock(epoch)
		p := NewPacer(simConfig(), WithClock(clock))
		lim := New(Limits{ReadBytesPerSec: 1000}, WithClock(clock), WithBurst(100), WithPacer(p))
		if lim.Pacer() != p {
			t.Fatal("Limiter.Pacer() is not the pacer given")
		}
		bg := WithPriority(context.Background(), Background)
		if err := lim.WaitWrite(bg, 5000); err != nil {
			t.Fatal(err)
		}
		if err := lim.WaitWrite(context.Background(), 7000); err != nil {
			t.Fatal(err)
		}
		if got := p.Status().Work; got != 5000 {
			t.Errorf("pacer work = %d, want the 5000 background bytes only", got)
		}
		// A foreground read over the burst waits: the pacer hears of it.
		done := waitResult(func() error { return lim.WaitRead(context.Background(), 300) })
		synctest.Wait()
		for next, ok := clock.Next(); ok; next, ok = clock.Next() {
			clock.AdvanceTo(next)
			synctest.Wait()
		}
		assertReturned(t, "foreground read", done, nil)
		p.mu.Lock()
		queued := p.queued
		p.mu.Unlock()
		if queued != 200*time.Millisecond {
			t.Errorf("queued = %v, want the 200ms the read waited", queued)
		}
	})
}

// TestPacerCancel: a waiting background caller returns ctx.Err() at once.
func TestPacerCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newPacerSim(t, simConfig(), PacerSignals{})
		done := s.p.Foreground()
		defer done()
		s.runFor(simInterval) // now at the minimum: 2000 bytes a piece
		ctx, cancel := context.WithCancel(context.Background())
		res := waitResult(func() error { return s.p.Wait(ctx, 1<<20) })
		assertPending(t, "1 MiB at the minimum", res)
		cancel()
		assertReturned(t, "cancelled wait", res, context.Canceled)
	})
}

func TestNilPacer(t *testing.T) {
	var p *Pacer
	p.Foreground()()
	p.noteQueued(time.Second)
	p.Run(context.Background(), PacerSignals{})
	if err := p.Wait(context.Background(), 1<<30); err != nil {
		t.Errorf("nil Wait = %v", err)
	}
	if st := p.Status(); st != (PaceStatus{}) {
		t.Errorf("nil Status = %+v", st)
	}
	if (*Limiter)(nil).Pacer() != nil {
		t.Error("nil limiter has a pacer")
	}
}

func TestPaceStatusString(t *testing.T) {
	tests := []struct {
		st   PaceStatus
		want string
	}{
		{PaceStatus{Reason: ReasonIdle}, "full speed, clients-idle; clients: 0 in flight, busy 0%, queued 0%, fsync 0s"},
		{PaceStatus{BytesPerSec: 8 << 20, MinBytesPerSec: 8 << 20, Reason: ReasonClientsBusy, ClientsInFlight: 8, ClientUtilization: 1, FsyncMean: 1500 * time.Microsecond},
			"8.0 MiB/s (minimum), clients-busy; clients: 8 in flight, busy 100%, queued 0%, fsync 1.5ms"},
	}
	for _, tt := range tests {
		if got := tt.st.String(); got != tt.want {
			t.Errorf("String() = %q, want %q", got, tt.want)
		}
	}
}

// TestPacerIdle: a request Handler serves counts as client load, except
// between Idle and resume; Idle outside Handler does nothing.
func TestPacerIdle(t *testing.T) {
	p := NewPacer(PacerConfig{})
	var seen []int
	inFlight := func() { seen = append(seen, p.Status().ClientsInFlight) }
	h := p.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		inFlight()
		resume := Idle(r.Context())
		inFlight()
		resume()
		inFlight()
	}))
	srv := httptest.NewServer(h)
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	inFlight()
	Idle(context.Background())()
	inFlight()
	if want := []int{1, 0, 1, 0, 0}; !slices.Equal(seen, want) {
		t.Fatalf("clients in flight %v, want %v", seen, want)
	}
}
