package s3api

import (
	"encoding/xml"
	"errors"
	"io"
	"mime/multipart"
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
// the file streams into the store like a PUT body.
func (s *Server) postObject(rq *request) error {
	mr, err := rq.MultipartReader()
	if err != nil {
		return errMalformedPOST
	}
	fields := map[string]string{}
	total := 0
	var file *multipart.Part
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return errMalformedPOST
		}
		name := part.FormName()
		if strings.EqualFold(name, "file") {
			file = part
			break
		}
		value, err := io.ReadAll(io.LimitReader(part, maxFormField+1))
		if err != nil {
			return errMalformedPOST
		}
		total += len(value)
		if len(value) > maxFormField || total > maxFormFields {
			return errMaxPostPreData
		}
		fields[name] = string(value)
	}
	if file == nil {
		return errInvalidArgument.withMessage("POST requires exactly one file upload per request.")
	}
	policy, err := s.verifier.VerifyPostPolicy(rq.bucket, fields, file.FileName())
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
	if !allowed(b, rq.accessKey, permWrite) {
		return errAccessDenied
	}

	// The form fields play the role of request headers.
	h := http.Header{}
	for name, value := range fields {
		h.Set(name, value)
	}
	a, err := attrsFromHeader(h)
	if err != nil {
		return err
	}
	tags, err := parseTaggingXMLField(fields)
	if err != nil {
		return err
	}
	h.Del(checksum.HeaderTrailer)
	exp, err := checksum.ParseHeaders(h)
	if err != nil {
		return err
	}
	obj := &meta.Object{Owner: rq.accessKey, Tags: tags}
	a.toObject(obj)
	// The form's length bounds the file's (unknown until read).
	release, err := s.store.Reserve(rq.contentLength)
	if err != nil {
		return err
	}
	defer release()
	cr := checksum.NewReader(file, exp)
	stored, err := s.store.PutObject(rq.Context(), objstore.PutInput{
		Bucket: rq.bucket, Key: rq.key,
		Body:   &uploadBody{src: cr, want: -1},
		Object: obj,
		Finish: func(o *meta.Object) error {
			if !cr.Done() {
				return errIncompleteBody
			}
			if err := policy.CheckLength(o.Size); err != nil {
				return err
			}
			o.ETag = cr.ETag()
			if c := cr.Requested(); !c.IsZero() {
				o.ChecksumAlgorithm, o.Checksum, o.ChecksumType = c.Algorithm.String(), c.Base64(), checksum.FullObject.String()
			}
			return nil
		},
	})
	if err != nil {
		return err
	}
	etag := quoteETag(stored.ETag)
	rq.w.Header().Set("ETag", etag)
	location := "/" + rq.bucket + "/" + rq.key
	rq.w.Header().Set("Location", location)
	if redirect := fieldFold(fields, "success_action_redirect"); redirect != "" {
		if u, err := url.Parse(redirect); err == nil && u.Scheme != "" {
			q := u.Query()
			q.Set("bucket", rq.bucket)
			q.Set("key", rq.key)
			q.Set("etag", etag)
			u.RawQuery = q.Encode()
			rq.w.Header().Set("Location", u.String())
			return writeEmpty(rq, http.StatusSeeOther)
		}
	}
	switch fieldFold(fields, "success_action_status") {
	case "200":
		return writeEmpty(rq, http.StatusOK)
	case "201":
		return writeXMLStatus(rq, http.StatusCreated, postResponse{Location: location, Bucket: rq.bucket, Key: rq.key, ETag: etag})
	}
	return writeEmpty(rq, http.StatusNoContent)
}

var errMaxPostPreData = apiErr("MaxPostPreDataLengthExceeded", 400, "Your POST request fields preceding the upload file were too large.")

func fieldFold(fields map[string]string, name string) string {
	for k, v := range fields {
		if strings.EqualFold(k, name) {
			return v
		}
	}
	return ""
}

// parseTaggingXMLField reads the optional "tagging" form field (a Tagging
// XML document).
func parseTaggingXMLField(fields map[string]string) (map[string]string, error) {
	doc := fieldFold(fields, "tagging")
	if doc == "" {
		return nil, nil
	}
	return parseTaggingXML([]byte(doc), maxTagsPerObject)
}
