package s3api

import (
	"bytes"
	"context"
	"encoding/xml"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/minio/minio-go/v7"

	"github.com/b3-storage/b3/internal/meta"
	"github.com/b3-storage/b3/internal/policy"
)

// What a write asks of its caller beyond s3:PutObject (review of the
// issue-28 fixes, findings 2, 4 and 5): ACL headers and fields ask for
// s3:PutObjectAcl, tags for s3:PutObjectTagging, a copy of the source's
// tags for s3:GetObject(Version)Tagging on the source; the Object Lock
// condition keys are set from headers, fields and bodies; no ACL grants a
// lock; and a policy with a condition key b3 never sets is refused.

// presignedPostAs posts a form signed by user and returns the error code
// of the answer ("" on success).
func (e *testEnv) presignedPostAs(user User, bucket, key string, setup func(*minio.PostPolicy) error) string {
	e.t.Helper()
	target, fields := e.presignedPostBy(user, bucket, key, setup)
	resp, body := e.postForm(target.String(), "", fields, bytes.NewReader([]byte("form data")), false)
	if resp.StatusCode/100 == 2 {
		return ""
	}
	var doc struct{ Code string }
	_ = xml.Unmarshal([]byte(body), &doc)
	return doc.Code
}

// extraWrite is one write of key asking for an ACL ("acl") or tags
// ("tags"), or nothing more (""), by client c (user u, for forms); it
// returns the error code ("" on success).
type extraWrite func(e *testEnv, c *s3.Client, u User, key, extra string) string

var extraWrites = map[string]extraWrite{
	"PutObject": func(e *testEnv, c *s3.Client, _ User, key, extra string) string {
		in := &s3.PutObjectInput{Bucket: aws.String("drop"), Key: aws.String(key), Body: strings.NewReader("data")}
		switch extra {
		case "acl":
			in.ACL = types.ObjectCannedACLPublicRead
		case "tags":
			in.Tagging = aws.String("public=yes")
		}
		_, err := c.PutObject(context.Background(), in)
		return errorCode(err)
	},
	"CopyObject": func(e *testEnv, c *s3.Client, _ User, key, extra string) string {
		in := &s3.CopyObjectInput{Bucket: aws.String("drop"), Key: aws.String(key), CopySource: aws.String("drop/source")}
		switch extra {
		case "acl":
			in.ACL = types.ObjectCannedACLPublicRead
		case "tags":
			in.Tagging, in.TaggingDirective = aws.String("public=yes"), types.TaggingDirectiveReplace
		}
		_, err := c.CopyObject(context.Background(), in)
		return errorCode(err)
	},
	"CreateMultipartUpload": func(e *testEnv, c *s3.Client, _ User, key, extra string) string {
		in := &s3.CreateMultipartUploadInput{Bucket: aws.String("drop"), Key: aws.String(key)}
		switch extra {
		case "acl":
			in.GrantRead = aws.String(`uri="http://acs.amazonaws.com/groups/global/AllUsers"`)
		case "tags":
			in.Tagging = aws.String("public=yes")
		}
		_, err := c.CreateMultipartUpload(context.Background(), in)
		return errorCode(err)
	},
	"PostObject": func(e *testEnv, _ *s3.Client, u User, key, extra string) string {
		if u.AccessKey == "" {
			return "skip" // forms are signed; anonymous forms are not tested here
		}
		return e.presignedPostAs(u, "drop", key, func(p *minio.PostPolicy) error {
			switch extra {
			case "acl":
				return p.SetUserData("acl", "public-read")
			case "tags":
				return p.SetTagging(`<Tagging><TagSet><Tag><Key>public</Key><Value>yes</Value></Tag></TagSet></Tagging>`)
			}
			return nil
		})
	},
}

