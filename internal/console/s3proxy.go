package console

import (
	"bytes"
	"context"
	"crypto/md5"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// signingHost is the Host of the requests the console signs and hands to
// the S3 handler: no configured virtual-host domain ends in ".invalid",
// so the S3 API reads bucket and key from the path.
const signingHost = "console.b3.invalid"

// maxBufferedBody bounds the bodies the console reads before forwarding
// (configuration documents, DeleteObjects, CompleteMultipartUpload of up
// to 10000 parts). Object data (PutObject, UploadPart) streams instead.
const maxBufferedBody = 4 << 20

// newSigner returns a SigV4 signer for one request. It is never shared:
// the SDK's signer caches the derived signing key by access key, region
// and day, not by secret, so a shared one would sign a login attempt with
// a wrong secret using the key of an earlier good login of the same
// access key (and a good request with a key a failed login left behind).
func newSigner() *v4.Signer {
	return v4.NewSigner(func(o *v4.SignerOptions) {
		// S3 signs the path as sent, escaped once (escapePath), not twice.
		o.DisableURIPathEscaping = true
	})
}

// escapePath percent-encodes everything but unreserved characters and
// '/', as S3's canonical URI does, so the signature the console computes
// is the one the S3 API recomputes.
func escapePath(p string) string {
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		ch := p[i]
		if ch == '/' || ch == '-' || ch == '_' || ch == '.' || ch == '~' ||
			'a' <= ch && ch <= 'z' || 'A' <= ch && ch <= 'Z' || '0' <= ch && ch <= '9' {
			b.WriteByte(ch)
		} else {
			fmt.Fprintf(&b, "%%%02X", ch)
		}
	}
	return b.String()
}

// forwardedHeader reports whether a browser's request header goes on to
// the S3 API. Authentication headers are the console's to set.
func forwardedHeader(name, method string) bool {
	name = strings.ToLower(name)
	switch name {
	case "x-amz-date", "x-amz-content-sha256", "x-amz-security-token", "authorization":
		return false
	case "content-type", "content-md5", "range", "if-match", "if-none-match", "if-modified-since", "if-unmodified-since":
		return true
	case "cache-control", "content-disposition", "content-encoding", "content-language", "expires":
		return method == http.MethodPut || method == http.MethodPost // object metadata, not the browser's caching
	}
	return strings.HasPrefix(name, "x-amz-")
}

// newS3Request builds a request to the S3 API at path (unescaped, "/"
// first) signed as s. A nil body is empty; a streamed body (length known,
// or -1) is signed UNSIGNED-PAYLOAD, a buffered one with its hash.
func (c *Console) newS3Request(ctx context.Context, s *session, method, path, rawQuery string, body []byte, stream io.Reader, length int64) (*http.Request, error) {
	target := "http://" + signingHost + escapePath(path)
	if rawQuery != "" {
		target += "?" + rawQuery
	}
	var rd io.Reader = stream
	payloadHash := "UNSIGNED-PAYLOAD"
	if stream == nil {
		sum := sha256.Sum256(body)
		payloadHash = hex.EncodeToString(sum[:])
		rd = bytes.NewReader(body)
		length = int64(len(body))
	}
	req, err := http.NewRequestWithContext(ctx, method, target, rd)
	if err != nil {
		return nil, err
	}
	req.ContentLength = length
	if length == 0 {
		req.Body = http.NoBody
	}
	req.RequestURI = req.URL.RequestURI()
	req.Header.Set("X-Amz-Content-Sha256", payloadHash)
	return req, nil
}

func (c *Console) sign(req *http.Request, s *session) error {
	creds := aws.Credentials{AccessKeyID: s.accessKey, SecretAccessKey: s.secretKey}
	return newSigner().SignHTTP(req.Context(), creds, req, req.Header.Get("X-Amz-Content-Sha256"), "s3", c.cfg.Region, c.cfg.Now())
}

