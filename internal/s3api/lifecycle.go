package s3api

import (
	"crypto/rand"
	"encoding/base32"
	"errors"
	"fmt"
	"net/http"

	"github.com/b3-storage/b3/internal/lifecycle"
	"github.com/b3-storage/b3/internal/meta"
)

var (
	opGetBucketLifecycle    = operation{name: "GetBucketLifecycleConfiguration", perm: permOwner, handle: (*Server).getBucketLifecycle}
	opPutBucketLifecycle    = operation{name: "PutBucketLifecycleConfiguration", perm: permOwner, handle: (*Server).putBucketLifecycle}
	opDeleteBucketLifecycle = operation{name: "DeleteBucketLifecycle", perm: permOwner, handle: (*Server).deleteBucketLifecycle}
)

// The document is validated by package lifecycle (the same parser the
// store's expiry uses), stored verbatim and returned as sent, except that
// a rule without an ID gets one, as on AWS (lifecycle.WithRuleIDs). The
// IDs are made here, before the document goes to the store, so that every
// replica of a cluster stores the same.

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
	if _, err := lifecycle.Parse(data); err != nil {
		return lifecycleError(err)
	}
	if data, err = lifecycle.WithRuleIDs(data, newRuleID); err != nil {
		return lifecycleError(err)
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

// newRuleID names a lifecycle rule stored without an ID: 32 random
// base32 characters, as unlikely as AWS's to meet a name a client chose.
func newRuleID() string {
	var b [20]byte
	_, _ = rand.Read(b[:])
	return base32.StdEncoding.EncodeToString(b[:])
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

// writeExpiration sets x-amz-expiration on a GET or HEAD of an object a
// lifecycle rule will expire: the instant stored in its record and the
// rule that set it. The instant is the earliest of the matching rules'
// (objstore.expiryOf), so the rule is a date rule whose date it is, or
// else the matching rule with the fewest days; both are exact without
// knowing the length of a lifecycle day.
func writeExpiration(h http.Header, b *meta.Bucket, obj *meta.Object) {
	if obj.Expiry.IsZero() || b == nil || len(b.Lifecycle) == 0 {
		return
	}
	conf, err := lifecycle.Parse(b.Lifecycle)
	if err != nil {
		return
	}
	o := lifecycle.Object{Key: obj.Key, Tags: obj.Tags, Size: obj.Size, Created: obj.Modified}
	var rule *lifecycle.Rule
	for i := range conf.Rules {
		r := &conf.Rules[i]
		if !r.Enabled || !r.Filter.Matches(o) {
			continue
		}
		if !r.ExpireDate.IsZero() && r.ExpireDate.Equal(obj.Expiry) {
			rule = r
			break
		}
		if r.ExpireDays > 0 && (rule == nil || r.ExpireDays < rule.ExpireDays) {
			rule = r
		}
	}
	if rule == nil {
		return
	}
	h.Set("x-amz-expiration", fmt.Sprintf(`expiry-date="%s", rule-id="%s"`, obj.Expiry.UTC().Format(http.TimeFormat), rule.ID))
}
