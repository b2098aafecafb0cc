package e2e

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// TestSDKOwnershipControlsWithACL: PutBucketOwnershipControls
// BucketOwnerEnforced on a bucket whose ACL grants access to others is
// refused with InvalidBucketAclWithObjectOwnership, AWS's code (it was
// InvalidRequest); once the ACL is private it is accepted (issue 31;
// Ceph s3-tests test_put_bucket_ownership_bucket_owner_enforced).
func TestSDKOwnershipControlsWithACL(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	client := sdkClient(t, aws.RequestChecksumCalculationWhenRequired)
	const b = "e2e-ownership-acl"
	if _, err := client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(b), ObjectOwnership: types.ObjectOwnershipObjectWriter}); err != nil && apiCode(err) != "BucketAlreadyOwnedByYou" {
		t.Fatalf("CreateBucket: %v", err)
	}
	if _, err := client.DeletePublicAccessBlock(ctx, &s3.DeletePublicAccessBlockInput{Bucket: aws.String(b)}); err != nil {
		t.Fatalf("DeletePublicAccessBlock: %v", err)
	}
	if _, err := client.PutBucketAcl(ctx, &s3.PutBucketAclInput{Bucket: aws.String(b), ACL: types.BucketCannedACLPublicRead}); err != nil {
		t.Fatalf("PutBucketAcl public-read: %v", err)
	}
	enforce := &s3.PutBucketOwnershipControlsInput{Bucket: aws.String(b), OwnershipControls: &types.OwnershipControls{
		Rules: []types.OwnershipControlsRule{{ObjectOwnership: types.ObjectOwnershipBucketOwnerEnforced}}}}
	if _, err := client.PutBucketOwnershipControls(ctx, enforce); apiCode(err) != "InvalidBucketAclWithObjectOwnership" {
		t.Errorf("PutBucketOwnershipControls BucketOwnerEnforced with a public-read ACL: %v, want InvalidBucketAclWithObjectOwnership", err)
	}
	if _, err := client.PutBucketAcl(ctx, &s3.PutBucketAclInput{Bucket: aws.String(b), ACL: types.BucketCannedACLPrivate}); err != nil {
		t.Fatalf("PutBucketAcl private: %v", err)
	}
	if _, err := client.PutBucketOwnershipControls(ctx, enforce); err != nil {
		t.Errorf("PutBucketOwnershipControls BucketOwnerEnforced with a private ACL: %v", err)
	}
}
