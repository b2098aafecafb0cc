package bench

import (
	"context"
	"errors"
	"io"
	"net"
	"strconv"
	"syscall"

	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// Error types reported in Cell.ErrorsByType besides S3 error codes.
const (
	errCanceled   = "canceled"        // the run itself was stopped (Ctrl-C)
	errUnfinished = "unfinished"      // still in flight when the drain deadline passed
	errTimeout    = "timeout"         // a deadline or network timeout expired
	errVerify     = "verify_mismatch" // downloaded bytes differ from what was uploaded
	errShort      = "short_read"      // fewer bytes than the object's size
	errRefused    = "conn_refused"
	errReset      = "conn_reset"
	errEOF        = "unexpected_eof"
	errOther      = "other"
)

// ErrVerify is returned by a download whose content differs from the payload
// that was uploaded under its key.
var ErrVerify = errors.New("downloaded content differs from the uploaded payload")

// ErrShortRead is returned by a download that ended before the object's size.
var ErrShortRead = errors.New("download shorter than the object")

// errDrained marks an operation cut off at the end of a mixed run's drain.
var errDrained = errors.New("still in flight at the drain deadline")

// ClassifyError maps an operation error to a short, stable type name: the S3
// error code when the server sent one ("SlowDown", "NoSuchKey"), the HTTP
// status when it sent only that ("http_503"), else a transport category.
func ClassifyError(err error) string {
	var apiErr smithy.APIError
	var respErr *smithyhttp.ResponseError
	var netErr net.Error
	switch {
	case errors.Is(err, errDrained):
		return errUnfinished
	case errors.Is(err, ErrVerify):
		return errVerify
	case errors.Is(err, ErrShortRead):
		return errShort
	case errors.Is(err, context.Canceled):
		return errCanceled
	case errors.Is(err, context.DeadlineExceeded):
		return errTimeout
	case errors.As(err, &apiErr) && apiErr.ErrorCode() != "":
		return apiErr.ErrorCode()
	case errors.As(err, &respErr) && respErr.HTTPStatusCode() != 0:
		return "http_" + strconv.Itoa(respErr.HTTPStatusCode())
	case errors.Is(err, syscall.ECONNREFUSED):
		return errRefused
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return errReset
	case errors.Is(err, io.ErrUnexpectedEOF):
		return errEOF
	case errors.As(err, &netErr) && netErr.Timeout():
		return errTimeout
	}
	return errOther
}
