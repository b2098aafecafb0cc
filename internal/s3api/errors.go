package s3api

import (
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/b3-storage/b3/internal/blob"
	"github.com/b3-storage/b3/internal/objstore"
)

// APIError is an S3 error: the code and HTTP status S3 returns, and a
// message. Handlers return these (or errors wrapping them); writeError is
// the one place that renders any error as S3 error XML.
type APIError struct {
	Code    string
	Status  int
	Message string
	// Extra elements rendered in the error document (e.g. BucketName).
	Extra []xmlElement
}

type xmlElement struct {
	XMLName xml.Name
	Value   string `xml:",chardata"`
}

func (e *APIError) Error() string { return e.Code + ": " + e.Message }

// S3Code and HTTPStatus give APIError the method set of s3auth.Error and
// checksum.Error, so all three map the same way.
func (e *APIError) S3Code() string  { return e.Code }
func (e *APIError) HTTPStatus() int { return e.Status }

// s3Error is the interface shared by APIError, s3auth.Error and
// checksum.Error.
type s3Error interface {
	error
	S3Code() string
	HTTPStatus() int
}

func apiErr(code string, status int, message string) *APIError {
	return &APIError{Code: code, Status: status, Message: message}
}

// withMessage returns a copy of e with another message.
func (e *APIError) withMessage(format string, args ...any) *APIError {
	c := *e
	c.Message = fmt.Sprintf(format, args...)
	return &c
}

// The S3 errors b3 returns, with AWS's codes, statuses and wording.
var (
	errAccessDenied           = apiErr("AccessDenied", 403, "Access Denied")
	errAccessForbiddenCORS    = apiErr("AccessForbidden", 403, "CORSResponse: This CORS request is not allowed. This is usually because the evalution of Origin, request method / Access-Control-Request-Method or Access-Control-Request-Headers are not whitelisted by the resource's CORS spec.")
	errBucketAlreadyExists    = apiErr("BucketAlreadyExists", 409, "The requested bucket name is not available. The bucket namespace is shared by all users of the system. Please select a different name and try again.")
	errBucketAlreadyOwned     = apiErr("BucketAlreadyOwnedByYou", 409, "Your previous request to create the named bucket succeeded and you already own it.")
	errBucketNotEmpty         = apiErr("BucketNotEmpty", 409, "The bucket you tried to delete is not empty")
	errEntityTooLarge         = apiErr("EntityTooLarge", 400, "Your proposed upload exceeds the maximum allowed object size.")
	errEntityTooSmall         = apiErr("EntityTooSmall", 400, "Your proposed upload is smaller than the minimum allowed object size.")
	errIncompleteBody         = apiErr("IncompleteBody", 400, "You did not provide the number of bytes specified by the Content-Length HTTP header.")
	errInternal               = apiErr("InternalError", 500, "We encountered an internal error. Please try again.")
	errInsufficientStorage    = apiErr("InsufficientStorage", 507, "The server's disk is below its free-space reserve; delete objects or add space, then retry.")
	errRestarted              = apiErr("SlowDown", 503, "The server recovered from a full disk while this request wrote; retry.")
	errInvalidArgument        = apiErr("InvalidArgument", 400, "Invalid Argument")
	errInvalidBucketName      = apiErr("InvalidBucketName", 400, "The specified bucket is not valid.")
	errInvalidLocation        = apiErr("InvalidLocationConstraint", 400, "The specified location-constraint is not valid.")
	errInvalidPart            = apiErr("InvalidPart", 400, "One or more of the specified parts could not be found.  The part may not have been uploaded, or the specified entity tag may not match the part's entity tag.")
	errInvalidPartOrder       = apiErr("InvalidPartOrder", 400, "The list of parts was not in ascending order. Parts must be ordered by part number.")
	errInvalidRange           = apiErr("InvalidRange", 416, "The requested range is not satisfiable")
	errInvalidRequest         = apiErr("InvalidRequest", 400, "Invalid Request")
	errInvalidTag             = apiErr("InvalidTag", 400, "The tag provided was not a valid tag.")
	errKeyTooLong             = apiErr("KeyTooLongError", 400, "Your key is too long")
	errMalformedXML           = apiErr("MalformedXML", 400, "The XML you provided was not well-formed or did not validate against our published schema.")
	errMalformedPOST          = apiErr("MalformedPOSTRequest", 400, "The body of your POST request is not well-formed multipart/form-data.")
	errMetadataTooLarge       = apiErr("MetadataTooLarge", 400, "Your metadata headers exceed the maximum allowed metadata size.")
	errMethodNotAllowed       = apiErr("MethodNotAllowed", 405, "The specified method is not allowed against this resource.")
	errNoSuchBucket           = apiErr("NoSuchBucket", 404, "The specified bucket does not exist")
	errNoSuchCORS             = apiErr("NoSuchCORSConfiguration", 404, "The CORS configuration does not exist")
	errNoSuchKey              = apiErr("NoSuchKey", 404, "The specified key does not exist.")
	errNoSuchLifecycle        = apiErr("NoSuchLifecycleConfiguration", 404, "The lifecycle configuration does not exist")
	errNoSuchPolicy           = apiErr("NoSuchBucketPolicy", 404, "The bucket policy does not exist")
	errNoSuchTagSet           = apiErr("NoSuchTagSet", 404, "The TagSet does not exist")
	errNoSuchUpload           = apiErr("NoSuchUpload", 404, "The specified upload does not exist. The upload ID may be invalid, or the upload may have been aborted or completed.")
	errNotImplemented         = apiErr("NotImplemented", 501, "A header you provided implies functionality that is not implemented")
	errNotModified            = apiErr("NotModified", 304, "Not Modified")
	errPreconditionFailed     = apiErr("PreconditionFailed", 412, "At least one of the pre-conditions you specified did not hold")
	errInvalidStorageClass    = apiErr("InvalidStorageClass", 400, "The storage class you specified is not valid")
	errAnonymousDenied        = apiErr("AccessDenied", 403, "Anonymous access is forbidden for this operation")
	errInvalidCopyDest        = apiErr("InvalidRequest", 400, "This copy request is illegal because it is trying to copy an object to itself without changing the object's metadata, storage class, website redirect location or encryption attributes.")
	errInvalidCopySource      = apiErr("InvalidArgument", 400, "Copy Source must mention the source bucket and key: sourcebucket/sourcekey")
	errInvalidPartNumber      = apiErr("InvalidArgument", 400, "Part number must be an integer between 1 and 10000, inclusive")
	errInvalidVersionID       = apiErr("InvalidArgument", 400, "Invalid version id specified")
	errRangeWithPartNumber    = apiErr("InvalidRequest", 400, "Cannot specify both Range header and partNumber query parameter")
	errInvalidMaxKeys         = apiErr("InvalidArgument", 400, "Provided max-keys not an integer or within integer range")
	errInvalidEncodingType    = apiErr("InvalidArgument", 400, "Invalid Encoding Method specified in Request")
	errInvalidContinuation    = apiErr("InvalidArgument", 400, "The continuation token provided is incorrect")
	errConflictingOperation   = apiErr("OperationAborted", 409, "A conflicting conditional operation is currently in progress against this resource. Please try again.")
	errIllegalVersioningState = apiErr("IllegalVersioningConfigurationException", 400, "The versioning configuration specified in the request is invalid.")
	errNoSuchVersion          = apiErr("NoSuchVersion", 404, "The specified version does not exist.")
	errObjectLocked           = apiErr("AccessDenied", 403, "Access Denied because object protected by object lock.")
	errInvalidBucketState     = apiErr("InvalidBucketState", 409, "Object Lock configuration cannot be enabled on existing buckets.")
	errNoSuchObjectLockConfig = apiErr("ObjectLockConfigurationNotFoundError", 404, "Object Lock configuration does not exist for this bucket")
	errNoSuchRetention        = apiErr("NoSuchObjectLockConfiguration", 404, "The specified object does not have a ObjectLock configuration")
)

