package s3api

import (
	"encoding/base64"
	"encoding/xml"
	"net/url"
	"strconv"
	"strings"

	"github.com/b3-storage/b3/internal/meta"
)

var (
	opListObjectsV1 = operation{name: "ListObjects", perm: permRead, handle: (*Server).listObjectsV1}
	opListObjectsV2 = operation{name: "ListObjectsV2", perm: permRead, handle: (*Server).listObjectsV2}
)

type xmlObject struct {
	Key               keyText
	LastModified      string
	ETag              string
	Size              int64
	StorageClass      string
	Owner             *xmlOwner `xml:",omitempty"`
	ChecksumAlgorithm string    `xml:",omitempty"`
	ChecksumType      string    `xml:",omitempty"`
}

type xmlPrefix struct {
	Prefix keyText
}

type listBucketResultV1 struct {
	XMLName        xml.Name `xml:"ListBucketResult"`
	Xmlns          string   `xml:"xmlns,attr"`
	Name           string
	Prefix         keyText
	Marker         keyText
	NextMarker     keyText `xml:",omitempty"`
	MaxKeys        int
	Delimiter      keyText `xml:",omitempty"`
	IsTruncated    bool
	EncodingType   string `xml:",omitempty"`
	Contents       []xmlObject
	CommonPrefixes []xmlPrefix
}

type listBucketResultV2 struct {
	XMLName               xml.Name `xml:"ListBucketResult"`
	Xmlns                 string   `xml:"xmlns,attr"`
	Name                  string
	Prefix                keyText
	StartAfter            keyText `xml:",omitempty"`
	ContinuationToken     *string `xml:",omitempty"`
	NextContinuationToken string  `xml:",omitempty"`
	KeyCount              int
	MaxKeys               int
	Delimiter             keyText `xml:",omitempty"`
	IsTruncated           bool
	EncodingType          string `xml:",omitempty"`
	Contents              []xmlObject
	CommonPrefixes        []xmlPrefix
}

// listParams are the parameters shared by both listing versions.
type listParams struct {
	prefix, delimiter string
	maxKeys           int
	encode            func(string) keyText
	encodingType      string
}

func parseListParams(rq *request) (listParams, error) {
	p := listParams{prefix: rq.query.Get("prefix"), delimiter: rq.query.Get("delimiter"), maxKeys: meta.DefaultMaxKeys, encode: func(s string) keyText { return keyText(s) }}
	if v, ok := rq.query["max-keys"]; ok {
		n, err := strconv.Atoi(v[0])
		if err != nil || n < 0 {
			return p, errInvalidMaxKeys
		}
		p.maxKeys = min(n, meta.DefaultMaxKeys)
	}
	switch et := rq.query.Get("encoding-type"); et {
	case "":
	case "url":
		p.encodingType = et
		p.encode = func(s string) keyText { return keyText(s3URLEncode(s)) }
	default:
		return p, errInvalidEncodingType
	}
	return p, nil
}

// s3URLEncode encodes a key for encoding-type=url as S3 does: every byte
// but the unreserved ones and '/' percent-encoded, a space as %20 (not
// url.QueryEscape's '+': a client that asked for the encoding itself gets
// the raw value, and S3 sends "quux%20ab/").
func s3URLEncode(s string) string {
	return strings.NewReplacer("+", "%20", "%2F", "/").Replace(url.QueryEscape(s))
}

func (s *Server) listPage(rq *request, p listParams, startAfter string) (*meta.ListResult, error) {
	return s.store.ListObjects(rq.bucket, meta.ListOptions{
		Prefix: p.prefix, Delimiter: p.delimiter, StartAfter: startAfter, MaxKeys: p.maxKeys,
	})
}

func (s *Server) renderObjects(res *meta.ListResult, p listParams, withOwner bool) ([]xmlObject, []xmlPrefix) {
	objects := make([]xmlObject, 0, len(res.Objects))
	for _, o := range res.Objects {
		x := xmlObject{Key: p.encode(o.Key), LastModified: isoTime(o.Modified), ETag: quoteETag(o.ETag), Size: viewSize(o), StorageClass: "STANDARD",
			ChecksumAlgorithm: o.ChecksumAlgorithm, ChecksumType: o.ChecksumType}
		if withOwner {
			x.Owner = s.owner(o.Owner)
		}
		objects = append(objects, x)
	}
	prefixes := make([]xmlPrefix, 0, len(res.CommonPrefixes))
	for _, cp := range res.CommonPrefixes {
		prefixes = append(prefixes, xmlPrefix{Prefix: p.encode(cp)})
	}
	return objects, prefixes
}

// listObjectsV1 answers ListObjects: marker paging; NextMarker only when
// a delimiter is given (without one, clients continue from the last key),
// as AWS does.
func (s *Server) listObjectsV1(rq *request) error {
	p, err := parseListParams(rq)
	if err != nil {
		return err
	}
	marker := rq.query.Get("marker")
	res, err := s.listPage(rq, p, marker)
	if err != nil {
		return err
	}
	// Prefix is sent as given even with encoding-type=url: S3 encodes
	// it only in ListObjectsV2 (and ListObjectVersions), and clients
	// decode accordingly (botocore decodes Delimiter, Marker,
	// NextMarker, Key and CommonPrefixes here, not Prefix).
	out := listBucketResultV1{Xmlns: s3Namespace, Name: rq.bucket, Prefix: keyText(p.prefix), Marker: p.encode(marker),
		MaxKeys: p.maxKeys, Delimiter: p.encode(p.delimiter), IsTruncated: res.IsTruncated, EncodingType: p.encodingType}
	out.Contents, out.CommonPrefixes = s.renderObjects(res, p, true)
	if res.IsTruncated && p.delimiter != "" {
		out.NextMarker = p.encode(res.NextMarker)
	}
	return writeXML(rq, out)
}

// tokenVersion opens every continuation token, so that a token b3 did not
// issue is refused rather than read as a key.
const tokenVersion = 0x01

// listObjectsV2 answers ListObjectsV2. The continuation token is the
// base64 of the last key or common prefix returned: opaque to clients,
// and enough to resume exactly.
func (s *Server) listObjectsV2(rq *request) error {
	p, err := parseListParams(rq)
	if err != nil {
		return err
	}
	startAfter := rq.query.Get("start-after")
	// An empty continuation-token is no token (the listing starts from
	// start-after), echoed back empty, as S3 does.
	token, hasToken := rq.query["continuation-token"]
	from := startAfter
	if hasToken && token[0] != "" {
		raw, err := base64.RawURLEncoding.DecodeString(token[0])
		if err != nil || len(raw) == 0 || raw[0] != tokenVersion {
			return errInvalidContinuation
		}
		from = string(raw[1:])
	}
	res, err := s.listPage(rq, p, from)
	if err != nil {
		return err
	}
	out := listBucketResultV2{Xmlns: s3Namespace, Name: rq.bucket, Prefix: p.encode(p.prefix), StartAfter: p.encode(startAfter),
		MaxKeys: p.maxKeys, Delimiter: p.encode(p.delimiter), IsTruncated: res.IsTruncated, EncodingType: p.encodingType,
		KeyCount: len(res.Objects) + len(res.CommonPrefixes)}
	if hasToken {
		out.ContinuationToken = &token[0]
	}
	out.Contents, out.CommonPrefixes = s.renderObjects(res, p, rq.query.Get("fetch-owner") == "true")
	if res.IsTruncated {
		out.NextContinuationToken = base64.RawURLEncoding.EncodeToString(append([]byte{tokenVersion}, res.NextMarker...))
	}
	return writeXML(rq, out)
}
