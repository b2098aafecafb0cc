package s3api

import (
	"net"
	"net/http"
	"net/url"
	"strings"
	"unicode/utf8"
)

// permission is what an operation needs of the caller on its bucket.
type permission uint8

const (
	// permUser: any authenticated user (ListBuckets, CreateBucket).
	permUser permission = iota
	// permRead: the bucket's owner, or anyone if the bucket's canned ACL
	// is public-read or public-read-write.
	permRead
	// permWrite: the owner, or anyone if the ACL is public-read-write.
	permWrite
	// permOwner: the owner only (bucket configuration, DeleteBucket).
	permOwner
)

// operation is one S3 API action.
type operation struct {
	name   string
	handle func(*Server, *request) error
	perm   permission
	// preAuth operations run before (and instead of) header/query
	// authentication: CORS preflight, and POST object, which carries its
	// signature in the form.
	preAuth bool
}

// unsupported are sub-resources of S3 that b3 does not implement: a
// request naming one gets NotImplemented rather than being mistaken for a
// plain GET or PUT of the bucket or object.
var unsupported = []string{
	"accelerate", "analytics", "intelligent-tiering", "inventory",
	"logging", "metrics", "notification", "replication", "requestPayment",
	"website", "torrent", "restore", "select", "metadataTable", "session",
}

// route resolves bucket, key and operation from the host, path, method
// and query.
func (s *Server) route(rq *request) error {
	query, err := url.ParseQuery(rq.URL.RawQuery)
	if err != nil {
		return errInvalidArgument.withMessage("The query string is malformed: %v", err)
	}
	rq.query = query
	rq.bucket, rq.key = s.splitTarget(rq.Request)
	if rq.key != "" {
		if len(rq.key) > maxKeyLength {
			return errKeyTooLong
		}
		if !utf8.ValidString(rq.key) {
			return errInvalidArgument.withMessage("Object key is not valid UTF-8")
		}
	}
	for _, name := range unsupported {
		if query.Has(name) {
			return errNotImplemented.withMessage("The %q sub-resource is not implemented", name)
		}
	}
	if rq.Method == http.MethodOptions {
		if rq.bucket == "" {
			return errMethodNotAllowed
		}
		rq.op = &opPreflight
		return nil
	}
	switch {
	case rq.bucket == "":
		rq.op = routeService(rq)
	case rq.key == "":
		rq.op = routeBucket(rq)
	default:
		// A malformed versionId must fail, never act on the current
		// object (a DELETE would otherwise remove it).
		if err := s.parseVersionParam(rq); err != nil {
			return err
		}
		rq.op = routeObject(rq)
	}
	if rq.op == nil {
		return errMethodNotAllowed
	}
	return nil
}

// splitTarget returns the bucket and key a request addresses:
// virtual-host style when the Host is a subdomain of a configured domain,
// else path style ("/bucket/key").
func (s *Server) splitTarget(r *http.Request) (bucket, key string) {
	return SplitTarget(r, s.cfg.Domains)
}

// SplitTarget returns the bucket and key a request addresses, given the
// base domains of virtual-host-style requests (Config.Domains).
func SplitTarget(r *http.Request, domains []string) (bucket, key string) {
	path := strings.TrimPrefix(r.URL.Path, "/")
	if b := hostBucket(r, domains); b != "" {
		return b, path
	}
	bucket, key, _ = strings.Cut(path, "/")
	return bucket, key
}

// hostBucket returns the bucket named by a virtual-host-style Host, or "".
func (s *Server) hostBucket(r *http.Request) string { return hostBucket(r, s.cfg.Domains) }

func hostBucket(r *http.Request, domains []string) string {
	host := r.Host
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.ToLower(host)
	for _, domain := range domains {
		if b, ok := strings.CutSuffix(host, "."+domain); ok && b != "" {
			return b
		}
	}
	return ""
}

// objectURL is the absolute URL of the request's object, in the style
// (path or virtual host) the request used. The scheme is https behind a
// TLS listener or a proxy that says so (X-Forwarded-Proto), else http.
func (s *Server) objectURL(rq *request) string {
	u := url.URL{Scheme: "http", Host: rq.Host, Path: "/" + rq.bucket + "/" + rq.key}
	if rq.TLS != nil || strings.EqualFold(rq.Header.Get("X-Forwarded-Proto"), "https") {
		u.Scheme = "https"
	}
	if s.hostBucket(rq.Request) != "" {
		u.Path = "/" + rq.key
	}
	return u.String()
}

func routeService(rq *request) *operation {
	if rq.Method == http.MethodGet {
		return &opListBuckets
	}
	return nil
}

