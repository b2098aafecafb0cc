package iolimit

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"
)

// Limits are the byte rates a Limiter enforces. Zero means unlimited.
type Limits struct {
	// ReadBytesPerSec and WriteBytesPerSec are the whole disk budget of a
	// direction, shared by foreground and background.
	ReadBytesPerSec, WriteBytesPerSec int64
	// BackgroundReadBytesPerSec and BackgroundWriteBytesPerSec cap
	// background I/O within the total; zero means no separate cap
	// (background may then use all the total foreground leaves).
	BackgroundReadBytesPerSec, BackgroundWriteBytesPerSec int64
}

// Validate reports a negative rate. New and SetLimits treat a negative
// rate as zero (unlimited); configuration parsing should call Validate.
func (l Limits) Validate() error {
	var errs []error
	for _, f := range []struct {
		name string
		v    int64
	}{
		{"read bytes/s", l.ReadBytesPerSec},
		{"write bytes/s", l.WriteBytesPerSec},
		{"background read bytes/s", l.BackgroundReadBytesPerSec},
		{"background write bytes/s", l.BackgroundWriteBytesPerSec},
	} {
		if f.v < 0 {
			errs = append(errs, fmt.Errorf("iolimit: %s is %d, want >= 0 (0 = unlimited)", f.name, f.v))
		}
	}
	return errors.Join(errs...)
}

func (l Limits) normalised() Limits {
	for _, v := range []*int64{&l.ReadBytesPerSec, &l.WriteBytesPerSec,
		&l.BackgroundReadBytesPerSec, &l.BackgroundWriteBytesPerSec} {
		*v = max(*v, 0)
	}
	return l
}

// rates returns the total and background rate of direction d.
func (l Limits) rates(d Direction) (total, background int64) {
	if d == Read {
		return l.ReadBytesPerSec, l.BackgroundReadBytesPerSec
	}
	return l.WriteBytesPerSec, l.BackgroundWriteBytesPerSec
}

// Burst defaults: a bucket holds DefaultBurstWindow worth of its rate,
// and never less than MinBurst bytes.
const (
	DefaultBurstWindow = 100 * time.Millisecond
	MinBurst           = 4 << 10
)

// Option configures New.
type Option func(*options)

type options struct {
	clock Clock
	burst int64
	pacer *Pacer
}

// WithClock makes the limiter read time from c (default: the real clock).
func WithClock(c Clock) Option { return func(o *options) { o.clock = c } }

// WithBurst fixes the bucket size, in bytes, of every bucket: the most a
// single piece may grant at once and the most an idle limiter lets through
// without waiting. bytes <= 0 keeps the default (DefaultBurstWindow of the
// rate, at least MinBurst).
func WithBurst(bytes int64) Option { return func(o *options) { o.burst = bytes } }

// WithPacer makes every background call pass through p first (read and
// write bytes alike count as background work), and reports client waits
// at the limiter to p as queueing.
func WithPacer(p *Pacer) Option { return func(o *options) { o.pacer = p } }

// Limiter rations disk bytes per direction, foreground before background.
// A nil *Limiter is valid and unlimited. See the package documentation.
type Limiter struct {
	clock      Clock
	fixedBurst int64
	pacer      *Pacer

	setMu    sync.Mutex // serialises SetLimits
	limits   atomic.Pointer[Limits]
	dirs     [numDirections]direction
	counters [numDirections][numPriorities]counters
}

// New returns a limiter enforcing l.
func New(l Limits, opts ...Option) *Limiter {
	o := options{clock: realClock{}}
	for _, opt := range opts {
		opt(&o)
	}
	lim := &Limiter{clock: o.clock, fixedBurst: o.burst, pacer: o.pacer}
	l = l.normalised()
	for d := range lim.dirs {
		total, background := l.rates(Direction(d))
		lim.dirs[d].init(
			rate.NewLimiter(limitOf(total), lim.burstOf(total)),
			rate.NewLimiter(limitOf(background), lim.burstOf(background)))
	}
	lim.limits.Store(&l)
	return lim
}

// limitOf maps a configured rate to a rate.Limit; 0 is rate.Inf.
func limitOf(bytesPerSec int64) rate.Limit {
	if bytesPerSec <= 0 {
		return rate.Inf
	}
	return rate.Limit(bytesPerSec)
}

func (l *Limiter) burstOf(bytesPerSec int64) int {
	b := l.fixedBurst
	if b <= 0 {
		b = max(int64(float64(bytesPerSec)*DefaultBurstWindow.Seconds()), MinBurst)
	}
	return int(min(b, math.MaxInt32))
}

// WaitRead blocks until n bytes may be read at the priority carried by ctx
// (PriorityFrom). See Wait.
func (l *Limiter) WaitRead(ctx context.Context, n int) error { return l.Wait(ctx, Read, n) }

// WaitWrite blocks until n bytes may be written at the priority carried by
// ctx (PriorityFrom). See Wait.
func (l *Limiter) WaitWrite(ctx context.Context, n int) error { return l.Wait(ctx, Write, n) }

