package s3api

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/minio/minio-go/v7"
)

// Who may set an Object Lock, and how far: lock headers and form fields
// ask for s3:PutObjectRetention / s3:PutObjectLegalHold beyond the write,
// every retention ends within Config.MaxRetention, and the governance
// bypass goes through decide (issue 28, items 4, 5 and 9).

// The accesses a lock asks for are those of the operations that set it
// afterwards: a header is never a cheaper way to the same lock.
func TestLockAccessMatchesOperations(t *testing.T) {
	for _, c := range []struct {
		got access
		op  *operation
	}{{accessSetRetention, &opPutObjectRetention}, {accessSetLegalHold, &opPutObjectLegalHold}} {
		if want := operationAccess(c.op); c.got != want {
			t.Errorf("%s: lock headers ask %+v, the operation %+v", c.op.name, c.got, want)
		}
	}
}

// lockWrite is a write carrying (or not) lock headers, by one client.
type lockWrite func(ctx context.Context, c *s3.Client, key string, mode types.ObjectLockMode, until *time.Time, hold types.ObjectLockLegalHoldStatus) error

var lockWrites = map[string]lockWrite{
	"PutObject": func(ctx context.Context, c *s3.Client, key string, mode types.ObjectLockMode, until *time.Time, hold types.ObjectLockLegalHoldStatus) error {
		_, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("vault"), Key: aws.String(key), Body: strings.NewReader("segment"),
			ObjectLockMode: mode, ObjectLockRetainUntilDate: until, ObjectLockLegalHoldStatus: hold})
		return err
	},
	"CopyObject": func(ctx context.Context, c *s3.Client, key string, mode types.ObjectLockMode, until *time.Time, hold types.ObjectLockLegalHoldStatus) error {
		_, err := c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String("vault"), Key: aws.String(key), CopySource: aws.String("vault/enc/source"),
			ObjectLockMode: mode, ObjectLockRetainUntilDate: until, ObjectLockLegalHoldStatus: hold})
		return err
	},
	"CreateMultipartUpload": func(ctx context.Context, c *s3.Client, key string, mode types.ObjectLockMode, until *time.Time, hold types.ObjectLockLegalHoldStatus) error {
		_, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String("vault"), Key: aws.String(key),
			ObjectLockMode: mode, ObjectLockRetainUntilDate: until, ObjectLockLegalHoldStatus: hold})
		return err
	},
}

// TestLockHeadersNeedLockPermissions is the table writer × lock asked ×
// where → outcome, for each write that takes lock headers. The policy is
// the HLS encoder's (PutObject under a prefix, for anyone), plus the lock
// actions under granted/ and a Deny of s3:PutObjectRetention under
// denied/, which stops even the bucket's owner.
func TestLockHeadersNeedLockPermissions(t *testing.T) {
	e, _ := lockEnv(t)
	ctx := context.Background()
	root := e.root()
	if _, err := root.DeletePublicAccessBlock(ctx, &s3.DeletePublicAccessBlockInput{Bucket: aws.String("vault")}); err != nil {
		t.Fatal(err)
	}
	doc := policyDoc(
		`{"Effect":"Allow","Principal":"*","Action":["s3:PutObject","s3:GetObject"],"Resource":["arn:aws:s3:::vault/enc/*","arn:aws:s3:::vault/granted/*"]}`,
		`{"Effect":"Allow","Principal":"*","Action":["s3:PutObjectRetention","s3:PutObjectLegalHold"],"Resource":"arn:aws:s3:::vault/granted/*"}`,
		`{"Effect":"Deny","Principal":"*","Action":"s3:PutObjectRetention","Resource":"arn:aws:s3:::vault/denied/*"}`)
	if _, err := root.PutBucketPolicy(ctx, &s3.PutBucketPolicyInput{Bucket: aws.String("vault"), Policy: &doc}); err != nil {
		t.Fatal(err)
	}
	e.mustPut("vault", "enc/source", []byte("segment"))
	until := aws.Time(time.Now().Add(48 * time.Hour).UTC().Truncate(time.Second))
	clients := map[string]*s3.Client{"root": root, "other": e.other(), "anon": e.anonymous()}
	cases := []struct {
		who, prefix, lock, want string
	}{
		{"anon", "enc", "none", ""},
		{"anon", "enc", "retention", "AccessDenied"},
		{"anon", "enc", "hold", "AccessDenied"},
		{"anon", "enc", "hold-off", "AccessDenied"},
		{"other", "enc", "retention", "AccessDenied"},
		{"other", "enc", "hold", "AccessDenied"},
		{"anon", "granted", "retention", ""},
		{"other", "granted", "hold", ""},
		{"root", "enc", "retention", ""},
		{"root", "denied", "none", ""},
		{"root", "denied", "retention", "AccessDenied"},
		{"root", "denied", "hold", ""},
	}
	for name, write := range lockWrites {
		for i, c := range cases {
			key := fmt.Sprintf("%s/%s-%d", c.prefix, name, i)
			t.Run(fmt.Sprintf("%s/%s/%s/%s", name, c.who, c.prefix, c.lock), func(t *testing.T) {
				var mode types.ObjectLockMode
				var retain *time.Time
				var hold types.ObjectLockLegalHoldStatus
				switch c.lock {
				case "retention":
					mode, retain = types.ObjectLockModeCompliance, until
				case "hold":
					hold = types.ObjectLockLegalHoldStatusOn
				case "hold-off":
					hold = types.ObjectLockLegalHoldStatusOff
				}
				err := write(ctx, clients[c.who], key, mode, retain, hold)
				if got := errorCode(err); got != c.want {
					t.Fatalf("want %q, got %q (%v)", c.want, got, err)
				}
				if c.want != "" && name != "CreateMultipartUpload" {
					e.assertAbsent("vault", key)
				}
			})
		}
	}

	// The bucket's default retention is the owner's choice: a writer
	// allowed s3:PutObject alone gets it without asking for more.
	setDefaultRetention(t, e, types.ObjectLockRetentionModeGovernance, 1)
	if err := lockWrites["PutObject"](ctx, clients["anon"], "enc/defaulted", "", nil, ""); err != nil {
		t.Fatal(err)
	}
	if obj, err := e.store.HeadObject("vault", "enc/defaulted"); err != nil || obj.LockMode != "GOVERNANCE" {
		t.Fatalf("default retention of an encoder's write: %+v %v", obj, err)
	}
}

