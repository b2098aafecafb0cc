// Package sse encrypts object bytes at rest: data keys, their sealing
// under master keys or customer keys, and chunked authenticated
// encryption of the bytes.
//
// # Key hierarchy
//
//	master key (KeyRing, by name)   customer key (SSE-C, from the request)
//	        |  AES-256-GCM seal              |  AES-256-GCM seal
//	        v                                v
//	   data key: 32 random bytes, one per object (or per multipart upload)
//	        |  HMAC-SHA256(data key, part number): one key per part
//	        v
//	   stream key -> DARE 2.0 (github.com/minio/sio), AES-256-GCM
//
// A data key never leaves the process unsealed: the object's record (meta)
// keeps Seal's output, bound to the object's bucket and key so that a
// sealed key copied onto another record does not open. The customer's key
// is never kept anywhere: a wrong one is detected because the data key
// sealed under it does not open (ErrKeyMismatch).
//
// # Stored bytes
//
// A stream's plaintext is cut into packages of ChunkSize (64 KiB) bytes;
// each is stored as a 16-byte header (version, cipher, length, nonce), its
// ciphertext and a 16-byte GCM tag, the last one flagged final:
//
//	+--------+----------------------------+-----+--------+-----------+-----+
//	| header | ciphertext (64 KiB)        | tag | header | ... (<=64K)| tag |
//	+--------+----------------------------+-----+--------+-----------+-----+
//
// The package's sequence number is in its nonce, so packages cannot be
// reordered, dropped or cut off without the read failing. A single PUT is
// one stream (part 0); a multipart object is its parts' streams one after
// the other, each under its part key. Sizes map exactly (EncryptedSize,
// DecryptedSize), so a record keeps the stored size and the plaintext size
// follows from it; a ranged read (Layout.Range) reads and decrypts only
// the packages holding the range.
//
// # What it does not do
//
// It holds no state and does no I/O but reading a key file: where bytes
// and records are kept is the caller's (package s3api encrypts bodies
// before they reach the store, so that objstore, its cache, vacuum and a
// cluster's staging and replication see ciphertext only).
package sse
