package meta

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// EngineState is the engine's note of how far its books can be trusted,
// kept under "mstate" for the next run. meta stores it; objstore gives it
// meaning (see objstore's doc.go, "Orphans").
//
//	+------+-------+-------------------+
//	| 0x01 | clean | orphanFloor u64BE |
//	+------+-------+-------------------+
type EngineState struct {
	// Clean is true when the last run closed cleanly.
	Clean bool
	// OrphanFloor is the lowest segment that may hold records neither
	// referenced nor counted dead; 0 means unknown.
	OrphanFloor uint64
}

const stateFormat = 1

var stateKey = []byte("mstate")

// EngineState returns the stored state; found is false if none was ever
// stored.
func (db *DB) EngineState() (st EngineState, found bool, err error) {
	err = db.get(stateKey, func(v []byte) error {
		if len(v) != 10 || v[0] != stateFormat || v[1] > 1 {
			return fmt.Errorf("%w: engine state %x", ErrCorrupt, v)
		}
		st = EngineState{Clean: v[1] == 1, OrphanFloor: binary.BigEndian.Uint64(v[2:])}
		return nil
	})
	if errors.Is(err, ErrNotFound) {
		return EngineState{}, false, nil
	}
	if err != nil {
		return EngineState{}, false, fmt.Errorf("read engine state: %w", err)
	}
	return st, true, nil
}

// PutEngineState replaces the stored state.
func (b *Batch) PutEngineState(st EngineState) {
	v := []byte{stateFormat, 0}
	if st.Clean {
		v[1] = 1
	}
	b.set(stateKey, binary.BigEndian.AppendUint64(v, st.OrphanFloor))
}

// DeadBytes returns segment's dead-byte counter as of the view (0 if it
// has none).
func (v *View) DeadBytes(segment uint64) (int64, error) {
	var n int64
	err := getFrom(v.snap, segmentKey(segment), func(val []byte) (err error) {
		n, err = decodeCounter(val)
		return err
	})
	if errors.Is(err, ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("dead bytes of segment %d: %w", segment, err)
	}
	return n, nil
}
