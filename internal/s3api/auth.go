package s3api

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"

	"github.com/b3-storage/b3/internal/meta"
	"github.com/b3-storage/b3/internal/objstore"
	"github.com/b3-storage/b3/internal/policy"
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

// authorize checks the caller may run the operation on the bucket it
// addresses (decide). A missing bucket is NoSuchBucket for everyone, as
// on AWS. Operations that act on several keys (DeleteObjects) decide per
// key in their handler.
// An administrator (the root user) may do everything on every bucket; no
// bucket setting can take that away.
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
	if err := checkExpectedOwner(rq, b); err != nil {
		return err
	}
	if perKeyOperations[rq.op.name] {
		return nil
	}
	return s.decide(rq, b, requestAccess(rq), rq.key)
}

// checkExpectedOwner refuses, with AccessDenied as AWS does, a request
// whose x-amz-expected-bucket-owner names another owner than the bucket's.
// b3 has no AWS accounts: the owner is named by its canonical user ID,
// the ID ListBuckets and GetBucketAcl show as the Owner's.
func checkExpectedOwner(rq *request, b *meta.Bucket) error {
	want := rq.Header.Get("x-amz-expected-bucket-owner")
	if want != "" && want != CanonicalID(b.Owner) {
		return errAccessDenied
	}
	return nil
}

// access is what an operation asks of the caller: an S3 action for the
// bucket policy, and the ACL grant that would also do.
type access struct {
	action string // "s3:GetObject"
	acl    aclNeed
	// perm is the operation's legacy permission: on buckets made before
	// ownership controls existed, a bucket grant of READ (WRITE) still
	// opens the operations it opened then (permRead: reads of objects
	// too; permWrite: every object write).
	perm permission
	// version is the engine's id of the version the operation acts on
	// (its versionId, decoded), "" for the current object: the object ACL
	// and the s3:ExistingObjectTag conditions are those of that version
	// (each version has its own owner, grants and tags).
	version string
	// also is a second action the caller needs as well, "" if none.
	also string
}

// aclNeed names the ACL grant that allows an operation.
type aclNeed uint8

const (
	aclNone           aclNeed = iota // the owner or a policy only
	aclBucketRead                    // READ on the bucket (listing)
	aclBucketWrite                   // WRITE on the bucket (object writes)
	aclBucketReadACP                 // READ_ACP on the bucket
	aclBucketWriteACP                // WRITE_ACP on the bucket
	aclObjectRead                    // READ on the object
	aclObjectReadACP                 // READ_ACP on the object
	aclObjectWriteACP                // WRITE_ACP on the object
)

// decide is the one place that decides access, in AWS's order (after the
// one rule before all: an administrator may do everything):
//
//  1. an explicit Deny in the bucket policy denies, whoever asks (the
//     bucket's owner keeps the right to manage the policy itself, so a
//     policy cannot lock its owner out);
//  2. the bucket's owner is allowed;
//  3. an Allow in the bucket policy allows (with RestrictPublicBuckets,
//     public statements allow no one);
//  4. an ACL grant allows (unless the bucket enforces ownership, which
//     disables ACLs; IgnorePublicAcls drops public grants);
//  5. anything else is AccessDenied.
//
// key is the object acted on, "" for the bucket.
func (s *Server) decide(rq *request, b *meta.Bucket, a access, key string) error {
	if rq.admin {
		return nil
	}
	if a.also != "" {
		first := a
		first.also = ""
		if err := s.decide(rq, b, first, key); err != nil {
			return err
		}
		a.action, a.also = a.also, ""
	}
	owner := rq.accessKey != "" && rq.accessKey == b.Owner
	pol, err := s.bucketPolicy(b)
	if err != nil {
		if owner && managesPolicy(a.action) {
			// A stored policy that no longer parses (one an earlier
			// version accepted with a condition key b3 cannot evaluate)
			// fails every request closed; its owner may still replace it.
			return nil
		}
		return err
	}
	if pol == nil && owner {
		return nil // the common case, without building the principal
	}
	who := s.principal(rq.accessKey)
	if pol != nil {
		req := &policy.Request{Principal: who, Action: a.action, Resource: resourceARN(b.Name, key)}
		if req.Context, err = s.conditionContext(rq, b, key, a.action, a.version, pol); err != nil {
			return err
		}
		req.IgnorePublic = b.PublicAccessBlock != nil && b.PublicAccessBlock.RestrictPublicBuckets
		switch pol.Evaluate(req) {
		case policy.Denied:
			if !owner || !managesPolicy(a.action) {
				return errAccessDenied
			}
		case policy.Allowed:
			return nil
		}
	}
	if owner {
		return nil
	}
	ok, err := s.aclAllows(rq, b, who, a, key)
	if err != nil {
		return err
	}
	if !ok {
		return errAccessDenied
	}
	return nil
}

