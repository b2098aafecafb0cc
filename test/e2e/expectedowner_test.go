package e2e

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// TestSDKExpectedBucketOwner: a request naming another owner in
// x-amz-expected-bucket-owner (the SDK's ExpectedBucketOwner) is refused
// with 403 AccessDenied, as on AWS; naming the bucket's owner (its
// canonical user ID, as ListBuckets shows it) it runs (issue 31; Ceph
// s3-tests test_expected_bucket_owner).
func TestSDKExpectedBucketOwner(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	client := sdkClient(t, aws.RequestChecksumCalculationWhenRequired)
	const b = "e2e-expected-owner"
	ensureBucket(t, b)
	lb, err := client.ListBuckets(ctx, &s3.ListBucketsInput{})
	if err != nil {
		t.Fatalf("ListBuckets: %v", err)
	}
	owner := aws.ToString(lb.Owner.ID)
	if owner == "" {
		t.Fatal("ListBuckets: no Owner ID")
	}
	for _, tc := range []struct {
		expected, code string
	}{{owner, ""}, {owner + "foo", "AccessDenied"}, {"123456789012", "AccessDenied"}} {
		_, err := client.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(b), Key: aws.String("k"), Body: strings.NewReader("v"),
			ExpectedBucketOwner: aws.String(tc.expected)})
		if got := apiCode(err); got != tc.code || (tc.code == "" && err != nil) {
			t.Errorf("PutObject with ExpectedBucketOwner %q: %v, want %q", tc.expected, err, tc.code)
		}
		_, err = client.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(b), ExpectedBucketOwner: aws.String(tc.expected)})
		if got := apiCode(err); got != tc.code || (tc.code == "" && err != nil) {
			t.Errorf("ListObjectsV2 with ExpectedBucketOwner %q: %v, want %q", tc.expected, err, tc.code)
		}
		_, err = client.GetBucketVersioning(ctx, &s3.GetBucketVersioningInput{Bucket: aws.String(b), ExpectedBucketOwner: aws.String(tc.expected)})
		if got := apiCode(err); got != tc.code || (tc.code == "" && err != nil) {
			t.Errorf("GetBucketVersioning with ExpectedBucketOwner %q: %v, want %q", tc.expected, err, tc.code)
		}
	}
	// DeleteObjects decides per key in its handler: the owner check
	// comes first all the same.
	_, err = client.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: aws.String(b), ExpectedBucketOwner: aws.String(owner + "foo"),
		Delete: &types.Delete{Objects: []types.ObjectIdentifier{{Key: aws.String("k")}}}})
	if apiCode(err) != "AccessDenied" {
		t.Errorf("DeleteObjects with a wrong ExpectedBucketOwner: %v, want AccessDenied", err)
	}
	if _, err := client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(b), Key: aws.String("k")}); err != nil {
		t.Errorf("HeadObject after the refused DeleteObjects: %v", err)
	}
}
