//lint:file-ignore SA1019 feature/s3/manager is the transfer manager applications use today; its successor (feature/s3/transfermanager) is not yet a dependency of this module.

package e2e

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/feature/s3/manager"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/logging"
)

// sdkTimeout bounds one SDK session.
const sdkTimeout = 2 * time.Minute

// sdkClient returns an aws-sdk-go-v2 client for the server with the given
// request checksum behaviour (WhenSupported is the SDK's default since
// January 2025: CRC32 on every upload).
func sdkClient(t testing.TB, calc aws.RequestChecksumCalculation) *s3.Client {
	t.Helper()
	cfg, err := config.LoadDefaultConfig(context.Background(),
		config.WithRegion(region),
		config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider(accessKey, secretKey, "")),
		config.WithRequestChecksumCalculation(calc),
		config.WithResponseChecksumValidation(aws.ResponseChecksumValidation(calc)),
		config.WithRetryMaxAttempts(1),
		// Quiet: the default logger reports, among others, every GET
		// without a full-object checksum (ranges, multipart objects).
		config.WithLogger(logging.Nop{}))
	if err != nil {
		t.Fatalf("aws config: %v", err)
	}
	return s3.NewFromConfig(cfg, func(o *s3.Options) {
		o.BaseEndpoint = aws.String(env.endpoint)
		o.UsePathStyle = true
	})
}

// headETag returns the server's ETag of bucket/key, quotes included.
func headETag(t testing.TB, bucket, key string) string {
	t.Helper()
	out, err := sdkClient(t, aws.RequestChecksumCalculationWhenRequired).HeadObject(context.Background(),
		&s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		t.Fatalf("HeadObject %s/%s: %v", bucket, key, err)
	}
	return aws.ToString(out.ETag)
}

// apiCode returns the S3 error code of err ("" if none).
func apiCode(err error) string {
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) {
		return apiErr.ErrorCode()
	}
	return ""
}

func TestAWSSDKGoV2(t *testing.T) {
	for _, tc := range []struct {
		name string
		calc aws.RequestChecksumCalculation
	}{
		{"default-checksums", aws.RequestChecksumCalculationWhenSupported},
		{"when-required", aws.RequestChecksumCalculationWhenRequired},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			sdkSession(t, sdkClient(t, tc.calc), "e2e-sdk-"+tc.name, tc.calc)
		})
	}
}