// setDefaultRetention sets vault's default retention (days).
func setDefaultRetention(t *testing.T, e *testEnv, mode types.ObjectLockRetentionMode, days int32) {
	t.Helper()
	_, err := e.root().PutObjectLockConfiguration(context.Background(), &s3.PutObjectLockConfigurationInput{Bucket: aws.String("vault"),
		ObjectLockConfiguration: &types.ObjectLockConfiguration{ObjectLockEnabled: types.ObjectLockEnabledEnabled,
			Rule: &types.ObjectLockRule{DefaultRetention: &types.DefaultRetention{Mode: mode, Days: aws.Int32(days)}}}})
	if err != nil {
		t.Fatal(err)
	}
}

// TestMaxRetention: no retention ends beyond Config.MaxRetention from the
// moment it is set, whoever sets it and however.
func TestMaxRetention(t *testing.T) {
	e, _ := lockEnv(t)
	ctx := context.Background()
	c := e.root()
	// The default (100 years) refuses 2999, through each write.
	far := aws.Time(time.Date(2999, 1, 1, 0, 0, 0, 0, time.UTC))
	e.mustPut("vault", "enc/source", []byte("segment"))
	for name, write := range lockWrites {
		err := write(ctx, c, "far/"+name, types.ObjectLockModeCompliance, far, "")
		if errorCode(err) != "InvalidArgument" {
			t.Errorf("%s retained until 2999: %v", name, err)
		}
	}
	e.assertAbsent("vault", "far/PutObject")
	putConfig := func(days, years int32) error {
		r := &types.DefaultRetention{Mode: types.ObjectLockRetentionModeCompliance}
		if days > 0 {
			r.Days = aws.Int32(days)
		} else {
			r.Years = aws.Int32(years)
		}
		_, err := c.PutObjectLockConfiguration(ctx, &s3.PutObjectLockConfigurationInput{Bucket: aws.String("vault"),
			ObjectLockConfiguration: &types.ObjectLockConfiguration{ObjectLockEnabled: types.ObjectLockEnabledEnabled,
				Rule: &types.ObjectLockRule{DefaultRetention: r}}})
		return err
	}
	// S3's own limits on a default retention fit within the default.
	for _, ok := range [][2]int32{{36500, 0}, {0, 100}} {
		if err := putConfig(ok[0], ok[1]); err != nil {
			t.Fatalf("default retention of %v days/years under the default maximum: %v", ok, err)
		}
	}

	// An operator lowers it (before any request reads it).
	e.api.cfg.MaxRetention = 30 * 24 * time.Hour
	in29days := aws.Time(time.Now().Add(29 * 24 * time.Hour).UTC().Truncate(time.Second))
	in31days := aws.Time(time.Now().Add(31 * 24 * time.Hour).UTC().Truncate(time.Second))
	for name, write := range lockWrites {
		wantCode(t, write(ctx, c, "bound/"+name, types.ObjectLockModeGovernance, in31days, ""), "InvalidArgument")
		if err := write(ctx, c, "bound/"+name, types.ObjectLockModeGovernance, in29days, ""); err != nil {
			t.Fatalf("%s within the bound: %v", name, err)
		}
	}
	_, err := c.PutObjectRetention(ctx, &s3.PutObjectRetentionInput{Bucket: aws.String("vault"), Key: aws.String("bound/PutObject"),
		Retention: &types.ObjectLockRetention{Mode: types.ObjectLockRetentionModeGovernance, RetainUntilDate: in31days}})
	wantCode(t, err, "InvalidArgument")
	if obj, err := e.store.HeadObject("vault", "bound/PutObject"); err != nil || !obj.RetainUntil.Equal(*in29days) {
		t.Fatalf("retention after a refused extension: %+v %v", obj, err)
	}
	wantCode(t, putConfig(31, 0), "InvalidArgument")
	wantCode(t, putConfig(0, 1), "InvalidArgument")
	if err := putConfig(30, 0); err != nil {
		t.Fatal(err)
	}

	// A default stored under a higher maximum retains no longer than the
	// one in force when the version is written.
	e.api.cfg.MaxRetention = 7 * 24 * time.Hour
	e.mustPut("vault", "clamped", []byte("x"))
	obj, err := e.store.HeadObject("vault", "clamped")
	if err != nil || obj.LockMode != "COMPLIANCE" || obj.RetainUntil.After(time.Now().Add(7*24*time.Hour)) || obj.RetainUntil.Before(time.Now().Add(6*24*time.Hour)) {
		t.Fatalf("default retention under a lowered maximum: %+v %v", obj, err)
	}
}

