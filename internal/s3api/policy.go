package s3api

import (
	"encoding/xml"
	"errors"
	"net"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/b3-storage/b3/internal/meta"
	"github.com/b3-storage/b3/internal/policy"
)

var (
	opPutBucketPolicy       = operation{name: "PutBucketPolicy", perm: permOwner, handle: (*Server).putBucketPolicy}
	opGetBucketPolicyStatus = operation{name: "GetBucketPolicyStatus", perm: permOwner, handle: (*Server).getBucketPolicyStatus}
)

var errMalformedPolicy = apiErr("MalformedPolicy", 400, "Policies must be valid JSON and the first byte must be '{'")

// actions maps operations to the S3 action a bucket policy names, where
// it is not "s3:" + the operation's name.
var actions = map[string]string{
	"HeadObject":                      "s3:GetObject",
	"HeadBucket":                      "s3:ListBucket",
	"ListObjects":                     "s3:ListBucket",
	"ListObjectsV2":                   "s3:ListBucket",
	"ListObjectVersions":              "s3:ListBucketVersions",
	"ListMultipartUploads":            "s3:ListBucketMultipartUploads",
	"ListParts":                       "s3:ListMultipartUploadParts",
	"CreateMultipartUpload":           "s3:PutObject",
	"UploadPart":                      "s3:PutObject",
	"UploadPartCopy":                  "s3:PutObject",
	"CompleteMultipartUpload":         "s3:PutObject",
	"CopyObject":                      "s3:PutObject",
	"PostObject":                      "s3:PutObject",
	"DeleteObjects":                   "s3:DeleteObject",
	"GetBucketCors":                   "s3:GetBucketCORS",
	"PutBucketCors":                   "s3:PutBucketCORS",
	"DeleteBucketCors":                "s3:PutBucketCORS",
	"GetBucketLifecycleConfiguration": "s3:GetLifecycleConfiguration",
	"PutBucketLifecycleConfiguration": "s3:PutLifecycleConfiguration",
	"DeleteBucketLifecycle":           "s3:PutLifecycleConfiguration",
	"DeleteBucketTagging":             "s3:PutBucketTagging",
	"GetPublicAccessBlock":            "s3:GetBucketPublicAccessBlock",
	"PutPublicAccessBlock":            "s3:PutBucketPublicAccessBlock",
	"DeletePublicAccessBlock":         "s3:PutBucketPublicAccessBlock",
	"DeleteBucketOwnershipControls":   "s3:PutBucketOwnershipControls",
	"GetObjectLockConfiguration":      "s3:GetBucketObjectLockConfiguration",
	"PutObjectLockConfiguration":      "s3:PutBucketObjectLockConfiguration",
	"ListBuckets":                     "s3:ListAllMyBuckets",
	"GetBucketEncryption":             "s3:GetEncryptionConfiguration",
	"PutBucketEncryption":             "s3:PutEncryptionConfiguration",
	"DeleteBucketEncryption":          "s3:PutEncryptionConfiguration",
}

// aclNeeds maps operations to the ACL grant that allows them; others
// need the owner or a policy.
var aclNeeds = map[string]aclNeed{
	"HeadBucket":              aclBucketRead,
	"ListObjects":             aclBucketRead,
	"ListObjectsV2":           aclBucketRead,
	"ListObjectVersions":      aclBucketRead,
	"ListMultipartUploads":    aclBucketRead,
	"PutObject":               aclBucketWrite,
	"DeleteObject":            aclBucketWrite,
	"DeleteObjects":           aclBucketWrite,
	"CopyObject":              aclBucketWrite,
	"PostObject":              aclBucketWrite,
	"CreateMultipartUpload":   aclBucketWrite,
	"UploadPart":              aclBucketWrite,
	"UploadPartCopy":          aclBucketWrite,
	"CompleteMultipartUpload": aclBucketWrite,
	"AbortMultipartUpload":    aclBucketWrite,
	"ListParts":               aclBucketWrite,
	"GetBucketAcl":            aclBucketReadACP,
	"PutBucketAcl":            aclBucketWriteACP,
	"GetObject":               aclObjectRead,
	"HeadObject":              aclObjectRead,
	"GetObjectAttributes":     aclObjectRead,
	"GetObjectAcl":            aclObjectReadACP,
	"PutObjectAcl":            aclObjectWriteACP,
}

