package s3api

import (
	"encoding/xml"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/b3-storage/b3/internal/checksum"
	"github.com/b3-storage/b3/internal/meta"
	"github.com/b3-storage/b3/internal/objstore"
)

var (
	opCopyObject     = operation{name: "CopyObject", perm: permWrite, handle: (*Server).copyObject}
	opUploadPartCopy = operation{name: "UploadPartCopy", perm: permWrite, handle: (*Server).uploadPartCopy}
)

// copySource parses x-amz-copy-source: "[/]bucket/key[?versionId=...]",
// URL-encoded; versionID is the engine's id of the version named, "" when
// none is.
func (s *Server) copySource(h http.Header) (bucket, key, versionID string, err error) {
	raw := h.Get("x-amz-copy-source")
	path, query, _ := strings.Cut(raw, "?")
	if query != "" {
		q, _ := url.ParseQuery(query)
		if v, ok := q["versionId"]; ok {
			if len(v) != 1 {
				return "", "", "", errInvalidVersionID
			}
			if versionID, err = s.versions.decode(v[0]); err != nil {
				return "", "", "", errInvalidVersionID
			}
		}
	}
	decoded, perr := url.PathUnescape(path)
	if perr != nil {
		return "", "", "", errInvalidCopySource
	}
	decoded = strings.TrimPrefix(decoded, "/")
	bucket, key, ok := strings.Cut(decoded, "/")
	if !ok || bucket == "" || key == "" {
		return "", "", "", errInvalidCopySource
	}
	if len(key) > maxKeyLength {
		return "", "", "", errKeyTooLong
	}
	return bucket, key, versionID, nil
}

// copySourceAccess is what reading a copy source asks of the caller: what
// GetObject of it would, so a source version needs s3:GetObjectVersion and
// that version's READ grant.
func copySourceAccess(versionID string) access { return objectAccess(&opGetObject, versionID) }

// openCopySource authorizes a read of the source, evaluates the
// x-amz-copy-source-if-* conditions and opens the bytes rng selects.
func (s *Server) openCopySource(rq *request, rng func(*meta.Object) (int64, int64, error)) (*meta.Object, io.ReadCloser, error) {
	bucket, key, versionID, err := s.copySource(rq.Header)
	if err != nil {
		return nil, nil, err
	}
	src, err := s.store.GetBucket(bucket)
	if err != nil {
		return nil, nil, err
	}
	if err := s.decide(rq, src, copySourceAccess(versionID), key); err != nil {
		return nil, nil, err
	}
	conds := readCopyConditions(rq.Header)
	check := func(obj *meta.Object) (int64, int64, error) {
		if versionID == "" {
			if err := s.actOnJudged(rq, src, copySourceAccess(""), key, obj); err != nil {
				return 0, 0, err
			}
		}
		if err := conds.check(obj, false); err != nil {
			return 0, 0, err
		}
		return rng(obj)
	}
	// The source is read as GetObject reads it: decrypted, with its SSE-C
	// key from the x-amz-copy-source-server-side-encryption-customer-*
	// headers; the copy is encrypted as the request and the destination
	// bucket say (the source's encryption does not carry over, as in S3).
	customer, err := parseCustomerKey(rq.Header, copySourcePrefix)
	if err != nil {
		return nil, nil, err
	}
	obj, body, _, err := s.openPlain(customer, func(rng objstore.RangeFunc) (*meta.Object, io.ReadCloser, error) {
		if versionID == "" {
			return s.store.OpenObject(rq.Context(), bucket, key, rng)
		}
		return s.store.OpenVersion(rq.Context(), bucket, key, versionID, rng)
	}, check)
	if errors.Is(err, objstore.ErrDeleteMarker) {
		return nil, nil, errInvalidRequest.withMessage("The source of a copy request may not specifically refer to a delete marker by version id.")
	}
	if err == nil && (src.Versioning != "" || obj.Versioned) {
		rq.w.Header().Set("x-amz-copy-source-version-id", s.clientVersionID(obj))
	}
	return obj, body, err
}

// authorizeSourceTags checks the caller may read the tags of the copy
// source that CopyObject copies (x-amz-tagging-directive COPY, the
// default): s3:GetObjectTagging, or s3:GetObjectVersionTagging for a
// source version, as AWS asks, so that a copy never reads tags the caller
// could not read with GetObjectTagging.
func (s *Server) authorizeSourceTags(rq *request, bucket, key, versionID string) error {
	src, err := s.store.GetBucket(bucket)
	if err != nil {
		return err
	}
	return s.decide(rq, src, objectAccess(&opGetObjectTagging, versionID), key)
}

