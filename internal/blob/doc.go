// Package blob is b3's segment store, the Bitcask part of the engine:
// objects' bytes are appended as records to large append-only segment
// files, many small objects per file.
//
// # Model
//
// A Store is a directory of segment files named %016x.seg, IDs increasing
// from 1. The last segment is active: all appends go to it; when a record
// would take it past Options.SegmentSize it is sealed (flushed, fsynced,
// closed) and the next one is created. Sealed segments are never written
// again; they are read, scanned, and finally removed.
//
// blob knows nothing of buckets or deletion. A record's owner is an opaque
// key plus a version; Append returns the Extents (runs of records) holding a
// value, and the caller stores them in its metadata. Deleting a value only
// makes its extents dead in the caller's books; to reclaim space the caller
// scans a mostly dead segment (ScanSegment), re-appends the records still
// live (CopyRecords), repoints its metadata, and removes the segment
// (RemoveSegment), which waits for Readers still pinning it.
//
// # Record format
//
//	+--------------------------- 32-byte header ---------------------------+
//	| headerCRC u32 | payloadCRC u32 | 0xB3 | type | keyLen u16 | payloadLen u32 |
//	| version u64                     | chunkOff u48          | tag u16       |
//	+-----------------------------------------------------------------------+
//	| key (keyLen bytes)  | payload (payloadLen bytes)                      |
//	+-----------------------------------------------------------------------+
//
// Little endian, records packed back to back without alignment; a zero
// byte where a magic should be ends the data. See record.go for the byte
// offsets. headerCRC covers header bytes [8,32) and the key, payloadCRC the
// payload, so a corrupt payload behind an intact header can be skipped.
// The tag marks the records of one append (AppendTagged; 0 for Append):
// readers ignore it, and it lets a scan tell apart the records of two
// appends of one owner that interleave.
//
// # Write path
//
// Append reads up to ChunkSize bytes from the caller's reader into a pooled
// buffer and computes the CRCs outside any lock, so a slow client stalls
// only itself; then, under the segment mutex, it memcpys header, key and
// payload into the active segment's aligned write buffer. One value's
// records may therefore interleave with another's. Full buffers go to a
// flusher goroutine through a bounded queue (backpressure) and reach the
// file as aligned writes from aligned memory — always, whether or not
// DirectIO is on, so tests run the production path.
//
// # Durability
//
// Append returns when its records are durable according to Options.Sync:
//   - SyncBatch (default): group commit. One syncer goroutine cuts the
//     buffer, waits for the flusher, fsyncs, and wakes every appender whose
//     records the fsync covered; appenders arriving meanwhile share the next
//     fsync. Nothing acknowledged is lost in a crash. An appender at
//     background priority (vacuum's copies: iolimit.Background in ctx)
//     that finds client appends in progress does not start a round for
//     Options.BackgroundSyncDelay: the rounds they start cover it, and it
//     does not put an fsync ahead of theirs.
//   - SyncAlways: each Append cuts, flushes and fsyncs on its own.
//   - SyncNone: no fsync on the write path. A crash, even a kill of the
//     process, may lose writes still in the user-space buffer.
//
// CopyRecords (vacuum) returns only once its copies are fsynced, under
// every policy: a copy stands in for a record that may be old and durable.
//
// A cut writes the filled part of the buffer rounded up to a block, zero
// padded; the next write of that block repeats its prefix, so a rewritten
// block never changes bytes written before. Rollover fsyncs the old segment
// before creating the next, and syncs the directory before any record is
// written to the new file.
//
// # Recovery
//
// Sealed segments are trusted. The last segment is scanned from the
// checkpoint (a small CHECKPOINT file naming a durable position, rewritten
// in the background every CheckpointBytes of synced progress or
// CheckpointInterval) with both CRCs checked, and cut at the first invalid
// record: everything acknowledged lies before the synced position, so what
// follows the first invalid record was never acknowledged. A corrupted
// (bit-rotted) acknowledged record after the checkpoint in the last segment
// would therefore be cut with everything after it; sealed segments are
// never cut.
//
// # Failure
//
// The first failed write or fsync stops the store: nothing more is
// acknowledged (a later fsync of the same file can succeed without the
// pages the failed one lost). A full file system (ENOSPC, EDQUOT) is the
// one failure it comes back from without a restart: Recover cuts the
// active segment back to the durable position, seals it there and goes on
// in a new segment, and an epoch fails every write that spanned the cut
// (recover.go). Any other failure waits for a restart, which recovers as
// after a crash.
//
// # Reads
//
// Readers read through one shared buffered read-only handle per segment
// (page cache), verify each record's payload CRC before releasing any of
// its bytes, and check each record's owner (key and version) and chunk
// offset against the value asked for: a record that is not the value's
// (metadata and segments disagree, as after a crash under SyncNone) is
// refused like a corrupt one and counted (Stats.MisdirectedRecords).
// Corruption is reported as errors wrapping ErrCorrupt — never wrong
// bytes. A Reader pins its segments: RemoveSegment deletes the file
// only when the last pin goes. A read of bytes not yet written to the file
// (possible under SyncNone) first forces a flush up to them.
//
// All disk I/O goes through vfs.FS and, when Options.Limiter is set, waits
// for the rate limiter with the caller's ctx (which carries the priority).
package blob
