package bench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// fakeS3 is just enough of S3 (path style, no auth check) to prove that the
// SDK wiring of S3Target works: PUT, GET with ranges, DeleteObjects,
// CreateBucket and multipart upload. It decodes aws-chunked bodies.
type fakeS3 struct {
	mu      sync.Mutex
	objects map[string][]byte
	parts   map[string]map[int][]byte
	nextID  int
	chunked int // bodies that arrived aws-chunked
	// payloadHashes counts X-Amz-Content-Sha256 of object PUTs: the
	// literal for UNSIGNED-PAYLOAD and STREAMING-*, "sha256" for a hash.
	payloadHashes map[string]int
}

func newFakeS3(t *testing.T) (*fakeS3, string) {
	f := &fakeS3{objects: map[string][]byte{}, parts: map[string]map[int][]byte{}, payloadHashes: map[string]int{}}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return f, srv.URL
}

func (f *fakeS3) body(r *http.Request) []byte {
	data, _ := io.ReadAll(r.Body)
	if !strings.Contains(r.Header.Get("Content-Encoding"), "aws-chunked") &&
		!strings.HasPrefix(r.Header.Get("X-Amz-Content-Sha256"), "STREAMING-") {
		return data
	}
	f.chunked++
	var out []byte
	for {
		line, rest, ok := bytes.Cut(data, []byte("\r\n"))
		if !ok {
			return out
		}
		sizeHex, _, _ := bytes.Cut(line, []byte(";"))
		n, _ := strconv.ParseInt(string(sizeHex), 16, 64)
		if n == 0 {
			return out
		}
		out = append(out, rest[:n]...)
		data = rest[n+2:]
	}
}

