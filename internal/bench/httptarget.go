package bench

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/smithy-go"
)

// HTTPTarget is the hls test's load generator client: the requests a
// camera and a player make (PUT of a segment or playlist, DELETE of one
// segment, GET of either), sent with net/http and signed with SigV4
// (UNSIGNED-PAYLOAD, path-style), without the SDK's middleware stack.
//
// The generator shares the machine with the server it measures, so what
// it spends per request is taken from the server. Through the SDK a 1 MB
// segment cost the generator about 2 ms of CPU: a CRC32 of the body for
// the x-amz-checksum-crc32 header the SDK adds (which the server then
// verifies too), the middleware stack, and a 32 KiB copy loop. Encoders
// send no checksum, and neither does this client; the server still
// computes the ETag's MD5 and its default CRC64NVME over every byte.
//
// With Chunked, bodies go as Transfer-Encoding: chunked without a length,
// as encoders send them (MinIO refuses those): the payload is then written
// straight from the pool to the connection. Without it they carry a
// Content-Length, the same request every S3 server accepts.
//
// Bucket creation and the batched deletes of the cleanup go through the
// embedded S3Target.
type HTTPTarget struct {
	*S3Target
	client  *http.Client
	base    *url.URL // endpoint; keys go under /<bucket>/
	bucket  string
	region  string
	creds   aws.CredentialsProvider
	signer  *v4.Signer
	chunked bool
	file    *poolFile // nil: segments are sent from memory
}

