package iolimit

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"
)

// Pacer defaults. DefaultPaceMin is the floor background work keeps under
// sustained client load, 28 GiB of work an hour: vacuum, which reads a
// segment and then reads and writes its live part, frees at least half
// of that (4 MiB/s) from segments at the default dead threshold of 0.5.
const (
	DefaultPaceMin         = 8 << 20
	DefaultPaceMax         = 1 << 30
	DefaultPaceInterval    = 100 * time.Millisecond
	DefaultBusyUtilization = 0.05
	DefaultFsyncTarget     = 20 * time.Millisecond
)

// PacerConfig tunes a Pacer. Zero values pick the defaults.
type PacerConfig struct {
	// MinBytesPerSec is the floor of the background rate: under any client
	// load background work still gets this much (default DefaultPaceMin).
	MinBytesPerSec int64
	// MaxBytesPerSec is where a rising rate stops being a rate: past it
	// background runs unpaced, at full speed (default DefaultPaceMax).
	MaxBytesPerSec int64
	// Interval is how often the controller looks at what clients
	// experience and retunes the rate (default DefaultPaceInterval).
	Interval time.Duration
	// BusyUtilization: clients are busy when foreground requests were in
	// flight for at least this fraction of an interval (default
	// DefaultBusyUtilization).
	BusyUtilization float64
	// FsyncTarget: with clients present, a mean segment fsync latency
	// above it over an interval is pressure (default DefaultFsyncTarget).
	FsyncTarget time.Duration
	// Off disables pacing: background runs at full speed whatever clients
	// do (only the Limits caps apply). Status still reports client load.
	Off bool
}

func (c PacerConfig) withDefaults() PacerConfig {
	if c.MinBytesPerSec <= 0 {
		c.MinBytesPerSec = DefaultPaceMin
	}
	if c.MaxBytesPerSec <= 0 {
		c.MaxBytesPerSec = DefaultPaceMax
	}
	c.MaxBytesPerSec = max(c.MaxBytesPerSec, c.MinBytesPerSec)
	if c.Interval <= 0 {
		c.Interval = DefaultPaceInterval
	}
	if c.BusyUtilization <= 0 {
		c.BusyUtilization = DefaultBusyUtilization
	}
	if c.FsyncTarget <= 0 {
		c.FsyncTarget = DefaultFsyncTarget
	}
	return c
}

// PaceReason says why the background rate is what it is.
type PaceReason string

// The reasons, in the order the controller checks them.
const (
	ReasonOff         PaceReason = "pacing-off"      // PacerConfig.Off: full speed
	ReasonUrgent      PaceReason = "urgent"          // PacerSignals.Urgent (free space low): full speed
	ReasonClientsBusy PaceReason = "clients-busy"    // requests in flight >= BusyUtilization of the interval
	ReasonQueued      PaceReason = "clients-queued"  // client I/O waited at the limiter
	ReasonFsync       PaceReason = "fsync-latency"   // mean fsync latency above FsyncTarget, clients present
	ReasonRising      PaceReason = "clients-left"    // pressure gone: rate doubling back to full speed
	ReasonIdle        PaceReason = "clients-idle"    // full speed
	ReasonNotRunning  PaceReason = "controller-idle" // Run not called: full speed
)

// PaceReasons lists every reason (a metrics label set).
var PaceReasons = []PaceReason{ReasonOff, ReasonUrgent, ReasonClientsBusy, ReasonQueued, ReasonFsync,
	ReasonRising, ReasonIdle, ReasonNotRunning}

// PacerSignals are the measurements the controller reads besides its own
// (client requests in flight, client waits at the limiter). Nil fields
// are not consulted.
type PacerSignals struct {
	// Fsyncs returns the running count and total latency of segment
	// fsyncs (the group commits clients wait for).
	Fsyncs func() (count int64, total time.Duration)
	// Urgent reports that background work must not be held back, e.g.
	// free space is close to the reserve and only vacuum can make more.
	Urgent func() bool
}

