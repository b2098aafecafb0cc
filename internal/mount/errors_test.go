package mount

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net/http"
	"strings"
	"syscall"
	"testing"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// sdkError builds an error shaped as the SDK returns it for an HTTP status.
func sdkError(status int, code string) error {
	return &smithy.OperationError{ServiceID: "S3", OperationName: "GetObject", Err: &awshttp.ResponseError{
		RequestID: "REQ123",
		ResponseError: &smithyhttp.ResponseError{
			Response: &smithyhttp.Response{Response: &http.Response{StatusCode: status}},
			Err:      &smithy.GenericAPIError{Code: code},
		},
	}}
}

// TestErrnoOf is the table of docs/MOUNT.md's Errors section.
func TestErrnoOf(t *testing.T) {
	refused := &smithy.OperationError{ServiceID: "S3", OperationName: "PutObject",
		Err: fmt.Errorf("dial tcp: %w", syscall.ECONNREFUSED)}
	cases := []struct {
		name string
		err  error
		want syscall.Errno
	}{
		{"404 NoSuchKey", sdkError(404, "NoSuchKey"), syscall.ENOENT},
		{"403 AccessDenied", sdkError(403, "AccessDenied"), syscall.EACCES},
		{"507 InsufficientStorage", sdkError(507, "InsufficientStorage"), syscall.ENOSPC},
		{"413", sdkError(413, "EntityTooLarge"), syscall.EFBIG},
		{"500", sdkError(500, "InternalError"), syscall.EIO},
		{"503 SlowDown", sdkError(503, "SlowDown"), syscall.EIO},
		{"412 PreconditionFailed (object replaced)", sdkError(412, "PreconditionFailed"), syscall.EIO},
		{"connection refused", refused, syscall.EIO},
		{"the mount's own EINVAL", fmt.Errorf("%w: out of order", syscall.EINVAL), syscall.EINVAL},
		{"anything else", errors.New("boom"), syscall.EIO},
		{"interrupted by the kernel", &smithy.OperationError{Err: fmt.Errorf("get: %w", context.Canceled)}, syscall.EINTR},
	}
	for _, c := range cases {
		if got := errnoOf(c.err); got != c.want {
			t.Errorf("%s: errno %v, want %v", c.name, got, c.want)
		}
	}
	var logged strings.Builder
	errno := failure(log.New(&logged, "", 0), "upload part 3", "a/key", sdkError(507, "InsufficientStorage"))
	if errno != syscall.ENOSPC || !strings.Contains(logged.String(), "request id REQ123") ||
		!strings.Contains(logged.String(), `"a/key"`) {
		t.Errorf("failure: %v, logged %q", errno, logged.String())
	}
}
