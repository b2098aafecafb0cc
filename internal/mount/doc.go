// Package mount presents an S3 bucket (or a prefix of one) as a FUSE file
// system, built for the sequential patterns of recorders, transcoders and
// copy tools rather than full POSIX. docs/MOUNT.md is the contract; this
// page is the model behind it.
//
// Names. A directory is a key prefix ending in "/"; a file is an object.
// Directories are explicit (a zero-byte "dir/" marker, which mkdir writes)
// or implicit (some key lies below the prefix). When a name is both an
// object and a prefix, the directory wins and the object is hidden.
//
// Metadata. Lookups answer from a directory's listing when that listing is
// younger than the directory TTL and complete; otherwise from HEAD of the
// object, then a one-key listing of the prefix. The kernel caches entries
// and attributes for their own TTLs. Every mutation made through this
// mount updates the cached listing of its directory, so the mount reads
// its own writes at once; changes by other clients show within the TTLs.
//
// Writes (writer.go). A file opened for writing is new or truncated: the
// object is replaced whole, never patched. Bytes must arrive in order. The
// first part-size bytes are kept in memory; a file that closes smaller
// becomes one PutObject. Beyond that the file is a multipart upload whose
// parts come from a bounded pool of reused buffers, several in flight.
// Invariant: an object becomes visible only by PutObject or
// CompleteMultipartUpload of every byte written, in order; any failure
// (an out-of-order write, a failed part, an unreachable server) aborts the
// upload and is reported by the next write, fsync or close, so a reader
// never sees a truncated object presented as whole.
//
// Reads (reader.go). A handle remembers where the last read ended. Reads
// that continue there grow a read-ahead window (parallel ranged GETs into
// pooled buffers, every GET conditional on the ETag the first read found);
// a jump resets it. Small objects are fetched whole by the first read.
//
// Requests (backend.go, direct.go). GetObject, PutObject and UploadPart,
// the one request each small file costs and the bulk of a large one, are
// plain net/http requests signed with the SDK's signer and built from the
// SDK client's configuration; whole parts are sent with sendfile from the
// memory files their buffers are mapped from (bufpool.go). Every other
// request goes through the SDK. Both paths fail with the SDK's error
// types, so errors.go cannot tell them apart.
//
// Errors (errors.go). S3 errors become errno values in one place: 404 is
// ENOENT, 403 EACCES, 507 ENOSPC, everything else EIO, each logged with
// the request id the server returned.
package mount
