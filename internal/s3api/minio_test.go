package s3api

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// TestMinioClient runs the minio-go client, which signs uploads over
// plain HTTP with the streaming (aws-chunked) SigV4 variants.
func TestMinioClient(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	u, _ := url.Parse(e.ts.URL)
	mc, err := minio.New(u.Host, &minio.Options{Creds: credentials.NewStaticV4(rootUser.AccessKey, rootUser.SecretKey, ""), Region: testRegion})
	if err != nil {
		t.Fatal(err)
	}
	if err := mc.MakeBucket(ctx, "minio", minio.MakeBucketOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, size := range []int{0, 10 << 10, 12 << 20} { // the last is multipart
		body := randomBytes(size, uint64(size))
		key := "obj-" + time.Duration(size).String()
		if _, err := mc.PutObject(ctx, "minio", key, bytes.NewReader(body), int64(size),
			minio.PutObjectOptions{ContentType: "application/x-test", UserMetadata: map[string]string{"a": "b"}, PartSize: 5 << 20}); err != nil {
			t.Fatalf("put %d: %v", size, err)
		}
		obj, err := mc.GetObject(ctx, "minio", key, minio.GetObjectOptions{})
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(obj)
		obj.Close()
		if err != nil || !bytes.Equal(got, body) {
			t.Fatalf("get %d: %v, equal %v", size, err, bytes.Equal(got, body))
		}
		st, err := mc.StatObject(ctx, "minio", key, minio.StatObjectOptions{})
		if err != nil || st.ContentType != "application/x-test" || st.UserMetadata["A"] != "b" {
			t.Fatalf("stat: %+v %v", st, err)
		}
	}
	// Unknown-size upload: minio-go streams it as multipart.
	if _, err := mc.PutObject(ctx, "minio", "stream", io.LimitReader(bytes.NewReader(randomBytes(6<<20, 1)), 6<<20), -1, minio.PutObjectOptions{PartSize: 5 << 20}); err != nil {
		t.Fatal(err)
	}
	n := 0
	for obj := range mc.ListObjects(ctx, "minio", minio.ListObjectsOptions{Recursive: true}) {
		if obj.Err != nil {
			t.Fatal(obj.Err)
		}
		n++
	}
	if n != 4 {
		t.Fatalf("listed %d objects, want 4", n)
	}
	presigned, err := mc.PresignedGetObject(ctx, "minio", "stream", time.Minute, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, body := e.do(mustRequest(t, http.MethodGet, presigned.String()))
	if resp.StatusCode != 200 || len(body) != 6<<20 {
		t.Fatalf("presigned get: %d, %d bytes", resp.StatusCode, len(body))
	}
	if err := mc.RemoveObject(ctx, "minio", "stream", minio.RemoveObjectOptions{}); err != nil {
		t.Fatal(err)
	}
	e.assertAbsent("minio", "stream")
	e.mu.Lock()
	defer e.mu.Unlock()
	streamed := 0
	for kind, count := range e.payloads {
		if len(kind) > 9 && kind[:9] == "STREAMING" {
			streamed += count
		}
	}
	if streamed == 0 {
		t.Fatalf("minio-go never used a streaming signature: %v", e.payloads)
	}
}