// PaceStatus is a snapshot of a Pacer.
type PaceStatus struct {
	// BytesPerSec is the background rate now; 0 means unpaced (full speed).
	BytesPerSec    int64
	Reason         PaceReason
	MinBytesPerSec int64
	// ClientsInFlight is the number of foreground requests in flight now;
	// ClientUtilization the fraction of the last interval with at least
	// one; ClientQueued the fraction of it clients spent waiting at the
	// limiter (summed over callers); FsyncMean the mean segment fsync
	// latency over it (0: no fsync).
	ClientsInFlight   int
	ClientUtilization float64
	ClientQueued      float64
	FsyncMean         time.Duration
	// Work counts background work granted (bytes); WaitTime the time
	// background callers spent waiting for it; ThrottledTime the time
	// the rate was below full speed, since NewPacer.
	Work          int64
	WaitTime      time.Duration
	ThrottledTime time.Duration
}

// Pacer decides how fast background work (vacuum, lifecycle deletes,
// replica catch-up) may go, from what clients experience. See the package
// documentation. A nil *Pacer is valid and never waits.
type Pacer struct {
	cfg   PacerConfig
	clock Clock

	// turn (capacity 1) lets one background caller at a time take work
	// from bucket; the others queue in arrival order. Nobody reserves
	// ahead, so a rate change applies to the next piece of every caller.
	turn chan struct{}

	mu sync.Mutex
	// bucket holds the paced rate; rate.Inf when unpaced. Retuned only by
	// the controller, under mu.
	bucket *rate.Limiter
	reason PaceReason

	// Client load since the last tick, under mu.
	inFlight    int
	busySince   time.Time     // when inFlight last went from 0 to 1
	busy        time.Duration // closed busy spans since the last tick
	queued      time.Duration // client limiter waits since the last tick
	lastTick    time.Time
	lastFsyncs  int64
	lastFsyncNs time.Duration
	throttled   time.Duration

	// The last tick's figures, for Status, under mu.
	utilization, queuedFrac float64
	fsyncMean               time.Duration

	work     atomic.Int64
	waitTime atomic.Int64
}

// NewPacer returns a pacer that lets background work run at full speed
// until Run starts its controller.
func NewPacer(cfg PacerConfig, opts ...Option) *Pacer {
	o := options{clock: realClock{}}
	for _, opt := range opts {
		opt(&o)
	}
	cfg = cfg.withDefaults()
	p := &Pacer{
		cfg:    cfg,
		clock:  o.clock,
		turn:   make(chan struct{}, 1),
		bucket: rate.NewLimiter(rate.Inf, 0),
		reason: ReasonNotRunning,
	}
	if cfg.Off {
		p.reason = ReasonOff
	}
	p.lastTick = p.clock.Now()
	return p
}

// Foreground records a client request in flight until the returned
// function is called (once). Call it for every request, at its start.
func (p *Pacer) Foreground() (done func()) {
	if p == nil {
		return func() {}
	}
	p.mu.Lock()
	if p.inFlight == 0 {
		p.busySince = p.clock.Now()
	}
	p.inFlight++
	p.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			p.mu.Lock()
			p.inFlight--
			if p.inFlight == 0 {
				p.busy += p.clock.Now().Sub(maxTime(p.busySince, p.lastTick))
			}
			p.mu.Unlock()
		})
	}
}

// noteQueued records d of client waiting at the limiter.
func (p *Pacer) noteQueued(d time.Duration) {
	if p == nil || d <= 0 {
		return
	}
	p.mu.Lock()
	p.queued += d
	p.mu.Unlock()
}

// Wait blocks until n bytes of background work may be done, and returns
// nil, or ctx.Err() as soon as ctx is done (pieces granted before stay
// spent). Background jobs call it for work the limiter does not see (a
// metadata delete, say); segment I/O at Background priority passes
// through it already when the Limiter was built WithPacer.
//
// Work is granted one caller at a time, in pieces of at most one interval
// of the current rate, and a waiter re-plans at least once an interval: a
// fall in the rate holds background back within one interval, a rise
// speeds it up within one.
func (p *Pacer) Wait(ctx context.Context, n int) error {
	_, err := p.wait(ctx, n)
	return err
}

