package s3api

import (
	"encoding/xml"
	"net/http"
	"slices"
	"strings"

	"github.com/b3-storage/b3/internal/meta"
	"github.com/b3-storage/b3/internal/policy"
)

var (
	opGetBucketACL = operation{name: "GetBucketAcl", perm: permOwner, handle: (*Server).getBucketACL}
	opPutBucketACL = operation{name: "PutBucketAcl", perm: permOwner, handle: (*Server).putBucketACL}
	// Object ACLs need READ_ACP/WRITE_ACP on the object (aclNeeds): a
	// bucket's public READ never opens them.
	opGetObjectACL = operation{name: "GetObjectAcl", perm: permOwner, handle: (*Server).getObjectACL}
	opPutObjectACL = operation{name: "PutObjectAcl", perm: permOwner, handle: (*Server).putObjectACL}
)

var (
	errACLNotSupported          = apiErr("AccessControlListNotSupported", 400, "The bucket does not allow ACLs")
	errUnresolvableEmail        = apiErr("UnresolvableGrantByEmailAddress", 400, "The email address you provided does not match any account on record.")
	errCannedAndGrants          = apiErr("InvalidRequest", 400, "Specifying both Canned ACLs and Header Grants is not allowed")
	errPublicACLBlocked         = apiErr("AccessDenied", 403, "Access Denied: the bucket's public access block forbids public ACLs")
	errInvalidGrantee           = apiErr("InvalidArgument", 400, "Invalid id")
	errACLWithBlockPublicAccess = apiErr("InvalidBucketAclWithBlockPublicAccessError", 400, "Bucket cannot have public ACLs set with BlockPublicAccess enabled")
	errACLWithBucketEnforce     = apiErr("InvalidBucketAclWithObjectOwnership", 400, "Bucket cannot have ACLs set with ObjectOwnership's BucketOwnerEnforced setting")
)

// grantHeaders are the x-amz-grant-* headers and the permission each gives.
var grantHeaders = []struct{ header, perm string }{
	{"x-amz-grant-read", policy.PermRead},
	{"x-amz-grant-write", policy.PermWrite},
	{"x-amz-grant-read-acp", policy.PermReadACP},
	{"x-amz-grant-write-acp", policy.PermWriteACP},
	{"x-amz-grant-full-control", policy.PermFullControl},
}

func hasGrantHeaders(h http.Header) bool {
	for _, g := range grantHeaders {
		if h.Get(g.header) != "" {
			return true
		}
	}
	return false
}

// aclRequest is an ACL a request asks for, not yet resolved to grants:
// a canned name, grant headers, or (for Put*Acl) a document.
type aclRequest struct {
	canned string
	grants []policy.Grant // from headers or a document; owner excluded
	given  bool           // any ACL was asked for
}

// aclFromHeaders reads x-amz-acl and x-amz-grant-*. Canned names are
// checked against S3's list; grantees are resolved to canonical ids.
func (s *Server) aclFromHeaders(h http.Header) (aclRequest, error) {
	var r aclRequest
	if v := h.Get("x-amz-acl"); v != "" {
		if !slices.Contains(policy.CannedACLs, v) {
			return r, errInvalidArgument.withMessage("Invalid canned ACL %q", v)
		}
		r.canned, r.given = v, true
	}
	if !hasGrantHeaders(h) {
		return r, nil
	}
	if r.given {
		return r, errCannedAndGrants
	}
	r.given = true
	r.grants = []policy.Grant{}
	for _, gh := range grantHeaders {
		for _, item := range splitHeaderList(strings.Join(h.Values(gh.header), ",")) {
			kind, value, ok := strings.Cut(item, "=")
			if !ok {
				return r, errInvalidArgument.withMessage("Invalid grant %q in %s", item, gh.header)
			}
			grantee, err := s.resolveGrantee(strings.ToLower(strings.TrimSpace(kind)), strings.Trim(strings.TrimSpace(value), `"`))
			if err != nil {
				return r, err
			}
			r.grants = append(r.grants, policy.Grant{Grantee: grantee, Permission: gh.perm})
		}
	}
	return r, nil
}