func sdkSession(t *testing.T, client *s3.Client, bucket string, calc aws.RequestChecksumCalculation) {
	ctx, cancel := context.WithTimeout(context.Background(), sdkTimeout)
	defer cancel()
	b := aws.String(bucket)
	if _, err := client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: b}); err != nil {
		t.Fatalf("CreateBucket: %v", err)
	}

	// PutObject: ETag is the body's MD5; with default checksums the SDK
	// sends a CRC32 trailer, which the server verifies and echoes.
	put, err := client.PutObject(ctx, &s3.PutObjectInput{Bucket: b, Key: aws.String("small.txt"), Body: strings.NewReader(smallBody)})
	if err != nil {
		t.Fatalf("PutObject: %v", err)
	}
	if want := `"` + md5Hex([]byte(smallBody)) + `"`; aws.ToString(put.ETag) != want {
		t.Fatalf("PutObject ETag %s, want %s", aws.ToString(put.ETag), want)
	}
	wantCRC := crc32Base64([]byte(smallBody))
	if calc == aws.RequestChecksumCalculationWhenSupported && aws.ToString(put.ChecksumCRC32) != wantCRC {
		t.Fatalf("PutObject with default checksums: ChecksumCRC32 %q, want %q", aws.ToString(put.ChecksumCRC32), wantCRC)
	}
	// An explicit SHA-256 checksum is stored and returned on request.
	sum := sha256.Sum256([]byte(smallBody))
	wantSHA := base64.StdEncoding.EncodeToString(sum[:])
	if _, err := client.PutObject(ctx, &s3.PutObjectInput{Bucket: b, Key: aws.String("sha.txt"), Body: strings.NewReader(smallBody),
		ChecksumAlgorithm: types.ChecksumAlgorithmSha256}); err != nil {
		t.Fatalf("PutObject with SHA256: %v", err)
	}
	head, err := client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: b, Key: aws.String("sha.txt"), ChecksumMode: types.ChecksumModeEnabled})
	if err != nil {
		t.Fatalf("HeadObject: %v", err)
	}
	if aws.ToString(head.ChecksumSHA256) != wantSHA {
		t.Fatalf("HeadObject ChecksumSHA256 %q, want %q", aws.ToString(head.ChecksumSHA256), wantSHA)
	}

	// 100 MiB through the transfer manager: 7 parts of 16 MiB.
	f, err := os.Open(env.bigPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	up, err := manager.NewUploader(client, func(u *manager.Uploader) {
		u.PartSize = 16 << 20
		u.Concurrency = 4
	}).Upload(ctx, &s3.PutObjectInput{Bucket: b, Key: aws.String("dir/big.bin"), Body: f})
	if err != nil {
		t.Fatalf("manager upload: %v", err)
	}
	if !strings.HasSuffix(aws.ToString(up.ETag), `-7"`) {
		t.Fatalf("manager upload ETag %s: want 7 parts", aws.ToString(up.ETag))
	}

	// Ranges: closed, suffix, open.
	for _, rc := range []struct {
		header        string
		offset, count int64
	}{
		{"bytes=1000-1999", 1000, 1000},
		{"bytes=-100", bigSize - 100, 100},
		{fmt.Sprintf("bytes=%d-", bigSize-(5<<20)-3), bigSize - (5 << 20) - 3, 5<<20 + 3},
	} {
		got, err := client.GetObject(ctx, &s3.GetObjectInput{Bucket: b, Key: aws.String("dir/big.bin"), Range: aws.String(rc.header)})
		if err != nil {
			t.Fatalf("GetObject %s: %v", rc.header, err)
		}
		data, err := io.ReadAll(got.Body)
		got.Body.Close()
		if err != nil {
			t.Fatalf("GetObject %s: read: %v", rc.header, err)
		}
		want := make([]byte, rc.count)
		if _, err := f.ReadAt(want, rc.offset); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(data, want) {
			t.Fatalf("GetObject %s: %d bytes differing from the file's", rc.header, len(data))
		}
		if wantRange := fmt.Sprintf("bytes %d-%d/%d", rc.offset, rc.offset+rc.count-1, bigSize); aws.ToString(got.ContentRange) != wantRange {
			t.Fatalf("GetObject %s: Content-Range %q, want %q", rc.header, aws.ToString(got.ContentRange), wantRange)
		}
	}

	// The whole object, streamed (with checksum validation in default mode).
	got, err := client.GetObject(ctx, &s3.GetObjectInput{Bucket: b, Key: aws.String("dir/big.bin"), ChecksumMode: types.ChecksumModeEnabled})
	if err != nil {
		t.Fatalf("GetObject big: %v", err)
	}
	h := sha256.New()
	_, err = io.Copy(h, got.Body)
	got.Body.Close()
	if err != nil {
		t.Fatalf("GetObject big: read: %v", err)
	}
	if hex.EncodeToString(h.Sum(nil)) != env.bigSHA {
		t.Fatal("GetObject big: SHA-256 differs from the upload's")
	}

	// ListObjectsV2 in pages of 2.
	want := []string{"dir/big.bin", "sha.txt", "small.txt"}
	for i := range 5 {
		key := fmt.Sprintf("page/%d", i)
		want = append(want, key)
		if _, err := client.PutObject(ctx, &s3.PutObjectInput{Bucket: b, Key: aws.String(key), Body: strings.NewReader(key)}); err != nil {
			t.Fatalf("PutObject %s: %v", key, err)
		}
	}
	slices.Sort(want)
	var keys []string
	pages := 0
	paginator := s3.NewListObjectsV2Paginator(client, &s3.ListObjectsV2Input{Bucket: b, MaxKeys: aws.Int32(2)})
	for paginator.HasMorePages() {
		page, err := paginator.NextPage(ctx)
		if err != nil {
			t.Fatalf("ListObjectsV2 page %d: %v", pages+1, err)
		}
		pages++
		if len(page.Contents) > 2 {
			t.Fatalf("ListObjectsV2 page %d has %d keys, max-keys 2", pages, len(page.Contents))
		}
		for _, o := range page.Contents {
			keys = append(keys, aws.ToString(o.Key))
		}
	}
	if !slices.Equal(keys, want) || pages != (len(want)+1)/2 {
		t.Fatalf("ListObjectsV2 in %d pages: %q, want %q", pages, keys, want)
	}

	// A presigned GET, fetched with curl.
	presigned, err := s3.NewPresignClient(client).PresignGetObject(ctx, &s3.GetObjectInput{Bucket: b, Key: aws.String("small.txt")},
		s3.WithPresignExpires(5*time.Minute))
	if err != nil {
		t.Fatalf("PresignGetObject: %v", err)
	}
	curlFetchEquals(t, presigned.URL, env.smallSHA, "aws-sdk-go-v2 presigned GET")

	// Delete everything, then the bucket.
	var ids []types.ObjectIdentifier
	for _, k := range keys {
		ids = append(ids, types.ObjectIdentifier{Key: aws.String(k)})
	}
	del, err := client.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: b, Delete: &types.Delete{Objects: ids}})
	if err != nil {
		t.Fatalf("DeleteObjects: %v", err)
	}
	if len(del.Deleted) != len(keys) || len(del.Errors) != 0 {
		t.Fatalf("DeleteObjects: %d deleted, errors %+v", len(del.Deleted), del.Errors)
	}
	if _, err := client.GetObject(ctx, &s3.GetObjectInput{Bucket: b, Key: aws.String("small.txt")}); apiCode(err) != "NoSuchKey" {
		t.Fatalf("GetObject after DeleteObjects: %v, want NoSuchKey", err)
	}
	if _, err := client.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: b}); err != nil {
		t.Fatalf("DeleteBucket: %v", err)
	}
	if _, err := client.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: b}); err == nil {
		t.Fatal("HeadBucket after DeleteBucket succeeded")
	}
}

func crc32Base64(b []byte) string {
	sum := crc32.ChecksumIEEE(b)
	return base64.StdEncoding.EncodeToString([]byte{byte(sum >> 24), byte(sum >> 16), byte(sum >> 8), byte(sum)})
}
