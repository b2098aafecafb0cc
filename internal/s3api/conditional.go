package s3api

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/b3-storage/b3/internal/meta"
)

// etagMatches reports whether the ETag list of an If-Match/If-None-Match
// header names etag ("*" names any).
func etagMatches(list, etag string) bool {
	etag = unquoteETag(etag)
	for candidate := range strings.SplitSeq(list, ",") {
		c := strings.TrimSpace(candidate)
		if c == "*" || unquoteETag(c) == etag {
			return true
		}
	}
	return false
}

func parseHTTPTime(v string) (time.Time, bool) {
	t, err := http.ParseTime(v)
	return t, err == nil
}

// conditions holds the four conditional headers, under their plain or
// copy-source names.
type conditions struct {
	ifMatch, ifNoneMatch, ifModifiedSince, ifUnmodifiedSince string
}

func readConditions(h http.Header) conditions {
	return conditions{h.Get("If-Match"), h.Get("If-None-Match"), h.Get("If-Modified-Since"), h.Get("If-Unmodified-Since")}
}

func readCopyConditions(h http.Header) conditions {
	return conditions{
		h.Get("x-amz-copy-source-if-match"), h.Get("x-amz-copy-source-if-none-match"),
		h.Get("x-amz-copy-source-if-modified-since"), h.Get("x-amz-copy-source-if-unmodified-since"),
	}
}

// check evaluates the conditions against obj as S3 does for GET and HEAD:
// If-Match decides alone when present (If-Unmodified-Since is then
// ignored), likewise If-None-Match over If-Modified-Since. A failed
// If-Match/If-Unmodified-Since is 412; a failed If-None-Match/
// If-Modified-Since is 304, or 412 when notModified is false (copy
// sources, where S3 answers 412 for all four).
func (c conditions) check(obj *meta.Object, notModified bool) error {
	modified := obj.Modified.Truncate(time.Second)
	if c.ifMatch != "" {
		if !etagMatches(c.ifMatch, obj.ETag) {
			return errPreconditionFailed
		}
	} else if t, ok := parseHTTPTime(c.ifUnmodifiedSince); ok && modified.After(t) {
		return errPreconditionFailed
	}
	failed := errNotModified
	if !notModified {
		failed = errPreconditionFailed
	}
	if c.ifNoneMatch != "" {
		if etagMatches(c.ifNoneMatch, obj.ETag) {
			return failed
		}
	} else if t, ok := parseHTTPTime(c.ifModifiedSince); ok && !modified.After(t) {
		return failed
	}
	return nil
}

// putPrecondition implements If-None-Match: * (create only) and If-Match
// (replace only that version) on PUT, Copy and CompleteMultipartUpload.
// It runs under objstore's key lock, so check and write are atomic.
func putPrecondition(h http.Header) (func(cur *meta.Object) error, error) {
	ifMatch, ifNoneMatch := h.Get("If-Match"), h.Get("If-None-Match")
	if ifMatch == "" && ifNoneMatch == "" {
		return nil, nil
	}
	if ifNoneMatch != "" && strings.TrimSpace(ifNoneMatch) != "*" {
		return nil, errNotImplemented.withMessage("If-None-Match on writes supports only '*'")
	}
	return func(cur *meta.Object) error {
		if ifNoneMatch != "" && cur != nil {
			return errPreconditionFailed
		}
		if ifMatch != "" {
			if cur == nil {
				return errNoSuchKey
			}
			if !etagMatches(ifMatch, cur.ETag) {
				return errPreconditionFailed
			}
		}
		return nil
	}, nil
}

// byteRange is a resolved Range: n bytes from off of an object of size.
type byteRange struct {
	off, n, size int64
}

func (r byteRange) contentRange() string {
	return "bytes " + strconv.FormatInt(r.off, 10) + "-" + strconv.FormatInt(r.off+r.n-1, 10) + "/" + strconv.FormatInt(r.size, 10)
}

// parseRange resolves a Range header against an object size. ok is false
// when the header should be ignored (absent, not a single bytes range);
// an unsatisfiable range is InvalidRange.
func parseRange(header string, size int64) (r byteRange, ok bool, err error) {
	spec, found := strings.CutPrefix(strings.TrimSpace(header), "bytes=")
	if !found || strings.Contains(spec, ",") {
		return byteRange{}, false, nil
	}
	first, last, found := strings.Cut(strings.TrimSpace(spec), "-")
	if !found {
		return byteRange{}, false, nil
	}
	first, last = strings.TrimSpace(first), strings.TrimSpace(last)
	r.size = size
	if first == "" {
		// Suffix range: the last n bytes.
		n, perr := strconv.ParseInt(last, 10, 64)
		if perr != nil || n < 0 {
			return byteRange{}, false, nil
		}
		if n == 0 || size == 0 {
			return byteRange{}, false, invalidRange(size)
		}
		n = min(n, size)
		r.off, r.n = size-n, n
		return r, true, nil
	}
	start, perr := strconv.ParseInt(first, 10, 64)
	if perr != nil || start < 0 {
		return byteRange{}, false, nil
	}
	end := size - 1
	if last != "" {
		e, perr := strconv.ParseInt(last, 10, 64)
		if perr != nil || e < start {
			return byteRange{}, false, nil
		}
		end = min(e, size-1)
	}
	if start >= size {
		return byteRange{}, false, invalidRange(size)
	}
	r.off, r.n = start, end-start+1
	return r, true, nil
}

func invalidRange(size int64) error {
	e := *errInvalidRange
	e.Extra = []xmlElement{{XMLName: xmlName("ActualObjectSize"), Value: strconv.FormatInt(size, 10)}}
	return &e
}
