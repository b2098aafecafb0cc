package bench

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// Bound limits a closed-loop cell: it stops issuing once Count operations
// have started or Duration has elapsed, whichever comes first. At least one
// of the two is set, so every cell ends. Operations in flight when the bound
// is hit run to completion and are counted.
type Bound struct {
	Duration time.Duration
	Count    int64
}

// ClosedLoop runs concurrency workers, each issuing op back to back, until
// the bound is reached or ctx is canceled. op receives a sequence number
// unique within the cell. Returns the wall time from the first issue to the
// last completion.
//
// Closed loop is right for peak throughput (how much can c clients push?)
// but hides queueing; the mixed test uses OpenLoop for that.
func ClosedLoop(ctx context.Context, concurrency int, bound Bound, rec *Recorder,
	op func(ctx context.Context, worker int, seq int64) (int64, error)) time.Duration {
	start := time.Now()
	deadline := time.Time{}
	if bound.Duration > 0 {
		deadline = start.Add(bound.Duration)
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < concurrency; w++ {
		wg.Add(1)
		go func(worker int) {
			defer wg.Done()
			for ctx.Err() == nil {
				// Time first, then the sequence number: every number handed
				// out below Count is issued, so issued numbers are exactly
				// [0, Issued) and callers can name keys after them.
				t0 := time.Now()
				if !deadline.IsZero() && !t0.Before(deadline) {
					return
				}
				seq := next.Add(1) - 1
				if bound.Count > 0 && seq >= bound.Count {
					return
				}
				rec.Issue()
				n, err := op(ctx, worker, seq)
				rec.Done(time.Since(t0), n, err)
			}
		}(w)
	}
	wg.Wait()
	return time.Since(start)
}