// TestWriteACLAndTagsNeedTheirActions is the table write × extra × where
// × who: under plain/ the policy allows s3:PutObject alone, under
// granted/ s3:PutObjectAcl and s3:PutObjectTagging too, under denied/ it
// denies them (the review's repros: an ACL or tags through s3:PutObject
// alone, or past an explicit Deny of the action that sets them).
func TestWriteACLAndTagsNeedTheirActions(t *testing.T) {
	e := newEnv(t)
	e.mustCreatePublicBucket("drop", types.BucketCannedACLPrivate)
	doc := policyDoc(
		`{"Effect":"Allow","Principal":"*","Action":["s3:PutObject","s3:GetObject"],"Resource":"arn:aws:s3:::drop/*"}`,
		`{"Effect":"Allow","Principal":"*","Action":["s3:PutObjectAcl","s3:PutObjectTagging"],"Resource":["arn:aws:s3:::drop/granted/*","arn:aws:s3:::drop/denied/*"]}`,
		`{"Effect":"Deny","Principal":"*","Action":["s3:PutObjectAcl","s3:PutObjectTagging"],"Resource":"arn:aws:s3:::drop/denied/*"}`)
	if _, err := e.root().PutBucketPolicy(context.Background(), &s3.PutBucketPolicyInput{Bucket: aws.String("drop"), Policy: &doc}); err != nil {
		t.Fatal(err)
	}
	e.mustPut("drop", "source", []byte("data"))
	type who struct {
		c *s3.Client
		u User
	}
	clients := map[string]who{"anon": {e.anonymous(), User{}}, "other": {e.other(), otherUser}, "root": {e.root(), rootUser}}
	for name, write := range extraWrites {
		for _, extra := range []string{"", "acl", "tags"} {
			for _, prefix := range []string{"plain", "granted", "denied"} {
				for _, w := range []string{"anon", "other", "root"} {
					// The owner (root) is allowed, but not against an
					// explicit Deny.
					want := "AccessDenied"
					switch {
					case extra == "" || prefix == "granted", w == "root" && prefix != "denied":
						want = ""
					}
					key := fmt.Sprintf("%s/%s-%s-%s", prefix, name, extra, w)
					got := write(e, clients[w].c, clients[w].u, key, extra)
					if got == "skip" {
						continue
					}
					if got != want {
						t.Errorf("%s by %s with %q under %s/: got %q, want %q", name, w, extra, prefix, got, want)
					}
					if want != "" && name != "CreateMultipartUpload" {
						if _, err := e.store.HeadObject("drop", key); err == nil {
							t.Errorf("%s: refused write stored %s", name, key)
						}
					}
				}
			}
		}
	}
}

// TestCopyOfTagsNeedsSourceTagging: CopyObject copying the source's tags
// (directive COPY, the default) reads them, so it asks for
// s3:GetObjectTagging on the source, s3:GetObjectVersionTagging for a
// source version; a source without tags, or REPLACE, asks for neither.
func TestCopyOfTagsNeedsSourceTagging(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	root := e.root()
	e.mustCreateBucket("src")
	if _, err := root.PutBucketVersioning(ctx, &s3.PutBucketVersioningInput{Bucket: aws.String("src"),
		VersioningConfiguration: &types.VersioningConfiguration{Status: types.BucketVersioningStatusEnabled}}); err != nil {
		t.Fatal(err)
	}
	put, err := root.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("src"), Key: aws.String("tagged"), Body: strings.NewReader("x"), Tagging: aws.String("secret=1")})
	if err != nil {
		t.Fatal(err)
	}
	e.mustPut("src", "plain", []byte("x"))
	e.mustCreateBucket("dst")
	for _, b := range []string{"src", "dst"} {
		doc := policyDoc(`{"Effect":"Allow","Principal":{"AWS":"other"},"Action":["s3:GetObject","s3:GetObjectVersion","s3:PutObject"],"Resource":"arn:aws:s3:::` + b + `/*"}`)
		if _, err := root.PutBucketPolicy(ctx, &s3.PutBucketPolicyInput{Bucket: aws.String(b), Policy: &doc}); err != nil {
			t.Fatal(err)
		}
	}
	other := e.other()
	cp := func(source string, directive types.TaggingDirective) string {
		in := &s3.CopyObjectInput{Bucket: aws.String("dst"), Key: aws.String("copy"), CopySource: aws.String(source), TaggingDirective: directive}
		_, err := other.CopyObject(ctx, in)
		return errorCode(err)
	}
	version := "src/tagged?versionId=" + aws.ToString(put.VersionId)
	for _, c := range []struct {
		source    string
		directive types.TaggingDirective
		want      string
	}{
		{"src/tagged", "", "AccessDenied"},
		{"src/tagged", types.TaggingDirectiveCopy, "AccessDenied"},
		{version, "", "AccessDenied"},
		{"src/tagged", types.TaggingDirectiveReplace, ""},
		{"src/plain", "", ""},
	} {
		if got := cp(c.source, c.directive); got != c.want {
			t.Errorf("copy of %s (%q): got %q, want %q", c.source, c.directive, got, c.want)
		}
	}
	doc := policyDoc(`{"Effect":"Allow","Principal":{"AWS":"other"},"Action":["s3:GetObject","s3:GetObjectVersion","s3:GetObjectTagging"],"Resource":"arn:aws:s3:::src/*"}`)
	if _, err := root.PutBucketPolicy(ctx, &s3.PutBucketPolicyInput{Bucket: aws.String("src"), Policy: &doc}); err != nil {
		t.Fatal(err)
	}
	if got := cp("src/tagged", ""); got != "" {
		t.Fatalf("copy with s3:GetObjectTagging: %q", got)
	}
	if got := cp(version, ""); got != "AccessDenied" {
		t.Fatalf("copy of a version's tags without s3:GetObjectVersionTagging: %q", got)
	}
	tags, err := root.GetObjectTagging(ctx, &s3.GetObjectTaggingInput{Bucket: aws.String("dst"), Key: aws.String("copy")})
	if err != nil || len(tags.TagSet) != 1 {
		t.Fatalf("copied tags: %+v %v", tags, err)
	}
}

