package s3api

import (
	"io"
	"mime"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/b3-storage/b3/internal/checksum"
	"github.com/b3-storage/b3/internal/meta"
)

// attrs are the object attributes set by request headers at PUT (or
// CreateMultipartUpload) time and returned on GET and HEAD.
type attrs struct {
	ContentType, ContentEncoding, ContentDisposition string
	ContentLanguage, CacheControl, Expires           string
	UserMeta                                         map[string]string
}

const defaultContentType = "binary/octet-stream"

const userMetaPrefix = "X-Amz-Meta-"

// attrsFromHeader reads the standard content headers and x-amz-meta-*.
// The aws-chunked content coding is transport framing, not part of the
// object, and is dropped.
func attrsFromHeader(h http.Header) (attrs, error) {
	a := attrs{
		ContentType:        h.Get("Content-Type"),
		ContentEncoding:    stripAWSChunked(h.Get("Content-Encoding")),
		ContentDisposition: h.Get("Content-Disposition"),
		ContentLanguage:    h.Get("Content-Language"),
		CacheControl:       h.Get("Cache-Control"),
		Expires:            h.Get("Expires"),
	}
	if a.ContentType == "" {
		a.ContentType = defaultContentType
	}
	size := 0
	for name, values := range h {
		if !strings.HasPrefix(name, userMetaPrefix) {
			continue
		}
		key := strings.ToLower(name[len(userMetaPrefix):])
		if key == "" {
			continue
		}
		if a.UserMeta == nil {
			a.UserMeta = map[string]string{}
		}
		value := decodeMetaValue(strings.Join(values, ","))
		a.UserMeta[key] = value
		size += len(key) + len(value)
	}
	if size > maxUserMetaBytes {
		return attrs{}, errMetadataTooLarge
	}
	return a, nil
}

// decodeMetaValue decodes RFC 2047 encoded-words in a metadata value, as
// S3 does before storing it; a value that does not decode is kept as sent.
func decodeMetaValue(v string) string {
	if !strings.Contains(v, "=?") {
		return v
	}
	dec := mime.WordDecoder{}
	if d, err := dec.DecodeHeader(v); err == nil {
		return d
	}
	return v
}

// encodeMetaValue makes a stored metadata value safe for an HTTP header,
// as S3 does: a value holding bytes outside printable US-ASCII is sent as
// an RFC 2047 encoded-word (UTF-8, base64).
func encodeMetaValue(v string) string {
	for i := 0; i < len(v); i++ {
		if c := v[i]; c < 0x20 && c != '\t' || c >= 0x7f {
			return mime.BEncoding.Encode("UTF-8", v)
		}
	}
	return v
}

func stripAWSChunked(enc string) string {
	if !strings.Contains(strings.ToLower(enc), "aws-chunked") {
		return enc
	}
	var keep []string
	for part := range strings.SplitSeq(enc, ",") {
		part = strings.TrimSpace(part)
		if part != "" && !strings.EqualFold(part, "aws-chunked") {
			keep = append(keep, part)
		}
	}
	return strings.Join(keep, ",")
}

func (a attrs) toObject(o *meta.Object) {
	o.ContentType, o.ContentEncoding, o.ContentDisposition = a.ContentType, a.ContentEncoding, a.ContentDisposition
	o.ContentLanguage, o.CacheControl, o.Expires = a.ContentLanguage, a.CacheControl, a.Expires
	o.UserMeta = a.UserMeta
}

func attrsOfObject(o *meta.Object) attrs {
	return attrs{o.ContentType, o.ContentEncoding, o.ContentDisposition, o.ContentLanguage, o.CacheControl, o.Expires, o.UserMeta}
}

func (a attrs) toUpload(u *meta.Upload) {
	u.ContentType, u.ContentEncoding, u.ContentDisposition = a.ContentType, a.ContentEncoding, a.ContentDisposition
	u.ContentLanguage, u.CacheControl, u.Expires = a.ContentLanguage, a.CacheControl, a.Expires
	u.UserMeta = a.UserMeta
}

func attrsOfUpload(u *meta.Upload) attrs {
	return attrs{u.ContentType, u.ContentEncoding, u.ContentDisposition, u.ContentLanguage, u.CacheControl, u.Expires, u.UserMeta}
}

// writeObjectHeaders sets the response headers describing obj (GET, HEAD).
func writeObjectHeaders(h http.Header, obj *meta.Object) {
	setIf := func(k, v string) {
		if v != "" {
			h.Set(k, v)
		}
	}
	h.Set("ETag", quoteETag(obj.ETag))
	h.Set("Last-Modified", obj.Modified.UTC().Format(http.TimeFormat))
	h.Set("Accept-Ranges", "bytes")
	ct := obj.ContentType
	if ct == "" {
		ct = defaultContentType
	}
	h.Set("Content-Type", ct)
	setIf("Content-Encoding", obj.ContentEncoding)
	setIf("Content-Disposition", obj.ContentDisposition)
	setIf("Content-Language", obj.ContentLanguage)
	setIf("Cache-Control", obj.CacheControl)
	setIf("Expires", obj.Expires)
	for k, v := range obj.UserMeta {
		// Lower case on the wire, as S3 sends them: some clients (boto3)
		// keep the case they receive in the metadata names.
		h["x-amz-meta-"+k] = []string{encodeMetaValue(v)}
	}
	if len(obj.Tags) > 0 {
		h.Set("x-amz-tagging-count", strconv.Itoa(len(obj.Tags)))
	}
	if len(obj.Parts) > 0 {
		h.Set("x-amz-mp-parts-count", strconv.Itoa(len(obj.Parts)))
	}
}