func routeBucket(rq *request) *operation {
	q := rq.query
	switch rq.Method {
	case http.MethodGet:
		switch {
		case q.Has("location"):
			return &opGetBucketLocation
		case q.Has("cors"):
			return &opGetBucketCORS
		case q.Has("encryption"):
			return &opGetBucketEncryption
		case q.Has("tagging"):
			return &opGetBucketTagging
		case q.Has("lifecycle"):
			return &opGetBucketLifecycle
		case q.Has("acl"):
			return &opGetBucketACL
		case q.Has("versioning"):
			return &opGetBucketVersioning
		case q.Has("versions"):
			return &opListObjectVersions
		case q.Has("object-lock"):
			return &opGetObjectLockConfiguration
		case q.Has("policy"):
			return &opGetBucketPolicy
		case q.Has("policyStatus"):
			return &opGetBucketPolicyStatus
		case q.Has("ownershipControls"):
			return &opGetBucketOwnershipControls
		case q.Has("publicAccessBlock"):
			return &opGetPublicAccessBlock
		case q.Has("uploads"):
			return &opListUploads
		case q.Get("list-type") == "2":
			return &opListObjectsV2
		case q.Has("list-type"):
			return &opBadListType
		}
		return &opListObjectsV1
	case http.MethodHead:
		return &opHeadBucket
	case http.MethodPut:
		switch {
		case q.Has("cors"):
			return &opPutBucketCORS
		case q.Has("encryption"):
			return &opPutBucketEncryption
		case q.Has("tagging"):
			return &opPutBucketTagging
		case q.Has("lifecycle"):
			return &opPutBucketLifecycle
		case q.Has("acl"):
			return &opPutBucketACL
		case q.Has("versioning"):
			return &opPutBucketVersioning
		case q.Has("object-lock"):
			return &opPutObjectLockConfiguration
		case q.Has("policy"):
			return &opPutBucketPolicy
		case q.Has("ownershipControls"):
			return &opPutBucketOwnershipControls
		case q.Has("publicAccessBlock"):
			return &opPutPublicAccessBlock
		}
		return &opCreateBucket
	case http.MethodDelete:
		switch {
		case q.Has("cors"):
			return &opDeleteBucketCORS
		case q.Has("encryption"):
			return &opDeleteBucketEncryption
		case q.Has("tagging"):
			return &opDeleteBucketTagging
		case q.Has("lifecycle"):
			return &opDeleteBucketLifecycle
		case q.Has("policy"):
			return &opDeleteBucketPolicy
		case q.Has("ownershipControls"):
			return &opDeleteBucketOwnershipControls
		case q.Has("publicAccessBlock"):
			return &opDeletePublicAccessBlock
		}
		return &opDeleteBucket
	case http.MethodPost:
		if q.Has("delete") {
			return &opDeleteObjects
		}
		if strings.HasPrefix(strings.ToLower(rq.Header.Get("Content-Type")), "multipart/form-data") {
			return &opPostObject
		}
		return nil
	}
	return nil
}

func routeObject(rq *request) *operation {
	q := rq.query
	switch rq.Method {
	case http.MethodGet:
		switch {
		case q.Has("uploadId"):
			return &opListParts
		case q.Has("tagging"):
			return &opGetObjectTagging
		case q.Has("acl"):
			return &opGetObjectACL
		case q.Has("attributes"):
			return &opGetObjectAttributes
		case q.Has("retention"):
			return &opGetObjectRetention
		case q.Has("legal-hold"):
			return &opGetObjectLegalHold
		}
		return &opGetObject
	case http.MethodHead:
		return &opHeadObject
	case http.MethodPut:
		switch {
		case q.Has("partNumber") || q.Has("uploadId"):
			if rq.Header.Get("x-amz-copy-source") != "" {
				return &opUploadPartCopy
			}
			return &opUploadPart
		case q.Has("tagging"):
			return &opPutObjectTagging
		case q.Has("acl"):
			return &opPutObjectACL
		case q.Has("retention"):
			return &opPutObjectRetention
		case q.Has("legal-hold"):
			return &opPutObjectLegalHold
		case rq.Header.Get("x-amz-copy-source") != "":
			return &opCopyObject
		}
		return &opPutObject
	case http.MethodDelete:
		switch {
		case q.Has("uploadId"):
			return &opAbortUpload
		case q.Has("tagging"):
			return &opDeleteObjectTagging
		}
		return &opDeleteObject
	case http.MethodPost:
		switch {
		case q.Has("uploads"):
			return &opCreateUpload
		case q.Has("uploadId"):
			return &opCompleteUpload
		}
		return nil
	}
	return nil
}

var opBadListType = operation{name: "ListObjects", perm: permRead,
	handle: func(*Server, *request) error {
		return errInvalidArgument.withMessage("Invalid list type specified: only list-type=2 exists")
	}}
