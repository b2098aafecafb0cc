package mount

import (
	"bytes"
	"context"
	"crypto/md5"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"

	"github.com/b3-storage/b3/internal/checksum"
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

	// A PUT carries a CRC64NVME of its body, which the server checks and
	// keeps.
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
	if got, want := aws.ToString(head.ChecksumCRC64NVME), checksum.Encode(checksum.CRC64NVME.Sum(body)); got != want {
		t.Errorf("the object PUT directly has CRC64NVME %q, want %q", got, want)
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

// TestDirectUploadPart: parts sent as plain requests (full parts from the
// pool's memory files with sendfile, a shorter last part from memory)
// arrive whole: each part's ETag is its MD5, each carries the CRC64NVME
// the server checks, and the completed object reads back identical through
// the S3 API with its CRC64NVME. A part whose bytes do not match the
// checksum sent (the buffer changed under the request) is refused
// (BadDigest), and nothing of it is stored.
func TestDirectUploadPart(t *testing.T) {
	srv := testutil.StartServer(t, testutil.ServerOptions{})
	client := srv.Client(30 * time.Second)
	ctx := context.Background()
	bucket, key := "parts", "big"
	if _, err := client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: &bucket}); err != nil {
		t.Fatal(err)
	}
	// Every request through a proxy that records the checksum header each
	// part carried.
	target, err := url.Parse(srv.Endpoint())
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	sent := map[string]string{} // partNumber -> x-amz-checksum-crc64nvme
	proxy := httputil.NewSingleHostReverseProxy(target)
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n := r.URL.Query().Get("partNumber"); n != "" {
			mu.Lock()
			sent[n] = r.Header.Get("X-Amz-Checksum-Crc64nvme")
			mu.Unlock()
		}
		proxy.ServeHTTP(w, r)
	}))
	defer front.Close()
	viaProxy := s3.New(client.Options(), func(o *s3.Options) { o.BaseEndpoint = aws.String(front.URL) })
	be := &backend{client: viaProxy, bucket: bucket, direct: newDirect(viaProxy, bucket, false)}

	const partSize = 5 << 20
	pool := newBufferPool(partSize, 2, true)
	uploadID, err := be.createUpload(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	var whole []byte
	var etags []string
	for i, size := range []int{partSize, partSize, 1<<20 + 7} {
		buf := pool.get(nil)
		body := append(buf[:0], pattern(byte(i), size)...)
		file := pool.fileOf(body)
		if (file != nil) != (size == partSize) {
			t.Fatalf("part %d of %d bytes: memory file %v", i+1, size, file != nil)
		}
		etag, err := be.uploadPart(ctx, key, uploadID, int32(i+1), body, file)
		if err != nil {
			t.Fatalf("part %d: %v", i+1, err)
		}
		if want := fmt.Sprintf("\"%x\"", md5.Sum(body)); etag != want {
			t.Fatalf("part %d: ETag %s, want %s (the MD5 of the part)", i+1, etag, want)
		}
		if got, want := sent[strconv.Itoa(i+1)], checksum.Encode(checksum.CRC64NVME.Sum(body)); got != want {
			t.Fatalf("part %d carried CRC64NVME %q, want %q", i+1, got, want)
		}
		whole = append(whole, body...)
		etags = append(etags, etag)
		pool.put(buf)
	}

	// A part whose bytes are not those its checksum was computed from.
	buf := pool.get(nil)
	body := append(buf[:0], pattern(9, partSize)...)
	d := be.direct
	var bodies sync.WaitGroup
	_, err = d.do(ctx, "UploadPart", func() (*http.Request, error) {
		query := url.Values{"partNumber": {"4"}, "uploadId": {uploadID}}.Encode()
		return d.request(ctx, http.MethodPut, key, query, body, pool.fileOf(body), &bodies, func(h http.Header) {
			h.Set("X-Amz-Checksum-Crc64nvme", checksum.Encode(checksum.CRC64NVME.Sum([]byte("other"))))
		})
	})
	if code := errorCode(err); code != "BadDigest" {
		t.Fatalf("a part that does not match its checksum: %v (code %q), want BadDigest", err, code)
	}
	bodies.Wait()
	pool.put(buf)
	parts, err := client.ListParts(ctx, &s3.ListPartsInput{Bucket: &bucket, Key: &key, UploadId: &uploadID})
	if err != nil {
		t.Fatal(err)
	}
	if len(parts.Parts) != 3 {
		t.Fatalf("%d parts stored, want 3 (the refused one is not)", len(parts.Parts))
	}

	if _, err := be.completeUpload(ctx, key, uploadID, etags); err != nil {
		t.Fatal(err)
	}
	out, err := client.GetObject(ctx, &s3.GetObjectInput{Bucket: &bucket, Key: &key, ChecksumMode: types.ChecksumModeEnabled})
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(out.Body)
	out.Body.Close()
	if err != nil || !bytes.Equal(got, whole) {
		t.Fatalf("read back %d bytes (%v), equal %v; want %d", len(got), err, bytes.Equal(got, whole), len(whole))
	}
	if c, want := aws.ToString(out.ChecksumCRC64NVME), checksum.Encode(checksum.CRC64NVME.Sum(whole)); c != want {
		t.Fatalf("object CRC64NVME %q, want %q", c, want)
	}
}

