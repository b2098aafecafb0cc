package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// TestSDKObjectLockDocumentErrors: the error codes of Object Lock documents
// S3 refuses (issue 31): a default retention with both Days and Years, or
// a retention with an unknown Mode, is MalformedXML; a default retention
// of zero days stays InvalidArgument, as on AWS (Ceph s3-tests
// test_object_lock_put_obj_lock_with_days_and_years,
// test_object_lock_put_obj_retention_invalid_mode).
func TestSDKObjectLockDocumentErrors(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	client := sdkClient(t, aws.RequestChecksumCalculationWhenRequired)
	const b = "e2e-lock-errors"
	if _, err := client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(b), ObjectLockEnabledForBucket: aws.Bool(true)}); err != nil && apiCode(err) != "BucketAlreadyOwnedByYou" {
		t.Fatalf("CreateBucket with Object Lock: %v", err)
	}
	putConfig := func(r types.DefaultRetention) error {
		_, err := client.PutObjectLockConfiguration(ctx, &s3.PutObjectLockConfigurationInput{Bucket: aws.String(b),
			ObjectLockConfiguration: &types.ObjectLockConfiguration{ObjectLockEnabled: types.ObjectLockEnabledEnabled,
				Rule: &types.ObjectLockRule{DefaultRetention: &r}}})
		return err
	}
	for _, tc := range []struct {
		name string
		r    types.DefaultRetention
		code string
	}{
		{"days and years", types.DefaultRetention{Mode: types.ObjectLockRetentionModeGovernance, Days: aws.Int32(1), Years: aws.Int32(1)}, "MalformedXML"},
		{"zero days", types.DefaultRetention{Mode: types.ObjectLockRetentionModeGovernance, Days: aws.Int32(0)}, "InvalidArgument"},
		{"negative years", types.DefaultRetention{Mode: types.ObjectLockRetentionModeGovernance, Years: aws.Int32(-1)}, "InvalidArgument"},
		{"unknown mode", types.DefaultRetention{Mode: "FOREVER", Days: aws.Int32(1)}, "MalformedXML"},
		{"one day", types.DefaultRetention{Mode: types.ObjectLockRetentionModeGovernance, Days: aws.Int32(1)}, ""},
	} {
		if err := putConfig(tc.r); apiCode(err) != tc.code || (tc.code == "" && err != nil) {
			t.Errorf("PutObjectLockConfiguration, %s: %v, want %q", tc.name, err, tc.code)
		}
	}
	if _, err := client.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(b), Key: aws.String("k"), Body: strings.NewReader("v")}); err != nil {
		t.Fatalf("PutObject: %v", err)
	}
	until := aws.Time(time.Now().Add(time.Hour).UTC().Truncate(time.Second))
	_, err := client.PutObjectRetention(ctx, &s3.PutObjectRetentionInput{Bucket: aws.String(b), Key: aws.String("k"),
		Retention: &types.ObjectLockRetention{Mode: "FOREVER", RetainUntilDate: until}})
	if apiCode(err) != "MalformedXML" {
		t.Errorf("PutObjectRetention with an unknown mode: %v, want MalformedXML", err)
	}
	// The unknown mode in the x-amz-object-lock-mode header stays
	// InvalidArgument.
	_, err = client.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(b), Key: aws.String("k2"), Body: strings.NewReader("v"),
		ObjectLockMode: "FOREVER", ObjectLockRetainUntilDate: until})
	if apiCode(err) != "InvalidArgument" {
		t.Errorf("PutObject with x-amz-object-lock-mode FOREVER: %v, want InvalidArgument", err)
	}
	// The default retention of one day set above holds k in GOVERNANCE
	// mode: the test's bucket stays, as the server's data is temporary.
}
