// Package partition cuts the key space of a b3 cluster into a fixed number
// of partitions and says which replica group owns each: the cluster map.
//
// A key's partition is a hash of its bucket and key (xxhash64 of
// bucket, 0x00, key), masked to the partition count, a power of two fixed
// when the cluster is created (DefaultCount). Every node and router
// computes it alike, so any of them can send a request to the group that
// owns it.
//
// A Map is a value: the groups (their members, weight and whether they
// drain), the owner of each partition, the moves under way, and an Epoch
// that every change raises by one. The map is replicated through the
// first group's Raft log (package cluster); this package has no I/O and
// no clock: it only computes (Of, Targets, Plan) and checks (Validate).
//
// # Invariants
//
//   - Every partition has exactly one owner, a group of the map; a
//     partition under move keeps its owner (From) until the map change
//     that ends the move names To, in one epoch.
//   - A change of the map is a new Map with Epoch+1 (Next); maps are never
//     changed in place once published.
//   - Targets split Count among groups in proportion to their weight
//     (draining groups weigh nothing), by largest remainder, so they sum
//     to Count; Plan moves the fewest partitions that reach them, from
//     the groups over their target to those under it, the same moves on
//     every node for the same map.
package partition
