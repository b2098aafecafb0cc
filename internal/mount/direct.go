package mount

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/xml"
	"fmt"
	"hash/crc32"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/encoding/httpbinding"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// direct sends the mount's GetObject and PutObject requests as plain
// net/http requests signed with the SDK's SigV4 signer, without the SDK's
// middleware stack. A small file costs one of these, and the mount shares
// the machine with everything else: through the stack a request cost
// about as much client CPU as the server spent on it.
//
// Everything else comes from the SDK client the mount was given, so the
// two paths cannot disagree: the endpoint (BaseEndpoint, path style), the
// region, the credentials provider, the HTTP client (its connection pool
// and timeout), the retryer (attempts, which errors are retried, backoff)
// and whether uploads carry a CRC32 (RequestChecksumCalculation). Failures
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
	checksum bool // send x-amz-checksum-crc32 with every PUT
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

// request builds and signs one attempt of a request for key.
func (d *direct) request(ctx context.Context, method, key string, body []byte, header func(http.Header)) (*http.Request, error) {
	u := *d.base
	u.Path = d.base.Path + "/" + d.bucket + "/" + key
	u.RawPath = d.base.EscapedPath() + "/" + httpbinding.EscapePath(d.bucket, true) + "/" + httpbinding.EscapePath(key, false)
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), rd)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.ContentLength = int64(len(body))
		// A kept-alive connection found closed: net/http sends again.
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
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
		return d.request(ctx, http.MethodGet, key, nil, func(h http.Header) {
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
	if body == nil {
		body = []byte{}
	}
	var crc string
	if d.checksum {
		var b [4]byte
		binary.BigEndian.PutUint32(b[:], crc32.ChecksumIEEE(body))
		crc = base64.StdEncoding.EncodeToString(b[:])
	}
	resp, err := d.do(ctx, "PutObject", func() (*http.Request, error) {
		return d.request(ctx, http.MethodPut, key, body, func(h http.Header) {
			if crc != "" {
				h.Set("X-Amz-Checksum-Crc32", crc)
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