// perKeyOperations authorize in their handler: each key they touch
// (DeleteObjects), or once the body that carries their condition keys is
// read (the Retention and LegalHold documents: s3:object-lock-*).
var perKeyOperations = map[string]bool{"DeleteObjects": true, "PutObjectRetention": true, "PutObjectLegalHold": true}

// versionActions maps the operations that act on the version a versionId
// names ("null" included) to the action they need then. AWS authorizes a
// version with its own actions, so a policy may open the current object
// (s3:GetObject) and keep older versions closed (s3:GetObjectVersion):
// authorizing a version as the current object hands out every overwritten
// or deleted secret. Retention and legal hold have no version actions on
// AWS (the s3:versionid condition key tells a version apart); they are
// listed so that they too are decided against the version they act on.
// An operation not listed ignores versionId (PutObject, uploads).
var versionActions = map[string]string{
	"GetObject":           "s3:GetObjectVersion",
	"HeadObject":          "s3:GetObjectVersion",
	"DeleteObject":        "s3:DeleteObjectVersion",
	"DeleteObjects":       "s3:DeleteObjectVersion", // per key with a VersionId
	"GetObjectAcl":        "s3:GetObjectVersionAcl",
	"PutObjectAcl":        "s3:PutObjectVersionAcl",
	"GetObjectTagging":    "s3:GetObjectVersionTagging",
	"PutObjectTagging":    "s3:PutObjectVersionTagging",
	"DeleteObjectTagging": "s3:DeleteObjectVersionTagging",
	"GetObjectAttributes": "s3:GetObjectVersionAttributes",
	"GetObjectRetention":  "s3:GetObjectRetention",
	"PutObjectRetention":  "s3:PutObjectRetention",
	"GetObjectLegalHold":  "s3:GetObjectLegalHold",
	"PutObjectLegalHold":  "s3:PutObjectLegalHold",
}

// operationAccess is what op asks of the caller acting on the current
// object (or on the bucket).
func operationAccess(op *operation) access {
	action, ok := actions[op.name]
	if !ok {
		action = "s3:" + op.name
	}
	a := access{action: action, acl: aclNeeds[op.name], perm: op.perm}
	if op.name == "GetObjectAttributes" {
		// AWS asks for the read of the object as well: the attributes
		// are its checksum, size and parts.
		a.also = "s3:GetObject"
	}
	return a
}

// objectAccess is what op asks of the caller acting on versionID of an
// object ("" for the current object): the version's own action, decided
// against that version's ACL and tags.
//
// No bucket grant changes a version: WRITE on the bucket creates objects
// (and, for DeleteObject, delete markers), but AWS gives
// s3:DeleteObjectVersion through it to the bucket owner alone, and the
// other version writes (tags, retention, legal hold) to no grant at all.
// So with a versionId a write needs the owner or a policy Allow: neither
// the WRITE grant nor the legacy permWrite shortcut opens it. A version's
// own grants still apply where AWS applies them (READ: GetObjectVersion;
// READ_ACP/WRITE_ACP: Get/PutObjectVersionAcl).
func objectAccess(op *operation, versionID string) access {
	a := operationAccess(op)
	action, ok := versionActions[op.name]
	if versionID == "" || !ok {
		return a
	}
	a.action, a.version = action, versionID
	if a.also != "" {
		a.also = "s3:GetObjectVersion"
	}
	if a.acl == aclBucketWrite {
		a.acl = aclNone
	}
	if a.perm == permWrite {
		a.perm = permOwner
	}
	return a
}

// requestAccess is what the request asks of the caller: on an object,
// the version its versionId names (parsed by route), if any.
//
// GetObjectAttributes is AWS's one exception to "the version actions with
// a versionId": on a bucket that is versioned it needs
// s3:GetObjectVersionAttributes and s3:GetObjectVersion even without one
// (its API reference, Permissions), decided against the current object.
// A bucket that has had versioning (Enabled or Suspended; Object Lock
// enables it) counts as versioned.
func requestAccess(rq *request) access {
	if rq.key == "" {
		return operationAccess(rq.op)
	}
	a := objectAccess(rq.op, rq.version)
	if rq.op.name == "GetObjectAttributes" && rq.version == "" && hasVersioning(rq.bucketRec) {
		a.action, a.also = versionActions[rq.op.name], "s3:GetObjectVersion"
	}
	return a
}

