package meta

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
)

// appliedKey ("mapplied", 8 bytes big-endian) holds the position of the
// last replicated command whose changes this directory holds. meta gives
// the number no meaning: a replicated caller stamps each batch of a
// command with the command's position in its log (Batch.SetApplied), so
// the stamp and the changes become durable together, and after a restart
// it skips every command at or below Applied instead of applying it twice.
var appliedKey = []byte("mapplied")

// SetApplied stamps the batch: on Commit, Applied becomes n.
//
// A stamped batch commits without waiting for a sync of its own: its
// changes are a replay of a command the caller's log already holds
// durably. A crash may lose the batch, and with it the stamp, never one
// without the other (pebble writes a batch whole, in order); the caller
// then applies the command again from its log. Any later synced write
// makes it durable too.
func (b *Batch) SetApplied(n uint64) {
	b.set(appliedKey, binary.BigEndian.AppendUint64(nil, n))
	b.stamped = true
}

// Applied returns the stamp of the last committed batch that carried one,
// or 0.
func (db *DB) Applied() (uint64, error) { return appliedFrom(db.pdb) }

func appliedFrom(r pebble.Reader) (uint64, error) {
	v, closer, err := r.Get(appliedKey)
	if errors.Is(err, pebble.ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read applied position: %w", err)
	}
	defer closer.Close()
	if len(v) != 8 {
		return 0, fmt.Errorf("%w: applied position of %d bytes", ErrCorrupt, len(v))
	}
	return binary.BigEndian.Uint64(v), nil
}
