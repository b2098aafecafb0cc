package s3api

import (
	"github.com/b3-storage/b3/internal/meta"
)

// authenticate verifies the request's signature (package s3auth) and
// installs the verifying body. The body is not read here, so a client
// sending "Expect: 100-continue" gets its 100 only once authenticated.
func (s *Server) authenticate(rq *request) error {
	res, err := s.verifier.Authenticate(rq.Request)
	if err != nil {
		return err
	}
	rq.accessKey = res.AccessKey
	rq.body = res.Body
	rq.contentLength = res.ContentLength
	return nil
}

// authorize checks the caller may run the operation: buckets belong to
// the access key that created them; others get AccessDenied unless the
// bucket's canned ACL opens it (public-read: reads; public-read-write:
// reads and object writes). Bucket configuration is the owner's alone.
// A missing bucket is NoSuchBucket for everyone, as on AWS.
func (s *Server) authorize(rq *request) error {
	if rq.op.perm == permUser {
		if rq.accessKey == "" {
			return errAnonymousDenied
		}
		return nil
	}
	b, err := s.store.GetBucket(rq.bucket)
	if err != nil {
		return err
	}
	rq.bucketRec = b
	s.addCORSHeaders(rq, b)
	if !allowed(b, rq.accessKey, rq.op.perm) {
		return errAccessDenied
	}
	return nil
}

// allowed reports whether accessKey ("" for anonymous) has perm on b.
func allowed(b *meta.Bucket, accessKey string, perm permission) bool {
	if accessKey != "" && accessKey == b.Owner {
		return true
	}
	switch perm {
	case permRead:
		return b.ACL == meta.ACLPublicRead || b.ACL == meta.ACLPublicReadWrite
	case permWrite:
		return b.ACL == meta.ACLPublicReadWrite
	}
	return false
}

// displayName returns the name of the user owning accessKey.
func (s *Server) displayName(accessKey string) string {
	if u, ok := s.users.Lookup(accessKey); ok && u.Name != "" {
		return u.Name
	}
	return accessKey
}

// owner renders the Owner element of listings and ACLs.
func (s *Server) owner(accessKey string) *xmlOwner {
	return &xmlOwner{ID: accessKey, DisplayName: s.displayName(accessKey)}
}