// TestGovernanceBypassHonoursDeny: x-amz-bypass-governance-retention is
// s3:BypassGovernanceRetention, decided like any action: a bucket policy
// denying it stops the bucket's owner (DeleteObject, DeleteObjects,
// PutObjectRetention); an administrator may still.
func TestGovernanceBypassHonoursDeny(t *testing.T) {
	admin := User{Name: "admin", AccessKey: "AKIAADMINEXAMPLE0003", SecretKey: "adminsecret/K7MDENG/bPxRfiCYEXAMPLEKEY", Admin: true}
	e := newEnv(t, func(c *Config) { c.Users = append(c.Users, admin) })
	ctx := context.Background()
	c := e.root()
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("vault"), ObjectLockEnabledForBucket: aws.Bool(true)}); err != nil {
		t.Fatal(err)
	}
	until := aws.Time(time.Now().Add(48 * time.Hour).UTC().Truncate(time.Second))
	put := func(key string) *string {
		out, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("vault"), Key: aws.String(key), Body: strings.NewReader("x"),
			ObjectLockMode: types.ObjectLockModeGovernance, ObjectLockRetainUntilDate: until})
		if err != nil {
			t.Fatal(err)
		}
		return out.VersionId
	}
	a, b := put("a"), put("b")
	doc := policyDoc(`{"Effect":"Deny","Principal":"*","Action":"s3:BypassGovernanceRetention","Resource":"arn:aws:s3:::vault/*"}`)
	if _, err := c.PutBucketPolicy(ctx, &s3.PutBucketPolicyInput{Bucket: aws.String("vault"), Policy: &doc}); err != nil {
		t.Fatal(err)
	}
	_, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("vault"), Key: aws.String("a"), VersionId: a, BypassGovernanceRetention: aws.Bool(true)})
	wantCode(t, err, "AccessDenied")
	out, err := c.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: aws.String("vault"), BypassGovernanceRetention: aws.Bool(true),
		Delete: &types.Delete{Objects: []types.ObjectIdentifier{{Key: aws.String("a"), VersionId: a}}}})
	if err != nil || len(out.Errors) != 1 || aws.ToString(out.Errors[0].Code) != "AccessDenied" {
		t.Fatalf("batch delete with a denied bypass: %+v %v", out, err)
	}
	_, err = c.PutObjectRetention(ctx, &s3.PutObjectRetentionInput{Bucket: aws.String("vault"), Key: aws.String("a"), VersionId: a,
		BypassGovernanceRetention: aws.Bool(true), Retention: &types.ObjectLockRetention{}})
	wantCode(t, err, "AccessDenied")
	if obj, err := e.store.HeadVersion("vault", "a", e.engineID(aws.ToString(a))); err != nil || obj.LockMode != "GOVERNANCE" {
		t.Fatalf("version after denied bypasses: %+v %v", obj, err)
	}

	// The administrator is above bucket policies (b3's one rule before
	// all); and without the Deny the owner may bypass again.
	adm := e.client(admin, aws.RequestChecksumCalculationWhenSupported)
	if _, err := adm.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("vault"), Key: aws.String("a"), VersionId: a, BypassGovernanceRetention: aws.Bool(true)}); err != nil {
		t.Fatalf("administrator's bypass: %v", err)
	}
	if _, err := c.DeleteBucketPolicy(ctx, &s3.DeleteBucketPolicyInput{Bucket: aws.String("vault")}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("vault"), Key: aws.String("b"), VersionId: b, BypassGovernanceRetention: aws.Bool(true)}); err != nil {
		t.Fatalf("owner's bypass without a Deny: %v", err)
	}
}

