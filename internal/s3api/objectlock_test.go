package s3api

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"

	"github.com/b3-storage/b3/internal/objstore"
)

// lockEnv is a test environment whose store clock can be moved forward
// (retention ends by the store's clock), with a bucket created with
// Object Lock.
func lockEnv(t *testing.T) (*testEnv, *atomic.Int64) {
	var skew atomic.Int64
	e := newEnvStore(t, func(o *objstore.Options) {
		o.Now = func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }
	})
	if _, err := e.root().CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: aws.String("vault"),
		ObjectLockEnabledForBucket: aws.Bool(true)}); err != nil {
		t.Fatal(err)
	}
	return e, &skew
}

// Object Lock refusals, as a table: each case writes a version with a
// lock, then tries to remove it or weaken the lock; the refusal is S3's
// AccessDenied, and what was refused is still there.
func TestObjectLockRefusals(t *testing.T) {
	e, skew := lockEnv(t)
	c, other := e.root(), e.client(otherUser, aws.RequestChecksumCalculationWhenSupported)
	ctx := context.Background()
	in2days := time.Now().Add(48 * time.Hour).UTC().Truncate(time.Second)
	in3days := in2days.Add(24 * time.Hour)
	type lock struct {
		mode types.ObjectLockMode
		hold bool
	}
	cases := []struct {
		name string
		lock lock
		// act tries something on the version; "" wants success.
		act  func(key, id string) error
		want string
	}{
		{"compliance: delete version", lock{mode: types.ObjectLockModeCompliance}, func(k, id string) error {
			_, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("vault"), Key: aws.String(k), VersionId: aws.String(id)})
			return err
		}, "AccessDenied"},
		{"compliance: delete version with bypass", lock{mode: types.ObjectLockModeCompliance}, func(k, id string) error {
			_, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("vault"), Key: aws.String(k), VersionId: aws.String(id), BypassGovernanceRetention: aws.Bool(true)})
			return err
		}, "AccessDenied"},
		{"compliance: shorten", lock{mode: types.ObjectLockModeCompliance}, func(k, id string) error {
			_, err := c.PutObjectRetention(ctx, &s3.PutObjectRetentionInput{Bucket: aws.String("vault"), Key: aws.String(k), VersionId: aws.String(id),
				BypassGovernanceRetention: aws.Bool(true),
				Retention:                 &types.ObjectLockRetention{Mode: types.ObjectLockRetentionModeCompliance, RetainUntilDate: aws.Time(in2days.Add(-time.Hour))}})
			return err
		}, "AccessDenied"},
		{"compliance: to governance", lock{mode: types.ObjectLockModeCompliance}, func(k, id string) error {
			_, err := c.PutObjectRetention(ctx, &s3.PutObjectRetentionInput{Bucket: aws.String("vault"), Key: aws.String(k), VersionId: aws.String(id),
				Retention: &types.ObjectLockRetention{Mode: types.ObjectLockRetentionModeGovernance, RetainUntilDate: aws.Time(in3days)}})
			return err
		}, "AccessDenied"},
		{"compliance: extend", lock{mode: types.ObjectLockModeCompliance}, func(k, id string) error {
			_, err := c.PutObjectRetention(ctx, &s3.PutObjectRetentionInput{Bucket: aws.String("vault"), Key: aws.String(k), VersionId: aws.String(id),
				Retention: &types.ObjectLockRetention{Mode: types.ObjectLockRetentionModeCompliance, RetainUntilDate: aws.Time(in3days)}})
			return err
		}, ""},
		{"compliance: in a batch delete", lock{mode: types.ObjectLockModeCompliance}, func(k, id string) error {
			out, err := c.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: aws.String("vault"), Delete: &types.Delete{Objects: []types.ObjectIdentifier{{Key: aws.String(k), VersionId: aws.String(id)}}}})
			if err == nil && len(out.Errors) == 1 {
				return &smithy.GenericAPIError{Code: aws.ToString(out.Errors[0].Code)}
			}
			return err
		}, "AccessDenied"},
		{"governance: delete version", lock{mode: types.ObjectLockModeGovernance}, func(k, id string) error {
			_, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("vault"), Key: aws.String(k), VersionId: aws.String(id)})
			return err
		}, "AccessDenied"},
		{"governance: shorten without bypass", lock{mode: types.ObjectLockModeGovernance}, func(k, id string) error {
			_, err := c.PutObjectRetention(ctx, &s3.PutObjectRetentionInput{Bucket: aws.String("vault"), Key: aws.String(k), VersionId: aws.String(id),
				Retention: &types.ObjectLockRetention{Mode: types.ObjectLockRetentionModeGovernance, RetainUntilDate: aws.Time(in2days.Add(-time.Hour))}})
			return err
		}, "AccessDenied"},
		{"governance: bypass by someone else", lock{mode: types.ObjectLockModeGovernance}, func(k, id string) error {
			_, err := other.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("vault"), Key: aws.String(k), VersionId: aws.String(id), BypassGovernanceRetention: aws.Bool(true)})
			return err
		}, "AccessDenied"},
		{"governance: delete version with bypass", lock{mode: types.ObjectLockModeGovernance}, func(k, id string) error {
			_, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("vault"), Key: aws.String(k), VersionId: aws.String(id), BypassGovernanceRetention: aws.Bool(true)})
			return err
		}, ""},
		{"legal hold: delete version with bypass", lock{hold: true}, func(k, id string) error {
			_, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("vault"), Key: aws.String(k), VersionId: aws.String(id), BypassGovernanceRetention: aws.Bool(true)})
			return err
		}, "AccessDenied"},
		{"legal hold: lifted, then delete", lock{hold: true}, func(k, id string) error {
			if _, err := c.PutObjectLegalHold(ctx, &s3.PutObjectLegalHoldInput{Bucket: aws.String("vault"), Key: aws.String(k), VersionId: aws.String(id),
				LegalHold: &types.ObjectLockLegalHold{Status: types.ObjectLockLegalHoldStatusOff}}); err != nil {
				return err
			}
			_, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("vault"), Key: aws.String(k), VersionId: aws.String(id)})
			return err
		}, ""},
		{"compliance: ended by the clock", lock{mode: types.ObjectLockModeCompliance}, func(k, id string) error {
			skew.Store(int64(72 * time.Hour))
			defer skew.Store(0)
			_, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("vault"), Key: aws.String(k), VersionId: aws.String(id)})
			return err
		}, ""},
		{"compliance: a delete marker hides, never removes", lock{mode: types.ObjectLockModeCompliance}, func(k, id string) error {
			out, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("vault"), Key: aws.String(k)})
			if err == nil && !aws.ToBool(out.DeleteMarker) {
				t.Errorf("no delete marker")
			}
			return err
		}, ""},
	}
	for i, tc := range cases {
		key := "rec/" + strings.ReplaceAll(tc.name, " ", "_")
		in := &s3.PutObjectInput{Bucket: aws.String("vault"), Key: aws.String(key), Body: strings.NewReader("evidence")}
		if tc.lock.mode != "" {
			in.ObjectLockMode, in.ObjectLockRetainUntilDate = tc.lock.mode, aws.Time(in2days)
		}
		if tc.lock.hold {
			in.ObjectLockLegalHoldStatus = types.ObjectLockLegalHoldStatusOn
		}
		put, err := c.PutObject(ctx, in)
		if err != nil {
			t.Fatalf("%s: put: %v", tc.name, err)
		}
		id := aws.ToString(put.VersionId)
		err = tc.act(key, id)
		if tc.want == "" {
			if err != nil {
				t.Errorf("#%d %s: %v", i, tc.name, err)
			}
			continue
		}
		if errorCode(err) != tc.want {
			t.Errorf("#%d %s: %v, want %s", i, tc.name, err, tc.want)
			continue
		}
		// Refused: the version is still there, with its bytes.
		got, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("vault"), Key: aws.String(key), VersionId: aws.String(id)})
		if err != nil {
			t.Errorf("#%d %s: the refused version is gone: %v", i, tc.name, err)
			continue
		}
		got.Body.Close()
		if tc.lock.mode != "" && (got.ObjectLockMode != tc.lock.mode || !aws.ToTime(got.ObjectLockRetainUntilDate).Equal(in2days)) {
			t.Errorf("#%d %s: lock now %s until %v", i, tc.name, got.ObjectLockMode, aws.ToTime(got.ObjectLockRetainUntilDate))
		}
	}
}