// resolveGrantee turns a grantee (kind "id", "uri" or "emailaddress") into
// what grants store: a canonical id of a b3 user, or a group URI. An
// email address names the user whose name is the address or its part
// before "@".
func (s *Server) resolveGrantee(kind, value string) (string, error) {
	switch kind {
	case "id":
		if _, ok := s.userByCanonicalID(value); !ok {
			return "", errInvalidGrantee
		}
		return value, nil
	case "uri":
		switch value {
		case policy.AllUsers, policy.AuthenticatedUsers, policy.LogDelivery:
			return value, nil
		}
		return "", errInvalidArgument.withMessage("Invalid group uri")
	case "emailaddress":
		local, _, _ := strings.Cut(value, "@")
		for _, u := range s.users.List() {
			if u.Name != "" && (strings.EqualFold(u.Name, value) || strings.EqualFold(u.Name, local)) {
				return CanonicalID(u.AccessKey), nil
			}
		}
		return "", errUnresolvableEmail
	}
	return "", errInvalidArgument.withMessage("Invalid grantee type %q", kind)
}

// userByCanonicalID finds the user a canonical id names.
func (s *Server) userByCanonicalID(id string) (User, bool) {
	for _, u := range s.users.List() {
		if CanonicalID(u.AccessKey) == id {
			return u, true
		}
	}
	return User{}, false
}

type accessControlPolicy struct {
	XMLName xml.Name   `xml:"AccessControlPolicy"`
	Xmlns   string     `xml:"xmlns,attr,omitempty"`
	Owner   *xmlOwner  `xml:"Owner"`
	Grants  []xmlGrant `xml:"AccessControlList>Grant"`
}

type xmlGrant struct {
	Grantee    xmlGrantee `xml:"Grantee"`
	Permission string
}

type xmlGrantee struct {
	XMLNS        string `xml:"xmlns:xsi,attr,omitempty"`
	Type         string `xml:"xsi:type,attr,omitempty"`
	ID           string `xml:",omitempty"`
	DisplayName  string `xml:",omitempty"`
	URI          string `xml:",omitempty"`
	EmailAddress string `xml:",omitempty"`
}

// aclFromDocument parses an AccessControlPolicy body into grants.
func (s *Server) aclFromDocument(data []byte) (aclRequest, error) {
	var doc struct {
		Grants []struct {
			Grantee struct {
				Type         string `xml:"type,attr"`
				ID           string
				URI          string
				EmailAddress string
			}
			Permission string
		} `xml:"AccessControlList>Grant"`
	}
	if err := xml.Unmarshal(data, &doc); err != nil {
		return aclRequest{}, errMalformedXML
	}
	r := aclRequest{given: true, grants: []policy.Grant{}}
	for _, g := range doc.Grants {
		if !policy.ValidPermission(g.Permission) {
			return r, errMalformedXML
		}
		var kind, value string
		switch {
		case g.Grantee.ID != "":
			kind, value = "id", g.Grantee.ID
		case g.Grantee.URI != "":
			kind, value = "uri", g.Grantee.URI
		case g.Grantee.EmailAddress != "":
			kind, value = "emailaddress", g.Grantee.EmailAddress
		default:
			return r, errMalformedXML
		}
		grantee, err := s.resolveGrantee(kind, value)
		if err != nil {
			return r, err
		}
		r.grants = append(r.grants, policy.Grant{Grantee: grantee, Permission: g.Permission})
	}
	return r, nil
}

// resolve turns the request into the grants to store for a resource owned
// by owner (access key) in a bucket owned by bucketOwner. A canned ACL
// includes the owner's FULL_CONTROL; explicit grants are stored as given.
func (r aclRequest) resolve(owner, bucketOwner string) ([]meta.Grant, error) {
	grants := r.grants
	if !r.given || r.canned != "" {
		var err error
		if grants, err = policy.Canned(r.canned, CanonicalID(owner), CanonicalID(bucketOwner)); err != nil {
			return nil, errInvalidArgument.withMessage("Invalid canned ACL %q", r.canned)
		}
	}
	return fromPolicyGrants(grants), nil
}

// onlyOwnerControl reports whether grants give nothing to anyone but the
// owners: what a bucket that enforces ownership accepts.
func onlyOwnerControl(grants []meta.Grant, owner string) bool {
	for _, g := range grants {
		if g.Grantee != CanonicalID(owner) || g.Permission != policy.PermFullControl {
			return false
		}
	}
	return true
}

func anyPublicGrant(grants []meta.Grant) bool {
	for _, g := range grants {
		if policy.Grant(g).Public() {
			return true
		}
	}
	return false
}

// checkACLAllowed applies the bucket's ownership and public access block
// settings to an ACL about to be stored on it or on one of its objects.
func checkACLAllowed(b *meta.Bucket, grants []meta.Grant) error {
	if b.Ownership == meta.OwnershipBucketOwnerEnforced && !onlyOwnerControl(grants, b.Owner) {
		return errACLNotSupported
	}
	if b.PublicAccessBlock != nil && b.PublicAccessBlock.BlockPublicAcls && anyPublicGrant(grants) {
		return errPublicACLBlocked
	}
	return nil
}

