package objstore

import (
	"context"
	"time"

	"github.com/b3-storage/b3/internal/iolimit"
)

// Background work the I/O limiter does not see, in bytes of work charged
// to the pacer (iolimit.Pacer): the metadata lookups and the synced pebble
// commit of one vacuum move or one lifecycle delete. Segment bytes that
// background jobs read and write are charged by the limiter itself.
const (
	vacuumMoveCost      = 16 << 10
	lifecycleDeleteCost = 16 << 10
)

// pace waits until the background pace allows cost bytes of work. With no
// limiter or no pacer it returns at once.
func (s *Store) pace(ctx context.Context, cost int) error {
	return s.opts.Limiter.Pacer().Wait(ctx, cost)
}

// PaceSignals are the engine's measurements a pacer reads: segment fsync
// latency (the group commits clients wait for), and urgency once free
// space falls below twice the reserve (only vacuum can make more, so it
// must not be held back then).
func (s *Store) PaceSignals() iolimit.PacerSignals {
	reserve := s.opts.MinFreeBytes
	return iolimit.PacerSignals{
		Fsyncs: func() (int64, time.Duration) {
			st := s.blob.Stats()
			return st.Fsyncs, time.Duration(st.FsyncNanos)
		},
		Urgent: func() bool {
			free := s.FreeBytes()
			return reserve > 0 && free >= 0 && free < 2*reserve
		},
	}
}
