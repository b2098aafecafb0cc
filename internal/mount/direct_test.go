package mount

import (
	"bytes"
	"context"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/b3-storage/b3/internal/testutil"
)

// outcome is what a backend call gave: the errno the caller would get,
// whether failure() logs a request id, and what was read.
type outcome struct {
	errno     syscall.Errno
	requestID bool
	n         int
	data      string
	size      int64
	etag      bool
}

func outcomeOf(o outcome, err error) outcome {
	if err != nil {
		var logged strings.Builder
		o.errno = failure(log.New(&logged, "", 0), "op", "key", err)
		o.requestID = strings.Contains(logged.String(), "request id ")
	}
	return o
}

// directCase is one call made through both paths.
type directCase struct {
	name   string
	client *s3.Client
	ctx    context.Context
	call   func(be *backend, ctx context.Context) outcome
	want   outcome
}

// TestDirectRequests runs the mount's GETs and PUTs through the SDK and
// through the plain signed requests (direct.go), against a real server,
// and requires the same outcome of both: content, version and size read,
// the errno of every failure (404, 403, 412, 416, refused connection,
// cancelled request) and the request id in the log.
func TestDirectRequests(t *testing.T) {
	srv := testutil.StartServer(t, testutil.ServerOptions{})
	client := srv.Client(30 * time.Second)
	ctx := context.Background()
	bucket := "direct"
	if _, err := client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: &bucket}); err != nil {
		t.Fatal(err)
	}
	wrongKeys := s3.New(client.Options(), func(o *s3.Options) {
		o.Credentials = credentials.NewStaticCredentialsProvider("AKWRONGWRONGWRONG000", "wrong/secret", "")
	})
	nobody := s3.New(client.Options(), func(o *s3.Options) {
		o.BaseEndpoint = aws.String("http://" + testutil.FreeAddr(t))
	})
	cancelled, cancel := context.WithCancel(ctx)
	cancel()

	get := func(key, etag string, off int64, length int) func(*backend, context.Context) outcome {
		return func(be *backend, ctx context.Context) outcome {
			buf := make([]byte, length)
			n, o, err := be.get(ctx, key, etag, off, length, func(n int) []byte { return buf[:n] })
			return outcomeOf(outcome{n: n, data: string(buf[:n]), size: o.size, etag: o.etag != ""}, err)
		}
	}
	put := func(key, body string) func(*backend, context.Context) outcome {
		return func(be *backend, ctx context.Context) outcome {
			etag, err := be.put(ctx, key, []byte(body))
			return outcomeOf(outcome{etag: etag != ""}, err)
		}
	}
	cases := []directCase{
		{"put", client, ctx, put("k", "hello, world"), outcome{etag: true}},
		{"get whole", client, ctx, get("k", "", 0, 100), outcome{n: 12, data: "hello, world", size: 12, etag: true}},
		{"get range", client, ctx, get("k", "", 7, 3), outcome{n: 3, data: "wor", size: 12, etag: true}},
		{"get past the end", client, ctx, get("k", "", 7, 100), outcome{n: 5, data: "world", size: 12, etag: true}},
		{"put empty", client, ctx, put("empty", ""), outcome{etag: true}},
		{"get empty", client, ctx, get("empty", "", 0, 100), outcome{}},
		{"get missing", client, ctx, get("missing", "", 0, 100), outcome{errno: syscall.ENOENT}},
		{"get replaced (412)", client, ctx, get("k", `"0123456789abcdef0123456789abcdef"`, 0, 100),
			outcome{errno: syscall.EIO, requestID: true}},
		{"get beyond the end (416)", client, ctx, get("k", "", 50, 10), outcome{errno: syscall.EIO, requestID: true}},
		{"put refused (403)", wrongKeys, ctx, put("k", "x"), outcome{errno: syscall.EACCES, requestID: true}},
		{"get refused (403)", wrongKeys, ctx, get("k", "", 0, 10), outcome{errno: syscall.EACCES, requestID: true}},
		{"nothing listens", nobody, ctx, get("k", "", 0, 10), outcome{errno: syscall.EIO}},
		{"cancelled", client, cancelled, get("k", "", 0, 10), outcome{errno: syscall.EINTR}},
	}
	// Keys a path must escape: the signature covers the escaped path.
	for i, key := range []string{"dir/with space+plus", "üñí/cödé", "odd%25#?&=;~!*'()"} {
		body := strings.Repeat(key, i+1)
		cases = append(cases,
			directCase{"put " + key, client, ctx, put(key, body), outcome{etag: true}},
			directCase{"get " + key, client, ctx, get(key, "", 0, 1000),
				outcome{n: len(body), data: body, size: int64(len(body)), etag: true}})
	}
	for _, c := range cases {
		for _, path := range []string{"sdk", "direct"} {
			be := &backend{client: c.client, bucket: bucket}
			if path == "direct" {
				if be.direct = newDirect(c.client, bucket, false); be.direct == nil {
					t.Fatal("no direct requests for a path-style client with an endpoint")
				}
			}
			if got := c.call(be, c.ctx); got != c.want {
				t.Errorf("%s through %s: %+v, want %+v", c.name, path, got, c.want)
			}
		}
	}

	// A PUT carries a CRC32 of its body, which the server checks and keeps.
	be := &backend{client: client, bucket: bucket, direct: newDirect(client, bucket, false)}
	body := bytes.Repeat([]byte("crc"), 40000)
	if _, err := be.put(ctx, "crc", body); err != nil {
		t.Fatal(err)
	}
	head, err := client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &bucket, Key: aws.String("crc"),
		ChecksumMode: types.ChecksumModeEnabled})
	if err != nil {
		t.Fatal(err)
	}
	if aws.ToString(head.ChecksumCRC32) == "" {
		t.Error("the object PUT directly has no CRC32: the request carried none")
	}
	// With --sign-payload the body's SHA-256 is signed; the server checks it.
	signed := &backend{client: client, bucket: bucket, direct: newDirect(client, bucket, true)}
	if _, err := signed.put(ctx, "signed", body); err != nil {
		t.Fatalf("put with a signed payload: %v", err)
	}
	// No fast path where the SDK resolves the endpoint itself.
	aws3 := s3.New(client.Options(), func(o *s3.Options) { o.BaseEndpoint = nil })
	if newDirect(aws3, bucket, false) != nil {
		t.Error("direct requests for a client without an endpoint")
	}
}

