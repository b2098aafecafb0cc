package s3api

import (
	"encoding/xml"
	"errors"
	"net/http"

	"github.com/b3-storage/b3/internal/meta"
	"github.com/b3-storage/b3/internal/objstore"
)

// Versioning: the bucket's versioning state, ListObjectVersions, and the
// versionId parameter of object operations. objstore keeps the versions
// (see objstore/versions.go); this file speaks S3 about them.

var opListObjectVersions = operation{name: "ListObjectVersions", perm: permRead, handle: (*Server).listObjectVersions}

type versioningConfiguration struct {
	XMLName   xml.Name `xml:"VersioningConfiguration"`
	Xmlns     string   `xml:"xmlns,attr,omitempty"`
	Status    string   `xml:",omitempty"`
	MfaDelete string   `xml:",omitempty"`
}

// getBucketVersioning reports Enabled, Suspended, or nothing for a bucket
// that never had versioning.
func (s *Server) getBucketVersioning(rq *request) error {
	return writeXML(rq, versioningConfiguration{Xmlns: s3Namespace, Status: rq.bucketRec.Versioning})
}

// putBucketVersioning sets Enabled or Suspended. MFA delete is not
// available (it needs a hardware token AWS issues).
func (s *Server) putBucketVersioning(rq *request) error {
	var conf versioningConfiguration
	if _, err := readXML(rq, &conf, false); err != nil {
		return err
	}
	if conf.MfaDelete == "Enabled" {
		return errNotImplemented.withMessage("MFA delete is not supported")
	}
	if conf.MfaDelete != "" && conf.MfaDelete != "Disabled" {
		return errIllegalVersioningState
	}
	switch conf.Status {
	case meta.VersioningEnabled, meta.VersioningSuspended:
	default:
		return errIllegalVersioningState
	}
	if err := s.store.SetBucketVersioning(rq.bucket, conf.Status); err != nil {
		return err
	}
	return writeEmpty(rq, http.StatusOK)
}

// parseVersionParam reads the object request's versionId into rq.version,
// as the engine's id. A present but malformed one (or one this store did
// not issue) is InvalidArgument, as on S3.
func (s *Server) parseVersionParam(rq *request) error {
	v, ok := rq.query["versionId"]
	if !ok {
		return nil
	}
	if len(v) != 1 {
		return errInvalidVersionID
	}
	id, err := s.versions.decode(v[0])
	if err != nil {
		return errInvalidVersionID
	}
	rq.version = id
	return nil
}

// versionParam returns the engine's id of the version the request's
// versionId names, "" if none. Route parsed it (a bad one never reaches a
// handler); the error result stays for the handlers that check it.
func versionParam(rq *request) (string, error) { return rq.version, nil }

// writeVersionHeader sets x-amz-version-id for a record of a bucket that
// has (or had) versioning; a bucket that never had it sends none, as S3.
func (s *Server) writeVersionHeader(h http.Header, bk *meta.Bucket, obj *meta.Object) {
	if bk != nil && (bk.Versioning != "" || obj.Versioned) {
		h.Set("x-amz-version-id", s.clientVersionID(obj))
	}
}

// writeNewVersionHeader sets x-amz-version-id on the answer to a write
// that stored obj (PutObject, POST, CopyObject, CompleteMultipartUpload)
// when the write made a version of its own. A write to an unversioned or
// versioning-suspended bucket makes the null version, and AWS then sends
// no header (GET and HEAD of a bucket that had versioning do send
// "null": writeVersionHeader).
func (s *Server) writeNewVersionHeader(h http.Header, obj *meta.Object) {
	if obj.Versioned {
		h.Set("x-amz-version-id", s.clientVersionID(obj))
	}
}

// deleteMarkerError adds S3's headers to the answer about a delete marker:
// a GET or HEAD of the key whose latest version is one (404), or of a
// marker by version ID (405).
func (s *Server) deleteMarkerError(rq *request, versionID string, err error) error {
	var marker *meta.Object
	switch {
	case versionID == "" && errors.Is(err, objstore.ErrNoSuchKey) && rq.bucketRec != nil && rq.bucketRec.Versioning != "":
		marker, _ = s.store.LatestMarker(rq.bucket, rq.key)
	case errors.Is(err, objstore.ErrDeleteMarker):
		marker, _ = s.store.HeadVersion(rq.bucket, rq.key, versionID)
	}
	if marker != nil && marker.DeleteMarker {
		h := rq.w.Header()
		h.Set("x-amz-delete-marker", "true")
		h.Set("x-amz-version-id", s.clientVersionID(marker))
		if errors.Is(err, objstore.ErrDeleteMarker) {
			h.Set("Last-Modified", marker.Modified.UTC().Format(http.TimeFormat))
			h.Set("Allow", "DELETE")
		}
	}
	return err
}