// Limits of the S3 API, as AWS documents them.
const (
	maxKeyLength      = 1024
	maxUserMetaBytes  = 2 << 10
	maxPutSize        = 5 << 30 // single PUT and each part
	maxXMLBody        = 4 << 20 // configuration and request documents
	defaultMinPart    = 5 << 20
	maxDeleteObjects  = 1000
	maxTagsPerObject  = 10
	maxTagsPerBucket  = 50
	maxTagKeyLength   = 128
	maxTagValueLength = 256
)

// toAPIError maps any error to the S3 error to render. The second result
// is false for errors that are the server's fault (rendered as
// InternalError and logged).
func toAPIError(err error) (s3Error, bool) {
	var e s3Error
	if errors.As(err, &e) {
		return e, true
	}
	var tooBig *http.MaxBytesError
	switch {
	case errors.Is(err, objstore.ErrNoSuchBucket):
		return errNoSuchBucket, true
	case errors.Is(err, objstore.ErrNoSuchKey):
		return errNoSuchKey, true
	case errors.Is(err, objstore.ErrNoSuchUpload):
		return errNoSuchUpload, true
	case errors.Is(err, objstore.ErrBucketNotEmpty):
		return errBucketNotEmpty, true
	case errors.Is(err, objstore.ErrBucketExists):
		return errBucketAlreadyExists, true
	case errors.Is(err, objstore.ErrNoSuchVersion):
		return errNoSuchVersion, true
	case errors.Is(err, objstore.ErrInvalidVersionID):
		return errInvalidVersionID, true
	case errors.Is(err, objstore.ErrObjectLocked):
		return errObjectLocked, true
	case errors.Is(err, objstore.ErrDeleteMarker):
		return errMethodNotAllowed, true
	case errors.Is(err, objstore.ErrInvalidBucketState):
		return errInvalidBucketState.withMessage("The bucket has Object Lock: its versioning cannot be suspended."), true
	case errors.Is(err, objstore.ErrStorageFull), blob.IsNoSpace(err):
		return errInsufficientStorage, true
	case errors.Is(err, blob.ErrRestarted):
		return errRestarted, true
	case errors.Is(err, io.ErrUnexpectedEOF):
		// The client closed the connection before sending Content-Length
		// bytes (net/http reports it so).
		return errIncompleteBody, true
	case errors.As(err, &tooBig):
		return errEntityTooLarge, true
	case errors.Is(err, context.Canceled):
		// The client went away; nobody reads the answer, but it is not
		// the server's fault.
		return apiErr("RequestTimeout", 400, "Your socket connection to the server was not read from or written to within the timeout period."), true
	}
	return errInternal, false
}

// ErrorCode is the S3 error code, HTTP status and message err is
// rendered as (InternalError, 500 for the server's own faults): for a
// backend that passes an error on to another process.
func ErrorCode(err error) (code string, status int, message string) {
	e, _ := toAPIError(err)
	var msg string
	if ae, ok := e.(*APIError); ok {
		msg = ae.Message
	} else {
		msg = e.Error()
	}
	return e.S3Code(), e.HTTPStatus(), msg
}

// errorResponse is the S3 error document.
type errorResponse struct {
	XMLName   xml.Name `xml:"Error"`
	Code      string
	Message   string
	Resource  string `xml:",omitempty"`
	RequestID string `xml:"RequestId"`
	HostID    string `xml:"HostId"`
	Region    string `xml:",omitempty"`
	Extra     []xmlElement
}