// What the ACL and tags a write asks for ask of the caller beyond the
// write itself, as AWS documents for PutObject: s3:PutObjectAcl for ACL
// headers (fields), s3:PutObjectTagging for tags, so that an explicit
// Deny of those actions, or a policy allowing s3:PutObject alone (as an
// encoder's does), is not a way around them. The ACL grant that allows
// the write (bucket WRITE) also allows its ACL: the writer owns what it
// writes. Tags take what PutObjectTagging takes (operationAccess): no ACL
// grant (legacy buckets: a bucket WRITE).
var (
	accessSetObjectACL  = access{action: "s3:PutObjectAcl", acl: aclBucketWrite, perm: permWrite}
	accessSetObjectTags = access{action: "s3:PutObjectTagging", perm: permWrite}
)

// aclHeadersGiven reports whether h asks for an ACL (x-amz-acl or an
// x-amz-grant-* header).
func aclHeadersGiven(h http.Header) bool { return h.Get("x-amz-acl") != "" || hasGrantHeaders(h) }

// authorizeACLAndTags checks the caller of a write to rq.key may set the
// ACL (aclGiven) and the tags (tagged) it asks for. In a bucket that
// enforces ownership ACLs are disabled: objectACL refuses every ACL but
// the owner's full control, and accepts that one as before, with nothing
// more to ask.
func (s *Server) authorizeACLAndTags(rq *request, aclGiven, tagged bool) error {
	if aclGiven && rq.bucketRec.Ownership != meta.OwnershipBucketOwnerEnforced {
		if err := s.decide(rq, rq.bucketRec, accessSetObjectACL, rq.key); err != nil {
			return err
		}
	}
	if tagged {
		return s.decide(rq, rq.bucketRec, accessSetObjectTags, rq.key)
	}
	return nil
}

// objectACL resolves the ACL a write of a new object asks for (headers),
// returning the grants to store (nil: the default) and the object's owner.
// With BucketOwnerPreferred an object written with
// bucket-owner-full-control belongs to the bucket's owner; with
// BucketOwnerEnforced every object does.
func (s *Server) objectACL(h http.Header, b *meta.Bucket, writer string) ([]meta.Grant, string, error) {
	r, err := s.aclFromHeaders(h)
	if err != nil {
		return nil, "", err
	}
	owner := writer
	switch b.Ownership {
	case meta.OwnershipBucketOwnerEnforced:
		owner = b.Owner
	case meta.OwnershipBucketOwnerPreferred:
		if r.canned == "bucket-owner-full-control" {
			owner = b.Owner
		}
	}
	if !r.given {
		return nil, owner, nil
	}
	grants, err := r.resolve(owner, b.Owner)
	if err != nil {
		return nil, "", err
	}
	if err := checkACLAllowed(b, grants); err != nil {
		return nil, "", err
	}
	if b.Ownership == meta.OwnershipBucketOwnerEnforced || (len(grants) == 1 && grants[0] == meta.Grant{Grantee: CanonicalID(owner), Permission: policy.PermFullControl}) {
		return nil, owner, nil // the default; stored as nothing
	}
	return grants, owner, nil
}

// bucketGrants is the bucket's ACL: its grants, or the canned ACL of a
// record from before grants were stored.
func (s *Server) bucketGrants(b *meta.Bucket) []policy.Grant {
	if b.Grants != nil {
		return toPolicyGrants(b.Grants)
	}
	grants, err := policy.Canned(b.ACL, CanonicalID(b.Owner), CanonicalID(b.Owner))
	if err != nil {
		return []policy.Grant{{Grantee: CanonicalID(b.Owner), Permission: policy.PermFullControl}}
	}
	return grants
}

// objectOwner is the owner of obj: the bucket's owner when the bucket
// enforces ownership or the object predates owners.
func objectOwner(b *meta.Bucket, obj *meta.Object) string {
	if obj.Owner == "" || b.Ownership == meta.OwnershipBucketOwnerEnforced {
		return b.Owner
	}
	return obj.Owner
}

// objectGrants is the object's ACL: its grants, or FULL_CONTROL for its
// owner alone.
func (s *Server) objectGrants(b *meta.Bucket, obj *meta.Object) []policy.Grant {
	if obj.Grants != nil && b.Ownership != meta.OwnershipBucketOwnerEnforced {
		return toPolicyGrants(obj.Grants)
	}
	return []policy.Grant{{Grantee: CanonicalID(objectOwner(b, obj)), Permission: policy.PermFullControl}}
}