type listVersionsResult struct {
	XMLName             xml.Name `xml:"ListVersionsResult"`
	Xmlns               string   `xml:"xmlns,attr"`
	Name                string
	Prefix              keyText
	KeyMarker           keyText
	VersionIdMarker     string
	NextKeyMarker       keyText `xml:",omitempty"`
	NextVersionIdMarker string  `xml:",omitempty"`
	MaxKeys             int
	Delimiter           keyText `xml:",omitempty"`
	IsTruncated         bool
	EncodingType        string `xml:",omitempty"`
	Entries             []xmlVersion
	CommonPrefixes      []xmlPrefix
}

// xmlVersion is a <Version> or a <DeleteMarker>; they interleave in key
// order, so one slice with the element name chosen per entry.
type xmlVersion struct {
	XMLName           xml.Name
	Key               keyText
	VersionId         string
	IsLatest          bool
	LastModified      string
	ETag              string    `xml:",omitempty"`
	Size              *int64    `xml:",omitempty"`
	StorageClass      string    `xml:",omitempty"`
	Owner             *xmlOwner `xml:",omitempty"`
	ChecksumAlgorithm string    `xml:",omitempty"`
	ChecksumType      string    `xml:",omitempty"`
}

// listObjectVersions answers ListObjectVersions: key-marker and
// version-id-marker paging, newest version of each key first.
func (s *Server) listObjectVersions(rq *request) error {
	p, err := parseListParams(rq)
	if err != nil {
		return err
	}
	keyMarker, versionMarker := rq.query.Get("key-marker"), rq.query.Get("version-id-marker")
	if versionMarker != "" && keyMarker == "" {
		return errInvalidArgument.withMessage("A version-id marker cannot be specified without a key marker.")
	}
	engineMarker := ""
	if versionMarker != "" {
		if engineMarker, err = s.versions.decode(versionMarker); err != nil {
			return errInvalidArgument.withMessage("Invalid version id specified")
		}
	}
	res, err := s.store.ListVersions(rq.bucket, objstore.VersionListOptions{Prefix: p.prefix, Delimiter: p.delimiter,
		KeyMarker: keyMarker, VersionIDMarker: engineMarker, MaxKeys: p.maxKeys})
	if err != nil {
		return err
	}
	out := listVersionsResult{Xmlns: s3Namespace, Name: rq.bucket, Prefix: p.encode(p.prefix), KeyMarker: p.encode(keyMarker),
		VersionIdMarker: versionMarker, MaxKeys: p.maxKeys, Delimiter: p.encode(p.delimiter), IsTruncated: res.IsTruncated,
		EncodingType: p.encodingType, Entries: make([]xmlVersion, 0, len(res.Versions))}
	for _, v := range res.Versions {
		x := xmlVersion{XMLName: xml.Name{Local: "Version"}, Key: p.encode(v.Key), VersionId: s.clientVersionID(v),
			IsLatest: v.IsLatest, LastModified: isoTime(v.Modified), Owner: s.owner(v.Owner)}
		if v.DeleteMarker {
			x.XMLName.Local = "DeleteMarker"
		} else {
			size := viewSize(v)
			x.ETag, x.Size, x.StorageClass = quoteETag(v.ETag), &size, "STANDARD"
			x.ChecksumAlgorithm, x.ChecksumType = v.ChecksumAlgorithm, v.ChecksumType
		}
		out.Entries = append(out.Entries, x)
	}
	for _, cp := range res.CommonPrefixes {
		out.CommonPrefixes = append(out.CommonPrefixes, xmlPrefix{Prefix: p.encode(cp)})
	}
	if res.IsTruncated {
		out.NextKeyMarker = p.encode(res.NextKeyMarker)
		if res.NextVersionMarker != 0 {
			last := res.Versions[len(res.Versions)-1]
			out.NextVersionIdMarker = s.clientVersionID(last)
		}
	}
	return writeXML(rq, out)
}
