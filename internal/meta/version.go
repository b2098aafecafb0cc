package meta

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"

	"github.com/cockroachdb/pebble/v2"
)

// versionBlock is how many versions one synced write of the high-water
// mark reserves. A crash wastes at most one block; the hot path touches the
// disk once per block.
const versionBlock = 1 << 16

// versionAllocator hands out strictly increasing versions across restarts
// and crashes.
//
// Invariant: every version handed out is <= the high-water mark durable
// under "mversion" (8 bytes big-endian). The mark is raised, with
// pebble.Sync, before any version above the old mark is returned; after a
// restart allocation resumes above the durable mark, so no version repeats
// even if the process died right after reserving.
type versionAllocator struct {
	mu    sync.Mutex
	pdb   *pebble.DB
	next  uint64 // next version to return
	limit uint64 // durable high-water mark: next <= limit+1
}

func (a *versionAllocator) init(pdb *pebble.DB) error {
	a.pdb = pdb
	v, closer, err := pdb.Get(versionKey)
	switch {
	case errors.Is(err, pebble.ErrNotFound):
		a.limit = 0
	case err != nil:
		return fmt.Errorf("read version high-water mark: %w", err)
	default:
		defer closer.Close()
		if len(v) != 8 {
			return fmt.Errorf("%w: version high-water mark of %d bytes", ErrCorrupt, len(v))
		}
		a.limit = binary.BigEndian.Uint64(v)
	}
	a.next = a.limit + 1 // version 0 means "none"
	return nil
}

func (a *versionAllocator) allocate() (uint64, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.next > a.limit {
		limit := a.limit + versionBlock
		if limit < a.limit {
			return 0, errors.New("meta: version space exhausted")
		}
		mark := binary.BigEndian.AppendUint64(nil, limit)
		if err := a.pdb.Set(versionKey, mark, pebble.Sync); err != nil {
			return 0, fmt.Errorf("reserve versions up to %d: %w", limit, err)
		}
		a.limit = limit
	}
	v := a.next
	a.next++
	return v, nil
}

// NextVersion returns a version larger than every version returned before
// by this directory, including before a crash.
func (db *DB) NextVersion() (uint64, error) {
	return db.versions.allocate()
}
