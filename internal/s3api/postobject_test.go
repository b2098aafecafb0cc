package s3api

import (
	"bytes"
	"context"
	"mime/multipart"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// TestPostObject uploads through an HTML-form POST whose policy minio-go
// signs (SigV4), and checks the policy's conditions are enforced.
func TestPostObject(t *testing.T) {
	e := newEnv(t)
	e.mustCreateBucket("forms")
	u, _ := url.Parse(e.ts.URL)
	mc, err := minio.New(u.Host, &minio.Options{Creds: credentials.NewStaticV4(rootUser.AccessKey, rootUser.SecretKey, ""), Region: testRegion})
	if err != nil {
		t.Fatal(err)
	}
	post := func(key string, maxLen int64, file []byte, extra map[string]string) (*http.Response, string) {
		policy := minio.NewPostPolicy()
		if err := policy.SetBucket("forms"); err != nil {
			t.Fatal(err)
		}
		if err := policy.SetKey(key); err != nil {
			t.Fatal(err)
		}
		if err := policy.SetExpires(time.Now().Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
		if err := policy.SetContentLengthRange(0, maxLen); err != nil {
			t.Fatal(err)
		}
		if err := policy.SetContentType("text/plain"); err != nil {
			t.Fatal(err)
		}
		target, fields, err := mc.PresignedPostPolicy(context.Background(), policy)
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		w := multipart.NewWriter(&buf)
		for k, v := range fields {
			w.WriteField(k, v)
		}
		for k, v := range extra {
			w.WriteField(k, v)
		}
		fw, _ := w.CreateFormFile("file", "upload.txt")
		fw.Write(file)
		w.Close()
		req, _ := http.NewRequest("POST", target.String(), &buf)
		req.Header.Set("Content-Type", w.FormDataContentType())
		return e.do(req)
	}
	resp, body := post("uploads/a.txt", 100, []byte("form data"), nil)
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("post: %d %s", resp.StatusCode, body)
	}
	if got := string(e.mustGet("forms", "uploads/a.txt")); got != "form data" {
		t.Fatalf("posted object: %q", got)
	}
	head, err := e.store.HeadObject("forms", "uploads/a.txt")
	if err != nil || head.ContentType != "text/plain" {
		t.Fatalf("posted content type: %+v %v", head, err)
	}
	resp, body = post("big.txt", 4, []byte("too large"), nil)
	wantXMLError(t, resp, body, 400, "EntityTooLarge")
	e.assertAbsent("forms", "big.txt")
	resp, body = post("extra.txt", 100, []byte("x"), map[string]string{"x-amz-meta-unsigned": "1"})
	wantXMLError(t, resp, body, 403, "AccessDenied")
	e.assertAbsent("forms", "extra.txt")
}
