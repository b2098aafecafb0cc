package mount

import (
	"context"
	"errors"
	"log"
	"net/http"
	"syscall"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/smithy-go"
)

// httpStatus returns the HTTP status of an SDK error, 0 when the request
// got no response (connection refused, timeout).
func httpStatus(err error) int {
	var re *awshttp.ResponseError
	if errors.As(err, &re) {
		return re.HTTPStatusCode()
	}
	return 0
}

// requestID returns the x-amz-request-id of the failed response, if any.
func requestID(err error) string {
	var re *awshttp.ResponseError
	if errors.As(err, &re) {
		return re.ServiceRequestID()
	}
	return ""
}

// isNotFound reports a 404 (NoSuchKey, NotFound, NoSuchUpload).
func isNotFound(err error) bool { return httpStatus(err) == http.StatusNotFound }

// errnoOf maps a failed S3 request to the errno the caller gets. This is
// the one place where S3 errors become errno values.
func errnoOf(err error) syscall.Errno {
	if err == nil {
		return 0
	}
	if errors.Is(err, context.Canceled) {
		return syscall.EINTR // the kernel interrupted the request
	}
	// An errno of the mount itself (EINVAL for an out-of-order write...);
	// an errno inside a failed request (ECONNREFUSED) is the server's
	// problem and becomes EIO below.
	var opErr *smithy.OperationError
	var errno syscall.Errno
	if !errors.As(err, &opErr) && errors.As(err, &errno) {
		return errno
	}
	switch httpStatus(err) {
	case http.StatusNotFound:
		return syscall.ENOENT
	case http.StatusForbidden:
		return syscall.EACCES
	case http.StatusInsufficientStorage:
		return syscall.ENOSPC
	case http.StatusRequestEntityTooLarge:
		return syscall.EFBIG
	}
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) && apiErr.ErrorCode() == "EntityTooLarge" {
		return syscall.EFBIG
	}
	return syscall.EIO
}

// failure logs err with what was being done and the request id, and
// returns its errno. Not-found answers are expected and not logged.
func failure(logger *log.Logger, op, key string, err error) syscall.Errno {
	errno := errnoOf(err)
	if errno != syscall.ENOENT && errno != syscall.EINTR && logger != nil {
		if id := requestID(err); id != "" {
			logger.Printf("%s %q: %v (errno %v, request id %s)", op, key, err, errno, id)
		} else {
			logger.Printf("%s %q: %v (errno %v)", op, key, err, errno)
		}
	}
	return errno
}