type copyObjectResult struct {
	XMLName      xml.Name `xml:"CopyObjectResult"`
	Xmlns        string   `xml:"xmlns,attr"`
	LastModified string
	ETag         string
	Checksum     xmlChecksum
	ChecksumType string `xml:",omitempty"`
}

// copyObject copies bytes: extents are never shared between objects (an
// objstore invariant), so the source is streamed into a new write, with
// its MD5 and checksum computed on the way as for a PUT.
func (s *Server) copyObject(rq *request) error {
	directive := rq.Header.Get("x-amz-metadata-directive")
	if directive != "" && directive != "COPY" && directive != "REPLACE" {
		return errInvalidArgument.withMessage("Unknown metadata directive.")
	}
	tagDirective := rq.Header.Get("x-amz-tagging-directive")
	if tagDirective != "" && tagDirective != "COPY" && tagDirective != "REPLACE" {
		return errInvalidArgument.withMessage("Unknown tagging directive.")
	}
	srcBucket, srcKey, srcVersion, err := s.copySource(rq.Header)
	if err != nil {
		return err
	}
	replacement, err := s.objectFromHeaders(rq, tagDirective == "REPLACE")
	if err != nil {
		return err
	}
	lock, err := s.lockOfWrite(rq, rq.Header)
	if err != nil {
		return err
	}
	lock.applyTo(replacement)
	precondition, err := putPrecondition(rq.Header)
	if err != nil {
		return err
	}
	algName := rq.Header.Get(checksum.HeaderAlgorithm)
	if srcBucket == rq.bucket && srcKey == rq.key && srcVersion == "" && directive != "REPLACE" && algName == "" &&
		rq.Header.Get("x-amz-storage-class") == "" && tagDirective != "REPLACE" &&
		rq.Header.Get(hdrSSE) == "" && rq.Header.Get(hdrSSECAlgorithm) == "" &&
		rq.Header.Get(copySourcePrefix+strings.TrimPrefix(hdrSSECAlgorithm, "x-amz-")) == "" {
		// A copy that names an SSE-C key for its source decrypts it in
		// place (the copy is plain unless it asks for encryption).
		return errInvalidCopyDest
	}
	sealed, err := s.newSealedObject(rq, rq.Header, rq.bucketRec, rq.key)
	if err != nil {
		return err
	}
	srcObj, body, err := s.openCopySource(rq, objstore.WholeObject)
	if err != nil {
		return err
	}
	defer body.Close()
	if srcObj.Size > maxPutSize {
		return errInvalidRequest.withMessage("The specified copy source is larger than the maximum allowable size for a copy source: 5368709120")
	}
	if tagDirective != "REPLACE" && len(srcObj.Tags) > 0 {
		if err := s.authorizeSourceTags(rq, srcBucket, srcKey, srcVersion); err != nil {
			return err
		}
	}

	obj := &meta.Object{Owner: replacement.Owner, Grants: replacement.Grants,
		LockMode: replacement.LockMode, RetainUntil: replacement.RetainUntil, LegalHold: replacement.LegalHold, LegalHoldSet: replacement.LegalHoldSet}
	if directive == "REPLACE" {
		attrsOfObject(replacement).toObject(obj)
	} else {
		attrsOfObject(srcObj).toObject(obj)
	}
	if tagDirective == "REPLACE" {
		obj.Tags = replacement.Tags
	} else {
		obj.Tags = srcObj.Tags
	}
	// Keep the source's checksum algorithm unless another is asked for;
	// a source without one gets the default.
	alg, ok := checksum.ParseAlgorithm(srcObj.ChecksumAlgorithm)
	if !ok {
		alg = checksum.Default
	}
	if algName != "" {
		if alg, ok = checksum.ParseAlgorithm(algName); !ok {
			return checksum.ErrUnsupportedAlgorithm()
		}
	}
	release, err := s.store.Reserve(srcObj.Size)
	if err != nil {
		return err
	}
	defer release()
	cr := checksum.NewReader(body, checksum.Expected{}, alg)
	stream, err := sealed.encrypt(&uploadBody{src: cr, want: srcObj.Size}, 0)
	if err != nil {
		return err
	}
	obj.SSE = sealed.record()
	stored, err := s.store.PutObject(rq.Context(), objstore.PutInput{
		Bucket: rq.bucket, Key: rq.key,
		Body:   stream,
		Object: obj,
		Finish: func(o *meta.Object) error {
			o.ETag = sealed.etag(cr.ETag())
			if c, ok := cr.Checksum(alg); ok {
				o.ChecksumAlgorithm, o.Checksum, o.ChecksumType = alg.String(), c.Base64(), checksum.FullObject.String()
			}
			return nil
		},
		Precondition: precondition,
	})
	if err != nil {
		return err
	}
	s.playlistStored(rq)
	s.writeNewVersionHeader(rq.w.Header(), stored)
	if sealed != nil {
		writeSSEHeaders(rq.w.Header(), sealed.rec, sealed.customerMD5)
	}
	res := copyObjectResult{Xmlns: s3Namespace, LastModified: isoTime(stored.Modified), ETag: quoteETag(stored.ETag),
		Checksum: xmlChecksum{alg, stored.Checksum}}
	if stored.Checksum != "" {
		res.ChecksumType = stored.ChecksumType
	}
	return writeXML(rq, res)
}

