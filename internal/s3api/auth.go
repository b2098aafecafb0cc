package s3api

import (
	"crypto/sha256"
	"encoding/hex"

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
	if u, ok := s.users.Lookup(res.AccessKey); ok && res.AccessKey != "" {
		rq.admin = u.Admin
	}
	rq.body = res.Body
	rq.contentLength = res.ContentLength
	return nil
}

// authorize checks the caller may run the operation: buckets belong to
// the access key that created them; others get AccessDenied unless the
// bucket's canned ACL opens it (public-read: reads; public-read-write:
// reads and object writes). Bucket configuration is the owner's alone.
// An administrator (the root user) may do everything on every bucket; no
// bucket setting can take that away. A missing bucket is NoSuchBucket for
// everyone, as on AWS.
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
	if rq.admin {
		return nil
	}
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

// CanonicalID is the id S3 documents show for the user of accessKey (Owner,
// Grantee, Initiator): 64 hex digits, like AWS's canonical user ids. It
// is derived from the access key alone, so it is stable across restarts
// and needs no storage, and it does not reveal the key: the documents
// anonymous readers of a public bucket see (listings, ACLs) must not hand
// out the access key ids of its owners. "" (anonymous) stays "".
func CanonicalID(accessKey string) string {
	if accessKey == "" {
		return ""
	}
	sum := sha256.Sum256([]byte("b3 canonical user id\x00" + accessKey))
	return hex.EncodeToString(sum[:])
}

// displayName returns the name of the user owning accessKey, or its
// canonical id when the user has no name (or no longer exists).
func (s *Server) displayName(accessKey string) string {
	if u, ok := s.users.Lookup(accessKey); ok && u.Name != "" {
		return u.Name
	}
	return CanonicalID(accessKey)
}

// owner renders the Owner element of listings and ACLs.
func (s *Server) owner(accessKey string) *xmlOwner {
	return &xmlOwner{ID: CanonicalID(accessKey), DisplayName: s.displayName(accessKey)}
}

// mayAccessACP reports whether the caller may read or change an object's
// ACL (READ_ACP, WRITE_ACP): an administrator, the bucket's owner and the object's. b3's
// canned ACLs grant these to no one else; a public-read bucket lets
// anyone read its objects, not their ACLs.
func mayAccessACP(rq *request, obj *meta.Object) bool {
	return rq.admin || rq.accessKey != "" && (rq.accessKey == rq.bucketRec.Owner || rq.accessKey == obj.Owner)
}
