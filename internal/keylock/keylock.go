package keylock

import (
	"hash/maphash"
	"slices"
	"sync"
)

// Stripes is the number of mutexes of a Locks.
const Stripes = 256

// Locks is a striped set of key locks. Create one with New.
type Locks struct {
	seed maphash.Seed
	m    [Stripes]sync.Mutex
}

// New returns a set of key locks.
func New() *Locks { return &Locks{seed: maphash.MakeSeed()} }

// Stripe returns the index of the lock of bucket/key.
func (l *Locks) Stripe(bucket, key string) int {
	var h maphash.Hash
	h.SetSeed(l.seed)
	h.WriteString(bucket)
	h.WriteByte(0) // bucket names never hold 0x00: the split is unambiguous
	h.WriteString(key)
	return int(h.Sum64() % Stripes)
}

// Lock takes the lock of bucket/key and returns its release.
func (l *Locks) Lock(bucket, key string) (unlock func()) {
	m := &l.m[l.Stripe(bucket, key)]
	m.Lock()
	return m.Unlock
}

// LockStripes takes the locks of the given stripes (from Stripe), each
// once and in ascending order, and returns their release. It sorts
// stripes in place.
func (l *Locks) LockStripes(stripes []int) (unlock func()) {
	slices.Sort(stripes)
	stripes = slices.Compact(stripes)
	for _, i := range stripes {
		l.m[i].Lock()
	}
	return func() {
		for _, i := range slices.Backward(stripes) {
			l.m[i].Unlock()
		}
	}
}
