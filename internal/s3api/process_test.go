package s3api_test

// Tests against a real `b3 server` process (internal/testutil), in a
// package of their own: testutil reaches s3api through the server.

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"

	"github.com/b3-storage/b3/internal/checksum"
	"github.com/b3-storage/b3/internal/testutil"
)

// TestUnsignedTrailerCorrupted: the AWS SDK over HTTPS sends uploads as
// STREAMING-UNSIGNED-PAYLOAD-TRAILER, no SHA-256 of the payload, a CRC32
// in the aws-chunked body's trailer. Against a real server, a body changed
// in flight (one byte of the first chunk, after the SDK computed the
// trailer) is refused with BadDigest, and neither the object nor the part
// exists afterwards; the same uploads unchanged succeed.
func TestUnsignedTrailerCorrupted(t *testing.T) {
	srv := testutil.StartServer(t, testutil.ServerOptions{CA: testutil.NewCA(t)})
	client := srv.Client(30 * time.Second)
	ctx := context.Background()
	bucket := "trailer"
	if _, err := client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: &bucket}); err != nil {
		t.Fatal(err)
	}
	var corrupt corruptingClient
	corrupt.next = client.Options().HTTPClient
	sdk := s3.New(client.Options(), func(o *s3.Options) { o.HTTPClient = &corrupt })
	body := bytes.Repeat([]byte("trailing checksum "), 20000)

	put := func(key string) error {
		_, err := sdk.PutObject(ctx, &s3.PutObjectInput{Bucket: &bucket, Key: &key, Body: bytes.NewReader(body)})
		return err
	}
	up, err := client.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: &bucket, Key: aws.String("mp")})
	if err != nil {
		t.Fatal(err)
	}
	part := func(number int32) error {
		_, err := sdk.UploadPart(ctx, &s3.UploadPartInput{Bucket: &bucket, Key: aws.String("mp"), UploadId: up.UploadId,
			PartNumber: &number, Body: bytes.NewReader(body)})
		return err
	}

	corrupt.set(true)
	if code := errorCode(put("bad")); code != "BadDigest" {
		t.Fatalf("corrupted PutObject: code %q, want BadDigest", code)
	}
	if _, err := client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &bucket, Key: aws.String("bad")}); errorCode(err) != "NotFound" {
		t.Fatalf("HEAD of the refused object: %v, want NotFound", err)
	}
	if code := errorCode(part(1)); code != "BadDigest" {
		t.Fatalf("corrupted UploadPart: code %q, want BadDigest", code)
	}
	parts, err := client.ListParts(ctx, &s3.ListPartsInput{Bucket: &bucket, Key: aws.String("mp"), UploadId: up.UploadId})
	if err != nil || len(parts.Parts) != 0 {
		t.Fatalf("parts after a refused part: %v, %v", parts, err)
	}
	if got := corrupt.payloads(); len(got) != 2 || got[0] != "STREAMING-UNSIGNED-PAYLOAD-TRAILER" || got[1] != got[0] {
		t.Fatalf("the SDK sent x-amz-content-sha256 %q, want the unsigned trailer form", got)
	}

	corrupt.set(false)
	if err := put("good"); err != nil {
		t.Fatal(err)
	}
	if err := part(1); err != nil {
		t.Fatal(err)
	}
	out, err := client.GetObject(ctx, &s3.GetObjectInput{Bucket: &bucket, Key: aws.String("good"), ChecksumMode: types.ChecksumModeEnabled})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(out.Body)
	out.Body.Close()
	if !bytes.Equal(got, body) || aws.ToString(out.ChecksumCRC32) != checksum.Encode(checksum.CRC32.Sum(body)) {
		t.Fatalf("read back %d bytes, CRC32 %q", len(got), aws.ToString(out.ChecksumCRC32))
	}
}

// corruptingClient sends requests on, flipping one byte of every PUT
// body at offset 200 while set: a body damaged between the client and
// the server.
type corruptingClient struct {
	next s3.HTTPClient
	mu   sync.Mutex
	on   bool
	seen []string // x-amz-content-sha256 of the corrupted requests
}

func (c *corruptingClient) set(on bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.on = on
}

func (c *corruptingClient) payloads() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.seen...)
}

func (c *corruptingClient) Do(req *http.Request) (*http.Response, error) {
	c.mu.Lock()
	on := c.on && req.Method == http.MethodPut && req.Body != nil
	if on {
		c.seen = append(c.seen, req.Header.Get("X-Amz-Content-Sha256"))
	}
	c.mu.Unlock()
	if on {
		req.Body = &flipByte{ReadCloser: req.Body, at: 200}
	}
	return c.next.Do(req)
}

// flipByte changes the byte at offset at of a body.
type flipByte struct {
	io.ReadCloser
	at, off int64
}

func (f *flipByte) Read(p []byte) (int, error) {
	n, err := f.ReadCloser.Read(p)
	if i := f.at - f.off; i >= 0 && i < int64(n) {
		p[i] ^= 0x01
	}
	f.off += int64(n)
	return n, err
}

// errorCode is the S3 error code of a failed request, "" if none.
func errorCode(err error) string {
	var api smithy.APIError
	if errors.As(err, &api) {
		return api.ErrorCode()
	}
	return ""
}
