package s3api

import (
	"bytes"
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

func TestBuckets(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	root, other := e.root(), e.client(otherUser, aws.RequestChecksumCalculationWhenSupported)

	e.mustCreateBucket("photos")
	// Its owner creating it again in us-east-1 succeeds, as on AWS there
	// (TestCreateOwnedBucket covers the other regions).
	if _, err := root.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("photos")}); err != nil {
		t.Fatal(err)
	}
	_, err := other.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("photos")})
	wantCode(t, err, "BucketAlreadyExists")
	for _, bad := range []string{"ab", "Upper", "a..b", "192.168.1.1", "-dash", "under_score", "xn--punycode"} {
		_, err = root.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bad)})
		wantCode(t, err, "InvalidBucketName")
	}
	_, err = root.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("elsewhere"),
		CreateBucketConfiguration: &types.CreateBucketConfiguration{LocationConstraint: types.BucketLocationConstraintEuWest1}})
	wantCode(t, err, "InvalidLocationConstraint")

	// Each user lists only their own buckets.
	if _, err := other.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("others")}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		client *s3.Client
		want   string
	}{{root, "photos"}, {other, "others"}} {
		out, err := tc.client.ListBuckets(ctx, &s3.ListBucketsInput{})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Buckets) != 1 || aws.ToString(out.Buckets[0].Name) != tc.want {
			t.Fatalf("want only %s, got %+v", tc.want, out.Buckets)
		}
	}

	if _, err := root.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String("photos")}); err != nil {
		t.Fatal(err)
	}
	_, err = root.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String("missing")})
	wantCode(t, err, "NotFound") // HEAD has no body: the SDK names the status
	_, err = other.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String("photos")})
	wantCode(t, err, "Forbidden")

	loc, err := root.GetBucketLocation(ctx, &s3.GetBucketLocationInput{Bucket: aws.String("photos")})
	if err != nil || loc.LocationConstraint != "" {
		t.Fatalf("location: %+v %v", loc, err)
	}
	ver, err := root.GetBucketVersioning(ctx, &s3.GetBucketVersioningInput{Bucket: aws.String("photos")})
	if err != nil || ver.Status != "" {
		t.Fatalf("versioning: %+v %v", ver, err)
	}

	e.mustPut("photos", "a.jpg", []byte("x"))
	_, err = root.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String("photos")})
	wantCode(t, err, "BucketNotEmpty")
	_, err = other.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String("photos")})
	wantCode(t, err, "AccessDenied")
	if _, err := root.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("photos"), Key: aws.String("a.jpg")}); err != nil {
		t.Fatal(err)
	}
	if _, err := root.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String("photos")}); err != nil {
		t.Fatal(err)
	}
	_, err = root.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String("photos")})
	wantCode(t, err, "NoSuchBucket")
}

func TestValidBucketName(t *testing.T) {
	for name, want := range map[string]bool{
		"abc": true, "my.bucket-1": true, "a-b.c": true, "123": true,
		"ab": false, "ABC": false, "a_b": false, ".abc": false, "abc-": false, "a..b": false,
		"a.-b": false, "10.0.0.1": false, "xn--abc": false, "abc-s3alias": false,
		"a234567890123456789012345678901234567890123456789012345678901234": false,
		"a\x00b": false,
	} {
		if got := validBucketName(name); got != want {
			t.Errorf("validBucketName(%q) = %v, want %v", name, got, want)
		}
	}
}

// TestRegions: with --regions, a client configured for one of the listed
// regions signs for it and creates buckets there; other regions are
// refused as before.
func TestRegions(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.Regions = []string{"eu-west-1", "eu-central-1"} })
	ctx := context.Background()
	clientIn := func(region string) *s3.Client {
		return s3.New(s3.Options{Region: region, BaseEndpoint: aws.String(e.ts.URL), UsePathStyle: true, RetryMaxAttempts: 1, HTTPClient: e.ts.Client(),
			Credentials: credentials.NewStaticCredentialsProvider(rootUser.AccessKey, rootUser.SecretKey, "")})
	}
	eu := clientIn("eu-west-1")
	if _, err := eu.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("in-eu"),
		CreateBucketConfiguration: &types.CreateBucketConfiguration{LocationConstraint: types.BucketLocationConstraintEuWest1}}); err != nil {
		t.Fatal(err)
	}
	loc, err := eu.GetBucketLocation(ctx, &s3.GetBucketLocationInput{Bucket: aws.String("in-eu")})
	if err != nil || loc.LocationConstraint != types.BucketLocationConstraintEuWest1 {
		t.Fatalf("location %q, %v", loc.LocationConstraint, err)
	}
	head, err := e.root().HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String("in-eu")})
	if err != nil || aws.ToString(head.BucketRegion) != "eu-west-1" {
		t.Fatalf("head bucket region %q, %v", aws.ToString(head.BucketRegion), err)
	}
	// The server's own region and no constraint still work.
	if _, err := e.root().CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("home")}); err != nil {
		t.Fatal(err)
	}
	_, err = eu.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("in-asia"),
		CreateBucketConfiguration: &types.CreateBucketConfiguration{LocationConstraint: types.BucketLocationConstraintApSouth1}})
	wantCode(t, err, "InvalidLocationConstraint")
	_, err = clientIn("ap-south-1").ListBuckets(ctx, &s3.ListBucketsInput{})
	wantCode(t, err, "AuthorizationHeaderMalformed")
}

// TestDeleteBucketWithUploadsInProgress: multipart uploads in progress do
// not keep a bucket, as on AWS (objects and versions do): DeleteBucket
// removes it with them, and a bucket made again under the name has no
// upload, and the old upload id is gone.
func TestDeleteBucketWithUploadsInProgress(t *testing.T) {
	e := newEnv(t)
	ctx, c := context.Background(), e.root()
	e.mustCreateBucket("pending")
	var uploadIDs []*string
	for _, key := range []string{"a", "b", "a"} {
		create, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String("pending"), Key: aws.String(key)})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.UploadPart(ctx, &s3.UploadPartInput{Bucket: aws.String("pending"), Key: aws.String(key), UploadId: create.UploadId,
			PartNumber: aws.Int32(1), Body: bytes.NewReader(randomBytes(4<<10, uint64(len(uploadIDs))))}); err != nil {
			t.Fatal(err)
		}
		uploadIDs = append(uploadIDs, create.UploadId)
	}
	if _, err := c.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String("pending")}); err != nil {
		t.Fatalf("DeleteBucket with uploads in progress only: %v", err)
	}
	_, err := c.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String("pending")})
	wantCode(t, err, "NotFound")
	e.mustCreateBucket("pending")
	list, err := c.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: aws.String("pending")})
	if err != nil || len(list.Uploads) != 0 {
		t.Fatalf("uploads of the bucket made again: %+v, %v", list, err)
	}
	_, err = c.ListParts(ctx, &s3.ListPartsInput{Bucket: aws.String("pending"), Key: aws.String("a"), UploadId: uploadIDs[0]})
	wantCode(t, err, "NoSuchUpload")
	// An object still keeps the bucket, whatever its uploads.
	e.mustPut("pending", "kept", []byte("x"))
	if _, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String("pending"), Key: aws.String("c")}); err != nil {
		t.Fatal(err)
	}
	_, err = c.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String("pending")})
	wantCode(t, err, "BucketNotEmpty")
}
