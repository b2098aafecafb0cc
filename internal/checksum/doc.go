// Package checksum implements the integrity checks of the S3 protocol:
// Content-MD5, the ETag, and the flexible checksums (x-amz-checksum-*) with
// their algorithms CRC32, CRC32C, CRC64NVME, SHA1, SHA256, SHA512, MD5,
// XXHASH64, XXHASH3 and XXHASH128. Default (CRC64NVME) is what S3 stores
// with an object uploaded without a checksum.
//
// It does no I/O of its own. The caller hands it a body reader; the package
// hands back a Reader that computes every digest the request needs in one
// pass over the bytes (MD5 always, for the ETag, plus the requested checksum
// and any extra algorithms) and compares them with the expected values when
// the body reaches EOF.
//
// Guarantees:
//   - A checksum header, trailer or algorithm name the package does not
//     compute is an InvalidRequest error, never ignored: a client must not
//     believe unverified data was checked. So is a trailing checksum that
//     x-amz-trailer did not announce.
//   - A Reader never returns io.EOF unless every expected digest matched.
//     On a mismatch the final Read returns an *Error (BadDigest) instead of
//     io.EOF. Bytes already returned before that error are NOT verified: the
//     consumer must abort (never acknowledge) an upload whose body ended in
//     an error.
//   - An expected value that arrives in a trailer (aws-chunked uploads) is
//     read from the source reader's Trailer method only after the source has
//     returned io.EOF, i.e. after the trailer has been parsed (and, for signed
//     trailers, its signature verified by the source).
//   - Digests are the raw big-endian bytes; header values are their standard
//     base64 encoding, exactly as S3 sends them.
//
// Multipart uploads: CompositeChecksum computes the checksum-of-checksums
// ("<base64>-N"), CombineCRC computes a FULL_OBJECT CRC from the parts' CRCs
// and sizes without reading the data again, and MultipartETag computes the
// "hex(md5(concat(part md5s)))-N" ETag. ObjectChecksum is what a
// CompleteMultipartUpload declares: its x-amz-checksum-* header carries
// the whole object's checksum (not its XML body's), checked by Verify.
//
// Errors are *Error values carrying the S3 error code and HTTP status; the
// HTTP layer renders them unchanged.
package checksum
