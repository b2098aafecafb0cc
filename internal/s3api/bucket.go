package s3api

import (
	"encoding/xml"
	"errors"
	"net"
	"net/http"
	"slices"
	"strings"

	"github.com/b3-storage/b3/internal/meta"
	"github.com/b3-storage/b3/internal/objstore"
)

var (
	opListBuckets         = operation{name: "ListBuckets", perm: permUser, handle: (*Server).listBuckets}
	opCreateBucket        = operation{name: "CreateBucket", perm: permUser, handle: (*Server).createBucket}
	opHeadBucket          = operation{name: "HeadBucket", perm: permRead, handle: (*Server).headBucket}
	opDeleteBucket        = operation{name: "DeleteBucket", perm: permOwner, handle: (*Server).deleteBucket}
	opGetBucketLocation   = operation{name: "GetBucketLocation", perm: permOwner, handle: (*Server).getBucketLocation}
	opGetBucketVersioning = operation{name: "GetBucketVersioning", perm: permOwner, handle: (*Server).getBucketVersioning}
	opPutBucketVersioning = operation{name: "PutBucketVersioning", perm: permOwner, handle: (*Server).putBucketVersioning}
	opGetBucketPolicy     = operation{name: "GetBucketPolicy", perm: permOwner, handle: (*Server).getBucketPolicy}
	opDeleteBucketPolicy  = operation{name: "DeleteBucketPolicy", perm: permOwner, handle: (*Server).deleteBucketPolicy}
)

type listAllMyBucketsResult struct {
	XMLName xml.Name    `xml:"ListAllMyBucketsResult"`
	Xmlns   string      `xml:"xmlns,attr"`
	Owner   *xmlOwner   `xml:"Owner"`
	Buckets []xmlBucket `xml:"Buckets>Bucket"`
}

type xmlBucket struct {
	Name         string
	CreationDate string
	BucketRegion string `xml:",omitempty"`
}

// listBuckets lists the caller's buckets.
func (s *Server) listBuckets(rq *request) error {
	all, err := s.store.ListBuckets()
	if err != nil {
		return err
	}
	prefix := rq.query.Get("prefix")
	res := listAllMyBucketsResult{Xmlns: s3Namespace, Owner: s.owner(rq.accessKey), Buckets: []xmlBucket{}}
	for _, b := range all {
		if b.Owner != rq.accessKey || !strings.HasPrefix(b.Name, prefix) {
			continue
		}
		res.Buckets = append(res.Buckets, xmlBucket{Name: b.Name, CreationDate: isoTime(b.Created), BucketRegion: b.Region})
	}
	return writeXML(rq, res)
}

type createBucketConfiguration struct {
	XMLName            xml.Name `xml:"CreateBucketConfiguration"`
	LocationConstraint string
}

// createBucket creates a bucket owned by the caller.
func (s *Server) createBucket(rq *request) error {
	if !validBucketName(rq.bucket) {
		return errInvalidBucketName
	}
	var conf createBucketConfiguration
	if _, err := readXML(rq, &conf, true); err != nil {
		return err
	}
	// An empty constraint means us-east-1 on AWS; b3 takes it as "this
	// server's region", so that clients configured for any region work.
	// Other constraints must name the region or one of --regions.
	region := s.cfg.Region
	if c := conf.LocationConstraint; c != "" && c != s.cfg.Region {
		if !slices.Contains(s.cfg.Regions, c) {
			return errInvalidLocation.withMessage("The specified location-constraint %q is not valid: this server answers for %s.", c, strings.Join(append([]string{s.cfg.Region}, s.cfg.Regions...), ", "))
		}
		region = c
	}
	acl, err := cannedACL(rq.Header.Get("x-amz-acl"))
	if err != nil {
		return err
	}
	if hasGrantHeaders(rq.Header) {
		return errNotImplemented.withMessage("Only canned ACLs are supported")
	}
	bk := &meta.Bucket{Name: rq.bucket, Owner: rq.accessKey, Region: region, ACL: acl}
	switch strings.ToLower(rq.Header.Get("x-amz-bucket-object-lock-enabled")) {
	case "":
	case "true":
		// Object Lock needs versions, for good.
		bk.ObjectLock, bk.Versioning = true, meta.VersioningEnabled
	case "false":
	default:
		return errInvalidArgument.withMessage("x-amz-bucket-object-lock-enabled must be true or false")
	}
	_, err = s.store.CreateBucket(bk)
	var existing *meta.Bucket
	if errors.Is(err, objstore.ErrBucketExists) {
		existing, _ = s.store.GetBucket(rq.bucket)
		if existing != nil && existing.Owner == rq.accessKey {
			return errBucketAlreadyOwned
		}
		return errBucketAlreadyExists
	}
	if err != nil {
		return err
	}
	rq.w.Header().Set("Location", "/"+rq.bucket)
	return writeEmpty(rq, http.StatusOK)
}