// pattern returns n bytes that differ with seed and position.
func pattern(seed byte, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = seed + byte(i) + byte(i>>8)*7 + byte(i>>16)*13
	}
	return b
}

// errorCode is the S3 error code of a failed request, "" if none.
func errorCode(err error) string {
	var api smithy.APIError
	if errors.As(err, &api) {
		return api.ErrorCode()
	}
	return ""
}

// TestAttemptsReadIndependently: each attempt of a request reads a part's
// memory file through a descriptor of its own, and the part's memory is
// in use until net/http closed every attempt's body. net/http may still
// be writing an attempt it gave up on when the next one starts; with one
// shared file offset the two would move each other's position and both
// send wrong bytes.
func TestAttemptsReadIndependently(t *testing.T) {
	const size = 1 << 20
	pool := newBufferPool(size, 1, true)
	buf := pool.get(nil)
	body := append(buf[:0], pattern(3, size)...)
	file := pool.fileOf(body)
	if file == nil {
		t.Fatal("the pool gave no memory file for a whole buffer")
	}
	base, _ := url.Parse("http://127.0.0.1:1")
	d := &direct{base: base, bucket: "b"}
	var bodies sync.WaitGroup
	open := func() *http.Request {
		req, err := d.request(context.Background(), http.MethodPut, "k", "", body, file, &bodies, nil)
		if err != nil {
			t.Fatal(err)
		}
		return req
	}
	first := open()
	head := make([]byte, 1000)
	if _, err := io.ReadFull(first.Body, head); err != nil {
		t.Fatal(err)
	}
	retry := open()
	second, err := retry.GetBody() // a retry's body
	if err != nil {
		t.Fatal(err)
	}
	if got, err := io.ReadAll(second); err != nil || !bytes.Equal(got, body) {
		t.Fatalf("the second attempt read %d bytes (%v), want the whole body", len(got), err)
	}
	rest, err := io.ReadAll(first.Body)
	if err != nil || !bytes.Equal(append(head, rest...), body) {
		t.Fatalf("the first attempt, read on after the second, has %d bytes (%v), want the whole body", len(head)+len(rest), err)
	}

	// Three bodies are open (two requests' and the retry's); the memory is
	// free once all three are closed, each counted once however often
	// net/http closes it.
	free := make(chan struct{})
	go func() { bodies.Wait(); close(free) }()
	for _, b := range []io.Closer{first.Body, second, second} {
		b.Close()
	}
	select {
	case <-free:
		t.Fatal("the memory counted as free while a body is open")
	case <-time.After(50 * time.Millisecond):
	}
	retry.Body.Close()
	<-free
}