// TestLockConditionKeys: the s3:object-lock-* keys are set from the lock
// headers, the form fields and the Retention and LegalHold bodies, so
// Denies on them apply (the review's repro: a 30-day COMPLIANCE lock under
// Denies of more than one day and of COMPLIANCE).
func TestLockConditionKeys(t *testing.T) {
	e, _ := lockEnv(t)
	ctx := context.Background()
	doc := policyDoc(
		`{"Effect":"Allow","Principal":{"AWS":"other"},"Action":["s3:PutObject","s3:GetObject","s3:PutObjectRetention","s3:PutObjectLegalHold"],"Resource":"arn:aws:s3:::vault/*"}`,
		`{"Effect":"Deny","Principal":"*","Action":["s3:PutObject","s3:PutObjectRetention"],"Resource":"arn:aws:s3:::vault/*","Condition":{"NumericGreaterThan":{"s3:object-lock-remaining-retention-days":"1"}}}`,
		`{"Effect":"Deny","Principal":"*","Action":["s3:PutObject","s3:PutObjectRetention"],"Resource":"arn:aws:s3:::vault/*","Condition":{"StringEquals":{"s3:object-lock-mode":"COMPLIANCE"}}}`,
		`{"Effect":"Deny","Principal":"*","Action":["s3:PutObject","s3:PutObjectRetention"],"Resource":"arn:aws:s3:::vault/*","Condition":{"DateGreaterThan":{"s3:object-lock-retain-until-date":"2100-01-01T00:00:00Z"}}}`,
		`{"Effect":"Deny","Principal":"*","Action":["s3:PutObject","s3:PutObjectLegalHold"],"Resource":"arn:aws:s3:::vault/*","Condition":{"StringEquals":{"s3:object-lock-legal-hold":"ON"}}}`)
	if _, err := e.root().PutBucketPolicy(ctx, &s3.PutBucketPolicyInput{Bucket: aws.String("vault"), Policy: &doc}); err != nil {
		t.Fatal(err)
	}
	other := e.other()
	in12h := aws.Time(time.Now().Add(12 * time.Hour).UTC().Truncate(time.Second))
	in30days := aws.Time(time.Now().Add(30 * 24 * time.Hour).UTC().Truncate(time.Second))
	for _, c := range []struct {
		name  string
		mode  types.ObjectLockMode
		until *time.Time
		hold  types.ObjectLockLegalHoldStatus
		want  string
	}{
		{"30-day compliance", types.ObjectLockModeCompliance, in30days, "", "AccessDenied"},
		{"30-day governance", types.ObjectLockModeGovernance, in30days, "", "AccessDenied"},
		{"12-hour compliance", types.ObjectLockModeCompliance, in12h, "", "AccessDenied"},
		{"12-hour governance", types.ObjectLockModeGovernance, in12h, "", ""},
		{"hold on", "", nil, types.ObjectLockLegalHoldStatusOn, "AccessDenied"},
		{"hold off", "", nil, types.ObjectLockLegalHoldStatusOff, ""},
	} {
		for name, write := range lockWrites {
			key := "cond/" + name + "/" + c.name
			if name == "CopyObject" {
				e.mustPut("vault", "enc/source", []byte("segment"))
			}
			if got := errorCode(write(ctx, other, key, c.mode, c.until, c.hold)); got != c.want {
				t.Errorf("%s with %s: got %q, want %q", name, c.name, got, c.want)
			}
		}
	}
	// The bodies of PutObjectRetention and PutObjectLegalHold.
	e.mustPut("vault", "cond/existing", []byte("x"))
	retain := func(mode types.ObjectLockRetentionMode, until *time.Time) string {
		_, err := other.PutObjectRetention(ctx, &s3.PutObjectRetentionInput{Bucket: aws.String("vault"), Key: aws.String("cond/existing"),
			Retention: &types.ObjectLockRetention{Mode: mode, RetainUntilDate: until}})
		return errorCode(err)
	}
	for _, got := range []string{retain(types.ObjectLockRetentionModeGovernance, in30days), retain(types.ObjectLockRetentionModeCompliance, in12h)} {
		if got != "AccessDenied" {
			t.Fatalf("retention under a Deny of it: %q", got)
		}
	}
	if got := retain(types.ObjectLockRetentionModeGovernance, in12h); got != "" {
		t.Fatalf("12-hour governance retention: %q", got)
	}
	hold := func(s types.ObjectLockLegalHoldStatus) string {
		_, err := other.PutObjectLegalHold(ctx, &s3.PutObjectLegalHoldInput{Bucket: aws.String("vault"), Key: aws.String("cond/existing"),
			LegalHold: &types.ObjectLockLegalHold{Status: s}})
		return errorCode(err)
	}
	if got := hold(types.ObjectLockLegalHoldStatusOn); got != "AccessDenied" {
		t.Fatalf("legal hold ON under a Deny of it: %q", got)
	}
	if got := hold(types.ObjectLockLegalHoldStatusOff); got != "" {
		t.Fatalf("legal hold OFF: %q", got)
	}
	if obj, err := e.store.HeadObject("vault", "cond/existing"); err != nil || obj.LegalHold || obj.LockMode != "GOVERNANCE" || !obj.RetainUntil.Equal(*in12h) {
		t.Fatalf("lock after the refusals: %+v %v", obj, err)
	}
	// The form fields of a POST.
	post := func(key string, fields ...string) string {
		return e.presignedPostAs(otherUser, "vault", key, func(p *minio.PostPolicy) error {
			for i := 0; i+1 < len(fields); i += 2 {
				if err := p.SetUserData(fields[i], fields[i+1]); err != nil {
					return err
				}
			}
			return nil
		})
	}
	if got := post("cond/form30", "object-lock-mode", "GOVERNANCE", "object-lock-retain-until-date", in30days.Format(time.RFC3339)); got != "AccessDenied" {
		t.Fatalf("form with a 30-day retention: %q", got)
	}
	if got := post("cond/formhold", "object-lock-legal-hold", "ON"); got != "AccessDenied" {
		t.Fatalf("form with a legal hold: %q", got)
	}
	if got := post("cond/form12", "object-lock-mode", "GOVERNANCE", "object-lock-retain-until-date", in12h.Format(time.RFC3339)); got != "" {
		t.Fatalf("form with a 12-hour retention: %q", got)
	}
}

