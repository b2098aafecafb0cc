package s3auth

import (
	"fmt"
	"net/http"
)

// Error is an S3 authentication error: the code and HTTP status S3 returns.
type Error struct {
	Code    string // S3 error code, e.g. "SignatureDoesNotMatch"
	Status  int    // HTTP status
	Message string // as S3 words it
	// Region is set for AuthorizationHeaderMalformed caused by a wrong
	// region: the region the server expects (S3 renders it as <Region>).
	Region string
	// HeadersNotSigned lists, comma separated, the x-amz-* headers a
	// request carried outside its signature (S3 renders it as
	// <HeadersNotSigned>).
	HeadersNotSigned string
}

func (e *Error) Error() string { return fmt.Sprintf("%s: %s", e.Code, e.Message) }

// S3Code returns the S3 error code (same method set as checksum.Error).
func (e *Error) S3Code() string { return e.Code }

// HTTPStatus returns the HTTP status code of the error.
func (e *Error) HTTPStatus() int { return e.Status }

func newError(code string, status int, format string, args ...any) *Error {
	return &Error{Code: code, Status: status, Message: fmt.Sprintf(format, args...)}
}

func errAccessDenied(msg string) *Error {
	return newError("AccessDenied", http.StatusForbidden, "%s", msg)
}

func errSignatureMismatch() *Error {
	return newError("SignatureDoesNotMatch", http.StatusForbidden,
		"The request signature we calculated does not match the signature you provided. Check your key and signing method.")
}

func errChunkSignatureMismatch() *Error {
	return newError("SignatureDoesNotMatch", http.StatusForbidden,
		"The chunk signature we calculated does not match the signature you provided.")
}

func errInvalidAccessKey() *Error {
	return newError("InvalidAccessKeyId", http.StatusForbidden,
		"The AWS Access Key Id you provided does not exist in our records.")
}

func errHeaderMalformed(reason string) *Error {
	return newError("AuthorizationHeaderMalformed", http.StatusBadRequest,
		"The authorization header is malformed; %s", reason)
}

func errQueryMalformed(reason string) *Error {
	return newError("AuthorizationQueryParametersError", http.StatusBadRequest, "%s", reason)
}

func errSkewed() *Error {
	return newError("RequestTimeTooSkewed", http.StatusForbidden,
		"The difference between the request time and the current time is too large.")
}

func errMissingDate() *Error {
	return errAccessDenied("AWS authentication requires a valid Date or x-amz-date header")
}

func errInvalidArgument(msg string) *Error {
	return newError("InvalidArgument", http.StatusBadRequest, "%s", msg)
}

func errInvalidRequest(msg string) *Error {
	return newError("InvalidRequest", http.StatusBadRequest, "%s", msg)
}

func errContentSHA256Mismatch() *Error {
	return newError("XAmzContentSHA256Mismatch", http.StatusBadRequest,
		"The provided 'x-amz-content-sha256' header does not match what was computed.")
}

func errIncompleteBody() *Error {
	return newError("IncompleteBody", http.StatusBadRequest,
		"You did not provide the number of bytes specified by the Content-Length HTTP header.")
}

func errMissingContentLength() *Error {
	return newError("MissingContentLength", http.StatusLengthRequired,
		"You must provide the Content-Length HTTP header.")
}

func errMalformedChunk(reason string) *Error {
	return newError("IncompleteBody", http.StatusBadRequest,
		"The aws-chunked body is malformed: %s", reason)
}

func errMalformedTrailer() *Error {
	return newError("MalformedTrailerError", http.StatusBadRequest,
		"The request contained trailing data that was not well-formed or did not conform to our published schema.")
}

func errExpired() *Error { return errAccessDenied("Request has expired") }