type copyPartResult struct {
	XMLName      xml.Name `xml:"CopyPartResult"`
	Xmlns        string   `xml:"xmlns,attr"`
	LastModified string
	ETag         string
	Checksum     xmlChecksum
}

// uploadPartCopy stores (a range of) an existing object as a part.
func (s *Server) uploadPartCopy(rq *request) error {
	number, err := parsePartNumber(rq)
	if err != nil {
		return err
	}
	uploadID := rq.query.Get("uploadId")
	up, err := s.store.GetUpload(rq.bucket, rq.key, uploadID)
	if err != nil {
		return err
	}
	sealed, err := s.partKey(rq, up)
	if err != nil {
		return err
	}
	rangeHeader := rq.Header.Get("x-amz-copy-source-range")
	var length int64
	_, body, err := s.openCopySource(rq, func(obj *meta.Object) (int64, int64, error) {
		if rangeHeader == "" {
			length = obj.Size
			return 0, obj.Size, nil
		}
		off, n, err := parseCopyRange(rangeHeader, obj.Size)
		length = n
		return off, n, err
	})
	if err != nil {
		return err
	}
	defer body.Close()
	if length > maxPutSize {
		return errEntityTooLarge
	}
	release, err := s.store.Reserve(length)
	if err != nil {
		return err
	}
	defer release()
	alg := partAlgorithm(up)
	cr := checksum.NewReader(body, checksum.Expected{}, alg)
	stream, err := sealed.encrypt(&uploadBody{src: cr, want: length}, number)
	if err != nil {
		return err
	}
	part, err := s.store.PutPart(rq.Context(), rq.bucket, rq.key, uploadID, number, stream, func(p *meta.Part) error {
		p.ETag = sealed.etag(cr.ETag())
		if c, ok := cr.Checksum(alg); ok {
			p.Checksum = c.Base64()
		}
		return nil
	})
	if err != nil {
		return err
	}
	if sealed != nil {
		writeSSEHeaders(rq.w.Header(), sealed.rec, sealed.customerMD5)
	}
	return writeXML(rq, copyPartResult{Xmlns: s3Namespace, LastModified: isoTime(part.Modified), ETag: quoteETag(part.ETag),
		Checksum: xmlChecksum{alg, part.Checksum}})
}

// parseCopyRange parses x-amz-copy-source-range: "bytes=first-last", both
// given, within the source object.
func parseCopyRange(v string, size int64) (off, n int64, err error) {
	spec, ok := strings.CutPrefix(v, "bytes=")
	first, last, ok2 := strings.Cut(spec, "-")
	start, err1 := strconv.ParseInt(first, 10, 64)
	end, err2 := strconv.ParseInt(last, 10, 64)
	if !ok || !ok2 || err1 != nil || err2 != nil || start < 0 || end < start {
		return 0, 0, errInvalidArgument.withMessage("The x-amz-copy-source-range value must be of the form bytes=first-last where first and last are the zero-based offsets of the first and last bytes to copy")
	}
	if end >= size {
		return 0, 0, errInvalidArgument.withMessage("Range specified is not valid for source object of size: %d", size)
	}
	return start, end - start + 1, nil
}
