package s3api

import (
	"errors"
	"net/http"

	"github.com/b3-storage/b3/internal/lifecycle"
)

var (
	opGetBucketLifecycle    = operation{name: "GetBucketLifecycleConfiguration", perm: permOwner, handle: (*Server).getBucketLifecycle}
	opPutBucketLifecycle    = operation{name: "PutBucketLifecycleConfiguration", perm: permOwner, handle: (*Server).putBucketLifecycle}
	opDeleteBucketLifecycle = operation{name: "DeleteBucketLifecycle", perm: permOwner, handle: (*Server).deleteBucketLifecycle}
)

// The document is validated by package lifecycle (the same parser the
// store's expiry uses), stored verbatim and returned as sent.

func (s *Server) getBucketLifecycle(rq *request) error {
	if len(rq.bucketRec.Lifecycle) == 0 {
		return errNoSuchLifecycle
	}
	rq.w.Header().Set("Content-Type", "application/xml")
	rq.w.WriteHeader(http.StatusOK)
	_, _ = rq.w.Write(rq.bucketRec.Lifecycle)
	return nil
}

func (s *Server) putBucketLifecycle(rq *request) error {
	data, err := readSmallBody(rq)
	if err != nil {
		return err
	}
	if err := s.store.SetBucketLifecycle(rq.bucket, data); err != nil {
		return lifecycleError(err)
	}
	return writeEmpty(rq, http.StatusOK)
}

func (s *Server) deleteBucketLifecycle(rq *request) error {
	if err := s.store.SetBucketLifecycle(rq.bucket, nil); err != nil {
		return err
	}
	return writeEmpty(rq, http.StatusNoContent)
}

// lifecycleError maps a validation failure to the S3 error AWS returns.
func lifecycleError(err error) error {
	var le *lifecycle.Error
	if !errors.As(err, &le) {
		return err
	}
	switch le.Code {
	case "MalformedXML":
		return errMalformedXML
	case "InvalidArgument":
		return errInvalidArgument.withMessage("%s", le.Message)
	case "InvalidRequest":
		return errInvalidRequest.withMessage("%s", le.Message)
	case "InvalidTag":
		return errInvalidTag
	case "NotImplemented":
		return errNotImplemented.withMessage("%s", le.Message)
	}
	return errMalformedXML
}
