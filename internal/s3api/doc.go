// Package s3api is b3's S3 REST API: it routes HTTP requests (path-style
// and virtual-host-style) to S3 operations, authenticates them through
// package s3auth, authorizes them (bucket policies, ACLs, ownership
// controls and Block Public Access, evaluated by package policy), and
// renders XML documents or S3 error XML. It knows nothing about
// disks: every operation is a call into package objstore.
//
// # A request, in order
//
//	route        method + path + query sub-resources -> operation
//	             (unsupported sub-resources: NotImplemented)
//	authenticate s3auth.Verifier: SigV4 header / presigned / streaming
//	             chunks / trailers, SigV2; the body is replaced by a
//	             verifying reader, not read yet (100-continue is answered
//	             only once the signature checked out)
//	authorize    decide (auth.go), the one place access is decided:
//	             policy Deny > bucket owner > policy Allow > ACL grant;
//	             anonymous requests are evaluated like any other;
//	             missing bucket: NoSuchBucket
//	handle       the operation; uploads stream
//	               client -> s3auth body -> checksum.Reader (MD5 + the
//	               requested checksum, or the default CRC64NVME, one
//	               pass) -> objstore -> segments
//	             and nothing is committed unless the body ended verified.
//
// # Guarantees
//
//   - Every failure is S3 error XML with a code, message, resource and
//     request id (x-amz-request-id on every response), mapped in one
//     place (toAPIError). Client mistakes are 4xx; a panic is recovered
//     and answered InternalError, and logged.
//   - An upload whose body is short, long, or fails a digest or signature
//     leaves no object behind (objstore discards the records).
//   - Downloads stream from objstore's reader; no handler holds an object
//     in memory. Request documents (XML) are bounded (4 MiB).
//   - A failure after a response started (a broken segment mid-GET) aborts
//     the connection, so a client never takes a short body for an object.
//   - A checksum the request declares but b3 cannot verify (unknown
//     algorithm, undeclared trailer) is refused, never ignored; and a
//     CompleteMultipartUpload's x-amz-checksum-* header is checked against
//     the object's checksum combined from its parts.
//   - Owners appear in documents by canonical id (CanonicalID), never by
//     access key id; object ACLs are read and written only with
//     READ_ACP/WRITE_ACP (the bucket's owner, the object's owner, or a
//     grantee), never through a bucket's public READ.
//   - New buckets get AWS's defaults: ownership BucketOwnerEnforced (ACLs
//     disabled) and every Block Public Access setting on. Buckets made
//     before ownership controls existed keep their behaviour: a bucket
//     grant of READ (WRITE) also opens its objects' reads (writes).
//   - POST form fields are case-insensitive and unique; the file is bounded
//     by content-length-range, Config.MaxObjectSize and the free-space
//     reserve as it streams, before its bytes reach objstore.
//   - Object Lock asked for by a write (headers, POST fields) is decided as
//     the operation that sets it afterwards (s3:PutObjectRetention,
//     s3:PutObjectLegalHold); no retention ends beyond Config.MaxRetention
//     from when it is set; the governance bypass is
//     s3:BypassGovernanceRetention through decide (objectlock.go).
//   - PutObject and UploadPart accept bodies of unknown length (HTTP
//     Transfer-Encoding: chunked without Content-Length, as live video
//     encoders send them; S3 answers 411): they are bounded by
//     Config.MaxObjectSize and the free-space reserve as they stream
//     (stream.go), and keep every signature and digest check. An
//     aws-chunked body still needs x-amz-decoded-content-length.
//   - URLs in logs have presigned signatures redacted (redactedURL).
//   - In a bucket that is a Low-Latency HLS origin, a GET of a .m3u8 key
//     with _HLS_msn is held until a write of that key reaches it, and
//     every write of a playlist wakes exactly the held requests it
//     reaches, before the write is answered (llhls.go, package hls).
//   - Server-side encryption (SSE-S3, SSE-KMS, SSE-C, bucket defaults)
//     happens here, through package sse: a body is encrypted before it
//     reaches the Backend and a read decrypts only the packages of its
//     range, so the store, its cache and a cluster's replication see
//     ciphertext only (encryption.go; key rotation: rotate.go;
//     docs/ENCRYPTION.md).
//
// What it does not do: the sub-resources listed in route.go.
package s3api
