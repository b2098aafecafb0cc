// Package s3auth authenticates S3 requests. It does no I/O of its own and
// knows nothing about storage: it reads a request's headers and URL,
// decides who signed it, and wraps the body in a reader that verifies the
// payload as the caller streams it.
//
// One call per request:
//
//	result, err := verifier.Authenticate(r) // *Error on failure
//	// result.AccessKey ("" = anonymous), result.Body (decoded, verifying),
//	// result.ContentLength (decoded payload length)
//
// Supported schemes, as AWS documents them:
//   - SigV4 Authorization header (AWS4-HMAC-SHA256) with x-amz-content-sha256
//     a hex digest (checked at EOF: XAmzContentSHA256Mismatch),
//     UNSIGNED-PAYLOAD, STREAMING-AWS4-HMAC-SHA256-PAYLOAD (every chunk
//     signature verified, chained from the seed signature),
//     STREAMING-UNSIGNED-PAYLOAD-TRAILER and
//     STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER (signed trailer);
//   - SigV4 presigned URLs (X-Amz-Expires at most 7 days); a GET or HEAD
//     whose signature does not cover the query as sent is checked again
//     without the HLS delivery directives a player appends (_HLS_*
//     parameters, withoutDirectives). SigV2 presigned URLs sign only the
//     sub-resources, so the directives never counted there;
//   - SigV2 Authorization header ("AWS key:signature") and presigned query
//     (AWSAccessKeyId, Expires, Signature);
//   - POST object forms (VerifyPostPolicy), V4 and V2 policy signatures;
//   - anonymous requests, reported as Method Anonymous.
//
// Guarantees:
//   - Authenticate never reads the body, so a server answers
//     "Expect: 100-continue" only after the headers authenticated.
//   - Result.Body returns io.EOF only when everything declared about the
//     payload held: its sha256, every chunk signature, the trailer signature
//     and the decoded length. Otherwise the read that would have ended the
//     stream returns an *Error. Bytes delivered before that error are NOT
//     verified yet (chunks are streamed, not buffered): the caller must not
//     acknowledge an upload whose body did not end in io.EOF.
//   - Trailing checksums are exposed through Body.Trailer after io.EOF, so
//     checksum.NewReader(result.Body, expected) checks them in the same pass
//     that computes the ETag.
//   - Canonical URIs follow S3 rules: the path is decoded and re-encoded once
//     (never double-encoded); if that fails the path as sent is tried too,
//     for clients that sign their own escaping.
//   - Signatures are compared in constant time. No input makes the package
//     panic (fuzz targets cover the header parsers, the aws-chunked decoder
//     and the policy parser).
//   - Every x-amz-* header of a SigV4 request is covered by its signature
//     (exceptions in checkAmzHeadersSigned); otherwise AccessDenied with the
//     names in Error.HeadersNotSigned. SigV2 signs every x-amz-* header by
//     construction.
//
// Not done: SigV4A (ECDSA) signatures, session tokens (no STS), and the
// 8 KiB minimum chunk size S3 enforces on non-final chunks.
//
// Errors are *Error with the S3 code and HTTP status (AccessDenied 403,
// SignatureDoesNotMatch 403, InvalidAccessKeyId 403, RequestTimeTooSkewed
// 403, AuthorizationHeaderMalformed 400 with the expected Region,
// AuthorizationQueryParametersError 400, InvalidArgument 400, InvalidRequest
// 400, XAmzContentSHA256Mismatch 400, IncompleteBody 400,
// MalformedTrailerError 400, MissingContentLength 411,
// InvalidPolicyDocument 400, EntityTooSmall/EntityTooLarge 400). Both
// *Error and checksum's *Error implement S3Code() and HTTPStatus(), so the
// HTTP layer maps them in one place.
package s3auth
