package s3api

import (
	"bufio"
	"encoding/xml"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/b3-storage/b3/internal/checksum"
	"github.com/b3-storage/b3/internal/meta"
	"github.com/b3-storage/b3/internal/objstore"
)

var opPostObject = operation{name: "PostObject", preAuth: true, handle: (*Server).postObject}

// Form limits: the fields before the file are read whole.
const (
	maxFormField  = 64 << 10
	maxFormFields = 1 << 20
)

type postResponse struct {
	XMLName  xml.Name `xml:"PostResponse"`
	Location string
	Bucket   string
	Key      string
	ETag     string
}

// postObject is the browser-form upload: multipart/form-data whose fields
// (policy, signature, key, metadata) precede the file. The policy and its
// signature are checked by s3auth before a byte of the file is stored;
// the file streams into the store like a PUT body, bounded as it streams
// by content-length-range, the object size limit and the free-space
// reserve.
//
// Field names are case-insensitive and kept under their lower-case form:
// a form naming one field twice is refused, so the value the policy checks
// is the value stored.
func (s *Server) postObject(rq *request) error {
	fields, file, err := readPostForm(rq)
	if err != nil {
		return err
	}
	policy, err := s.verifier.VerifyPostPolicy(rq.bucket, fields, file.name)
	if err != nil {
		return err
	}
	rq.accessKey, rq.key = policy.AccessKey, policy.Key
	if rq.key == "" {
		return errInvalidArgument.withMessage("User key must have a length greater than 0.")
	}
	if len(rq.key) > maxKeyLength {
		return errKeyTooLong
	}
	if !utf8.ValidString(rq.key) {
		return errInvalidArgument.withMessage("Object key is not valid UTF-8")
	}
	b, err := s.store.GetBucket(rq.bucket)
	if err != nil {
		return err
	}
	rq.bucketRec = b
	s.addCORSHeaders(rq, b)

	// The form fields play the role of request headers, for the write and
	// for the condition keys of its decisions (the ACL, the tags, the
	// lock): what a PUT carries in headers, a form carries in fields.
	h := http.Header{}
	for name, value := range fields {
		h.Set(name, value)
	}
	if v := h.Get("acl"); v != "" {
		h.Set("x-amz-acl", v)
	}
	tags, tagsErr := parseTaggingXMLField(fields)
	h.Del("x-amz-tagging")
	if len(tags) > 0 {
		q := url.Values{}
		for k, v := range tags {
			q.Set(k, v)
		}
		h.Set("x-amz-tagging", q.Encode())
	}
	rq.condHeader = h
	if err := s.decide(rq, b, operationAccess(rq.op), rq.key); err != nil {
		return err
	}
	if tagsErr != nil {
		return tagsErr
	}
	a, err := attrsFromHeader(h)
	if err != nil {
		return err
	}
	h.Del(checksum.HeaderTrailer)
	exp, err := checksum.ParseHeaders(h)
	if err != nil {
		return err
	}
	grants, owner, err := s.objectACL(h, b, rq.accessKey)
	if err != nil {
		return err
	}
	if err := s.authorizeACLAndTags(rq, aclHeadersGiven(h), len(tags) > 0); err != nil {
		return err
	}
	obj := &meta.Object{Owner: owner, Tags: tags, Grants: grants}
	a.toObject(obj)
	// A form is a PUT by other means: the same lock fields, permissions
	// and bounds, and the bucket's default retention without them.
	lock, err := s.lockOfWrite(rq, h)
	if err != nil {
		return err
	}
	lock.applyTo(obj)
	sealed, err := s.newSealedObject(rq, h, rq.bucketRec, rq.key)
	if err != nil {
		return err
	}
	obj.SSE = sealed.record()
	limited := &boundedBody{src: file.body, max: s.cfg.MaxObjectSize, tooLarge: errEntityTooLarge}
	if policy.MaxLength >= 0 && policy.MaxLength < limited.max {
		limited.max, limited.tooLarge = policy.MaxLength, policy.CheckLength(policy.MaxLength+1)
	}
	// The form's length, when declared, bounds the file's: reserve it (up
	// to the file's limit) before reading on; a chunked form reserves as
	// it streams.
	space := &spaceLease{reserve: s.store.Reserve}
	defer space.release()
	if rq.contentLength >= 0 {
		if err := space.take(min(rq.contentLength, limited.max+1)); err != nil {
			return err
		}
	}
	limited.space = space
	cr := checksum.NewReader(limited, exp, exp.Stored())
	stream, err := sealed.encrypt(&uploadBody{src: cr, want: -1}, 0)
	if err != nil {
		return err
	}
	stored, err := s.store.PutObject(rq.Context(), objstore.PutInput{
		Bucket: rq.bucket, Key: rq.key,
		Body:   stream,
		Object: obj,
		Finish: func(o *meta.Object) error {
			if !cr.Done() {
				return errIncompleteBody
			}
			if err := policy.CheckLength(viewSize(o)); err != nil {
				return err
			}
			o.ETag = sealed.etag(cr.ETag())
			if c := cr.Stored(); !c.IsZero() {
				o.ChecksumAlgorithm, o.Checksum, o.ChecksumType = c.Algorithm.String(), c.Base64(), checksum.FullObject.String()
			}
			return nil
		},
	})
	if err != nil {
		return err
	}
	s.playlistStored(rq)
	if sealed != nil {
		writeSSEHeaders(rq.w.Header(), sealed.rec, sealed.customerMD5)
	}
	// ETag, checksum and version as PutObject answers them, on every
	// answer (204, 200, 201 and the redirect).
	s.writeStoredHeaders(rq, stored)
	etag := quoteETag(stored.ETag)
	location := s.objectURL(rq)
	rq.w.Header().Set("Location", location)
	if redirect := fields["success_action_redirect"]; redirect != "" {
		if u, err := url.Parse(redirect); err == nil && u.Scheme != "" {
			// bucket, key and etag appended in that order, as S3
			// does (clients may compare the URL whole); the
			// redirect's own query is kept as given.
			add := "bucket=" + url.QueryEscape(rq.bucket) + "&key=" + url.QueryEscape(rq.key) + "&etag=" + url.QueryEscape(etag)
			if u.RawQuery != "" {
				add = u.RawQuery + "&" + add
			}
			u.RawQuery = add
			rq.w.Header().Set("Location", u.String())
			return writeEmpty(rq, http.StatusSeeOther)
		}
	}
	switch fields["success_action_status"] {
	case "200":
		return writeEmpty(rq, http.StatusOK)
	case "201":
		return writeXMLStatus(rq, http.StatusCreated, postResponse{Location: location, Bucket: rq.bucket, Key: rq.key, ETag: etag})
	}
	return writeEmpty(rq, http.StatusNoContent)
}