func (s *Server) headBucket(rq *request) error {
	rq.w.Header().Set("x-amz-bucket-region", s.bucketRegion(rq.bucketRec))
	return writeEmpty(rq, http.StatusOK)
}

func (s *Server) deleteBucket(rq *request) error {
	if err := s.store.DeleteBucket(rq.bucket); err != nil {
		return err
	}
	return writeEmpty(rq, http.StatusNoContent)
}

type locationConstraint struct {
	XMLName xml.Name `xml:"LocationConstraint"`
	Xmlns   string   `xml:"xmlns,attr"`
	Region  string   `xml:",chardata"`
}

// getBucketLocation answers "" for us-east-1, as AWS does (clients map
// the empty constraint to us-east-1).
func (s *Server) getBucketLocation(rq *request) error {
	region := s.bucketRegion(rq.bucketRec)
	if region == "us-east-1" {
		region = ""
	}
	return writeXML(rq, locationConstraint{Xmlns: s3Namespace, Region: region})
}

// bucketRegion is the region a bucket was created in: its
// LocationConstraint, or the server's region.
func (s *Server) bucketRegion(b *meta.Bucket) string {
	if b == nil || b.Region == "" {
		return s.cfg.Region
	}
	return b.Region
}

func (s *Server) getBucketPolicy(rq *request) error {
	if len(rq.bucketRec.Policy) == 0 {
		return errNoSuchPolicy
	}
	rq.w.Header().Set("Content-Type", "application/json")
	rq.w.WriteHeader(http.StatusOK)
	_, _ = rq.w.Write(rq.bucketRec.Policy)
	return nil
}

func (s *Server) deleteBucketPolicy(rq *request) error {
	return writeEmpty(rq, http.StatusNoContent)
}

// validBucketName applies AWS's rules for new buckets: 3-63 characters of
// lower-case letters, digits, '.' and '-', beginning and ending with a
// letter or digit, no "..", not shaped like an IP address, and not using
// the reserved prefixes and suffixes.
func validBucketName(name string) bool {
	if len(name) < 3 || len(name) > 63 {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case 'a' <= c && c <= 'z', '0' <= c && c <= '9':
		case c == '.' || c == '-':
			if i == 0 || i == len(name)-1 {
				return false
			}
		default:
			return false
		}
	}
	if strings.Contains(name, "..") || strings.Contains(name, ".-") || strings.Contains(name, "-.") {
		return false
	}
	if net.ParseIP(name) != nil {
		return false
	}
	for _, p := range []string{"xn--", "sthree-", "amzn-s3-demo-"} {
		if strings.HasPrefix(name, p) {
			return false
		}
	}
	for _, suffix := range []string{"-s3alias", "--ol-s3", "--x-s3", ".mrap", "--table-s3"} {
		if strings.HasSuffix(name, suffix) {
			return false
		}
	}
	return true
}
