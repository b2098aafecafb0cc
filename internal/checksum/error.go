package checksum

import (
	"fmt"
	"net/http"
	"strings"
)

// Error is an S3 protocol error: the code and HTTP status S3 returns for it.
type Error struct {
	Code    string // S3 error code, e.g. "BadDigest"
	Status  int    // HTTP status, e.g. 400
	Message string // human readable, as S3 words it
}

func (e *Error) Error() string { return fmt.Sprintf("%s: %s", e.Code, e.Message) }

// S3Code returns the S3 error code; shared with s3auth.Error so that the HTTP
// layer can map both with one interface.
func (e *Error) S3Code() string { return e.Code }

// HTTPStatus returns the HTTP status code of the error.
func (e *Error) HTTPStatus() int { return e.Status }

func errBadDigestMD5() *Error {
	return &Error{Code: "BadDigest", Status: http.StatusBadRequest,
		Message: "The Content-MD5 you specified did not match what we received."}
}

func errInvalidDigest() *Error {
	return &Error{Code: "InvalidDigest", Status: http.StatusBadRequest,
		Message: "The Content-MD5 you specified was invalid."}
}

func errBadDigestChecksum(alg Algorithm) *Error {
	return &Error{Code: "BadDigest", Status: http.StatusBadRequest,
		Message: fmt.Sprintf("The %s you specified did not match the calculated checksum.", alg)}
}

func errInvalidRequest(msg string) *Error {
	return &Error{Code: "InvalidRequest", Status: http.StatusBadRequest, Message: msg}
}

func errMalformedTrailer() *Error {
	return &Error{Code: "MalformedTrailerError", Status: http.StatusBadRequest,
		Message: "The request contained trailing data that was not well-formed or did not conform to our published schema."}
}

// errUnsupportedAlgorithm is S3's answer to an x-amz-checksum-algorithm
// (or x-amz-sdk-checksum-algorithm) naming an algorithm it does not know.
func errUnsupportedAlgorithm() *Error {
	return errInvalidRequest("Checksum algorithm provided is unsupported. Please try again with any of the valid types: [" + algorithmList() + "]")
}

// ErrUnsupportedAlgorithm is errUnsupportedAlgorithm for the HTTP layer's
// own header checks (CreateMultipartUpload, CopyObject).
func ErrUnsupportedAlgorithm() error { return errUnsupportedAlgorithm() }

// algorithmList names every supported algorithm: "CRC32, CRC32C, ...".
func algorithmList() string {
	names := make([]string, len(Algorithms))
	for i, alg := range Algorithms {
		names[i] = alg.String()
	}
	return strings.Join(names, ", ")
}
