package access

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/b3-storage/b3/internal/testutil"
)

// TestObjectLockAccess drives one `b3 server` (maximum retention 30 days)
// through the ways to lock an object for ever that issue 28 found: an
// anonymous encoder allowed s3:PutObject under its prefix, and nothing
// more, sends lock headers; a retention beyond the maximum, from root; a
// form upload into a bucket whose default retention is COMPLIANCE; and the
// bucket's owner bypassing GOVERNANCE against its own policy's Deny.
func TestObjectLockAccess(t *testing.T) {
	srv := testutil.StartServer(t, testutil.ServerOptions{Env: []string{"B3_MAX_RETENTION=30d"}})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	root := srv.Client(30 * time.Second)
	archivist, err := srv.Admin().AddUser(ctx, "archivist")
	if err != nil {
		t.Fatal(err)
	}
	owner := testutil.S3Client(srv.Endpoint(), archivist.AccessKey, archivist.Secret)
	bucket := aws.String("vault")
	if _, err := owner.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: bucket, ObjectLockEnabledForBucket: aws.Bool(true)}); err != nil {
		t.Fatal(err)
	}
	if _, err := owner.DeletePublicAccessBlock(ctx, &s3.DeletePublicAccessBlockInput{Bucket: bucket}); err != nil {
		t.Fatal(err)
	}
	policy := `{"Version":"2012-10-17","Statement":[
	 {"Sid":"encoder","Effect":"Allow","Principal":"*","Action":"s3:PutObject","Resource":"arn:aws:s3:::vault/cam1/*"},
	 {"Sid":"nobypass","Effect":"Deny","Principal":"*","Action":"s3:BypassGovernanceRetention","Resource":"arn:aws:s3:::vault/*"}]}`
	if _, err := owner.PutBucketPolicy(ctx, &s3.PutBucketPolicyInput{Bucket: bucket, Policy: &policy}); err != nil {
		t.Fatal(err)
	}
	wantCode := func(err error, code string) {
		t.Helper()
		if got := testutil.APICode(err); got != code {
			t.Fatalf("got %q (%v), want %q", got, err, code)
		}
	}
	wantAbsent := func(key string) {
		t.Helper()
		_, err := root.HeadObject(ctx, &s3.HeadObjectInput{Bucket: bucket, Key: aws.String(key)})
		wantCode(err, "NotFound")
	}
	in2days := time.Now().Add(48 * time.Hour).UTC().Truncate(time.Second)

	// The encoder, unsigned: its segments are stored, its locks are not.
	anonPut := func(key string, header ...string) (int, string) {
		t.Helper()
		req, _ := http.NewRequestWithContext(ctx, "PUT", srv.Endpoint()+"/vault/"+key, strings.NewReader("segment"))
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	if status, body := anonPut("cam1/seg1.ts"); status != http.StatusOK {
		t.Fatalf("anonymous segment: %d %s", status, body)
	}
	for _, lock := range [][]string{
		{"x-amz-object-lock-mode", "COMPLIANCE", "x-amz-object-lock-retain-until-date", "2999-01-01T00:00:00Z"},
		{"x-amz-object-lock-mode", "COMPLIANCE", "x-amz-object-lock-retain-until-date", in2days.Format(time.RFC3339)},
		{"x-amz-object-lock-legal-hold", "ON"},
	} {
		if status, body := anonPut("cam1/locked.ts", lock...); status == http.StatusOK {
			t.Fatalf("anonymous put with %v: %d %s", lock, status, body)
		}
		wantAbsent("cam1/locked.ts")
	}
	status, body := anonPut("cam1/locked.ts", "x-amz-object-lock-mode", "COMPLIANCE", "x-amz-object-lock-retain-until-date", in2days.Format(time.RFC3339))
	if status != http.StatusForbidden || !strings.Contains(body, "<Code>AccessDenied</Code>") {
		t.Fatalf("anonymous COMPLIANCE within the maximum: %d %s, want 403 AccessDenied", status, body)
	}

	// Beyond --max-retention, even root (an administrator) is refused.
	in31days := time.Now().Add(31 * 24 * time.Hour).UTC().Truncate(time.Second)
	_, err = root.PutObject(ctx, &s3.PutObjectInput{Bucket: bucket, Key: aws.String("far.bin"), Body: strings.NewReader("x"),
		ObjectLockMode: types.ObjectLockModeCompliance, ObjectLockRetainUntilDate: aws.Time(in31days)})
	wantCode(err, "InvalidArgument")
	wantAbsent("far.bin")
	setDefault := func(days int32) error {
		_, err := root.PutObjectLockConfiguration(ctx, &s3.PutObjectLockConfigurationInput{Bucket: bucket,
			ObjectLockConfiguration: &types.ObjectLockConfiguration{ObjectLockEnabled: types.ObjectLockEnabledEnabled,
				Rule: &types.ObjectLockRule{DefaultRetention: &types.DefaultRetention{Mode: types.ObjectLockRetentionModeCompliance, Days: aws.Int32(days)}}}})
		return err
	}
	wantCode(setDefault(31), "InvalidArgument")
	if err := setDefault(1); err != nil {
		t.Fatal(err)
	}

	// A form upload gets the default COMPLIANCE retention: its owner
	// cannot delete it.
	postForm(t, ctx, srv, archivist.AccessKey, archivist.Secret, "vault", "forms/upload.txt")
	head, err := owner.HeadObject(ctx, &s3.HeadObjectInput{Bucket: bucket, Key: aws.String("forms/upload.txt")})
	if err != nil || head.ObjectLockMode != types.ObjectLockModeCompliance || time.Until(aws.ToTime(head.ObjectLockRetainUntilDate)) < 23*time.Hour {
		t.Fatalf("posted object's lock: %+v %v", head, err)
	}
	_, err = owner.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: bucket, Key: aws.String("forms/upload.txt"), VersionId: head.VersionId})
	wantCode(err, "AccessDenied")

	// The bucket policy denies s3:BypassGovernanceRetention: the owner's
	// bypass is refused; root, above bucket policies, may.
	gov, err := owner.PutObject(ctx, &s3.PutObjectInput{Bucket: bucket, Key: aws.String("gov.txt"), Body: strings.NewReader("x"),
		ObjectLockMode: types.ObjectLockModeGovernance, ObjectLockRetainUntilDate: aws.Time(in2days)})
	if err != nil {
		t.Fatal(err)
	}
	del := &s3.DeleteObjectInput{Bucket: bucket, Key: aws.String("gov.txt"), VersionId: gov.VersionId, BypassGovernanceRetention: aws.Bool(true)}
	_, err = owner.DeleteObject(ctx, del)
	wantCode(err, "AccessDenied")
	if _, err := root.DeleteObject(ctx, del); err != nil {
		t.Fatalf("root's bypass: %v", err)
	}
}

// postForm uploads bucket/key through a browser-form POST whose policy
// minio-go signs with the given key pair, and wants 204.
func postForm(t *testing.T, ctx context.Context, srv *testutil.Server, accessKey, secret, bucket, key string) {
	t.Helper()
	status, body, err := testutil.PostForm(ctx, "http://"+srv.S3Addr, accessKey, secret, bucket, key, key, "upload.txt", []byte("form data"))
	if err != nil || status != http.StatusNoContent {
		t.Fatalf("POST %s/%s: %d %s %v", bucket, key, status, body, err)
	}
}