// hasVersioning reports whether b has (or had) versioning.
func hasVersioning(b *meta.Bucket) bool {
	return b != nil && (b.Versioning != "" || b.ObjectLock)
}

// managesPolicy reports whether action reads or changes the bucket
// policy itself, which its owner may always do.
func managesPolicy(action string) bool {
	switch action {
	case "s3:GetBucketPolicy", "s3:PutBucketPolicy", "s3:DeleteBucketPolicy":
		return true
	}
	return false
}

// bucketPolicy returns b's parsed policy, nil if it has none. Stored
// policies were validated when put; one that no longer parses is an
// internal error, never "no policy" (that would drop its Denies).
func (s *Server) bucketPolicy(b *meta.Bucket) (*policy.Policy, error) {
	if len(b.Policy) == 0 {
		return nil, nil
	}
	return s.policies.get(b.Name, b.Policy, func(raw []byte) (*policy.Policy, error) { return policy.Parse(raw, b.Name) })
}

// lockConditionActions are the actions AWS documents the Object Lock
// condition keys for (s3:object-lock-*).
var lockConditionActions = map[string]bool{
	"s3:PutObject": true, "s3:PutObjectRetention": true, "s3:PutObjectLegalHold": true, "s3:BypassGovernanceRetention": true,
}

// writeHeader is the header the write's condition keys are read from: the
// request's, or what stands for it (request.condHeader: a POST form's
// fields, a Retention or LegalHold body).
func writeHeader(rq *request) http.Header {
	if rq.condHeader != nil {
		return rq.condHeader
	}
	return rq.Header
}

// setLockConditions sets the Object Lock condition keys from the lock
// headers (or fields, or body) h: the mode, the retain-until date, the
// days left until it (rounded up, so a bound in days is not overstepped by
// a fraction of one) and the legal hold. Values that do not parse are
// left out: the write is refused for them anyway.
func setLockConditions(set func(k, v string), h http.Header, now time.Time) {
	if v := h.Get("x-amz-object-lock-mode"); v != "" {
		set("s3:object-lock-mode", v)
	}
	if v := h.Get("x-amz-object-lock-retain-until-date"); v != "" {
		if t, err := time.Parse(time.RFC3339, strings.TrimSpace(v)); err == nil {
			set("s3:object-lock-retain-until-date", t.UTC().Format(time.RFC3339))
			days := int64(0)
			if left := t.Sub(now); left > 0 {
				days = int64((left + 24*time.Hour - 1) / (24 * time.Hour))
			}
			set("s3:object-lock-remaining-retention-days", strconv.FormatInt(days, 10))
		}
	}
	if v := h.Get("x-amz-object-lock-legal-hold"); v != "" {
		set("s3:object-lock-legal-hold", v)
	}
}

