package mount

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/encoding/httpbinding"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/b3-storage/b3/internal/checksum"
)

// direct sends the mount's GetObject, PutObject and UploadPart requests
// as plain net/http requests signed with the SDK's SigV4 signer, without
// the SDK's middleware stack. A small file costs one of these, and the
// mount shares the machine with everything else: through the stack a
// request cost about as much client CPU as the server spent on it. A
// large file is mostly UploadParts: sent from the memory file of their
// buffer (fileBody), their bytes reach the socket without a copy in the
// mount, where the SDK copied them through a 32 KiB buffer.
//
// Everything else comes from the SDK client the mount was given, so the
// two paths cannot disagree: the endpoint (BaseEndpoint, path style), the
// region, the credentials provider, the HTTP client (its connection pool
// and timeout), the retryer (attempts, which errors are retried, backoff)
// and whether uploads carry a checksum (RequestChecksumCalculation; the
// checksum is bodyChecksum, where the SDK sends a CRC32). Failures
// are returned in the SDK's own error types (smithy.OperationError around
// awshttp.ResponseError with the request id and the S3 error code, or
// smithyhttp.RequestSendError), so errors.go maps them to the same errno
// and logs the same request id.
//
// newDirect returns nil (the SDK then sends every request) for a client
// without a BaseEndpoint or with virtual-hosted addressing.
type direct struct {
	base     *url.URL
	bucket   string
	region   string
	creds    aws.CredentialsProvider
	client   s3.HTTPClient
	retryer  aws.Retryer
	signer   *v4.Signer
	checksum bool // send bodyChecksum with every upload
	sign     bool // SHA-256 of the payload in the signature, else UNSIGNED-PAYLOAD
}

func newDirect(client *s3.Client, bucket string, signPayload bool) *direct {
	o := client.Options()
	if o.BaseEndpoint == nil || !o.UsePathStyle || o.HTTPClient == nil || o.Retryer == nil {
		return nil
	}
	base, err := url.Parse(strings.TrimSuffix(*o.BaseEndpoint, "/"))
	if err != nil || base.Host == "" || (base.Scheme != "http" && base.Scheme != "https") {
		return nil
	}
	return &direct{
		base: base, bucket: bucket, region: o.Region, creds: o.Credentials,
		client: o.HTTPClient, retryer: o.Retryer,
		// S3 signs the path as sent: no second escaping.
		signer:   v4.NewSigner(func(so *v4.SignerOptions) { so.DisableURIPathEscaping = true }),
		checksum: o.RequestChecksumCalculation != aws.RequestChecksumCalculationWhenRequired,
		sign:     signPayload,
	}
}

// emptySHA256 is the SHA-256 of an empty payload.
const emptySHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

// request builds and signs one attempt of a request for key, with query
// (encoded, "" for none) and body, which file, if not nil, holds whole
// (see fileBody).
//
// Every body it opens is counted in bodies until net/http closes it: a
// caller that reuses body's memory waits for bodies first (see send).
func (d *direct) request(ctx context.Context, method, key, query string, body []byte, file *os.File, bodies *sync.WaitGroup, header func(http.Header)) (*http.Request, error) {
	u := *d.base
	u.Path = d.base.Path + "/" + d.bucket + "/" + key
	u.RawPath = d.base.EscapedPath() + "/" + httpbinding.EscapePath(d.bucket, true) + "/" + httpbinding.EscapePath(key, false)
	u.RawQuery = query
	req, err := http.NewRequestWithContext(ctx, method, u.String(), nil)
	if err != nil {
		return nil, err
	}
	if body != nil {
		open := func() (io.ReadCloser, error) {
			var r io.Reader = bytes.NewReader(body)
			if file != nil {
				if f, err := reopen(file); err == nil {
					r = f
				}
			}
			bodies.Add(1)
			return &countedBody{Reader: r, done: bodies.Done}, nil
		}
		if req.Body, err = open(); err != nil {
			return nil, err
		}
		req.ContentLength = int64(len(body))
		// A kept-alive connection found closed: net/http sends again.
		req.GetBody = open
	}
	if header != nil {
		header(req.Header)
	}
	hash := "UNSIGNED-PAYLOAD"
	if d.sign {
		hash = emptySHA256
		if len(body) > 0 {
			sum := sha256.Sum256(body)
			hash = hex.EncodeToString(sum[:])
		}
	}
	req.Header.Set("X-Amz-Content-Sha256", hash)
	if d.creds == nil {
		return req, nil // anonymous
	}
	creds, err := d.creds.Retrieve(ctx)
	if err != nil {
		return nil, fmt.Errorf("credentials: %w", err)
	}
	if err := d.signer.SignHTTP(ctx, creds, req, hash, "s3", d.region, time.Now()); err != nil {
		return nil, fmt.Errorf("sign: %w", err)
	}
	return req, nil
}

// countedBody is one attempt's request body. net/http may still write an
// attempt's body after Do returned an error for it (RoundTrip closes the
// body, maybe later, from the connection's goroutine), so the memory of
// the body may be reused only once every attempt's body was closed: Close
// marks it (once) in the request's WaitGroup.
//
// A body read from a part's memory file (reopen) goes out with
// sendfile(2): net/http hands it to the connection's ReadFrom, which uses
// sendfile for a reader with a file descriptor. Each attempt reads through
// a descriptor of its own, so a late write of a failed attempt never moves
// the next attempt's offset.
type countedBody struct {
	io.Reader
	once sync.Once
	done func()
}