// The bucket side of Object Lock: it forces versioning for good, keeps a
// default retention applied to every new version, and is refused where
// S3 refuses it.
func TestObjectLockConfiguration(t *testing.T) {
	e, _ := lockEnv(t)
	c := e.root()
	ctx := context.Background()
	ver, err := c.GetBucketVersioning(ctx, &s3.GetBucketVersioningInput{Bucket: aws.String("vault")})
	if err != nil || ver.Status != types.BucketVersioningStatusEnabled {
		t.Fatalf("versioning of a locked bucket: %+v %v", ver, err)
	}
	_, err = c.PutBucketVersioning(ctx, &s3.PutBucketVersioningInput{Bucket: aws.String("vault"),
		VersioningConfiguration: &types.VersioningConfiguration{Status: types.BucketVersioningStatusSuspended}})
	wantCode(t, err, "InvalidBucketState")
	got, err := c.GetObjectLockConfiguration(ctx, &s3.GetObjectLockConfigurationInput{Bucket: aws.String("vault")})
	if err != nil || got.ObjectLockConfiguration.ObjectLockEnabled != types.ObjectLockEnabledEnabled || got.ObjectLockConfiguration.Rule != nil {
		t.Fatalf("lock configuration: %+v %v", got, err)
	}
	if _, err := c.PutObjectLockConfiguration(ctx, &s3.PutObjectLockConfigurationInput{Bucket: aws.String("vault"),
		ObjectLockConfiguration: &types.ObjectLockConfiguration{ObjectLockEnabled: types.ObjectLockEnabledEnabled,
			Rule: &types.ObjectLockRule{DefaultRetention: &types.DefaultRetention{Mode: types.ObjectLockRetentionModeGovernance, Days: aws.Int32(2)}}}}); err != nil {
		t.Fatal(err)
	}
	put, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("vault"), Key: aws.String("cam.ts"), Body: strings.NewReader("x")})
	if err != nil {
		t.Fatal(err)
	}
	head, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("vault"), Key: aws.String("cam.ts")})
	if err != nil || head.ObjectLockMode != types.ObjectLockModeGovernance || time.Until(aws.ToTime(head.ObjectLockRetainUntilDate)) < 47*time.Hour {
		t.Fatalf("default retention: %+v %v", head, err)
	}
	ret, err := c.GetObjectRetention(ctx, &s3.GetObjectRetentionInput{Bucket: aws.String("vault"), Key: aws.String("cam.ts"), VersionId: put.VersionId})
	if err != nil || ret.Retention.Mode != types.ObjectLockRetentionModeGovernance {
		t.Fatalf("retention: %+v %v", ret, err)
	}
	_, err = c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("vault"), Key: aws.String("cam.ts"), VersionId: put.VersionId})
	wantCode(t, err, "AccessDenied")
	// A locked bucket cannot be emptied, hence not deleted.
	_, err = c.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String("vault")})
	wantCode(t, err, "BucketNotEmpty")

	// Buckets without Object Lock: refused with S3's codes.
	e.mustCreateBucket("plain")
	_, err = c.PutObjectLockConfiguration(ctx, &s3.PutObjectLockConfigurationInput{Bucket: aws.String("plain"),
		ObjectLockConfiguration: &types.ObjectLockConfiguration{ObjectLockEnabled: types.ObjectLockEnabledEnabled}})
	wantCode(t, err, "InvalidBucketState")
	_, err = c.GetObjectLockConfiguration(ctx, &s3.GetObjectLockConfigurationInput{Bucket: aws.String("plain")})
	wantCode(t, err, "ObjectLockConfigurationNotFoundError")
	_, err = c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("plain"), Key: aws.String("k"), Body: strings.NewReader("x"),
		ObjectLockMode: types.ObjectLockModeCompliance, ObjectLockRetainUntilDate: aws.Time(time.Now().Add(time.Hour))})
	wantCode(t, err, "InvalidRequest")
	e.mustPut("plain", "k", []byte("x"))
	_, err = c.GetObjectRetention(ctx, &s3.GetObjectRetentionInput{Bucket: aws.String("plain"), Key: aws.String("k")})
	wantCode(t, err, "InvalidRequest")
	// A retention date in the past, a bad mode: InvalidArgument.
	_, err = c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("vault"), Key: aws.String("k"), Body: strings.NewReader("x"),
		ObjectLockMode: types.ObjectLockModeCompliance, ObjectLockRetainUntilDate: aws.Time(time.Now().Add(-time.Hour))})
	wantCode(t, err, "InvalidArgument")
	_, err = c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("vault"), Key: aws.String("k"), Body: strings.NewReader("x"),
		ObjectLockMode: "FOREVER", ObjectLockRetainUntilDate: aws.Time(time.Now().Add(time.Hour))})
	wantCode(t, err, "InvalidArgument")
}