func (p *Pacer) wait(ctx context.Context, n int) (waited bool, err error) {
	if p == nil || n <= 0 {
		return false, nil
	}
	start := p.clock.Now()
	defer func() {
		if waited {
			p.waitTime.Add(int64(p.clock.Now().Sub(start)))
		}
	}()
	return inTurns(ctx, p.turn, n, func(remaining int) (int, bool, error) {
		piece, waited, err := p.takePiece(ctx, remaining)
		if err == nil {
			p.work.Add(int64(piece))
		}
		return piece, waited, err
	})
}

// takePiece blocks until bucket holds a piece of remaining and takes it.
// The caller holds the turn.
func (p *Pacer) takePiece(ctx context.Context, remaining int) (piece int, waited bool, err error) {
	for {
		p.mu.Lock()
		now := p.clock.Now()
		if p.bucket.Limit() == rate.Inf {
			p.mu.Unlock()
			return remaining, waited, nil
		}
		piece = min(remaining, p.bucket.Burst())
		wait := timeToTokens(p.bucket, now, piece)
		if wait == 0 {
			p.bucket.ReserveN(now, piece) // due now: tokens are there
			p.mu.Unlock()
			return piece, waited, nil
		}
		p.mu.Unlock()
		waited = true
		timer := p.clock.NewTimer(min(wait, p.cfg.Interval))
		select {
		case <-timer.C():
		case <-ctx.Done():
			timer.Stop()
			return 0, waited, ctx.Err()
		}
	}
}

// Handler counts every request h serves as client load, from its first
// byte in to its last byte out, except while it is Idle.
func (p *Pacer) Handler(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f := &foreground{pacer: p, done: p.Foreground()}
		defer func() { f.done() }()
		h.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), foregroundKey{}, f)))
	})
}

// foreground is a request Handler counts; done ends the count in force.
// Only the request's own goroutine touches it.
type foreground struct {
	pacer *Pacer
	done  func()
}

type foregroundKey struct{}

// Idle takes the request of ctx (one Handler serves) out of the client
// load until resume is called: a request that waits for something other
// than this node's disks, such as a playlist request held until an
// encoder's next write, is no load the background should give way to.
// Call both from the request's goroutine; outside Handler they do
// nothing.
func Idle(ctx context.Context) (resume func()) {
	f, _ := ctx.Value(foregroundKey{}).(*foreground)
	if f == nil {
		return func() {}
	}
	f.done()
	return func() { f.done = f.pacer.Foreground() }
}

// Run drives the controller every Interval until ctx is done. Without Run
// the pacer never slows background work down.
func (p *Pacer) Run(ctx context.Context, signals PacerSignals) {
	if p == nil {
		return
	}
	p.mu.Lock()
	p.lastTick = p.clock.Now()
	if signals.Fsyncs != nil {
		p.lastFsyncs, p.lastFsyncNs = signals.Fsyncs()
	}
	if !p.cfg.Off {
		p.reason = ReasonIdle
	}
	p.mu.Unlock()
	for {
		timer := p.clock.NewTimer(p.cfg.Interval)
		select {
		case <-timer.C():
			p.tick(signals)
		case <-ctx.Done():
			timer.Stop()
			p.mu.Lock()
			p.setRateLocked(p.clock.Now(), rate.Inf)
			p.reason = ReasonNotRunning
			if p.cfg.Off {
				p.reason = ReasonOff
			}
			p.mu.Unlock()
			return
		}
	}
}

