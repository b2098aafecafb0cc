package s3api

import (
	"cmp"
	"encoding/base64"
	"encoding/xml"
	"errors"
	"net"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/b3-storage/b3/internal/meta"
	"github.com/b3-storage/b3/internal/objstore"
	"github.com/b3-storage/b3/internal/policy"
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
	XMLName           xml.Name    `xml:"ListAllMyBucketsResult"`
	Xmlns             string      `xml:"xmlns,attr"`
	Owner             *xmlOwner   `xml:"Owner"`
	Buckets           []xmlBucket `xml:"Buckets>Bucket"`
	ContinuationToken string      `xml:",omitempty"`
	Prefix            string      `xml:",omitempty"`
}

type xmlBucket struct {
	Name         string
	CreationDate string
	BucketRegion string `xml:",omitempty"`
}

// listBuckets lists the caller's buckets (an administrator's: every
// bucket) in name order, filtered by prefix and bucket-region,
// max-buckets (1..10000) at a time: a truncated page carries a
// ContinuationToken (the last name, base64) from which the next one
// starts.
func (s *Server) listBuckets(rq *request) error {
	q := rq.query
	prefix, region := q.Get("prefix"), q.Get("bucket-region")
	limit := -1
	if v, ok := q["max-buckets"]; ok {
		n, err := strconv.Atoi(v[0])
		if err != nil || n < 1 || n > 10000 {
			return errInvalidArgument.withMessage("Argument max-buckets must be an integer between 1 and 10000.")
		}
		limit = n
	}
	after := ""
	if v, ok := q["continuation-token"]; ok {
		name, err := base64.RawURLEncoding.DecodeString(v[0])
		if err != nil || len(name) == 0 {
			return errInvalidContinuation
		}
		after = string(name)
	}
	all, err := s.store.ListBuckets()
	if err != nil {
		return err
	}
	sort.Slice(all, func(i, j int) bool { return all[i].Name < all[j].Name })
	res := listAllMyBucketsResult{Xmlns: s3Namespace, Owner: s.owner(rq.accessKey), Buckets: []xmlBucket{}, Prefix: prefix}
	for _, b := range all {
		if (b.Owner != rq.accessKey && !rq.admin) || !strings.HasPrefix(b.Name, prefix) || b.Name <= after ||
			(region != "" && s.bucketRegion(&b) != region) {
			continue
		}
		if len(res.Buckets) == limit {
			res.ContinuationToken = base64.RawURLEncoding.EncodeToString([]byte(res.Buckets[limit-1].Name))
			break
		}
		res.Buckets = append(res.Buckets, xmlBucket{Name: b.Name, CreationDate: isoTime(b.Created), BucketRegion: s.bucketRegion(&b)})
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
	b, err := s.newBucket(rq, region)
	if err != nil {
		return err
	}
	switch strings.ToLower(rq.Header.Get("x-amz-bucket-object-lock-enabled")) {
	case "":
	case "true":
		// Object Lock needs versions, for good.
		b.ObjectLock, b.Versioning = true, meta.VersioningEnabled
	case "false":
	default:
		return errInvalidArgument.withMessage("x-amz-bucket-object-lock-enabled must be true or false")
	}
	_, err = s.store.CreateBucket(b)
	if errors.Is(err, objstore.ErrBucketExists) {
		return s.recreateBucket(rq, b)
	}
	if err != nil {
		return err
	}
	rq.w.Header().Set("Location", "/"+rq.bucket)
	return writeEmpty(rq, http.StatusOK)
}

// newBucket builds the record of a bucket CreateBucket makes, with the
// access settings of Config.NewBuckets, by default those AWS gives new
// buckets: ownership BucketOwnerEnforced (ACLs disabled) unless
// x-amz-object-ownership says otherwise, and every Block Public Access
// setting on. An ACL the request asks for must fit them, as on AWS.
//
// In a cluster this runs on the leader (followers forward S3 requests),
// and the record built here is what the replicated command carries: the
// leader's settings decide, and every replica stores the same.
func (s *Server) newBucket(rq *request, region string) (*meta.Bucket, error) {
	defaults := s.cfg.NewBuckets
	b := &meta.Bucket{Name: rq.bucket, Owner: rq.accessKey, Region: region, ACL: meta.ACLPrivate,
		Ownership: cmp.Or(defaults.ObjectOwnership, meta.OwnershipBucketOwnerEnforced)}
	if !defaults.NoPublicAccessBlock {
		b.PublicAccessBlock = &meta.PublicAccessBlock{BlockPublicAcls: true, IgnorePublicAcls: true, BlockPublicPolicy: true, RestrictPublicBuckets: true}
	}
	if v := rq.Header.Get("x-amz-object-ownership"); v != "" {
		if !validOwnership(v) {
			return nil, errInvalidArgument.withMessage("Invalid x-amz-object-ownership header: %s", v)
		}
		b.Ownership = v
	}
	r, err := s.aclFromHeaders(rq.Header)
	if err != nil || !r.given {
		return b, err
	}
	grants, err := r.resolve(b.Owner, b.Owner)
	if err != nil {
		return nil, err
	}
	if b.Ownership == meta.OwnershipBucketOwnerEnforced && !onlyOwnerControl(grants, b.Owner) {
		return nil, errACLWithBucketEnforce
	}
	if b.PublicAccessBlock != nil && anyPublicGrant(grants) {
		return nil, errACLWithBlockPublicAccess
	}
	b.Grants = grants
	if r.canned != "" {
		b.ACL = r.canned
	}
	return b, nil
}

// recreateBucket answers CreateBucket of a bucket that exists. Its owner
// gets what AWS answers in the bucket's region: in us-east-1, 200 OK and
// the bucket's ACL reset to the one asked for (legacy behaviour AWS
// keeps there); elsewhere 409 BucketAlreadyOwnedByYou. Anyone else gets
// 409 BucketAlreadyExists.
func (s *Server) recreateBucket(rq *request, asked *meta.Bucket) error {
	existing, err := s.store.GetBucket(rq.bucket)
	if err != nil || existing.Owner != rq.accessKey {
		return errBucketAlreadyExists
	}
	if s.bucketRegion(existing) != "us-east-1" {
		return errBucketAlreadyOwned
	}
	if existing.Ownership != meta.OwnershipBucketOwnerEnforced {
		err := s.store.UpdateBucket(rq.bucket, func(b *meta.Bucket) error {
			grants := asked.Grants
			if grants == nil {
				grants = []meta.Grant{{Grantee: CanonicalID(b.Owner), Permission: policy.PermFullControl}}
			}
			if err := checkACLAllowed(b, grants); err != nil {
				return err
			}
			b.Grants, b.ACL = grants, asked.ACL
			return nil
		})
		if err != nil {
			return err
		}
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
