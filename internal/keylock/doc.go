// Package keylock serialises the changes of one object key: a fixed array
// of mutexes, each key hashed (with a seed of this process) to one of
// them. Keys that share a stripe wait for each other, which costs
// concurrency, never correctness; the memory is fixed whatever the number
// of keys.
//
// The object store (package objstore) takes a key's lock around every
// change of its records, and the cluster's leader (package cluster)
// around deciding and committing a write of the key; each has its own
// Locks.
//
// Invariant: a holder of several stripes took them through LockStripes
// (ascending, each once), and every other holder holds one stripe at a
// time, so no two holders wait for each other in a cycle.
package keylock