// formFile is the file of a POST form: its name (for ${filename}) and its
// bytes, positioned at the first.
type formFile struct {
	name string
	body io.Reader
}

// readPostForm reads the form fields up to the file, under their
// lower-case names, and returns the file. Fields after the file are not
// read (S3 ignores them). A form without a file, or whose file field is
// empty and names no file (a form sent with no file chosen), is
// MalformedPOSTRequest; an empty file with a name is an empty object.
func readPostForm(rq *request) (map[string]string, *formFile, error) {
	mr, err := rq.MultipartReader()
	if err != nil {
		return nil, nil, errMalformedPOST
	}
	fields := map[string]string{}
	total := 0
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			return nil, nil, errMalformedPOST.withMessage("The file or text content is missing.")
		}
		if err != nil {
			return nil, nil, errMalformedPOST
		}
		name := strings.ToLower(part.FormName())
		if name == "file" {
			body := bufio.NewReaderSize(part, 16)
			if _, err := body.Peek(1); err != nil {
				if !errors.Is(err, io.EOF) {
					return nil, nil, errMalformedPOST
				}
				if part.FileName() == "" {
					return nil, nil, errMalformedPOST.withMessage("The file or text content is missing.")
				}
			}
			return fields, &formFile{name: part.FileName(), body: body}, nil
		}
		if _, dup := fields[name]; dup {
			return nil, nil, errInvalidArgument.withMessage("POST form field %q is given more than once (field names are case-insensitive).", name)
		}
		value, err := io.ReadAll(io.LimitReader(part, maxFormField+1))
		if err != nil {
			return nil, nil, errMalformedPOST
		}
		total += len(value)
		if len(value) > maxFormField || total > maxFormFields {
			return nil, nil, errMaxPostPreData
		}
		fields[name] = string(value)
	}
}

var errMaxPostPreData = apiErr("MaxPostPreDataLengthExceeded", 400, "Your POST request fields preceding the upload file were too large.")

// parseTaggingXMLField reads the optional "tagging" form field (a Tagging
// XML document); fields are keyed by lower-case name.
func parseTaggingXMLField(fields map[string]string) (map[string]string, error) {
	doc := fields["tagging"]
	if doc == "" {
		return nil, nil
	}
	return parseTaggingXML([]byte(doc), maxTagsPerObject)
}
