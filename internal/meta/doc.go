// Package meta is b3's ordered metadata index: bucket, object, multipart
// upload and part records, plus the engine's bookkeeping (dead bytes per
// segment, the object version allocator), stored in one cockroachdb/pebble
// LSM.
//
// # Guarantees
//
//   - A Batch is atomic: after Commit returns nil every write in it is
//     visible; after a crash either all of it or none of it is present.
//     With Options.Sync a nil Commit means the batch is durable (fsync of
//     pebble's WAL, shared by concurrent committers). Without it a crash
//     may lose recently committed batches, but never part of one.
//   - Reads (Get*, List*, Scan*) see a consistent point-in-time view: each
//     call reads one pebble snapshot, so a listing never mixes the states
//     before and after one batch. A decision that needs several reads
//     makes them on one View (NewView), which sees one instant for all.
//   - Batch.CommitSync is durable on return even without Options.Sync.
//   - NextVersion is strictly increasing for the life of the directory,
//     across restarts and crashes. Versions start at 1; 0 means "none".
//   - Dead-byte counters are added with a pebble merge operator, so batches
//     committed concurrently add without a read-modify-write race.
//   - Listing costs O(page), never O(bucket): one seek per returned key or
//     common prefix (see list.go).
//
// What meta does not do: it does not check S3 semantics (that a bucket
// exists before an object is put into it, that a bucket is empty before it
// is deleted). The engine (objstore) does that, in a batch, under its own
// locking. meta never touches segment files; Extent only names bytes there.
//
// # Keys
//
// Every record lives in one keyspace; the first byte names the table. The
// layout makes every listing a seek plus a scan of the page.
//
//	key                                               value
//	"b" bucket                                        Bucket record
//	"o" bucket 0x00 key                               Object record (current version)
//	"v" bucket 0x00 esc(key) 0x00 0x01 ^version       Object record (noncurrent
//	                                                  version or delete marker;
//	                                                  see versions.go)
//	"u" bucket 0x00 key 0x00 uploadID                 Upload record
//	"p" uploadID partNumber(u16 big-endian)           Part record
//	"s" segmentID(u64 big-endian)                     dead bytes (int64, merged)
//	"m" name                                          misc: "mversion" (version
//	                                                  high-water mark), "mformat",
//	                                                  "mstate" (EngineState),
//	                                                  "mapplied" (replicated log
//	                                                  position, see Batch.SetApplied)
//
// Bucket names never contain 0x00, so "o" bucket 0x00 orders the objects of
// one bucket by the bytes of their keys, and bucket "a" never interleaves
// with bucket "a0". Object keys may contain any byte, 0x00 included; the
// upload key is therefore parsed from its end: uploadID has the fixed length
// UploadIDLen and is preceded by 0x00. Uploads are listed in pebble key
// order, which is (key, uploadID) order except for object keys containing
// 0x00 (documented in ListUploads): the uploads of "a" 0x00 0x01 come
// before those of "a". A scan must therefore never decide it has passed a
// key by comparing Go strings; View.UploadOf seeks the exact key and
// version. Upload IDs begin with the reserved version in hex, so the
// uploads of one key list in the order they were created, as in S3, and
// one seek finds the upload of a version.
//
// Record values start with a format-version byte; each layout is drawn next
// to its encoder (record_*.go). Decoders return an error wrapping ErrCorrupt
// on unknown versions, truncated or trailing data; they never panic (fuzzed).
package meta
