package s3api

import (
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// RequestInfo describes one finished request, for metrics and the access
// log (Config.Observe).
type RequestInfo struct {
	ID        string
	Operation string // S3 operation name ("GetObject"), "" if routing failed
	Method    string
	Path      string
	Status    int
	BytesIn   int64 // request body bytes: as declared, or as read for a body of unknown length
	BytesOut  int64 // response body bytes written
	Duration  time.Duration
	AccessKey string
	Remote    string
}

// countingBody counts the bytes read from a request body of unknown
// length (Transfer-Encoding: chunked), whose size nothing declares.
type countingBody struct {
	io.ReadCloser
	n int64
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n += int64(n)
	return n, err
}

// countingWriter counts response body bytes; it keeps the sendfile path
// (ReadFrom) and the connection reachable (Unwrap).
type countingWriter struct {
	http.ResponseWriter
	n int64
}

func (w *countingWriter) Write(p []byte) (int, error) {
	n, err := w.ResponseWriter.Write(p)
	w.n += int64(n)
	return n, err
}

func (w *countingWriter) ReadFrom(r io.Reader) (int64, error) {
	var n int64
	var err error
	if rf, ok := w.ResponseWriter.(io.ReaderFrom); ok {
		n, err = rf.ReadFrom(r)
	} else {
		n, err = io.Copy(w.ResponseWriter, r)
	}
	w.n += n
	return n, err
}

func (w *countingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// observe reports a finished request to Config.Observe.
func (s *Server) observe(rq *request, cw *countingWriter, body *countingBody, start time.Time) {
	info := RequestInfo{
		ID: rq.id, Method: rq.Method, Path: rq.URL.Path, Status: rq.w.status,
		BytesIn: rq.Request.ContentLength, BytesOut: cw.n, Duration: time.Since(start),
		AccessKey: rq.accessKey, Remote: rq.RemoteAddr,
	}
	if body != nil {
		info.BytesIn = body.n
	}
	if rq.op != nil {
		info.Operation = rq.op.name
	}
	if info.Status == 0 {
		info.Status = http.StatusOK
	}
	s.cfg.Observe(info)
}

// redactedURL is u for the logs: the values of X-Amz-Signature and
// Signature (SigV4 and SigV2 presigned URLs) are replaced, so that a log
// reader cannot replay a presigned request that is still valid. Every
// URL b3 logs goes through it.
func redactedURL(u *url.URL) string {
	if u.RawQuery == "" {
		return u.String()
	}
	parts := strings.Split(u.RawQuery, "&")
	for i, part := range parts {
		name, _, _ := strings.Cut(part, "=")
		if unescaped, err := url.QueryUnescape(name); err == nil {
			name = unescaped
		}
		if strings.EqualFold(name, "X-Amz-Signature") || strings.EqualFold(name, "Signature") {
			parts[i] = name + "=REDACTED"
		}
	}
	c := *u
	c.RawQuery = strings.Join(parts, "&")
	return c.String()
}
