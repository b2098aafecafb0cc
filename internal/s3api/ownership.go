package s3api

import (
	"encoding/xml"
	"net/http"

	"github.com/b3-storage/b3/internal/meta"
)

var (
	opGetBucketOwnershipControls    = operation{name: "GetBucketOwnershipControls", perm: permOwner, handle: (*Server).getBucketOwnershipControls}
	opPutBucketOwnershipControls    = operation{name: "PutBucketOwnershipControls", perm: permOwner, handle: (*Server).putBucketOwnershipControls}
	opDeleteBucketOwnershipControls = operation{name: "DeleteBucketOwnershipControls", perm: permOwner, handle: (*Server).deleteBucketOwnershipControls}
	opGetPublicAccessBlock          = operation{name: "GetPublicAccessBlock", perm: permOwner, handle: (*Server).getPublicAccessBlock}
	opPutPublicAccessBlock          = operation{name: "PutPublicAccessBlock", perm: permOwner, handle: (*Server).putPublicAccessBlock}
	opDeletePublicAccessBlock       = operation{name: "DeletePublicAccessBlock", perm: permOwner, handle: (*Server).deletePublicAccessBlock}
)

var (
	errNoOwnershipControls = apiErr("OwnershipControlsNotFoundError", 404, "The bucket ownership controls were not found")
	errNoPublicAccessBlock = apiErr("NoSuchPublicAccessBlockConfiguration", 404, "The public access block configuration was not found")
	// AWS's code for this refusal, the same as for CreateBucket with an
	// ACL and BucketOwnerEnforced (errACLWithBucketEnforce).
	errOwnershipWithACLs     = apiErr("InvalidBucketAclWithObjectOwnership", 400, "Bucket cannot have ACLs set with ObjectOwnership's BucketOwnerEnforced setting")
	errInvalidOwnershipValue = apiErr("MalformedXML", 400, "The XML you provided was not well-formed or did not validate against our published schema.")
)

func validOwnership(v string) bool {
	switch v {
	case meta.OwnershipBucketOwnerEnforced, meta.OwnershipBucketOwnerPreferred, meta.OwnershipObjectWriter:
		return true
	}
	return false
}

type ownershipControls struct {
	XMLName xml.Name `xml:"OwnershipControls"`
	Xmlns   string   `xml:"xmlns,attr,omitempty"`
	Rules   []struct {
		ObjectOwnership string
	} `xml:"Rule"`
}

func (s *Server) getBucketOwnershipControls(rq *request) error {
	b := rq.bucketRec
	if b.Ownership == "" {
		return errNoOwnershipControls
	}
	doc := ownershipControls{Xmlns: s3Namespace}
	doc.Rules = append(doc.Rules, struct{ ObjectOwnership string }{b.Ownership})
	return writeXML(rq, doc)
}

// putBucketOwnershipControls sets one rule. Turning on
// BucketOwnerEnforced is refused while the bucket's ACL grants access to
// anyone but its owner, as on AWS (object ACLs are then ignored).
func (s *Server) putBucketOwnershipControls(rq *request) error {
	var doc ownershipControls
	if _, err := readXML(rq, &doc, false); err != nil {
		return err
	}
	if len(doc.Rules) != 1 || !validOwnership(doc.Rules[0].ObjectOwnership) {
		return errInvalidOwnershipValue
	}
	want := doc.Rules[0].ObjectOwnership
	err := s.store.UpdateBucket(rq.bucket, func(b *meta.Bucket) error {
		if want == meta.OwnershipBucketOwnerEnforced {
			if grants := s.bucketGrants(b); !onlyOwnerControl(fromPolicyGrants(grants), b.Owner) {
				return errOwnershipWithACLs
			}
		}
		b.Ownership = want
		return nil
	})
	if err != nil {
		return err
	}
	return writeEmpty(rq, http.StatusOK)
}

// deleteBucketOwnershipControls removes the setting; the bucket then
// behaves as ObjectWriter (ACLs enabled), as on AWS.
func (s *Server) deleteBucketOwnershipControls(rq *request) error {
	err := s.store.UpdateBucket(rq.bucket, func(b *meta.Bucket) error {
		if b.Ownership != "" {
			b.Ownership = meta.OwnershipObjectWriter
		}
		return nil
	})
	if err != nil {
		return err
	}
	return writeEmpty(rq, http.StatusNoContent)
}

type publicAccessBlockConfiguration struct {
	XMLName               xml.Name `xml:"PublicAccessBlockConfiguration"`
	Xmlns                 string   `xml:"xmlns,attr,omitempty"`
	BlockPublicAcls       bool
	IgnorePublicAcls      bool
	BlockPublicPolicy     bool
	RestrictPublicBuckets bool
}

func (s *Server) getPublicAccessBlock(rq *request) error {
	p := rq.bucketRec.PublicAccessBlock
	if p == nil {
		return errNoPublicAccessBlock
	}
	return writeXML(rq, publicAccessBlockConfiguration{Xmlns: s3Namespace,
		BlockPublicAcls: p.BlockPublicAcls, IgnorePublicAcls: p.IgnorePublicAcls,
		BlockPublicPolicy: p.BlockPublicPolicy, RestrictPublicBuckets: p.RestrictPublicBuckets})
}

func (s *Server) putPublicAccessBlock(rq *request) error {
	var doc publicAccessBlockConfiguration
	if _, err := readXML(rq, &doc, false); err != nil {
		return err
	}
	pab := &meta.PublicAccessBlock{BlockPublicAcls: doc.BlockPublicAcls, IgnorePublicAcls: doc.IgnorePublicAcls,
		BlockPublicPolicy: doc.BlockPublicPolicy, RestrictPublicBuckets: doc.RestrictPublicBuckets}
	if err := s.store.UpdateBucket(rq.bucket, func(b *meta.Bucket) error { b.PublicAccessBlock = pab; return nil }); err != nil {
		return err
	}
	return writeEmpty(rq, http.StatusOK)
}

func (s *Server) deletePublicAccessBlock(rq *request) error {
	if err := s.store.UpdateBucket(rq.bucket, func(b *meta.Bucket) error { b.PublicAccessBlock = nil; return nil }); err != nil {
		return err
	}
	return writeEmpty(rq, http.StatusNoContent)
}
