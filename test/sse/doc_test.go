// Package sse_test drives real `b3 server` and `b3 node` processes with
// aws-sdk-go-v2 to check encryption at rest end to end: SSE-S3, SSE-KMS,
// SSE-C and bucket default encryption, ranges, copies, multipart, restart,
// tampered ciphertext, and that no file under the data directories holds
// the plaintext of an encrypted object.
package sse_test
