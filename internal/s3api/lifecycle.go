package s3api

import (
	"encoding/xml"
	"net/http"

	"github.com/b3-storage/b3/internal/meta"
)

var (
	opGetBucketLifecycle    = operation{name: "GetBucketLifecycleConfiguration", perm: permOwner, handle: (*Server).getBucketLifecycle}
	opPutBucketLifecycle    = operation{name: "PutBucketLifecycleConfiguration", perm: permOwner, handle: (*Server).putBucketLifecycle}
	opDeleteBucketLifecycle = operation{name: "DeleteBucketLifecycle", perm: permOwner, handle: (*Server).deleteBucketLifecycle}
)

// lifecycleConfiguration is parsed only to check the document is a
// well-formed lifecycle configuration; the raw bytes are stored and
// returned, and the expiry sweeper interprets them.
type lifecycleConfiguration struct {
	XMLName xml.Name `xml:"LifecycleConfiguration"`
	Rules   []struct {
		ID     string
		Status string
	} `xml:"Rule"`
}

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
	var conf lifecycleConfiguration
	if err := xml.Unmarshal(data, &conf); err != nil || len(conf.Rules) == 0 || len(conf.Rules) > 1000 {
		return errMalformedXML
	}
	for _, r := range conf.Rules {
		if r.Status != "Enabled" && r.Status != "Disabled" {
			return errMalformedXML
		}
	}
	if err := s.store.UpdateBucket(rq.bucket, func(b *meta.Bucket) error { b.Lifecycle = data; return nil }); err != nil {
		return err
	}
	return writeEmpty(rq, http.StatusOK)
}

func (s *Server) deleteBucketLifecycle(rq *request) error {
	if err := s.store.UpdateBucket(rq.bucket, func(b *meta.Bucket) error { b.Lifecycle = nil; return nil }); err != nil {
		return err
	}
	return writeEmpty(rq, http.StatusNoContent)
}
