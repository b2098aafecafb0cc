// Package iolimit rations disk bandwidth between client I/O (foreground)
// and maintenance I/O (background: vacuum, lifecycle deletes, replication
// catch-up), per direction, in bytes per second, and paces background work
// by client load (Pacer). Every segment read and write calls
// WaitRead or WaitWrite with its length before touching the disk.
//
// Model. Each direction (read, write) has two token buckets from
// golang.org/x/time/rate, counted in bytes:
//
//	              total bucket (ReadBytesPerSec / WriteBytesPerSec)
//	             +--------------------------------------------+
//	foreground --+--> reserve piece, sleep the debt (FIFO)    |
//	             |                                            |--> disk
//	background --+--> background bucket (Background...PerSec) |
//	  (one turn  |    and only when no foreground is waiting  |
//	   at a time)|    and total holds piece + burst/2 now     |
//	             +--------------------------------------------+
//
// Guarantees:
//   - Rate. At a fixed rate, over any interval T a direction grants at most
//     burst + rate×T bytes, whatever the request sizes. A request larger
//     than the burst is granted in burst-sized pieces, each covered by
//     tokens before the next is asked for; no request is let through whole
//     because it is large, and a small foreground request waits behind at
//     most one piece of a large one, not all of it.
//   - Priority. While a foreground caller waits in a direction, background
//     callers in that direction get no tokens. Background never reserves
//     ahead and takes only tokens above half the total burst, so a
//     foreground caller arriving after background activity finds half a
//     burst ready: a foreground request up to burst/2 is never delayed by
//     background, a larger one by at most the rest of one burst. With both
//     saturating, foreground gets the full rate and background the rest,
//     further held to its own cap when one is set.
//   - Zero is unlimited: a call no rate applies to returns at once, without
//     locks or timers. A nil *Limiter is unlimited too. (Background calls
//     still pass the Pacer, if the limiter has one.)
//   - Runtime changes. SetLimits takes effect for callers already waiting:
//     the debt they still owe is repaid at the new rate.
//   - Cancellation. A call returns ctx.Err() as soon as ctx is done and gives
//     back the piece it was waiting for (as far as x/time/rate can: tokens
//     reserved after it by others stay reserved). Pieces already granted
//     stay spent.
//
// Not guaranteed: fairness among background callers beyond arrival order
// per piece; precision of the give-back on cancellation after a rate
// change; that callers actually do the I/O they were granted. Burst is
// DefaultBurstWindow of each bucket's rate (at least MinBurst) unless
// WithBurst fixes it.
//
// # Pacing background work by client load
//
// A Limiter's byte rates are fixed by the operator; a Pacer (WithPacer)
// moves background work's rate with what clients experience. Each
// Interval (100ms) its controller (Run) measures the interval that ended:
//
//   - client utilization: the fraction of it with at least one request in
//     flight (Foreground, called by the S3 server for every request, but
//     for the time a request is Idle: a playlist request held until an
//     encoder's next write);
//   - client queueing: time clients waited at the limiter's buckets;
//   - fsync latency: the mean segment fsync (PacerSignals.Fsyncs), which
//     counts only while clients are present;
//
// and sets the rate of one x/time/rate bucket that all background work
// draws from, reads and writes alike (a copy is charged twice: its read,
// with the CRC check, and its write), plus fixed costs that jobs charge
// with Wait for work the limiter does not see (a metadata commit):
//
//	off, or urgent (PacerSignals.Urgent)  -> unpaced: full speed
//	utilization >= BusyUtilization (5%),  -> MinBytesPerSec at once
//	  or any queueing, or slow fsyncs
//	otherwise                             -> the rate doubles each interval;
//	                                         past MaxBytesPerSec, unpaced
//
// Guarantees: under sustained client load background work keeps
// MinBytesPerSec (8 MiB/s by default) and gets no more than that plus one
// interval's burst; client demand brings it down to the minimum within
// one interval (a caller holding the turn finishes its current piece,
// at most one interval of the rate); idle clients bring it back to full
// speed within ceil(log2(Max/Min))+2 intervals (1s by default). A
// waiting background caller re-plans at least once an interval and never
// reserves ahead, so rate changes apply to its next piece. Background
// callers queue one at a time for the bucket, in arrival order.
//
// Not guaranteed: the pacer sees CPU only through the bytes it is charged
// (CRC and copying scale with them) and through client latency; a
// request counted in flight may be waiting on its client, not on the
// server. Without Run the pacer never slows anything down.
//
// Time comes from a Clock (WithClock). Tests use ManualClock and jump from
// deadline to deadline, so simulated minutes run in milliseconds and no
// assertion depends on the wall clock.
package iolimit
