package blob

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/b3-storage/b3/internal/vfs"
)

// SyncPolicy says when an Append is durable.
type SyncPolicy int

const (
	// SyncBatch (the default) is group commit: an Append returns once an
	// fsync covering its records has completed; appenders waiting at the
	// same time share one fsync. No acknowledged write is ever lost.
	SyncBatch SyncPolicy = iota
	// SyncAlways makes each Append issue its own fsync (no sharing). As
	// safe as SyncBatch, slower under concurrency; for comparisons.
	SyncAlways
	// SyncNone never fsyncs on the write path (only at segment rollover
	// and Close). For benchmarks only: a crash — even a kill of the
	// process — may lose writes still in the user-space write buffer.
	SyncNone
)

// ParseSyncPolicy parses "batch", "always" or "none".
func ParseSyncPolicy(s string) (SyncPolicy, error) {
	switch s {
	case "batch", "":
		return SyncBatch, nil
	case "always":
		return SyncAlways, nil
	case "none":
		return SyncNone, nil
	}
	return 0, fmt.Errorf("blob: unknown sync policy %q (want batch, always or none)", s)
}

func (p SyncPolicy) String() string {
	switch p {
	case SyncBatch:
		return "batch"
	case SyncAlways:
		return "always"
	case SyncNone:
		return "none"
	}
	return fmt.Sprintf("SyncPolicy(%d)", int(p))
}

// IOLimiter is what blob needs from the I/O rate limiter. The priority of a
// request travels in ctx. Implementations split large requests themselves.
type IOLimiter interface {
	WaitRead(ctx context.Context, n int) error
	WaitWrite(ctx context.Context, n int) error
}

// DefaultBackgroundSyncDelay is Options.BackgroundSyncDelay's default:
// under client load group commits come far more often, so background
// records are covered by them; alone, background work still syncs 200
// times a second.
const DefaultBackgroundSyncDelay = 5 * time.Millisecond

// Options configure a Store. Zero values select the defaults.
type Options struct {
	FS  vfs.FS // default vfs.Default
	Dir string // required

	// SegmentSize: a record that would take the active segment past this
	// size goes to a new segment. Default 1 GiB.
	SegmentSize int64
	// ChunkSize is the largest payload of one record. Default 1 MiB, at
	// most MaxChunkSize.
	ChunkSize int
	Sync      SyncPolicy
	// DirectIO opens new segments for writing with O_DIRECT (vfs falls back
	// to buffered I/O where unsupported). A segment reopened after a restart
	// is written with buffered I/O until the next rollover, as vfs has no
	// direct flag for opening existing files.
	DirectIO bool
	// WriteBuffer is the size of each aligned write buffer, a multiple of
	// vfs.DirectAlignment. Default 8 MiB.
	WriteBuffer int
	// FlushQueue is how many filled write buffers may wait for the flusher
	// before appenders block (backpressure). Default 4.
	FlushQueue int
	// Limiter paces disk I/O; nil means unlimited.
	Limiter IOLimiter
	Logger  *slog.Logger // default slog.Default()

	// BackgroundSyncDelay is how long an append or copy at background
	// priority, made while client appends are in progress, waits for a
	// group commit they start before it asks for an fsync of its own
	// (SyncBatch only). Default 5ms; negative: background asks at once,
	// like clients.
	BackgroundSyncDelay time.Duration

	// CheckpointBytes and CheckpointInterval pace the CHECKPOINT file that
	// bounds the recovery scan: it is rewritten after this much synced
	// progress (default 64 MiB) or, if there was any, each interval
	// (default 1s). Never on the path of an fsync.
	CheckpointBytes    int64
	CheckpointInterval time.Duration
}

func (o Options) withDefaults() (Options, error) {
	if o.FS == nil {
		o.FS = vfs.Default
	}
	if o.Dir == "" {
		return o, fmt.Errorf("blob: Options.Dir is required")
	}
	if o.SegmentSize == 0 {
		o.SegmentSize = 1 << 30
	}
	if o.ChunkSize == 0 {
		o.ChunkSize = 1 << 20
	}
	if o.WriteBuffer == 0 {
		o.WriteBuffer = 8 << 20
	}
	if o.FlushQueue == 0 {
		o.FlushQueue = 4
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.CheckpointBytes == 0 {
		o.CheckpointBytes = 64 << 20
	}
	if o.BackgroundSyncDelay == 0 {
		o.BackgroundSyncDelay = DefaultBackgroundSyncDelay
	}
	if o.CheckpointInterval == 0 {
		o.CheckpointInterval = time.Second
	}
	switch {
	case o.SegmentSize < 0:
		return o, fmt.Errorf("blob: SegmentSize %d < 0", o.SegmentSize)
	case o.ChunkSize < 0 || o.ChunkSize > MaxChunkSize:
		return o, fmt.Errorf("blob: ChunkSize %d out of range (0, %d]", o.ChunkSize, MaxChunkSize)
	case o.WriteBuffer < 0 || o.WriteBuffer%vfs.DirectAlignment != 0:
		return o, fmt.Errorf("blob: WriteBuffer %d is not a positive multiple of %d", o.WriteBuffer, vfs.DirectAlignment)
	case o.FlushQueue < 0:
		return o, fmt.Errorf("blob: FlushQueue %d < 0", o.FlushQueue)
	case o.Sync < SyncBatch || o.Sync > SyncNone:
		return o, fmt.Errorf("blob: invalid sync policy %d", int(o.Sync))
	}
	return o, nil
}