// Object Lock asked for at CreateMultipartUpload: checked when the upload
// is created, kept in the upload, and carried by the completed object; an
// upload without a retention of its own gets the bucket's default one.
func TestObjectLockMultipart(t *testing.T) {
	e, _ := lockEnv(t)
	c := e.root()
	ctx := context.Background()
	in2days := time.Now().Add(48 * time.Hour).UTC().Truncate(time.Second)
	upload := func(bucket, key string, in *s3.CreateMultipartUploadInput) (*s3.CompleteMultipartUploadOutput, error) {
		in.Bucket, in.Key = aws.String(bucket), aws.String(key)
		up, err := c.CreateMultipartUpload(ctx, in)
		if err != nil {
			return nil, err
		}
		part, err := c.UploadPart(ctx, &s3.UploadPartInput{Bucket: in.Bucket, Key: in.Key, UploadId: up.UploadId,
			PartNumber: aws.Int32(1), Body: strings.NewReader("recording")})
		if err != nil {
			t.Fatal(err)
		}
		return c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: in.Bucket, Key: in.Key, UploadId: up.UploadId,
			MultipartUpload: &types.CompletedMultipartUpload{Parts: []types.CompletedPart{{PartNumber: aws.Int32(1), ETag: part.ETag}}}})
	}

	done, err := upload("vault", "held.mp4", &s3.CreateMultipartUploadInput{ObjectLockMode: types.ObjectLockModeCompliance,
		ObjectLockRetainUntilDate: aws.Time(in2days), ObjectLockLegalHoldStatus: types.ObjectLockLegalHoldStatusOn})
	if err != nil {
		t.Fatal(err)
	}
	head, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("vault"), Key: aws.String("held.mp4"), VersionId: done.VersionId})
	if err != nil || head.ObjectLockMode != types.ObjectLockModeCompliance || !aws.ToTime(head.ObjectLockRetainUntilDate).Equal(in2days) ||
		head.ObjectLockLegalHoldStatus != types.ObjectLockLegalHoldStatusOn {
		t.Fatalf("completed upload's lock: %+v %v", head, err)
	}
	_, err = c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("vault"), Key: aws.String("held.mp4"), VersionId: done.VersionId,
		BypassGovernanceRetention: aws.Bool(true)})
	wantCode(t, err, "AccessDenied")

	// A legal hold alone: the retention is the bucket's default.
	if _, err := c.PutObjectLockConfiguration(ctx, &s3.PutObjectLockConfigurationInput{Bucket: aws.String("vault"),
		ObjectLockConfiguration: &types.ObjectLockConfiguration{ObjectLockEnabled: types.ObjectLockEnabledEnabled,
			Rule: &types.ObjectLockRule{DefaultRetention: &types.DefaultRetention{Mode: types.ObjectLockRetentionModeGovernance, Days: aws.Int32(1)}}}}); err != nil {
		t.Fatal(err)
	}
	done, err = upload("vault", "hold-only.mp4", &s3.CreateMultipartUploadInput{ObjectLockLegalHoldStatus: types.ObjectLockLegalHoldStatusOn})
	if err != nil {
		t.Fatal(err)
	}
	head, err = c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("vault"), Key: aws.String("hold-only.mp4"), VersionId: done.VersionId})
	if err != nil || head.ObjectLockMode != types.ObjectLockModeGovernance || time.Until(aws.ToTime(head.ObjectLockRetainUntilDate)) < 23*time.Hour ||
		head.ObjectLockLegalHoldStatus != types.ObjectLockLegalHoldStatusOn {
		t.Fatalf("legal hold with the default retention: %+v %v", head, err)
	}

	// Refused at create, with S3's codes.
	_, err = c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String("vault"), Key: aws.String("k"),
		ObjectLockMode: types.ObjectLockModeCompliance, ObjectLockRetainUntilDate: aws.Time(time.Now().Add(-time.Hour))})
	wantCode(t, err, "InvalidArgument")
	_, err = c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String("vault"), Key: aws.String("k"),
		ObjectLockMode: types.ObjectLockModeCompliance})
	wantCode(t, err, "InvalidArgument")
	e.mustCreateBucket("plain")
	_, err = c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String("plain"), Key: aws.String("k"),
		ObjectLockMode: types.ObjectLockModeCompliance, ObjectLockRetainUntilDate: aws.Time(in2days)})
	wantCode(t, err, "InvalidRequest")
}

