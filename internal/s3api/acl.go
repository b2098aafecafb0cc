package s3api

import (
	"encoding/xml"
	"net/http"

	"github.com/b3-storage/b3/internal/meta"
)

var (
	opGetBucketACL = operation{name: "GetBucketAcl", perm: permOwner, handle: (*Server).getBucketACL}
	opPutBucketACL = operation{name: "PutBucketAcl", perm: permOwner, handle: (*Server).putBucketACL}
	// Object ACLs need READ_ACP/WRITE_ACP, which the handlers check once
	// the object's owner is known; permRead lets them answer NoSuchKey and
	// AccessDenied as AWS does.
	opGetObjectACL = operation{name: "GetObjectAcl", perm: permRead, handle: (*Server).getObjectACL}
	opPutObjectACL = operation{name: "PutObjectAcl", perm: permRead, handle: (*Server).putObjectACL}
)

const allUsersURI = "http://acs.amazonaws.com/groups/global/AllUsers"

// cannedACL validates a bucket's x-amz-acl. b3 keeps three: private,
// public-read, public-read-write ("" is private).
func cannedACL(v string) (string, error) {
	switch v {
	case "", meta.ACLPrivate:
		return meta.ACLPrivate, nil
	case meta.ACLPublicRead, meta.ACLPublicReadWrite:
		return v, nil
	case "authenticated-read", "aws-exec-read", "log-delivery-write":
		return "", errNotImplemented.withMessage("The canned ACL %q is not supported", v)
	}
	return "", errInvalidArgument.withMessage("Invalid canned ACL %q", v)
}

// cannedObjectACL validates an object's x-amz-acl. Access is decided by
// the bucket's ACL alone; object ACLs are accepted and not stored.
func cannedObjectACL(v string) (string, error) {
	switch v {
	case "", meta.ACLPrivate, meta.ACLPublicRead, meta.ACLPublicReadWrite,
		"authenticated-read", "aws-exec-read", "bucket-owner-read", "bucket-owner-full-control":
		return v, nil
	}
	return "", errInvalidArgument.withMessage("Invalid canned ACL %q", v)
}

func hasGrantHeaders(h http.Header) bool {
	for _, k := range []string{"x-amz-grant-read", "x-amz-grant-write", "x-amz-grant-read-acp", "x-amz-grant-write-acp", "x-amz-grant-full-control"} {
		if h.Get(k) != "" {
			return true
		}
	}
	return false
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
	XMLNS       string `xml:"xmlns:xsi,attr,omitempty"`
	Type        string `xml:"xsi:type,attr,omitempty"`
	ID          string `xml:",omitempty"`
	DisplayName string `xml:",omitempty"`
	URI         string `xml:",omitempty"`
}

// renderACL draws a canned ACL as the grants S3 lists for it.
func (s *Server) renderACL(owner, acl string) accessControlPolicy {
	const xsi = "http://www.w3.org/2001/XMLSchema-instance"
	doc := accessControlPolicy{Xmlns: s3Namespace, Owner: s.owner(owner)}
	doc.Grants = append(doc.Grants, xmlGrant{Grantee: xmlGrantee{XMLNS: xsi, Type: "CanonicalUser", ID: CanonicalID(owner), DisplayName: s.displayName(owner)}, Permission: "FULL_CONTROL"})
	if acl == meta.ACLPublicRead || acl == meta.ACLPublicReadWrite {
		doc.Grants = append(doc.Grants, xmlGrant{Grantee: xmlGrantee{XMLNS: xsi, Type: "Group", URI: allUsersURI}, Permission: "READ"})
	}
	if acl == meta.ACLPublicReadWrite {
		doc.Grants = append(doc.Grants, xmlGrant{Grantee: xmlGrantee{XMLNS: xsi, Type: "Group", URI: allUsersURI}, Permission: "WRITE"})
	}
	return doc
}

// aclFromPolicy maps an AccessControlPolicy document back to a canned ACL;
// grants that no canned ACL expresses are NotImplemented.
func aclFromPolicy(data []byte) (string, error) {
	var doc struct {
		Grants []struct {
			Grantee struct {
				ID  string
				URI string
			}
			Permission string
		} `xml:"AccessControlList>Grant"`
	}
	if err := xml.Unmarshal(data, &doc); err != nil {
		return "", errMalformedXML
	}
	read, write := false, false
	for _, g := range doc.Grants {
		switch {
		case g.Grantee.URI == allUsersURI && g.Permission == "READ":
			read = true
		case g.Grantee.URI == allUsersURI && g.Permission == "WRITE":
			write = true
		case g.Grantee.ID != "" && g.Permission == "FULL_CONTROL":
		default:
			return "", errNotImplemented.withMessage("Only grants expressible as a canned ACL (private, public-read, public-read-write) are supported")
		}
	}
	switch {
	case read && write:
		return meta.ACLPublicReadWrite, nil
	case read:
		return meta.ACLPublicRead, nil
	case write:
		return "", errNotImplemented.withMessage("A public write grant without public read is not supported")
	}
	return meta.ACLPrivate, nil
}

func (s *Server) getBucketACL(rq *request) error {
	return writeXML(rq, s.renderACL(rq.bucketRec.Owner, rq.bucketRec.ACL))
}

func (s *Server) putBucketACL(rq *request) error {
	if hasGrantHeaders(rq.Header) {
		return errNotImplemented.withMessage("Only canned ACLs are supported")
	}
	var acl string
	var err error
	if v := rq.Header.Get("x-amz-acl"); v != "" {
		acl, err = cannedACL(v)
	} else {
		var data []byte
		if data, err = readSmallBody(rq); err == nil {
			if len(data) == 0 {
				return errMalformedXML
			}
			acl, err = aclFromPolicy(data)
		}
	}
	if err != nil {
		return err
	}
	if err := s.store.UpdateBucket(rq.bucket, func(b *meta.Bucket) error { b.ACL = acl; return nil }); err != nil {
		return err
	}
	return writeEmpty(rq, http.StatusOK)
}

// getObjectACL reports the object as governed by its bucket's ACL.
func (s *Server) getObjectACL(rq *request) error {
	obj, err := s.versionOrCurrent(rq)
	if err != nil {
		return err
	}
	if !mayAccessACP(rq, obj) {
		return errAccessDenied
	}
	owner := obj.Owner
	if owner == "" {
		owner = rq.bucketRec.Owner
	}
	return writeXML(rq, s.renderACL(owner, rq.bucketRec.ACL))
}

func (s *Server) putObjectACL(rq *request) error {
	obj, err := s.versionOrCurrent(rq)
	if err != nil {
		return err
	}
	if !mayAccessACP(rq, obj) {
		return errAccessDenied
	}
	if _, err := cannedObjectACL(rq.Header.Get("x-amz-acl")); err != nil {
		return err
	}
	if _, err := readSmallBody(rq); err != nil {
		return err
	}
	return writeEmpty(rq, http.StatusOK)
}