// s3Proxy runs the browser's /s3/{bucket}/{key}?{query} as an S3 request
// of the session's user and streams the answer back.
func (c *Console) s3Proxy(w http.ResponseWriter, r *http.Request, s *session, target string) {
	var (
		body   []byte
		stream io.Reader
		length = r.ContentLength
	)
	if streamsBody(r) {
		stream = r.Body
	} else if r.Body != nil {
		data, err := io.ReadAll(io.LimitReader(r.Body, maxBufferedBody+1))
		if err != nil {
			writeError(w, http.StatusBadRequest, "read body: "+err.Error())
			return
		}
		if len(data) > maxBufferedBody {
			writeError(w, http.StatusRequestEntityTooLarge, "body too large")
			return
		}
		body = data
	}
	req, err := c.newS3Request(r.Context(), s, r.Method, "/"+target, r.URL.RawQuery, body, stream, length)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	for name, values := range r.Header {
		if forwardedHeader(name, r.Method) {
			req.Header[name] = values
		}
	}
	if len(body) > 0 && req.Header.Get("Content-MD5") == "" {
		// DeleteObjects and the configuration PUTs want it; browsers
		// cannot compute MD5 with their own crypto.
		sum := md5.Sum(body)
		req.Header.Set("Content-MD5", base64.StdEncoding.EncodeToString(sum[:]))
	}
	// The browser's address and TLS state, not the console's: the S3 API
	// judges aws:SourceIp and aws:SecureTransport by them.
	req.RemoteAddr, req.TLS = r.RemoteAddr, r.TLS
	if err := c.sign(req, s); err != nil {
		writeError(w, http.StatusInternalServerError, "sign: "+err.Error())
		return
	}
	c.cfg.S3.ServeHTTP(&sandboxed{ResponseWriter: w}, req)
}

// streamsBody reports whether the request carries object data (PutObject,
// UploadPart), which streams to the S3 API unbuffered.
func streamsBody(r *http.Request) bool {
	if r.Method != http.MethodPut {
		return false
	}
	q := r.URL.Query()
	for _, sub := range []string{"tagging", "acl", "cors", "lifecycle", "versioning", "policy"} {
		if q.Has(sub) {
			return false
		}
	}
	return true
}

// objectCacheControlHeader carries an object's own Cache-Control in the
// console's answers: the answer's Cache-Control is the console's
// (no-store: the browser keeps no copy of what a session read).
const objectCacheControlHeader = "X-B3-Object-Cache-Control"

// sandboxed marks every answer of the S3 API as content that must not run
// in the console's origin: an object stored as text/html or SVG, opened
// in a tab, gets no script and no access to the session.
type sandboxed struct {
	http.ResponseWriter
	wrote bool
}

func (w *sandboxed) WriteHeader(code int) {
	if !w.wrote {
		w.wrote = true
		h := w.Header()
		h.Set("Content-Security-Policy", "sandbox; default-src 'none'")
		h.Set("X-Content-Type-Options", "nosniff")
		if own := h.Get("Cache-Control"); own != "" {
			h.Set(objectCacheControlHeader, own)
		}
		h.Set("Cache-Control", "no-store")
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *sandboxed) Write(p []byte) (int, error) {
	if !w.wrote {
		w.WriteHeader(http.StatusOK)
	}
	return w.ResponseWriter.Write(p)
}

// ReadFrom keeps the sendfile path of the underlying writer.
func (w *sandboxed) ReadFrom(r io.Reader) (int64, error) {
	if !w.wrote {
		w.WriteHeader(http.StatusOK)
	}
	if rf, ok := w.ResponseWriter.(io.ReaderFrom); ok {
		return rf.ReadFrom(r)
	}
	return io.Copy(w.ResponseWriter, r)
}

func (w *sandboxed) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// recorder keeps an in-process answer's status, headers and the start of
// its body.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func newRecorder() *recorder { return &recorder{header: http.Header{}} }

func (r *recorder) Header() http.Header { return r.header }
func (r *recorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
}
func (r *recorder) Write(p []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	if room := 1<<20 - r.body.Len(); room > 0 {
		r.body.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

// s3Status runs a bodiless S3 request as s and returns its status and, on
// failure, the S3 error code.
func (c *Console) s3Status(r *http.Request, s *session, method, path, rawQuery string) (int, string) {
	req, err := c.newS3Request(r.Context(), s, method, path, rawQuery, nil, nil, 0)
	if err == nil {
		err = c.sign(req, s)
	}
	if err != nil {
		return http.StatusInternalServerError, "InternalError"
	}
	req.RemoteAddr, req.TLS = r.RemoteAddr, r.TLS
	rec := newRecorder()
	c.cfg.S3.ServeHTTP(rec, req)
	if rec.status == http.StatusOK {
		return rec.status, ""
	}
	var doc struct{ Code string }
	_ = xml.Unmarshal(rec.body.Bytes(), &doc)
	return rec.status, doc.Code
}