// TestLegalHoldStatusOnHead: HEAD and GET report a version's legal hold
// once one was set, OFF included (rclone shows ON until it sees OFF), and
// nothing for a version never given one, as AWS.
func TestLegalHoldStatusOnHead(t *testing.T) {
	e, _ := lockEnv(t)
	c, ctx := e.root(), context.Background()
	key := aws.String("held")
	put := func(hold types.ObjectLockLegalHoldStatus) {
		t.Helper()
		if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("vault"), Key: key, Body: strings.NewReader("x"), ObjectLockLegalHoldStatus: hold}); err != nil {
			t.Fatal(err)
		}
	}
	setHold := func(hold types.ObjectLockLegalHoldStatus) {
		t.Helper()
		if _, err := c.PutObjectLegalHold(ctx, &s3.PutObjectLegalHoldInput{Bucket: aws.String("vault"), Key: key,
			LegalHold: &types.ObjectLockLegalHold{Status: hold}}); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name string
		act  func()
		want types.ObjectLockLegalHoldStatus
	}{
		{"never set", func() { put("") }, ""},
		{"set ON", func() { setHold(types.ObjectLockLegalHoldStatusOn) }, types.ObjectLockLegalHoldStatusOn},
		{"set OFF", func() { setHold(types.ObjectLockLegalHoldStatusOff) }, types.ObjectLockLegalHoldStatusOff},
		{"written with OFF", func() { put(types.ObjectLockLegalHoldStatusOff) }, types.ObjectLockLegalHoldStatusOff},
		{"written with none", func() { put("") }, ""},
		{"uploaded with OFF", func() {
			create, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String("vault"), Key: key,
				ObjectLockLegalHoldStatus: types.ObjectLockLegalHoldStatusOff, ChecksumAlgorithm: types.ChecksumAlgorithmCrc32})
			if err != nil {
				t.Fatal(err)
			}
			parts, _ := uploadParts(t, c, "vault", "held", aws.ToString(create.UploadId), []int{10}, types.ChecksumAlgorithmCrc32)
			if _, err := c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: aws.String("vault"), Key: key, UploadId: create.UploadId,
				MultipartUpload: &types.CompletedMultipartUpload{Parts: parts}}); err != nil {
				t.Fatal(err)
			}
		}, types.ObjectLockLegalHoldStatusOff},
	} {
		tc.act()
		head, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("vault"), Key: key})
		if err != nil || head.ObjectLockLegalHoldStatus != tc.want {
			t.Fatalf("%s: HEAD legal hold %q, %v; want %q", tc.name, head.ObjectLockLegalHoldStatus, err, tc.want)
		}
		get, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("vault"), Key: key})
		if err != nil {
			t.Fatal(err)
		}
		get.Body.Close()
		if get.ObjectLockLegalHoldStatus != tc.want {
			t.Fatalf("%s: GET legal hold %q, want %q", tc.name, get.ObjectLockLegalHoldStatus, tc.want)
		}
	}
}
