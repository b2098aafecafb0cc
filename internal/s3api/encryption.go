package s3api

import (
	"net/http"
	"strings"
)

// refuseEncryption answers NotImplemented to a request asking for
// server-side encryption: SSE-S3 or SSE-KMS (x-amz-server-side-encryption,
// its KMS key, context and bucket-key headers) or SSE-C (the customer
// key headers, also those of a copy source). b3 does not encrypt at rest;
// storing the object in plaintext and answering 200 would let a client
// believe it was encrypted. The check runs before any byte of the body is
// read and before any other validation of a copy, so a copy of an object
// onto itself with new encryption settings gets NotImplemented too.
func refuseEncryption(h http.Header) error {
	for name := range h {
		lower := strings.ToLower(name)
		if strings.HasPrefix(lower, "x-amz-server-side-encryption") ||
			strings.HasPrefix(lower, "x-amz-copy-source-server-side-encryption") {
			return errNotImplemented.withMessage("Server-side encryption is not supported: b3 does not encrypt objects at rest (header %s)", lower)
		}
	}
	return nil
}
