package testutil

import (
	"bytes"
	"context"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// PostForm uploads a file to bucket through a browser form (POST
// Object) at endpoint (http://host:port), with a policy minio-go signs
// with the key pair — bucket, the key prefix keyPrefix (the exact key
// when keyPrefix is the key), an hour's expiry — the form's key field set
// to key (which may hold ${filename}). It returns the answer's status and
// body.
func PostForm(ctx context.Context, endpoint, accessKey, secret, bucket, keyPrefix, key, filename string, body []byte) (int, []byte, error) {
	u, err := url.Parse(endpoint)
	if err != nil {
		return 0, nil, err
	}
	mc, err := minio.New(u.Host, &minio.Options{Creds: credentials.NewStaticV4(accessKey, secret, ""), Region: "us-east-1"})
	if err != nil {
		return 0, nil, err
	}
	policy := minio.NewPostPolicy()
	set := policy.SetKey
	if keyPrefix != key {
		set = policy.SetKeyStartsWith
	}
	for _, err := range []error{policy.SetBucket(bucket), set(keyPrefix), policy.SetExpires(time.Now().Add(time.Hour))} {
		if err != nil {
			return 0, nil, err
		}
	}
	target, fields, err := mc.PresignedPostPolicy(ctx, policy)
	if err != nil {
		return 0, nil, err
	}
	fields["key"] = key
	var form bytes.Buffer
	w := multipart.NewWriter(&form)
	for k, v := range fields {
		if err := w.WriteField(k, v); err != nil {
			return 0, nil, err
		}
	}
	fw, err := w.CreateFormFile("file", filename)
	if err != nil {
		return 0, nil, err
	}
	_, _ = fw.Write(body)
	w.Close()
	req, err := http.NewRequestWithContext(ctx, "POST", target.String(), &form)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", w.FormDataContentType())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(resp.Body)
	return resp.StatusCode, answer, err
}