// TestLockNotGrantedByACL: on a bucket without an ownership setting, a
// bucket WRITE grant still opens every object write (the legacy path) but
// no lock: neither the lock headers nor PutObjectRetention and
// PutObjectLegalHold.
func TestLockNotGrantedByACL(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	if _, err := e.store.CreateBucket(&meta.Bucket{Name: "legacylock", Owner: rootUser.AccessKey, Versioning: meta.VersioningEnabled, ObjectLock: true,
		Grants: []meta.Grant{{Grantee: CanonicalID(rootUser.AccessKey), Permission: policy.PermFullControl}, {Grantee: CanonicalID(otherUser.AccessKey), Permission: policy.PermWrite}}}); err != nil {
		t.Fatal(err)
	}
	other := e.other()
	until := aws.Time(time.Now().Add(time.Hour).UTC().Truncate(time.Second))
	put := func(key string, mode types.ObjectLockMode, hold types.ObjectLockLegalHoldStatus) error {
		in := &s3.PutObjectInput{Bucket: aws.String("legacylock"), Key: aws.String(key), Body: strings.NewReader("x"), ObjectLockMode: mode, ObjectLockLegalHoldStatus: hold}
		if mode != "" {
			in.ObjectLockRetainUntilDate = until
		}
		_, err := other.PutObject(ctx, in)
		return err
	}
	if err := put("plain", "", ""); err != nil {
		t.Fatalf("write under the legacy WRITE grant: %v", err)
	}
	wantCode(t, put("retained", types.ObjectLockModeGovernance, ""), "AccessDenied")
	wantCode(t, put("held", "", types.ObjectLockLegalHoldStatusOn), "AccessDenied")
	_, err := other.PutObjectRetention(ctx, &s3.PutObjectRetentionInput{Bucket: aws.String("legacylock"), Key: aws.String("plain"),
		Retention: &types.ObjectLockRetention{Mode: types.ObjectLockRetentionModeGovernance, RetainUntilDate: until}})
	wantCode(t, err, "AccessDenied")
	_, err = other.PutObjectLegalHold(ctx, &s3.PutObjectLegalHoldInput{Bucket: aws.String("legacylock"), Key: aws.String("plain"),
		LegalHold: &types.ObjectLockLegalHold{Status: types.ObjectLockLegalHoldStatusOn}})
	wantCode(t, err, "AccessDenied")
	if obj, err := e.store.HeadObject("legacylock", "plain"); err != nil || obj.LockMode != "" || obj.LegalHold {
		t.Fatalf("lock set through a WRITE grant: %+v %v", obj, err)
	}
}