// conditionContext gathers the condition keys of the request asking for
// action on key's version ("" for the current object). The existing tags
// are those of that version, read only if the policy tests them.
func (s *Server) conditionContext(rq *request, b *meta.Bucket, key, action, version string, pol *policy.Policy) (map[string][]string, error) {
	ctx := map[string][]string{}
	set := func(k, v string) { ctx[policy.NormalizeKey(k)] = []string{v} }
	if host, _, err := net.SplitHostPort(rq.RemoteAddr); err == nil {
		set("aws:SourceIp", host)
	}
	set("aws:SecureTransport", strconv.FormatBool(rq.TLS != nil))
	now := s.cfg.Now().UTC()
	set("aws:CurrentTime", now.Format("2006-01-02T15:04:05Z"))
	set("aws:EpochTime", strconv.FormatInt(now.Unix(), 10))
	if rq.accessKey == "" {
		set("aws:PrincipalType", "Anonymous")
	} else {
		set("aws:PrincipalType", "User")
		set("aws:userid", rq.accessKey)
		if u, ok := s.users.Lookup(rq.accessKey); ok && u.Name != "" {
			set("aws:username", u.Name)
		}
	}
	if v := rq.Header.Get("Referer"); v != "" {
		set("aws:Referer", v)
	}
	if v := rq.Header.Get("User-Agent"); v != "" {
		set("aws:UserAgent", v)
	}
	if key == "" {
		for _, q := range []string{"prefix", "delimiter", "max-keys"} {
			if v, ok := rq.query[q]; ok && len(v) > 0 {
				set("s3:"+q, v[0])
			}
		}
	}
	wh := writeHeader(rq)
	for _, h := range []string{"x-amz-acl", "x-amz-grant-read", "x-amz-grant-write", "x-amz-grant-read-acp",
		"x-amz-grant-write-acp", "x-amz-grant-full-control", "x-amz-copy-source", "x-amz-metadata-directive",
		"x-amz-storage-class", "x-amz-server-side-encryption", "x-amz-content-sha256",
		hdrSSEKMSKeyID, hdrSSECAlgorithm} {
		if v := wh.Get(h); v != "" {
			set("s3:"+h, v)
		}
	}
	if key != "" && lockConditionActions[action] {
		setLockConditions(set, wh, now)
	}
	if v := wh.Get("x-amz-tagging"); v != "" {
		if tags, err := parseTagging(v); err == nil {
			addTags(ctx, "s3:RequestObjectTag/", "s3:RequestObjectTagKeys", tags)
		}
	}
	if version != "" {
		set("s3:versionid", s.versions.encode(version))
	}
	if key != "" && pol.Uses("s3:ExistingObjectTag/") {
		o, err := s.decisionObject(rq, b.Name, key, version)
		switch {
		case err == nil:
			addTags(ctx, "s3:ExistingObjectTag/", "", o.Tags)
		case !missingObject(err):
			return nil, err
		}
	}
	return ctx, nil
}

// addTags adds one key per tag (prefix + tag key) and, if keysName is
// set, the list of tag keys.
func addTags(ctx map[string][]string, prefix, keysName string, tags map[string]string) {
	keys := make([]string, 0, len(tags))
	for k, v := range tags {
		ctx[policy.NormalizeKey(prefix+k)] = []string{v}
		keys = append(keys, k)
	}
	if keysName != "" && len(keys) > 0 {
		sort.Strings(keys)
		ctx[policy.NormalizeKey(keysName)] = keys
	}
}

// putBucketPolicy validates and stores a policy. A public policy is
// refused while the bucket blocks public policies.
func (s *Server) putBucketPolicy(rq *request) error {
	data, err := readSmallBody(rq)
	if err != nil {
		return err
	}
	p, err := policy.Parse(data, rq.bucket)
	var me *policy.MalformedError
	if errors.As(err, &me) {
		return errMalformedPolicy.withMessage("%s", me.Message)
	}
	if err != nil {
		return err
	}
	if err := s.store.UpdateBucket(rq.bucket, func(b *meta.Bucket) error {
		if b.PublicAccessBlock != nil && b.PublicAccessBlock.BlockPublicPolicy && p.IsPublic() {
			return errAccessDenied.withMessage("Access Denied: the bucket's public access block forbids public policies")
		}
		b.Policy = data
		return nil
	}); err != nil {
		return err
	}
	return writeEmpty(rq, http.StatusNoContent)
}

func (s *Server) getBucketPolicy(rq *request) error {
	if len(rq.bucketRec.Policy) == 0 {
		return errNoSuchPolicy
	}
	rq.w.Header().Set("Content-Type", "application/json")
	rq.w.Header().Set("Content-Length", strconv.Itoa(len(rq.bucketRec.Policy)))
	rq.w.WriteHeader(http.StatusOK)
	_, _ = rq.w.Write(rq.bucketRec.Policy)
	return nil
}

func (s *Server) deleteBucketPolicy(rq *request) error {
	if err := s.store.UpdateBucket(rq.bucket, func(b *meta.Bucket) error { b.Policy = nil; return nil }); err != nil {
		return err
	}
	return writeEmpty(rq, http.StatusNoContent)
}

type policyStatus struct {
	XMLName  xml.Name `xml:"PolicyStatus"`
	Xmlns    string   `xml:"xmlns,attr"`
	IsPublic bool
}

func (s *Server) getBucketPolicyStatus(rq *request) error {
	p, err := s.bucketPolicy(rq.bucketRec)
	if err != nil {
		return err
	}
	if p == nil {
		return errNoSuchPolicy
	}
	return writeXML(rq, policyStatus{Xmlns: s3Namespace, IsPublic: p.IsPublic()})
}
