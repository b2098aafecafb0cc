// Package objstore gives S3 semantics over the two stores b3 keeps: the
// ordered metadata index (package meta, on pebble) and the append-only
// segment files (package blob).
//
// # The write path, in the order things become durable
//
//	PutObject
//	  1. reserve a version (meta.NextVersion: unique, never reused)
//	  2. register the write as in flight (pins segments >= the active one
//	     against vacuum, see below)
//	  3. stream the body into segment records owned by (bucket/key, version);
//	     blob.Append returns once they are synced (per the sync policy)
//	  4. Finish: the caller fills in ETag and checksums, or rejects the body
//	  5. under the key lock: check preconditions against the current record,
//	     then commit one meta batch that installs the new record and adds the
//	     replaced record's extents to their segments' dead-byte counters
//	  6. acknowledge
//
// A failure before step 5 leaves only unreferenced records behind; their
// bytes are counted dead at once, or, after a crash, by the audit of the
// first vacuum pass (see orphans.go).
//
// A body of at most Options.InlineMax bytes skips steps 2 and 3: it is read
// into memory and installed inside the object's record (meta.Object.Inline)
// by the batch of step 5, which is then its only durable write.
//
// # Invariants
//
//   - Each segment record is referenced by at most one metadata record: the
//     object or multipart part of its owner (bucket/key, version). Extents are
//     never shared between objects; CopyObject copies bytes.
//   - Once no metadata record references a record, none ever will again:
//     versions are never reused, and the only moves of a reference are
//     CompleteMultipartUpload handing a part's extents to the object, and
//     a version moving between the key's current record and the version
//     table (a write or delete in a versioned bucket, the promotion of the
//     newest version when the current one is removed); each happens in one
//     batch under the key lock, and vacuum looks in all three places on
//     one view.
//   - A version under Object Lock (legal hold, or retention not yet ended)
//     is never removed or replaced, by any path: checkRemovable is asked
//     under the key lock before every removal (versions.go), at the
//     instant of the write: a local write's now, or for a replicated one
//     the instant its command carries (Deletion.At, the put's Modified), so
//     that replicas applying the same command agree.
//   - Every change of one key's records (put, delete, complete, vacuum swap)
//     happens under that key's lock, so vacuum's compare-and-swap cannot undo
//     a concurrent write or delete.
//   - Vacuum decides what references an owner's records from one meta.View
//     (one pebble snapshot), never from reads at different instants: by the
//     invariant above, what is unreferenced in one consistent view is dead
//     for good, while a part handed to its object between two separate
//     reads would be missed by both. Uploads are found by key and version
//     (upload IDs begin with the version), never by comparing Go strings
//     with keys pebble orders as key 0x00 uploadID.
//   - Every record a read returns bytes from carries the object's owner
//     (bucket/key and version) at the chunk offset its place implies
//     (blob.Reader); metadata that points elsewhere is an error and a count
//     (Stats.MisdirectedRecords), never another object's bytes.
//
// # Vacuum
//
// A segment whose dead bytes pass the threshold is rewritten: its records
// still referenced are copied forward (background I/O priority), and each
// referencing record is switched to the copy only if it still references the
// original. The segment file is removed only when every live record in it
// was moved, and only when no write still in flight may reference it. The
// copies are fsynced and each swap commits with a synced metadata batch
// under every sync policy, "none" included, before the segment goes: a
// crash at any point leaves either the old reference (to a segment that
// still exists) or the new one (to synced copies). "none" may lose recent
// writes, never old ones.
//
// # Lifecycle expiry
//
// A write stamps the object with its expiry instant under the bucket's
// rules (package lifecycle); from that instant HeadObject, OpenObject and
// ListObjects hide it. The sweeper (StartLifecycle, SweepLifecycle) deletes
// expired objects under their key lock, only if the record is still the
// version it examined and the current rules still expire it, and rewrites
// the instants of records written under older rules. See lifecycle.go.
//
// # Versioning
//
// A key's current version is its "o" record in every bucket, so a bucket
// that never enabled versioning reads and writes exactly as before (no
// extra lookup: the replaced record is the one the write already reads).
// Other versions and delete markers live in meta's version table. What a
// PUT or DELETE does to the replaced record follows the bucket's state
// (Enabled, Suspended, never enabled), as S3 documents it; see
// versions.go. Lifecycle removes noncurrent versions and expired delete
// markers (lifecycle_versions.go); their bytes return through vacuum.
// A replicated store applies versioned writes decided elsewhere with the
// same code (ApplyDelete, ApplyExpireCurrent, ApplyExpireVersion,
// ApplyUpdateVersion; a snapshot's versions with the Restore* functions,
// restore.go).
//
// # Object cache
//
// With Options.Cache, OpenObject serves small objects from memory. Every
// change of a key's record (put, complete, delete, tag update, expiry)
// invalidates the key after its batch commits and before it is
// acknowledged; a fill takes the cache's token before reading the record,
// so a fill that read an older record is refused (package cache). Vacuum
// swaps do not invalidate: the bytes are the same.
package objstore
