package meta

import (
	"encoding/binary"
	"fmt"
	"io"

	"github.com/cockroachdb/pebble/v2"
)

// Dead-byte counters ("s" segmentID) hold an int64 as 8 bytes big-endian
// two's complement. Batch.AddDead writes the delta as a merge operand of
// the same form; addMerger sums operands, so concurrent batches add without
// reading the old value and no update is lost. A Delete resets the sum.
var addMerger = &pebble.Merger{
	// The name is stored in the pebble directory; changing it makes old
	// directories unreadable, which is intended if the semantics change.
	Name: "b3.meta.add.v1",
	Merge: func(key, value []byte) (pebble.ValueMerger, error) {
		n, err := decodeCounter(value)
		if err != nil {
			return nil, fmt.Errorf("merge %x: %w", key, err)
		}
		return &addValueMerger{sum: n}, nil
	},
}

type addValueMerger struct{ sum int64 }

func (m *addValueMerger) add(value []byte) error {
	n, err := decodeCounter(value)
	if err != nil {
		return err
	}
	m.sum += n
	return nil
}

func (m *addValueMerger) MergeNewer(value []byte) error { return m.add(value) }
func (m *addValueMerger) MergeOlder(value []byte) error { return m.add(value) }

func (m *addValueMerger) Finish(bool) ([]byte, io.Closer, error) {
	return encodeCounter(m.sum), nil, nil
}

func encodeCounter(n int64) []byte {
	return binary.BigEndian.AppendUint64(make([]byte, 0, 8), uint64(n))
}

func decodeCounter(v []byte) (int64, error) {
	if len(v) != 8 {
		return 0, fmt.Errorf("%w: counter of %d bytes", ErrCorrupt, len(v))
	}
	return int64(binary.BigEndian.Uint64(v)), nil
}

func beUint64(b []byte) uint64 { return binary.BigEndian.Uint64(b) }