// TestPostObjectLock: a form upload is a PUT for Object Lock: the
// bucket's default retention, the lock fields with the same permissions
// and bounds.
func TestPostObjectLock(t *testing.T) {
	e, _ := lockEnv(t)
	ctx := context.Background()
	setDefaultRetention(t, e, types.ObjectLockRetentionModeCompliance, 1)
	post := func(key string, lock ...string) (*http.Response, string) {
		target, fields := e.presignedPost("vault", key, func(p *minio.PostPolicy) error {
			for i := 0; i+1 < len(lock); i += 2 {
				if err := p.SetUserData(lock[i], lock[i+1]); err != nil {
					return err
				}
			}
			return nil
		})
		return e.postForm(target.String(), "", fields, bytes.NewReader([]byte("form data")), false)
	}
	if resp, body := post("forms/default.txt"); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("post: %d %s", resp.StatusCode, body)
	}
	obj, err := e.store.HeadObject("vault", "forms/default.txt")
	if err != nil || obj.LockMode != "COMPLIANCE" || time.Until(obj.RetainUntil) < 23*time.Hour {
		t.Fatalf("posted object's default retention: %+v %v", obj, err)
	}
	head, err := e.root().HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("vault"), Key: aws.String("forms/default.txt")})
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.root().DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("vault"), Key: aws.String("forms/default.txt"),
		VersionId: head.VersionId, BypassGovernanceRetention: aws.Bool(true)})
	wantCode(t, err, "AccessDenied")

	in2days := time.Now().Add(48 * time.Hour).UTC().Truncate(time.Second)
	lock := []string{"object-lock-mode", "GOVERNANCE", "object-lock-retain-until-date", in2days.Format(time.RFC3339), "object-lock-legal-hold", "ON"}
	if resp, body := post("forms/locked.txt", lock...); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("post with lock fields: %d %s", resp.StatusCode, body)
	}
	if obj, err := e.store.HeadObject("vault", "forms/locked.txt"); err != nil || obj.LockMode != "GOVERNANCE" || !obj.RetainUntil.Equal(in2days) || !obj.LegalHold {
		t.Fatalf("posted lock fields: %+v %v", obj, err)
	}
	resp, body := post("forms/far.txt", "object-lock-mode", "COMPLIANCE", "object-lock-retain-until-date", "2999-01-01T00:00:00Z")
	wantXMLError(t, resp, body, http.StatusBadRequest, "InvalidArgument")
	e.assertAbsent("vault", "forms/far.txt")

	doc := policyDoc(`{"Effect":"Deny","Principal":"*","Action":["s3:PutObjectRetention","s3:PutObjectLegalHold"],"Resource":"arn:aws:s3:::vault/forms/*"}`)
	if _, err := e.root().PutBucketPolicy(ctx, &s3.PutBucketPolicyInput{Bucket: aws.String("vault"), Policy: &doc}); err != nil {
		t.Fatal(err)
	}
	resp, body = post("forms/denied.txt", lock...)
	wantXMLError(t, resp, body, http.StatusForbidden, "AccessDenied")
	e.assertAbsent("vault", "forms/denied.txt")
	resp, body = post("forms/denied.txt", "object-lock-legal-hold", "ON")
	wantXMLError(t, resp, body, http.StatusForbidden, "AccessDenied")
	if resp, body := post("forms/denied.txt"); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("post without lock fields under a Deny of the lock actions: %d %s", resp.StatusCode, body)
	}
}
