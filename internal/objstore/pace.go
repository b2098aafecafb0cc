package objstore

import "context"

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
