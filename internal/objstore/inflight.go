package objstore

import "sync"

// inflightWrites tracks writes whose records may be in segments but are not
// yet referenced by metadata. Vacuum must not remove a segment such a write
// may still reference, so it only touches segments below floor().
//
// Invariant: a write registers before its first record is appended, with
// the segment that was active at registration (or, mid-rollover, the one
// just sealed: blob.Store.ActiveSegment); segment IDs only grow, so all
// of its records lie in that segment or later ones.
type inflightWrites struct {
	mu     sync.Mutex
	nextID uint64
	start  map[uint64]uint64 // write id -> first segment it may use
}

func (w *inflightWrites) register(activeSegment func() uint64) (id uint64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.start == nil {
		w.start = map[uint64]uint64{}
	}
	w.nextID++
	// Read the active segment under the lock, so that a concurrent floor()
	// either sees this write or ran before it and returned a floor no
	// higher than the segment read here.
	w.start[w.nextID] = activeSegment()
	return w.nextID
}

func (w *inflightWrites) done(id uint64) {
	w.mu.Lock()
	delete(w.start, id)
	w.mu.Unlock()
}

// floor returns the lowest segment an in-flight write may reference, or
// active when there is none.
func (w *inflightWrites) floor(activeSegment func() uint64) uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	f := activeSegment()
	for _, seg := range w.start {
		if seg < f {
			f = seg
		}
	}
	return f
}

// empty reports whether no write is in flight.
func (w *inflightWrites) empty() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.start) == 0
}