// TestCutBody: a GET whose body ends before its Content-Length (the
// connection cut by a proxy in front of a real server) is an error (EIO),
// through either path, never a short read that looks like the end of
// the object.
func TestCutBody(t *testing.T) {
	srv := testutil.StartServer(t, testutil.ServerOptions{})
	client := srv.Client(30 * time.Second)
	ctx := context.Background()
	bucket, key := "cut", "obj"
	if _, err := client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: &bucket}); err != nil {
		t.Fatal(err)
	}
	data := bytes.Repeat([]byte("0123456789abcdef"), 64<<10) // 1 MiB
	if _, err := client.PutObject(ctx, &s3.PutObjectInput{Bucket: &bucket, Key: &key, Body: bytes.NewReader(data)}); err != nil {
		t.Fatal(err)
	}
	target, err := url.Parse(srv.Endpoint())
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.ModifyResponse = func(resp *http.Response) error {
		if resp.Request.Method == http.MethodGet && resp.StatusCode/100 == 2 {
			resp.Body = cutReader{io.LimitReader(resp.Body, 100<<10), resp.Body}
		}
		return nil
	}
	proxy.ErrorLog = log.New(io.Discard, "", 0)
	front := httptest.NewServer(proxy)
	defer front.Close()
	viaProxy := s3.New(client.Options(), func(o *s3.Options) { o.BaseEndpoint = aws.String(front.URL) })
	for _, path := range []string{"sdk", "direct"} {
		be := &backend{client: viaProxy, bucket: bucket}
		if path == "direct" {
			be.direct = newDirect(viaProxy, bucket, false)
		}
		buf := make([]byte, len(data))
		n, err := be.getRange(ctx, key, "", 0, buf)
		if errnoOf(err) != syscall.EIO {
			t.Errorf("through %s: %d of %d bytes, error %v; want EIO", path, n, len(data), err)
		}
	}
}

// cutReader ends a body early with an error: the proxy then closes the
// connection without the rest.
type cutReader struct {
	r io.Reader
	io.Closer
}

func (c cutReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return n, err
}
