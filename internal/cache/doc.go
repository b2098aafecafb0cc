// Package cache is a memory cache for small, hot objects, bounded in bytes,
// with a choice of eviction policy: LRU, or S3-FIFO (Yang et al., SOSP
// 2023: a small probationary FIFO, a main FIFO with reinsertion, and a
// ghost FIFO of recently evicted keys), which keeps one-hit wonders from
// flushing the hot set.
//
// # Freshness
//
// The cache never knows what the current version of a key is; its user
// (objstore) does. The rule that keeps it from serving stale data:
//
//  1. every change of a key calls Invalidate(key) after the change is
//     committed and before it is acknowledged;
//  2. a filler takes Token(key) before it reads the key's current version,
//     and inserts with PutIf(key, value, token).
//
// Invalidate bumps the generation of the key's stripe; PutIf inserts only
// if that generation is still the token. A filler that read the old
// version did so before the change committed, hence took its token before
// the Invalidate that follows the commit, hence is refused. (A fill racing
// an unrelated key of the same stripe is refused too: a missed insert,
// never a stale one.)
//
// Values are not copied: callers must not modify a slice after Put, nor
// one returned by Get.
package cache
