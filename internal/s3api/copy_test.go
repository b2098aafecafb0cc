package s3api

import (
	"bytes"
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

func TestCopyObject(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	c := e.root()
	e.mustCreateBucket("src")
	e.mustCreateBucket("dst")
	body := randomBytes(100<<10, 7)
	put, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("src"), Key: aws.String("a b/ç"), Body: bytes.NewReader(body),
		ContentType: aws.String("image/png"), Metadata: map[string]string{"k": "v"}, Tagging: aws.String("t=1")})
	if err != nil {
		t.Fatal(err)
	}

	// COPY directive: metadata and tags travel with the bytes.
	cp, err := c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String("dst"), Key: aws.String("copy"), CopySource: aws.String("src/a%20b/%C3%A7")})
	if err != nil {
		t.Fatal(err)
	}
	if aws.ToString(cp.CopyObjectResult.ETag) != aws.ToString(put.ETag) {
		t.Fatalf("copy etag %s, want %s", aws.ToString(cp.CopyObjectResult.ETag), aws.ToString(put.ETag))
	}
	head, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("dst"), Key: aws.String("copy")})
	if err != nil || aws.ToString(head.ContentType) != "image/png" || head.Metadata["k"] != "v" || aws.ToInt32(head.TagCount) != 1 {
		t.Fatalf("copied attributes: %+v %v", head, err)
	}
	if !bytes.Equal(e.mustGet("dst", "copy"), body) {
		t.Fatal("copied bytes differ")
	}

	// REPLACE directive: request headers replace them.
	if _, err := c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String("dst"), Key: aws.String("copy"), CopySource: aws.String("src/a%20b/%C3%A7"),
		MetadataDirective: types.MetadataDirectiveReplace, ContentType: aws.String("text/plain"), Metadata: map[string]string{"new": "1"}}); err != nil {
		t.Fatal(err)
	}
	head, err = c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("dst"), Key: aws.String("copy")})
	if err != nil || aws.ToString(head.ContentType) != "text/plain" || head.Metadata["new"] != "1" || head.Metadata["k"] != "" {
		t.Fatalf("replaced attributes: %+v %v", head, err)
	}

	// Conditions on the source are 412 whichever fails.
	for _, in := range []s3.CopyObjectInput{
		{CopySourceIfMatch: aws.String(`"nope"`)},
		{CopySourceIfNoneMatch: put.ETag},
	} {
		in.Bucket, in.Key, in.CopySource = aws.String("dst"), aws.String("c2"), aws.String("src/a%20b/%C3%A7")
		_, err := c.CopyObject(ctx, &in)
		wantCode(t, err, "PreconditionFailed")
	}
	e.assertAbsent("dst", "c2")

	// Copying onto itself without changing anything is refused.
	_, err = c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String("dst"), Key: aws.String("copy"), CopySource: aws.String("dst/copy")})
	wantCode(t, err, "InvalidRequest")
	_, err = c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String("dst"), Key: aws.String("x"), CopySource: aws.String("src/missing")})
	wantCode(t, err, "NoSuchKey")
	// Another user cannot read root's private source.
	if _, err := e.client(otherUser, aws.RequestChecksumCalculationWhenSupported).CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("theirs")}); err != nil {
		t.Fatal(err)
	}
	_, err = e.client(otherUser, aws.RequestChecksumCalculationWhenSupported).CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String("theirs"), Key: aws.String("x"), CopySource: aws.String("src/a%20b/%C3%A7")})
	wantCode(t, err, "AccessDenied")
}

func TestUploadPartCopy(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.MinPartSize = 10 })
	ctx := context.Background()
	c := e.root()
	e.mustCreateBucket("bkt")
	body := randomBytes(1000, 3)
	e.mustPut("bkt", "src", body)
	create, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String("bkt"), Key: aws.String("dst")})
	if err != nil {
		t.Fatal(err)
	}
	var parts []types.CompletedPart
	for i, rng := range []string{"bytes=0-499", "bytes=500-999"} {
		out, err := c.UploadPartCopy(ctx, &s3.UploadPartCopyInput{Bucket: aws.String("bkt"), Key: aws.String("dst"), UploadId: create.UploadId,
			PartNumber: aws.Int32(int32(i + 1)), CopySource: aws.String("bkt/src"), CopySourceRange: aws.String(rng)})
		if err != nil {
			t.Fatal(err)
		}
		parts = append(parts, types.CompletedPart{PartNumber: aws.Int32(int32(i + 1)), ETag: out.CopyPartResult.ETag})
	}
	_, err = c.UploadPartCopy(ctx, &s3.UploadPartCopyInput{Bucket: aws.String("bkt"), Key: aws.String("dst"), UploadId: create.UploadId,
		PartNumber: aws.Int32(3), CopySource: aws.String("bkt/src"), CopySourceRange: aws.String("bytes=900-1000")})
	wantCode(t, err, "InvalidArgument")
	if _, err := c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: aws.String("bkt"), Key: aws.String("dst"), UploadId: create.UploadId,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: parts}}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(e.mustGet("bkt", "dst"), body) {
		t.Fatal("part-copied object differs")
	}
}