// Wait blocks until n bytes in direction dir are covered by tokens, taking
// them in pieces no larger than the burst. It returns nil once all n bytes
// are granted, or ctx.Err() (unwrapped) as soon as ctx is done; the pieces
// granted before that stay spent, the one being waited for is given back.
//
// An unlimited call (nil limiter, n <= 0, or no rate applying to the
// priority) never blocks and returns nil without looking at ctx. A
// background call first waits for the pacer, if the limiter has one
// (WithPacer), and returns ctx.Err() if ctx ends there.
func (l *Limiter) Wait(ctx context.Context, dir Direction, n int) error {
	if l == nil || n <= 0 {
		return nil
	}
	if dir != Read && dir != Write {
		return fmt.Errorf("iolimit: wait for %d bytes: unknown %v", n, dir)
	}
	prio := PriorityFrom(ctx)
	if prio != Foreground {
		prio = Background
	}
	c := &l.counters[dir][prio]
	var start time.Time
	var paced bool
	if prio == Background && l.pacer != nil {
		start = l.clock.Now()
		var err error
		if paced, err = l.pacer.wait(ctx, n); err != nil {
			l.noteWait(c, start, paced)
			return err
		}
	}
	total, background := l.limits.Load().rates(dir)
	if total == 0 && (prio == Foreground || background == 0) {
		c.bytes.Add(int64(n))
		l.noteWait(c, start, paced)
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	d := &l.dirs[dir]
	if start.IsZero() {
		start = l.clock.Now()
	}
	var waited bool
	var err error
	if prio == Foreground {
		waited, err = d.waitForeground(ctx, l.clock, n, c)
		if waited {
			l.pacer.noteQueued(l.clock.Now().Sub(start))
		}
	} else {
		waited, err = d.waitBackground(ctx, l.clock, n, c)
	}
	l.noteWait(c, start, waited || paced)
	// err is ctx.Err() itself, unwrapped: the caller knows which transfer
	// was abandoned and wraps it with that context.
	return err
}

// noteWait counts a call that waited (in the pacer or the buckets).
func (l *Limiter) noteWait(c *counters, start time.Time, waited bool) {
	if waited {
		c.waits.Add(1)
		c.waitNanos.Add(int64(l.clock.Now().Sub(start)))
	}
}

// Pacer returns the pacer given WithPacer (nil if none; a nil limiter
// has none).
func (l *Limiter) Pacer() *Pacer {
	if l == nil {
		return nil
	}
	return l.pacer
}

// SetLimits replaces the limits. Callers already waiting pick up the new
// rates at once: a waiter's remaining debt is repaid at the new rate.
func (l *Limiter) SetLimits(limits Limits) {
	if l == nil {
		return
	}
	l.setMu.Lock()
	defer l.setMu.Unlock()
	limits = limits.normalised()
	for d := range l.dirs {
		total, background := limits.rates(Direction(d))
		l.dirs[d].setRates(l.clock.Now(),
			limitOf(total), l.burstOf(total),
			limitOf(background), l.burstOf(background))
	}
	l.limits.Store(&limits)
}

// Limits returns the limits in force (zero for a nil limiter).
func (l *Limiter) Limits() Limits {
	if l == nil {
		return Limits{}
	}
	return *l.limits.Load()
}

// counters are one class's (direction × priority) running totals.
type counters struct {
	bytes     atomic.Int64
	waits     atomic.Int64
	waitNanos atomic.Int64
}

// Counters are the running totals of one direction × priority class.
type Counters struct {
	Bytes    int64         // bytes granted (a cancelled call counts the pieces it got)
	Waits    int64         // calls that had to wait at least once
	WaitTime time.Duration // time those calls spent in Wait, by the limiter's clock, summed over concurrent calls
}

// ByPriority holds one direction's counters.
type ByPriority struct {
	Foreground, Background Counters
}

// Stats is a snapshot of a limiter's counters since New.
type Stats struct {
	Read, Write ByPriority
}

// Get returns the counters of one class.
func (s Stats) Get(d Direction, p Priority) Counters {
	bp := &s.Read
	if d == Write {
		bp = &s.Write
	}
	if p == Foreground {
		return bp.Foreground
	}
	return bp.Background
}

// Stats returns a snapshot of the counters (zero for a nil limiter).
func (l *Limiter) Stats() Stats {
	if l == nil {
		return Stats{}
	}
	load := func(d Direction, p Priority) Counters {
		c := &l.counters[d][p]
		return Counters{
			Bytes:    c.bytes.Load(),
			Waits:    c.waits.Load(),
			WaitTime: time.Duration(c.waitNanos.Load()),
		}
	}
	return Stats{
		Read:  ByPriority{Foreground: load(Read, Foreground), Background: load(Read, Background)},
		Write: ByPriority{Foreground: load(Write, Foreground), Background: load(Write, Background)},
	}
}