func fromPolicyGrants(gs []policy.Grant) []meta.Grant {
	out := make([]meta.Grant, len(gs))
	for i, g := range gs {
		out[i] = meta.Grant(g)
	}
	return out
}

func toPolicyGrants(gs []meta.Grant) []policy.Grant {
	out := make([]policy.Grant, len(gs))
	for i, g := range gs {
		out[i] = policy.Grant(g)
	}
	return out
}

// renderACL draws grants as an AccessControlPolicy document.
func (s *Server) renderACL(owner string, grants []policy.Grant) accessControlPolicy {
	const xsi = "http://www.w3.org/2001/XMLSchema-instance"
	doc := accessControlPolicy{Xmlns: s3Namespace, Owner: s.owner(owner), Grants: []xmlGrant{}}
	for _, g := range grants {
		grantee := xmlGrantee{XMLNS: xsi}
		if g.IsGroup() {
			grantee.Type, grantee.URI = "Group", g.Grantee
		} else {
			grantee.Type, grantee.ID, grantee.DisplayName = "CanonicalUser", g.Grantee, g.Grantee
			if u, ok := s.userByCanonicalID(g.Grantee); ok {
				grantee.DisplayName = s.displayName(u.AccessKey)
			}
		}
		doc.Grants = append(doc.Grants, xmlGrant{Grantee: grantee, Permission: g.Permission})
	}
	return doc
}

func (s *Server) getBucketACL(rq *request) error {
	b := rq.bucketRec
	grants := s.bucketGrants(b)
	if b.Ownership == meta.OwnershipBucketOwnerEnforced {
		grants = []policy.Grant{{Grantee: CanonicalID(b.Owner), Permission: policy.PermFullControl}}
	}
	return writeXML(rq, s.renderACL(b.Owner, grants))
}

// readACLRequest reads the ACL of a Put*Acl: headers, or else the body.
func (s *Server) readACLRequest(rq *request) (aclRequest, error) {
	r, err := s.aclFromHeaders(rq.Header)
	if err != nil || r.given {
		return r, err
	}
	data, err := readSmallBody(rq)
	if err != nil {
		return r, err
	}
	if len(data) == 0 {
		return r, errMalformedXML
	}
	return s.aclFromDocument(data)
}

func (s *Server) putBucketACL(rq *request) error {
	r, err := s.readACLRequest(rq)
	if err != nil {
		return err
	}
	err = s.store.UpdateBucket(rq.bucket, func(b *meta.Bucket) error {
		grants, err := r.resolve(b.Owner, b.Owner)
		if err != nil {
			return err
		}
		if err := checkACLAllowed(b, grants); err != nil {
			return err
		}
		b.Grants = grants
		b.ACL = r.canned
		if b.ACL == "" {
			b.ACL = meta.ACLPrivate
		}
		return nil
	})
	if err != nil {
		return err
	}
	return writeEmpty(rq, http.StatusOK)
}

// objectForACL reads the version of Get/PutObjectAcl: the one its
// versionId names, else the current object (already read by the ACL
// check when it ran).
func (s *Server) objectForACL(rq *request) (*meta.Object, error) {
	if _, ok := rq.query["versionId"]; !ok {
		if o := rq.objRec; o != nil && o.Bucket == rq.bucket && o.Key == rq.key {
			return o, nil
		}
	}
	return s.versionOrCurrent(rq)
}

func (s *Server) getObjectACL(rq *request) error {
	obj, err := s.objectForACL(rq)
	if err != nil {
		return err
	}
	b := rq.bucketRec
	return writeXML(rq, s.renderACL(objectOwner(b, obj), s.objectGrants(b, obj)))
}

func (s *Server) putObjectACL(rq *request) error {
	r, err := s.readACLRequest(rq)
	if err != nil {
		return err
	}
	b := rq.bucketRec
	var version uint64
	if o, err := s.objectForACL(rq); err == nil {
		version = o.Version
	}
	err = s.updateVersion(rq, func(o *meta.Object) error {
		if version != 0 && o.Version != version {
			// Overwritten since it was authorized: the new object's
			// owner may be someone else.
			return errConflictingOperation
		}
		grants, err := r.resolve(objectOwner(b, o), b.Owner)
		if err != nil {
			return err
		}
		if err := checkACLAllowed(b, grants); err != nil {
			return err
		}
		if b.Ownership == meta.OwnershipBucketOwnerEnforced {
			grants = nil
		}
		o.Grants = grants
		return nil
	})
	if err != nil {
		return err
	}
	return writeEmpty(rq, http.StatusOK)
}
