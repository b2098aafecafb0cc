package server

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
	"golang.org/x/sys/unix"

	"github.com/b3-storage/b3/internal/blob"
)

// TestFreeSpaceReserve runs a server whose free-space reserve is larger than
// the disk's free space: uploads of every kind are refused with 507
// InsufficientStorage before their bodies are stored, nothing is left
// behind, and metadata-only requests and deletes still work.
func TestFreeSpaceReserve(t *testing.T) {
	root := t.TempDir()
	var st unix.Statfs_t
	if err := unix.Statfs(root, &st); err != nil {
		t.Fatal(err)
	}
	free := int64(st.Bavail) * st.Bsize
	n := startNode(t, Config{Root: root, Sync: blob.SyncNone, MinFreeBytes: free + 1<<40})
	c := n.client(t, "", "")
	ctx := context.Background()
	bucket := aws.String("full")
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: bucket}); err != nil {
		t.Fatalf("create bucket on a full disk: %v", err)
	}
	refused := func(what string, err error) {
		t.Helper()
		var api smithy.APIError
		var resp *awshttp.ResponseError
		if !errors.As(err, &api) || api.ErrorCode() != "InsufficientStorage" ||
			!errors.As(err, &resp) || resp.HTTPStatusCode() != http.StatusInsufficientStorage {
			t.Fatalf("%s on a full disk: %v, want 507 InsufficientStorage", what, err)
		}
	}
	body := bytes.Repeat([]byte("x"), 64<<10)
	_, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: bucket, Key: aws.String("a"), Body: bytes.NewReader(body)})
	refused("PutObject", err)

	up, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: bucket, Key: aws.String("m")})
	if err != nil {
		t.Fatalf("create multipart upload on a full disk: %v", err)
	}
	_, err = c.UploadPart(ctx, &s3.UploadPartInput{Bucket: bucket, Key: aws.String("m"), UploadId: up.UploadId,
		PartNumber: aws.Int32(1), Body: bytes.NewReader(body)})
	refused("UploadPart", err)
	if _, err := c.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: bucket, Key: aws.String("m"), UploadId: up.UploadId}); err != nil {
		t.Fatalf("abort on a full disk: %v", err)
	}

	list, err := c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: bucket})
	if err != nil || len(list.Contents) != 0 {
		t.Fatalf("after refused uploads: %v objects, %v", len(list.Contents), err)
	}
	metrics := scrape(t, n.adminEndpoint)
	if got := sample(metrics, "b3_segment_appended_bytes_total", nil); got != 0 {
		t.Fatalf("refused uploads appended %v bytes to segments", got)
	}
	if got := sample(metrics, "b3_disk_free_bytes", nil); got <= 0 {
		t.Fatalf("b3_disk_free_bytes = %v, want the free space", got)
	}
	if _, err := c.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: bucket}); err != nil {
		t.Fatalf("delete bucket on a full disk: %v", err)
	}
}

// TestFreeSpaceReserveAdmits checks the other side: with a reserve the disk
// can keep, uploads and copies go through.
func TestFreeSpaceReserveAdmits(t *testing.T) {
	n := startNode(t, Config{Sync: blob.SyncNone, MinFreeBytes: 1 << 20})
	c := n.client(t, "", "")
	ctx := context.Background()
	bucket := aws.String("roomy")
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: bucket}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: bucket, Key: aws.String("a"), Body: strings.NewReader("hello")}); err != nil {
		t.Fatalf("put with room to spare: %v", err)
	}
	if _, err := c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: bucket, Key: aws.String("b"), CopySource: aws.String("roomy/a")}); err != nil {
		t.Fatalf("copy with room to spare: %v", err)
	}
}