// writeChecksumHeaders returns the stored checksum (GET/HEAD with
// x-amz-checksum-mode: ENABLED, and PUT responses).
func writeChecksumHeaders(h http.Header, algorithm, value, typ string) {
	alg, ok := checksum.ParseAlgorithm(algorithm)
	if !ok || value == "" {
		return
	}
	h.Set(alg.HeaderName(), value)
	if typ != "" {
		h.Set(checksum.HeaderType, typ)
	}
}

// responseOverrides are the response-* query parameters of GetObject.
var responseOverrides = map[string]string{
	"response-content-type":        "Content-Type",
	"response-content-language":    "Content-Language",
	"response-expires":             "Expires",
	"response-cache-control":       "Cache-Control",
	"response-content-disposition": "Content-Disposition",
	"response-content-encoding":    "Content-Encoding",
}

// applyResponseOverrides applies response-* parameters; AWS allows them
// on signed requests only.
func applyResponseOverrides(rq *request) error {
	for param, header := range responseOverrides {
		if v, ok := rq.query[param]; ok {
			if rq.accessKey == "" {
				return errInvalidRequest.withMessage("Request specific response headers cannot be used for anonymous GET requests.")
			}
			rq.w.Header().Set(header, v[0])
		}
	}
	return nil
}

func quoteETag(etag string) string {
	if strings.HasPrefix(etag, `"`) {
		return etag
	}
	return `"` + etag + `"`
}

func unquoteETag(etag string) string {
	etag = strings.TrimSpace(etag)
	etag = strings.TrimPrefix(etag, "W/")
	return strings.Trim(etag, `"`)
}

// parseTagging parses the x-amz-tagging header (URL query form).
func parseTagging(value string) (map[string]string, error) {
	if value == "" {
		return nil, nil
	}
	q, err := url.ParseQuery(value)
	if err != nil {
		return nil, errInvalidArgument.withMessage("The header 'x-amz-tagging' shall be encoded as UTF-8 then URLEncoded URL query parameters without tag name duplicates.")
	}
	tags := map[string]string{}
	for k, v := range q {
		if len(v) != 1 {
			return nil, errInvalidTag.withMessage("Cannot provide multiple Tags with the same key")
		}
		tags[k] = v[0]
	}
	return tags, validateTags(tags, maxTagsPerObject)
}

func validateTags(tags map[string]string, limit int) error {
	if len(tags) > limit {
		return errInvalidTag.withMessage("Object tags cannot be greater than %d", limit)
	}
	for k, v := range tags {
		if k == "" || utf8.RuneCountInString(k) > maxTagKeyLength || !utf8.ValidString(k) {
			return errInvalidTag.withMessage("The TagKey you have provided is invalid")
		}
		if utf8.RuneCountInString(v) > maxTagValueLength || !utf8.ValidString(v) {
			return errInvalidTag.withMessage("The TagValue you have provided is invalid")
		}
	}
	return nil
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// validStorageClass accepts the classes clients send; b3 has one.
func validStorageClass(c string) bool {
	switch c {
	case "", "STANDARD", "REDUCED_REDUNDANCY", "STANDARD_IA", "ONEZONE_IA",
		"INTELLIGENT_TIERING", "GLACIER", "DEEP_ARCHIVE", "GLACIER_IR", "OUTPOSTS", "EXPRESS_ONEZONE":
		return true
	}
	return false
}

// uploadBody guards an upload body on its way into the store: it turns
// every read failure other than the verified end into an error the store
// cannot mistake for the end of the data (a truncated client body reads as
// io.ErrUnexpectedEOF, which io.ReadFull would take for a short last
// chunk), and checks the byte count against the declared length.
type uploadBody struct {
	src  io.Reader
	want int64 // -1 if unknown
	got  int64
}

func (b *uploadBody) Read(p []byte) (int, error) {
	n, err := b.src.Read(p)
	b.got += int64(n)
	switch {
	case err == nil:
		if b.want >= 0 && b.got > b.want {
			return n, errIncompleteBody.withMessage("The body is longer than the declared Content-Length")
		}
	case err == io.EOF:
		if b.want >= 0 && b.got != b.want {
			return n, errIncompleteBody
		}
	case err == io.ErrUnexpectedEOF:
		return n, errIncompleteBody
	}
	return n, err
}