// tick measures the interval that just ended and retunes the rate:
//
//	off or urgent          -> unpaced
//	pressure (clients busy,  -> the minimum
//	  queued, slow fsyncs)
//	no pressure            -> double the rate; past the maximum, unpaced
//
// so background falls to its minimum within one interval of client demand
// appearing (plus the piece a caller already holds), and is back to full
// speed within ceil(log2(max/min))+2 intervals of it going (the first may
// still see it).
func (p *Pacer) tick(signals PacerSignals) {
	urgent := signals.Urgent != nil && signals.Urgent()
	var fsyncs int64
	var fsyncNs time.Duration
	if signals.Fsyncs != nil {
		fsyncs, fsyncNs = signals.Fsyncs()
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.clock.Now()
	window := now.Sub(p.lastTick)
	if window <= 0 {
		return
	}
	busy := p.busy
	if p.inFlight > 0 {
		busy += now.Sub(maxTime(p.busySince, p.lastTick))
	}
	p.utilization = min(1, float64(busy)/float64(window))
	p.queuedFrac = float64(p.queued) / float64(window)
	p.fsyncMean = 0
	if n := fsyncs - p.lastFsyncs; n > 0 {
		p.fsyncMean = (fsyncNs - p.lastFsyncNs) / time.Duration(n)
	}
	if p.bucket.Limit() != rate.Inf {
		p.throttled += window
	}
	p.busy, p.queued, p.lastTick = 0, 0, now
	p.lastFsyncs, p.lastFsyncNs = fsyncs, fsyncNs

	var pressure PaceReason
	switch {
	case p.utilization >= p.cfg.BusyUtilization:
		pressure = ReasonClientsBusy
	case p.queuedFrac > 0:
		pressure = ReasonQueued
	case p.utilization > 0 && p.fsyncMean > p.cfg.FsyncTarget:
		pressure = ReasonFsync
	}
	minRate, maxRate := float64(p.cfg.MinBytesPerSec), float64(p.cfg.MaxBytesPerSec)
	cur := p.bucket.Limit()
	switch {
	case p.cfg.Off:
		p.reason = ReasonOff
		p.setRateLocked(now, rate.Inf)
	case urgent:
		p.reason = ReasonUrgent
		p.setRateLocked(now, rate.Inf)
	case pressure != "":
		p.reason = pressure
		p.setRateLocked(now, rate.Limit(minRate))
	case cur == rate.Inf:
		p.reason = ReasonIdle
	default:
		next := float64(cur) * 2
		if next > maxRate {
			p.reason = ReasonIdle
			p.setRateLocked(now, rate.Inf)
		} else {
			p.reason = ReasonRising
			p.setRateLocked(now, rate.Limit(next))
		}
	}
}

// setRateLocked retunes bucket to r with a burst of one interval of it.
func (p *Pacer) setRateLocked(now time.Time, r rate.Limit) {
	burst := 0
	if r != rate.Inf {
		burst = int(min(max(float64(r)*p.cfg.Interval.Seconds(), MinBurst), math.MaxInt32))
	}
	p.bucket.SetLimitAt(now, r)
	p.bucket.SetBurstAt(now, burst)
}

// Status returns a snapshot (zero for a nil pacer).
func (p *Pacer) Status() PaceStatus {
	if p == nil {
		return PaceStatus{}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	st := PaceStatus{
		Reason:            p.reason,
		MinBytesPerSec:    p.cfg.MinBytesPerSec,
		ClientsInFlight:   p.inFlight,
		ClientUtilization: p.utilization,
		ClientQueued:      p.queuedFrac,
		FsyncMean:         p.fsyncMean,
		Work:              p.work.Load(),
		WaitTime:          time.Duration(p.waitTime.Load()),
		ThrottledTime:     p.throttled,
	}
	if l := p.bucket.Limit(); l != rate.Inf {
		st.BytesPerSec = int64(l)
	}
	return st
}

// String renders the status for an operator: rate, reason, client load.
func (s PaceStatus) String() string {
	r := "full speed"
	if s.BytesPerSec > 0 {
		r = fmt.Sprintf("%.1f MiB/s", float64(s.BytesPerSec)/(1<<20))
		if s.BytesPerSec <= s.MinBytesPerSec {
			r += " (minimum)"
		}
	}
	return fmt.Sprintf("%s, %s; clients: %d in flight, busy %.0f%%, queued %.0f%%, fsync %v",
		r, s.Reason, s.ClientsInFlight, 100*s.ClientUtilization, 100*s.ClientQueued, s.FsyncMean.Round(time.Microsecond))
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