// NewHTTPTarget builds the client for the endpoint of o (path-style only),
// beside st (built from the same options), with room for conns
// connections kept alive: one per camera and viewer.
func NewHTTPTarget(st *S3Target, o S3Options, conns int, chunked bool) (*HTTPTarget, error) {
	if o.Endpoint == "" || !o.PathStyle {
		return nil, errors.New("http client: needs --endpoint and path-style addressing")
	}
	base, err := url.Parse(strings.TrimSuffix(o.Endpoint, "/"))
	if err != nil || base.Host == "" {
		return nil, fmt.Errorf("http client: endpoint %q: %v", o.Endpoint, err)
	}
	region := o.Region
	if region == "" {
		region = "us-east-1"
	}
	tr := &http.Transport{
		Proxy:               http.ProxyFromEnvironment,
		DialContext:         (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        conns,
		MaxIdleConnsPerHost: conns,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
		// The write buffer stays small: net/http fills what is left of
		// it from the body (a copy) before it hands the rest to sendfile.
		// Reads: fewer calls per response.
		ReadBufferSize: 64 << 10,
	}
	return &HTTPTarget{
		S3Target: st,
		client:   &http.Client{Transport: tr, Timeout: o.RequestTimeout},
		base:     base, bucket: o.Bucket, region: region,
		creds:   st.Client.Options().Credentials,
		signer:  v4.NewSigner(func(so *v4.SignerOptions) { so.DisableURIPathEscaping = true }),
		chunked: chunked,
	}, nil
}

// request builds and signs a request for key.
func (t *HTTPTarget) request(ctx context.Context, method, key string, body io.Reader, size int64) (*http.Request, error) {
	return t.requestQuery(ctx, method, key, "", body, size)
}

// requestQuery is request with a (raw) query string.
func (t *HTTPTarget) requestQuery(ctx context.Context, method, key, query string, body io.Reader, size int64) (*http.Request, error) {
	u := *t.base
	u.Path = t.base.Path + "/" + t.bucket + "/" + key
	u.RawPath = t.base.EscapedPath() + "/" + escapeKey(t.bucket) + "/" + escapeKey(key)
	u.RawQuery = query
	req, err := http.NewRequestWithContext(ctx, method, u.String(), body)
	if err != nil {
		return nil, err
	}
	req.ContentLength = size
	if body != nil && size < 0 {
		req.TransferEncoding = []string{"chunked"}
	}
	req.Header.Set("X-Amz-Content-Sha256", "UNSIGNED-PAYLOAD")
	var creds aws.Credentials
	if t.creds != nil {
		if creds, err = t.creds.Retrieve(ctx); err != nil {
			return nil, fmt.Errorf("credentials: %w", err)
		}
	}
	if err := t.signer.SignHTTP(ctx, creds, req, "UNSIGNED-PAYLOAD", "s3", t.region, time.Now()); err != nil {
		return nil, fmt.Errorf("sign: %w", err)
	}
	return req, nil
}

// escapeKey escapes a key for a path as S3 canonicalizes it: every byte
// but the unreserved ones and '/' percent-encoded.
func escapeKey(key string) string {
	var b strings.Builder
	for i := 0; i < len(key); i++ {
		c := key[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("-_.~/", c) >= 0 {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

// do sends req; a non-2xx answer becomes an httpError (its S3 code when
// the body has one). The caller reads and closes the body of a success.
func (t *HTTPTarget) do(req *http.Request) (*http.Response, error) {
	resp, err := t.client.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 == 2 {
		return resp, nil
	}
	defer resp.Body.Close()
	var e struct {
		Code    string
		Message string
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	_ = xml.Unmarshal(body, &e)
	return nil, &httpError{status: resp.StatusCode, code: e.Code, message: e.Message}
}

// drainClose reads the rest of a body (so the connection is reused) and
// closes it.
func drainClose(resp *http.Response) error {
	_, err := copyPooled(io.Discard, resp.Body)
	if cerr := resp.Body.Close(); err == nil {
		err = cerr
	}
	return err
}

// SendFromFile makes segment uploads of at most max bytes of pool go out
// with sendfile (see poolFile); where that is not possible it returns why,
// and uploads are sent from memory. It does nothing for chunked uploads
// (their framing is written around the body).
func (t *HTTPTarget) SendFromFile(pool *Pool, max int64) error {
	if t.chunked {
		return nil
	}
	pf, err := newPoolFile(pool, max)
	if err != nil {
		return err
	}
	t.file = pf
	return nil
}

// Close releases the pool file.
func (t *HTTPTarget) Close() error {
	if t.file != nil {
		return t.file.Close()
	}
	return nil
}

func (t *HTTPTarget) put(ctx context.Context, key string, body io.Reader, size int64, contentType string) error {
	if t.chunked {
		size = -1
	}
	getBody := rewind(body)
	if p, ok := body.(*Payload); ok && t.file != nil {
		if fb, err := t.file.open(p); err == nil {
			body = fb
			getBody = func() (io.ReadCloser, error) { return t.file.open(p) }
		}
	}
	req, err := t.request(ctx, http.MethodPut, key, body, size)
	if err != nil {
		if c, ok := body.(io.Closer); ok {
			c.Close()
		}
		return fmt.Errorf("put %s: %w", key, err)
	}
	req.GetBody = getBody
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := t.do(req)
	if err != nil {
		return fmt.Errorf("put %s: %w", key, err)
	}
	return drainClose(resp)
}

// Put uploads a segment.
func (t *HTTPTarget) Put(ctx context.Context, key string, body *Payload) error {
	return t.put(ctx, key, body, body.Len(), "")
}

// rewind gives net/http a fresh copy of a request body, so that a request
// whose kept-alive connection turned out closed can be sent again.
func rewind(body io.Reader) func() (io.ReadCloser, error) {
	switch b := body.(type) {
	case *Payload:
		return func() (io.ReadCloser, error) { c := *b; c.pos = 0; return io.NopCloser(&c), nil }
	case *bytes.Reader:
		return func() (io.ReadCloser, error) { c := *b; _, _ = c.Seek(0, io.SeekStart); return io.NopCloser(&c), nil }
	}
	return nil
}

// PutSmall uploads a playlist with its Content-Type.
func (t *HTTPTarget) PutSmall(ctx context.Context, key string, body []byte, contentType string) error {
	return t.put(ctx, key, bytes.NewReader(body), int64(len(body)), contentType)
}

func (t *HTTPTarget) get(ctx context.Context, key string) (*http.Response, error) {
	req, err := t.request(ctx, http.MethodGet, key, nil, 0)
	if err != nil {
		return nil, fmt.Errorf("get %s: %w", key, err)
	}
	resp, err := t.do(req)
	if err != nil {
		return nil, fmt.Errorf("get %s: %w", key, err)
	}
	return resp, nil
}

// Get downloads key into sink.
func (t *HTTPTarget) Get(ctx context.Context, key string, size int64, sink *Sink) (int64, error) {
	resp, err := t.get(ctx, key)
	if err != nil {
		return 0, err
	}
	_, err = copyPooled(sink, resp.Body)
	resp.Body.Close()
	if err != nil {
		return 0, fmt.Errorf("get %s: read body: %w", key, err)
	}
	return sink.Result(size)
}

// GetSmall downloads a playlist whole.
func (t *HTTPTarget) GetSmall(ctx context.Context, key string) ([]byte, error) {
	resp, err := t.get(ctx, key)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("get %s: read body: %w", key, err)
	}
	return body, nil
}

// DeleteOne deletes one segment, as an encoder does.
func (t *HTTPTarget) DeleteOne(ctx context.Context, key string) error {
	req, err := t.request(ctx, http.MethodDelete, key, nil, 0)
	if err != nil {
		return fmt.Errorf("delete %s: %w", key, err)
	}
	resp, err := t.do(req)
	if err != nil {
		return fmt.Errorf("delete %s: %w", key, err)
	}
	return drainClose(resp)
}

// httpError is a non-2xx answer. It is a smithy.APIError, so the report
// classifies it by its S3 code as it does the SDK's errors.
type httpError struct {
	status        int
	code, message string
}

var _ smithy.APIError = (*httpError)(nil)

func (e *httpError) Error() string {
	if e.code == "" {
		return "HTTP " + strconv.Itoa(e.status)
	}
	return fmt.Sprintf("HTTP %d %s: %s", e.status, e.code, e.message)
}

// ErrorCode is the S3 error code, else http_<status>.
func (e *httpError) ErrorCode() string {
	if e.code == "" {
		return "http_" + strconv.Itoa(e.status)
	}
	return e.code
}

func (e *httpError) ErrorMessage() string { return e.message }

func (e *httpError) ErrorFault() smithy.ErrorFault {
	if e.status >= 500 {
		return smithy.FaultServer
	}
	return smithy.FaultClient
}