// aclAllows evaluates the bucket's and the object's ACLs for a.
func (s *Server) aclAllows(rq *request, b *meta.Bucket, who policy.Principal, a access, key string) (bool, error) {
	if b.Ownership == meta.OwnershipBucketOwnerEnforced {
		return false, nil
	}
	ignorePublic := b.PublicAccessBlock != nil && b.PublicAccessBlock.IgnorePublicAcls
	bucketGrants := s.bucketGrants(b)
	bucketAllows := func(perm string) bool { return policy.Grants(bucketGrants, who, perm, ignorePublic) }
	if b.Ownership == "" {
		switch {
		case a.perm == permRead && bucketAllows(policy.PermRead),
			a.perm == permWrite && bucketAllows(policy.PermWrite):
			return true, nil
		}
	}
	switch a.acl {
	case aclBucketRead:
		return bucketAllows(policy.PermRead), nil
	case aclBucketWrite:
		return bucketAllows(policy.PermWrite), nil
	case aclBucketReadACP:
		return bucketAllows(policy.PermReadACP), nil
	case aclBucketWriteACP:
		return bucketAllows(policy.PermWriteACP), nil
	case aclObjectRead, aclObjectReadACP, aclObjectWriteACP:
	default:
		return false, nil
	}
	obj, err := s.decisionObject(rq, b.Name, key, a.version)
	if missingObject(err) {
		// Who may list the bucket learns the key (version) is missing
		// (NoSuchKey, NoSuchVersion from the handler); others get
		// AccessDenied.
		return bucketAllows(policy.PermRead), nil
	}
	if err != nil {
		return false, err
	}
	perm := map[aclNeed]string{aclObjectRead: policy.PermRead, aclObjectReadACP: policy.PermReadACP, aclObjectWriteACP: policy.PermWriteACP}[a.acl]
	return policy.Grants(s.objectGrants(b, obj), who, perm, ignorePublic), nil
}

// decisionObject reads the record a decision is about: key's version
// (delete markers included), or with version "" its current object, which
// the request keeps (rq.judged, and rq.objRec if there is one) for the
// handler and a second decision to reuse. A version is never kept there:
// they stand for the current object.
func (s *Server) decisionObject(rq *request, bucket, key, version string) (*meta.Object, error) {
	if version != "" {
		return s.store.HeadVersion(bucket, key, version)
	}
	if j := rq.judged; j != nil && j.bucket == bucket && j.key == key {
		return j.obj, j.err
	}
	o, err := s.store.HeadObject(bucket, key)
	switch {
	case err == nil:
		rq.objRec = o
		rq.judged = &judgedRecord{bucket: bucket, key: key, obj: o}
	case missingObject(err):
		rq.judged = &judgedRecord{bucket: bucket, key: key, err: err}
	}
	return o, err
}

// judgedRecord is the current record of bucket/key a decision read: obj,
// or none (err).
type judgedRecord struct {
	bucket, key string
	obj         *meta.Object
	err         error
}

// actOnJudged keeps a handler to the record its decision judged: obj is
// the current record of key that the handler read after the decision and
// is about to serve or change. If the decision read key's current record
// (its ACL, its tags) and obj is another write (a PUT came in between),
// the decision is taken again, against obj, before anything of obj is
// served or changed: one version's grants must never open another's
// bytes. A change of the same write's ACL or tags in between is ordered
// after the request, which still acts on the bytes it was allowed. A
// decision that read no record (the owner's without a policy, most policy
// Allows) did not depend on it, and costs nothing more here.
//
// It may run inside a store's update callback, under the key's lock: the
// decision it takes reads no record but obj.
func (s *Server) actOnJudged(rq *request, b *meta.Bucket, a access, key string, obj *meta.Object) error {
	j := rq.judged
	if j == nil || j.bucket != b.Name || j.key != key || (j.obj != nil && j.obj.Version == obj.Version) {
		return nil
	}
	c := *obj // fn of an update changes obj
	rq.judged, rq.objRec = &judgedRecord{bucket: b.Name, key: key, obj: &c}, &c
	return s.decide(rq, b, a, key)
}

// judgedRange is rng preceded by actOnJudged, for a read of the current
// object of the request (OpenObject calls it with the record it opens).
func (s *Server) judgedRange(rq *request, rng objstore.RangeFunc) objstore.RangeFunc {
	if rq.judged == nil {
		return rng
	}
	return func(obj *meta.Object) (int64, int64, error) {
		if err := s.actOnJudged(rq, rq.bucketRec, requestAccess(rq), rq.key, obj); err != nil {
			return 0, 0, err
		}
		return rng(obj)
	}
}

// missingObject reports whether err says the object or version addressed
// does not exist.
func missingObject(err error) bool {
	return errors.Is(err, objstore.ErrNoSuchKey) || errors.Is(err, objstore.ErrNoSuchVersion)
}

// principal describes the caller to package policy.
func (s *Server) principal(accessKey string) policy.Principal {
	if accessKey == "" {
		return policy.Principal{}
	}
	p := policy.Principal{AccessKey: accessKey, CanonicalID: CanonicalID(accessKey)}
	if u, ok := s.users.Lookup(accessKey); ok {
		p.Name = u.Name
	}
	return p
}

// resourceARN is the ARN of a bucket ("" key) or object.
func resourceARN(bucket, key string) string {
	if key == "" {
		return "arn:aws:s3:::" + bucket
	}
	return "arn:aws:s3:::" + bucket + "/" + key
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