func (f *fakeS3) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	path := strings.TrimPrefix(r.URL.Path, "/")
	bucket, key, _ := strings.Cut(path, "/")
	q := r.URL.Query()
	f.mu.Lock()
	defer f.mu.Unlock()
	if key != "" && r.Method == http.MethodPut {
		h := r.Header.Get("X-Amz-Content-Sha256")
		if len(h) == 64 && strings.Trim(h, "0123456789abcdef") == "" {
			h = "sha256"
		}
		f.payloadHashes[h]++
	}
	switch {
	case key == "" && r.Method == http.MethodPut:
		f.body(r)
	case key == "" && r.Method == http.MethodPost && q.Has("delete"):
		body := string(f.body(r))
		for _, part := range strings.Split(body, "<Key>")[1:] {
			k, _, _ := strings.Cut(part, "</Key>")
			delete(f.objects, k)
		}
		fmt.Fprint(w, `<?xml version="1.0" encoding="UTF-8"?><DeleteResult></DeleteResult>`)
	case r.Method == http.MethodPost && q.Has("uploads"):
		f.nextID++
		id := strconv.Itoa(f.nextID)
		f.parts[id] = map[int][]byte{}
		fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?><InitiateMultipartUploadResult><Bucket>%s</Bucket><Key>%s</Key><UploadId>%s</UploadId></InitiateMultipartUploadResult>`, bucket, key, id)
	case r.Method == http.MethodPut && q.Has("uploadId"):
		n, _ := strconv.Atoi(q.Get("partNumber"))
		f.parts[q.Get("uploadId")][n] = f.body(r)
		w.Header().Set("ETag", fmt.Sprintf(`"part%d"`, n))
	case r.Method == http.MethodPost && q.Has("uploadId"):
		f.body(r)
		parts := f.parts[q.Get("uploadId")]
		nums := make([]int, 0, len(parts))
		for n := range parts {
			nums = append(nums, n)
		}
		sort.Ints(nums)
		var all []byte
		for _, n := range nums {
			all = append(all, parts[n]...)
		}
		f.objects[key] = all
		fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?><CompleteMultipartUploadResult><Key>%s</Key><ETag>"mp"</ETag></CompleteMultipartUploadResult>`, key)
	case r.Method == http.MethodPut:
		f.objects[key] = f.body(r)
		w.Header().Set("ETag", `"x"`)
	case r.Method == http.MethodGet:
		data, ok := f.objects[key]
		if !ok {
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprint(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>NoSuchKey</Code><Message>no</Message></Error>`)
			return
		}
		if rg := r.Header.Get("Range"); rg != "" {
			var from, to int
			fmt.Sscanf(rg, "bytes=%d-%d", &from, &to)
			to = min(to, len(data)-1)
			w.Header().Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", from, to, len(data)))
			w.Header().Set("Content-Length", strconv.Itoa(to-from+1))
			w.WriteHeader(http.StatusPartialContent)
			_, _ = w.Write(data[from : to+1])
			return
		}
		w.Header().Set("Content-Length", strconv.Itoa(len(data)))
		_, _ = w.Write(data)
	default:
		w.WriteHeader(http.StatusNotImplemented)
	}
}

// TestS3TargetAgainstFake runs every Target method through the real SDK,
// both the single-request path and the transfer manager path.
func TestS3TargetAgainstFake(t *testing.T) {
	fake, url := newFakeS3(t)
	ctx := context.Background()
	target, err := NewS3Target(ctx, S3Options{Endpoint: url, Bucket: "b", AccessKey: "ak", SecretKey: "sk",
		PathStyle: true, MultipartThreshold: 6 << 20, PartSize: 5 << 20, PartConcurrency: 2})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := target.EnsureBucket(ctx); err != nil {
		t.Fatal(err)
	}
	pool := testPool()
	for _, size := range []int64{1000, 12 << 20} { // 12 MiB: three parts
		key := fmt.Sprintf("obj-%d", size)
		if err := target.Put(ctx, key, pool.Payload(key, size)); err != nil {
			t.Fatalf("put %d: %v", size, err)
		}
		n, err := target.Get(ctx, key, size, NewSink(pool.Payload(key, size)))
		if err != nil || n != size {
			t.Fatalf("get %d: %d bytes, %v (stored %d)", size, n, err, len(fake.objects[key]))
		}
		// Verification catches another key's content.
		if _, err := target.Get(ctx, key, size, NewSink(pool.Payload("other", size))); ClassifyError(err) != errVerify {
			t.Errorf("size %d: wrong content not caught: %v", size, err)
		}
	}
	if _, err := target.Get(ctx, "missing", 10, NewSink(nil)); ClassifyError(err) != "NoSuchKey" {
		t.Errorf("missing key: %v classified %s", err, ClassifyError(err))
	}
	if err := target.Delete(ctx, []string{"obj-1000", fmt.Sprintf("obj-%d", 12<<20)}); err != nil {
		t.Fatal(err)
	}
	if len(fake.objects) != 0 {
		t.Errorf("objects left: %d", len(fake.objects))
	}
}

// TestPayloadSigning: uploads are signed UNSIGNED-PAYLOAD unless
// SignPayload asks for the body's SHA-256 (what the SDK does over HTTP).
func TestPayloadSigning(t *testing.T) {
	for _, sign := range []bool{false, true} {
		fake, url := newFakeS3(t)
		target, err := NewS3Target(context.Background(), S3Options{Endpoint: url, Bucket: "b", AccessKey: "ak",
			SecretKey: "sk", PathStyle: true, SignPayload: sign, MultipartThreshold: 6 << 20, PartSize: 5 << 20})
		if err != nil {
			t.Fatal(err)
		}
		for _, size := range []int64{1000, 12 << 20} { // single PUT and multipart parts
			key := fmt.Sprintf("obj-%d", size)
			if err := target.Put(context.Background(), key, testPool().Payload(key, size)); err != nil {
				t.Fatalf("sign=%v put %d: %v", sign, size, err)
			}
		}
		want := "UNSIGNED-PAYLOAD"
		if sign {
			want = "sha256"
		}
		if fake.payloadHashes[want] == 0 || len(fake.payloadHashes) != 1 {
			t.Errorf("sign=%v: payload hashes %v, want only %s", sign, fake.payloadHashes, want)
		}
	}
}

// TestMainPeakAgainstFake runs `b3 bench peak` end to end through the SDK.
func TestMainPeakAgainstFake(t *testing.T) {
	_, url := newFakeS3(t)
	var stdout, stderr bytes.Buffer
	code := Main([]string{"peak", "--endpoint", url, "--access-key", "a", "--secret-key", "s",
		"--sizes", "1KiB,64KiB", "--concurrency", "1,4", "--count", "20", "--verify", "--out", t.TempDir()}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if strings.Count(stdout.String(), "upload") != 4 || strings.Count(stdout.String(), "download") != 4 {
		t.Errorf("table:\n%s", stdout.String())
	}
	if strings.Contains(stdout.String(), "(") { // an error column like "3 (other 3)"
		t.Errorf("errors in the run:\n%s", stdout.String())
	}
}
