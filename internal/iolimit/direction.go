package iolimit

import (
	"context"
	"fmt"
	"math"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// direction schedules one direction (read or write) of one limiter.
//
// Foreground takes tokens from total by reservation, so concurrent
// foreground callers are served in arrival order and a piece may be
// reserved ahead (the bucket goes negative; the caller sleeps the debt).
// Background never reserves ahead: it takes a piece only when
//
//	foregroundActive == 0
//	&& total holds >= piece + headroom tokens now   (headroom = burst/2)
//	&& background holds >= piece tokens now
//
// so background never pushes a foreground reservation later, and a
// foreground caller arriving after background activity still finds
// headroom tokens ready. (A waiting foreground reservation has already
// driven total below zero, so the bucket alone would refuse background;
// the foregroundActive gate states the rule outright and parks background
// on a channel instead of letting it poll timers while foreground waits.)
type direction struct {
	mu sync.Mutex

	// total is the direction's whole budget, background its cap. Both are
	// rate.Inf when unlimited. The pointers never change; SetLimits
	// retunes them in place so that outstanding debt carries over.
	total, background *rate.Limiter

	// foregroundActive counts foreground calls inside waitForeground.
	// Invariant: while it is > 0 no background piece is granted.
	foregroundActive int
	// backgroundParked counts background waiters blocked until
	// foregroundActive drops to 0; only then is a drain worth announcing.
	backgroundParked int
	// changed is closed (and replaced) when the rates change or foreground
	// drains while background is parked: waiters then re-plan.
	changed chan struct{}

	// backgroundTurn (capacity 1) lets one background piece at a time
	// compete for tokens; the others queue in arrival order (Go channels
	// wake blocked senders FIFO) instead of stampeding on every wake-up.
	backgroundTurn chan struct{}
}

func (d *direction) init(total, background *rate.Limiter) {
	d.total, d.background = total, background
	d.changed = make(chan struct{})
	d.backgroundTurn = make(chan struct{}, 1)
}

// broadcastLocked wakes every waiter so it re-plans. d.mu must be held.
func (d *direction) broadcastLocked() {
	close(d.changed)
	d.changed = make(chan struct{})
}

// setRates retunes both buckets at now. Tokens (and debt) accrued under
// the old rate are kept; what is owed is repaid at the new rate.
func (d *direction) setRates(now time.Time, total rate.Limit, totalBurst int, background rate.Limit, backgroundBurst int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.total.SetLimitAt(now, total)
	d.total.SetBurstAt(now, totalBurst)
	d.background.SetLimitAt(now, background)
	d.background.SetBurstAt(now, backgroundBurst)
	d.broadcastLocked()
}

// foregroundPieceLocked is the largest piece of remaining one foreground
// reservation may cover: the total burst (all of remaining if unlimited).
func (d *direction) foregroundPieceLocked(remaining int) int {
	if d.total.Limit() == rate.Inf {
		return remaining
	}
	return min(remaining, d.total.Burst())
}

// backgroundPieceLocked returns the largest piece of remaining one
// background grant may cover, and the headroom: the tokens background must
// leave in the total bucket for foreground. Background takes only tokens
// above half the total burst, so a foreground caller arriving after
// background activity finds half a burst ready and does not wait for it.
// piece+headroom <= total burst, or background could never be served.
func (d *direction) backgroundPieceLocked(remaining int) (piece, headroom int) {
	piece = remaining
	if d.total.Limit() != rate.Inf {
		burst := d.total.Burst()
		headroom = burst / 2
		piece = min(piece, burst-headroom)
	}
	if d.background.Limit() != rate.Inf {
		piece = min(piece, d.background.Burst())
	}
	return piece, headroom
}

// waitForeground grants n bytes piece by piece from the total bucket. It
// reports whether it had to wait.
func (d *direction) waitForeground(ctx context.Context, clock Clock, n int, c *counters) (waited bool, err error) {
	d.mu.Lock()
	d.foregroundActive++
	d.mu.Unlock()
	defer func() {
		d.mu.Lock()
		d.foregroundActive--
		if d.foregroundActive == 0 && d.backgroundParked > 0 {
			d.broadcastLocked()
		}
		d.mu.Unlock()
	}()

	for remaining := n; remaining > 0; {
		d.mu.Lock()
		now := clock.Now()
		piece := d.foregroundPieceLocked(remaining)
		res := d.total.ReserveN(now, piece)
		limit := d.total.Limit()
		changed := d.changed
		d.mu.Unlock()
		if !res.OK() { // cannot happen: piece <= burst under d.mu
			return waited, fmt.Errorf("iolimit: reserve %d bytes: exceeds burst", piece)
		}
		if delay := res.DelayFrom(now); delay > 0 {
			waited = true
			if err := d.awaitReservation(ctx, clock, res, now.Add(delay), limit, changed); err != nil {
				return waited, err
			}
		}
		c.bytes.Add(int64(piece))
		remaining -= piece
	}
	return waited, nil
}

// awaitReservation sleeps until due, the moment res's tokens are paid for
// at rate limit. When the rates change the remaining debt is re-timed at
// the new rate; when ctx is done the reservation is given back.
func (d *direction) awaitReservation(ctx context.Context, clock Clock, res *rate.Reservation,
	due time.Time, limit rate.Limit, changed <-chan struct{}) error {
	for {
		now := clock.Now()
		if !due.After(now) {
			return nil
		}
		timer := clock.NewTimer(due.Sub(now))
		select {
		case <-timer.C():
		case <-changed:
			timer.Stop()
			d.mu.Lock()
			newLimit := d.total.Limit()
			changed = d.changed
			d.mu.Unlock()
			due = retime(due, clock.Now(), limit, newLimit)
			limit = newLimit
		case <-ctx.Done():
			timer.Stop()
			res.CancelAt(clock.Now())
			return ctx.Err()
		}
	}
}

// retime moves a deadline set at rate from to the one the same remaining
// debt gives at rate to. It matches rate.Limiter.SetLimitAt, which keeps
// the bucket's (negative) token count and repays it at the new rate.
func retime(due, now time.Time, from, to rate.Limit) time.Time {
	remaining := due.Sub(now)
	if remaining <= 0 || from == to {
		return due
	}
	if to == rate.Inf || from == rate.Inf {
		return now
	}
	scaled := float64(remaining) * float64(from) / float64(to)
	return now.Add(time.Duration(min(scaled, math.MaxInt64/2)))
}

// waitBackground grants n bytes piece by piece, one queued caller at a
// time, taking only tokens foreground is not waiting for. It reports
// whether it had to wait.
func (d *direction) waitBackground(ctx context.Context, clock Clock, n int, c *counters) (waited bool, err error) {
	return inTurns(ctx, d.backgroundTurn, n, func(remaining int) (int, bool, error) {
		piece, waited, err := d.takeBackgroundPiece(ctx, clock, remaining)
		if err == nil {
			c.bytes.Add(int64(piece))
		}
		return piece, waited, err
	})
}

// inTurns grants n piece by piece, each taken by take while holding turn
// (a channel of capacity 1: callers queue for it in arrival order). It
// reports whether it waited for a turn or take did.
func inTurns(ctx context.Context, turn chan struct{}, n int, take func(remaining int) (piece int, waited bool, err error)) (waited bool, err error) {
	for remaining := n; remaining > 0; {
		select {
		case turn <- struct{}{}:
		default:
			waited = true
			select {
			case turn <- struct{}{}:
			case <-ctx.Done():
				return waited, ctx.Err()
			}
		}
		piece, pieceWaited, err := take(remaining)
		<-turn
		waited = waited || pieceWaited
		if err != nil {
			return waited, err
		}
		remaining -= piece
	}
	return waited, nil
}

// takeBackgroundPiece blocks until a piece of remaining can be granted to
// background and takes it. The caller holds the background turn.
func (d *direction) takeBackgroundPiece(ctx context.Context, clock Clock, remaining int) (piece int, waited bool, err error) {
	for {
		d.mu.Lock()
		now := clock.Now()
		var headroom int
		piece, headroom = d.backgroundPieceLocked(remaining)
		changed := d.changed
		if d.foregroundActive > 0 {
			d.backgroundParked++
			d.mu.Unlock()
			waited = true
			select {
			case <-changed:
			case <-ctx.Done():
				err = ctx.Err()
			}
			d.mu.Lock()
			d.backgroundParked--
			d.mu.Unlock()
			if err != nil {
				return 0, waited, err
			}
			continue
		}
		wait := max(timeToTokens(d.total, now, piece+headroom), timeToTokens(d.background, now, piece))
		if wait == 0 {
			// Both buckets hold the piece now (total with headroom to
			// spare): these reservations are due at once and so never
			// push a foreground one later.
			d.total.ReserveN(now, piece)
			d.background.ReserveN(now, piece)
			d.mu.Unlock()
			return piece, waited, nil
		}
		d.mu.Unlock()
		waited = true
		timer := clock.NewTimer(wait)
		select {
		case <-timer.C():
		case <-changed:
			timer.Stop()
		case <-ctx.Done():
			timer.Stop()
			return 0, waited, ctx.Err()
		}
	}
}

// timeToTokens returns how long until b holds piece tokens (0 if it does).
func timeToTokens(b *rate.Limiter, now time.Time, piece int) time.Duration {
	limit := b.Limit()
	if limit == rate.Inf {
		return 0
	}
	short := float64(piece) - b.TokensAt(now)
	if short <= 0 {
		return 0
	}
	// Rounded up so the waiter wakes with the piece in the bucket; should
	// float rounding still leave it a hair short, the next wait is 1ns.
	nanos := math.Ceil(short / float64(limit) * float64(time.Second))
	return time.Duration(min(nanos, math.MaxInt64/2))
}