func (b *countedBody) Close() error {
	b.once.Do(func() {
		if f, ok := b.Reader.(*os.File); ok {
			f.Close()
		}
		b.done()
	})
	return nil
}

// reopen opens file again, read-only, with an offset of its own (at 0).
func reopen(file *os.File) (*os.File, error) {
	return os.Open("/proc/self/fd/" + strconv.Itoa(int(file.Fd())))
}

// do sends a request built by build, retrying as the SDK's retryer says,
// and returns a 2xx response (the caller closes its body) or the error in
// the SDK's types.
func (d *direct) do(ctx context.Context, op string, build func() (*http.Request, error)) (*http.Response, error) {
	for attempt := 1; ; attempt++ {
		resp, err := d.once(build)
		if err == nil {
			return resp, nil
		}
		err = &smithy.OperationError{ServiceID: "S3", OperationName: op, Err: err}
		if ctx.Err() != nil || !d.retryer.IsErrorRetryable(err) ||
			(d.retryer.MaxAttempts() > 0 && attempt >= d.retryer.MaxAttempts()) {
			return nil, err
		}
		delay, derr := d.retryer.RetryDelay(attempt, err)
		if derr != nil {
			return nil, err
		}
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, err
		}
	}
}

func (d *direct) once(build func() (*http.Request, error)) (*http.Response, error) {
	req, err := build()
	if err != nil {
		return nil, err
	}
	resp, err := d.client.Do(req)
	if err != nil {
		if req.Context().Err() != nil {
			return nil, err // wraps context.Canceled: EINTR, not retried
		}
		return nil, &smithyhttp.RequestSendError{Err: err}
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
	if e.Code == "" {
		e.Code = strings.ReplaceAll(http.StatusText(resp.StatusCode), " ", "")
	}
	return nil, &awshttp.ResponseError{
		RequestID: resp.Header.Get("X-Amz-Request-Id"),
		ResponseError: &smithyhttp.ResponseError{
			Response: &smithyhttp.Response{Response: resp},
			Err:      &smithy.GenericAPIError{Code: e.Code, Message: e.Message},
		},
	}
}

// get is backend.get's request: length bytes at off, only from the
// version etag when it is set.
func (d *direct) get(ctx context.Context, key, etag string, off int64, length int) (getResponse, error) {
	rng := "bytes=" + strconv.FormatInt(off, 10) + "-" + strconv.FormatInt(off+int64(length)-1, 10)
	resp, err := d.do(ctx, "GetObject", func() (*http.Request, error) {
		return d.request(ctx, http.MethodGet, key, "", nil, nil, nil, func(h http.Header) {
			h.Set("Range", rng)
			if etag != "" {
				h.Set("If-Match", etag)
			}
		})
	})
	if err != nil {
		return getResponse{}, err
	}
	r := getResponse{length: resp.ContentLength, body: resp.Body,
		obj: object{size: resp.ContentLength, etag: resp.Header.Get("ETag")}}
	if lm := resp.Header.Get("Last-Modified"); lm != "" {
		r.obj.mtime, _ = http.ParseTime(lm)
	}
	if cr := resp.Header.Get("Content-Range"); cr != "" {
		r.obj.size = rangeTotal(cr, r.obj.size)
	}
	return r, nil
}

// put is backend.put's request: the object key with body, returning its
// ETag.
func (d *direct) put(ctx context.Context, key string, body []byte) (string, error) {
	return d.send(ctx, "PutObject", key, "", body, nil)
}

// uploadPart is backend.uploadPart's request: part number of the upload
// with body (held whole by file, when not nil), returning its ETag.
func (d *direct) uploadPart(ctx context.Context, key, uploadID string, number int32, body []byte, file *os.File) (string, error) {
	query := url.Values{"partNumber": {strconv.Itoa(int(number))}, "uploadId": {uploadID}}.Encode()
	return d.send(ctx, "UploadPart", key, query, body, file)
}

// bodyChecksum is the checksum of every body sent: CRC64NVME, S3's default
// algorithm (the one an object uploaded without a checksum gets), so a
// server that keeps that checksum computes one CRC of the body besides
// the ETag's MD5 instead of two: the client's value is the one it keeps
// (a CRC32, which the SDK sends, it checks and then computes its
// CRC64NVME too).
const bodyChecksum = checksum.CRC64NVME

// send PUTs body, with its checksum, and returns the ETag of the answer.
func (d *direct) send(ctx context.Context, op, key, query string, body []byte, file *os.File) (string, error) {
	if body == nil {
		body = []byte{}
	}
	var sum string
	if d.checksum {
		sum = checksum.Encode(bodyChecksum.Sum(body))
	}
	var bodies sync.WaitGroup
	// body (and file) belongs to the caller again once net/http closed
	// every attempt's copy of it.
	defer bodies.Wait()
	resp, err := d.do(ctx, op, func() (*http.Request, error) {
		return d.request(ctx, http.MethodPut, key, query, body, file, &bodies, func(h http.Header) {
			if sum != "" {
				h.Set(bodyChecksum.HeaderName(), sum)
			}
		})
	})
	if err != nil {
		return "", err
	}
	_, _ = io.CopyN(io.Discard, resp.Body, 4<<10)
	resp.Body.Close()
	return resp.Header.Get("ETag"), nil
}
