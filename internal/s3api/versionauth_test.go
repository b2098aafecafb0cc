package s3api

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/b3-storage/b3/internal/meta"
)

// putVersions enables versioning on a new bucket owned by root and
// stores bodies under key in turn (each with its tagging, "" for none);
// it returns their version ids, oldest first.
func (e *testEnv) putVersions(bucket, key string, bodies ...string) []string {
	e.t.Helper()
	ctx := context.Background()
	c := e.root()
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: &bucket, ObjectOwnership: types.ObjectOwnershipObjectWriter}); err != nil {
		e.t.Fatal(err)
	}
	if _, err := c.DeletePublicAccessBlock(ctx, &s3.DeletePublicAccessBlockInput{Bucket: &bucket}); err != nil {
		e.t.Fatal(err)
	}
	e.enableVersioning(bucket)
	var ids []string
	for _, b := range bodies {
		body, tags, _ := strings.Cut(b, "?")
		out, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: &bucket, Key: &key, Body: strings.NewReader(body), Tagging: aws.String(tags)})
		if err != nil {
			e.t.Fatal(err)
		}
		ids = append(ids, aws.ToString(out.VersionId))
	}
	return ids
}

// engineID is the engine's id of a version id a client got.
func (e *testEnv) engineID(clientID string) string {
	e.t.Helper()
	id, err := e.api.versions.decode(clientID)
	if err != nil {
		e.t.Fatalf("version id %q: %v", clientID, err)
	}
	return id
}

func (e *testEnv) putPolicy(bucket string, statements ...string) {
	e.t.Helper()
	doc := strings.ReplaceAll(policyDoc(statements...), "$B", bucket)
	if _, err := e.root().PutBucketPolicy(context.Background(), &s3.PutBucketPolicyInput{Bucket: &bucket, Policy: &doc}); err != nil {
		e.t.Fatal(err)
	}
}

// anonymousDo sends an unsigned request and returns status and body.
func (e *testEnv) anonymousDo(method, path string) (int, string) {
	e.t.Helper()
	req, err := http.NewRequest(method, e.ts.URL+path, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	resp, body := e.do(req)
	return resp.StatusCode, body
}

// TestVersionsNeedVersionActions: a request naming a version is decided
// with AWS's version actions. With GetObject public and GetObjectVersion
// denied (or merely not allowed), an overwritten secret stays closed;
// DeleteObject and DeleteObjects with a version id both need
// s3:DeleteObjectVersion.
func TestVersionsNeedVersionActions(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	ids := e.putVersions("pub", "k", "secret v1", "public v2")
	e.putPolicy("pub",
		`{"Effect":"Allow","Principal":"*","Action":["s3:GetObject","s3:DeleteObject"],"Resource":"arn:aws:s3:::$B/*"}`,
		`{"Effect":"Deny","Principal":"*","Action":"s3:GetObjectVersion","Resource":"arn:aws:s3:::$B/*"}`)

	if code, body := e.anonymousDo("GET", "/pub/k"); code != 200 || body != "public v2" {
		t.Fatalf("anonymous GET of the current object: %d %q", code, body)
	}
	for _, id := range ids {
		if code, body := e.anonymousDo("GET", "/pub/k?versionId="+id); code != 403 || !strings.Contains(body, "AccessDenied") {
			t.Errorf("anonymous GET of version %s: %d %q, want AccessDenied", id, code, body)
		}
		if code, _ := e.anonymousDo("HEAD", "/pub/k?versionId="+id); code != 403 {
			t.Errorf("anonymous HEAD of version %s: %d, want 403", id, code)
		}
	}
	// Without the Deny, not allowing s3:GetObjectVersion is enough.
	e.putPolicy("pub", `{"Effect":"Allow","Principal":"*","Action":["s3:GetObject","s3:DeleteObject"],"Resource":"arn:aws:s3:::$B/*"}`)
	if code, body := e.anonymousDo("GET", "/pub/k?versionId="+ids[0]); code != 403 {
		t.Errorf("anonymous GET of version 1 with only s3:GetObject allowed: %d %q", code, body)
	}

	// DeleteObject with a version id: s3:DeleteObjectVersion, refused.
	if code, body := e.anonymousDo("DELETE", "/pub/k?versionId="+ids[0]); code != 403 {
		t.Errorf("anonymous DELETE of version 1 with only s3:DeleteObject allowed: %d %q", code, body)
	}
	out, err := e.anonymous().DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: aws.String("pub"), Delete: &types.Delete{
		Objects: []types.ObjectIdentifier{{Key: aws.String("k"), VersionId: aws.String(ids[0])}}}})
	if err != nil || len(out.Errors) != 1 || aws.ToString(out.Errors[0].Code) != "AccessDenied" {
		t.Errorf("anonymous DeleteObjects of version 1: %+v %v", out, err)
	}
	if _, err := e.store.HeadVersion("pub", "k", e.engineID(ids[0])); err != nil {
		t.Fatalf("version 1 is gone: %v", err)
	}
	// With s3:DeleteObjectVersion both paths delete it.
	e.putPolicy("pub", `{"Effect":"Allow","Principal":"*","Action":["s3:GetObject","s3:DeleteObjectVersion"],"Resource":"arn:aws:s3:::$B/*"}`)
	if code, body := e.anonymousDo("DELETE", "/pub/k?versionId="+ids[0]); code != 204 {
		t.Errorf("anonymous DELETE of version 1 with s3:DeleteObjectVersion: %d %q", code, body)
	}
	out, err = e.anonymous().DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: aws.String("pub"), Delete: &types.Delete{
		Objects: []types.ObjectIdentifier{{Key: aws.String("k"), VersionId: aws.String(ids[1])}}}})
	if err != nil || len(out.Errors) != 0 || len(out.Deleted) != 1 {
		t.Errorf("anonymous DeleteObjects of version 2 with s3:DeleteObjectVersion: %+v %v", out, err)
	}
}

// TestVersionAttributesNeedBothActions: GetObjectAttributes on a
// versioned bucket needs s3:GetObjectVersionAttributes and
// s3:GetObjectVersion, with a versionId or without (AWS's API reference,
// Permissions; review finding 6), and answers for the version named; on a
// bucket that never had versioning s3:GetObjectAttributes and
// s3:GetObject do.
func TestVersionAttributesNeedBothActions(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	ids := e.putVersions("attrs", "k", "one", "second")
	e.mustCreateBucket("plain")
	e.mustPut("plain", "k", []byte("plain"))
	attrs := func(bucket, version string) (*s3.GetObjectAttributesOutput, error) {
		in := &s3.GetObjectAttributesInput{Bucket: aws.String(bucket), Key: aws.String("k"),
			ObjectAttributes: []types.ObjectAttributes{types.ObjectAttributesObjectSize}}
		if version != "" {
			in.VersionId = &version
		}
		return e.other().GetObjectAttributes(ctx, in)
	}
	allow := func(actions string) {
		t.Helper()
		for _, b := range []string{"attrs", "plain"} {
			e.putPolicy(b, `{"Effect":"Allow","Principal":{"AWS":"other"},"Action":`+actions+`,"Resource":"arn:aws:s3:::$B/*"}`)
		}
	}
	allow(`["s3:GetObjectAttributes","s3:GetObjectVersionAttributes"]`)
	_, err := attrs("attrs", ids[0])
	wantCode(t, err, "AccessDenied")
	_, err = attrs("attrs", "")
	wantCode(t, err, "AccessDenied")
	_, err = attrs("plain", "")
	wantCode(t, err, "AccessDenied")

	// The current object's actions open a bucket without versioning
	// only.
	allow(`["s3:GetObject","s3:GetObjectAttributes"]`)
	if out, err := attrs("plain", ""); err != nil || aws.ToInt64(out.ObjectSize) != 5 {
		t.Fatalf("attributes of an object of a bucket without versioning: %+v %v", out, err)
	}
	_, err = attrs("attrs", "")
	wantCode(t, err, "AccessDenied")
	_, err = attrs("attrs", ids[0])
	wantCode(t, err, "AccessDenied")
	// Suspending versioning does not make the bucket unversioned.
	if _, err := e.root().PutBucketVersioning(ctx, &s3.PutBucketVersioningInput{Bucket: aws.String("attrs"),
		VersioningConfiguration: &types.VersioningConfiguration{Status: types.BucketVersioningStatusSuspended}}); err != nil {
		t.Fatal(err)
	}
	_, err = attrs("attrs", "")
	wantCode(t, err, "AccessDenied")

	allow(`["s3:GetObjectVersion","s3:GetObjectVersionAttributes"]`)
	if out, err := attrs("attrs", ""); err != nil || aws.ToInt64(out.ObjectSize) != 6 || aws.ToString(out.VersionId) != ids[1] {
		t.Fatalf("attributes of the current object: %+v %v", out, err)
	}
	out, err := attrs("attrs", ids[0])
	if err != nil || aws.ToInt64(out.ObjectSize) != 3 || aws.ToString(out.VersionId) != ids[0] {
		t.Fatalf("attributes of version 1: %+v %v", out, err)
	}
	_, err = attrs("plain", "")
	wantCode(t, err, "AccessDenied")
}

// TestVersionACLsAreTheVersions: a user with WRITE on the bucket who
// overwrites root's object owns the new version only: root's old version
// stays closed to them (GET, HEAD, attributes, copy source, ACL read and
// write), as its own ACL says.
func TestVersionACLsAreTheVersions(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	ids := e.putVersions("shared", "k", "root's secret")
	if _, err := e.root().PutBucketAcl(ctx, &s3.PutBucketAclInput{Bucket: aws.String("shared"),
		GrantWrite: aws.String("id=" + CanonicalID(otherUser.AccessKey))}); err != nil {
		t.Fatal(err)
	}
	o := e.other()
	put, err := o.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("shared"), Key: aws.String("k"), Body: strings.NewReader("other's")})
	if err != nil {
		t.Fatal(err)
	}
	mine, old := aws.ToString(put.VersionId), ids[0]
	b, k := aws.String("shared"), aws.String("k")

	// Their own version, by id: allowed (its ACL is theirs).
	if out, err := o.GetObject(ctx, &s3.GetObjectInput{Bucket: b, Key: k, VersionId: &mine}); err != nil {
		t.Fatalf("other's own version: %v", err)
	} else {
		out.Body.Close()
	}
	if _, err := o.GetObjectAcl(ctx, &s3.GetObjectAclInput{Bucket: b, Key: k, VersionId: &mine}); err != nil {
		t.Fatalf("ACL of other's own version: %v", err)
	}

	_, err = o.GetObject(ctx, &s3.GetObjectInput{Bucket: b, Key: k, VersionId: &old})
	wantCode(t, err, "AccessDenied")
	_, err = o.HeadObject(ctx, &s3.HeadObjectInput{Bucket: b, Key: k, VersionId: &old})
	if code := errorCode(err); code != "Forbidden" && code != "AccessDenied" {
		t.Errorf("HEAD of root's version: %q (%v)", code, err)
	}
	_, err = o.GetObjectAttributes(ctx, &s3.GetObjectAttributesInput{Bucket: b, Key: k, VersionId: &old,
		ObjectAttributes: []types.ObjectAttributes{types.ObjectAttributesObjectSize}})
	wantCode(t, err, "AccessDenied")
	_, err = o.GetObjectAcl(ctx, &s3.GetObjectAclInput{Bucket: b, Key: k, VersionId: &old})
	wantCode(t, err, "AccessDenied")
	_, err = o.PutObjectAcl(ctx, &s3.PutObjectAclInput{Bucket: b, Key: k, VersionId: &old, ACL: types.ObjectCannedACLPublicRead})
	wantCode(t, err, "AccessDenied")
	_, err = o.CopyObject(ctx, &s3.CopyObjectInput{Bucket: b, Key: aws.String("stolen"), CopySource: aws.String("shared/k?versionId=" + url.QueryEscape(old))})
	wantCode(t, err, "AccessDenied")
	up, err := o.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: b, Key: aws.String("stolen")})
	if err != nil {
		t.Fatal(err)
	}
	_, err = o.UploadPartCopy(ctx, &s3.UploadPartCopyInput{Bucket: b, Key: aws.String("stolen"), UploadId: up.UploadId,
		PartNumber: aws.Int32(1), CopySource: aws.String("shared/k?versionId=" + url.QueryEscape(old))})
	wantCode(t, err, "AccessDenied")
	// Their own version is theirs to copy.
	if _, err := o.UploadPartCopy(ctx, &s3.UploadPartCopyInput{Bucket: b, Key: aws.String("stolen"), UploadId: up.UploadId,
		PartNumber: aws.Int32(1), CopySource: aws.String("shared/k?versionId=" + url.QueryEscape(mine))}); err != nil {
		t.Fatalf("UploadPartCopy from other's own version: %v", err)
	}
	e.assertAbsent("shared", "stolen")

	v, err := e.store.HeadVersion("shared", "k", e.engineID(old))
	if err != nil || v.Grants != nil {
		t.Fatalf("root's version changed: %+v %v", v, err)
	}
	if code, body := e.anonymousDo("GET", "/shared/k?versionId="+url.QueryEscape(old)); code != 403 {
		t.Fatalf("anonymous GET of root's version: %d %q", code, body)
	}
	// Root's own READ grant on its version opens it, whatever the
	// current version's ACL says.
	if _, err := e.root().PutObjectAcl(ctx, &s3.PutObjectAclInput{Bucket: b, Key: k, VersionId: &old,
		GrantRead: aws.String("id=" + CanonicalID(otherUser.AccessKey))}); err != nil {
		t.Fatal(err)
	}
	out, err := o.GetObject(ctx, &s3.GetObjectInput{Bucket: b, Key: k, VersionId: &old})
	if err != nil {
		t.Fatalf("root's version after its READ grant to other: %v", err)
	}
	data, _ := io.ReadAll(out.Body)
	out.Body.Close()
	if string(data) != "root's secret" {
		t.Fatalf("read %q", data)
	}
}

// TestVersionTagConditions: s3:ExistingObjectTag tests the tags of the
// version addressed, not those of the current version.
func TestVersionTagConditions(t *testing.T) {
	e := newEnv(t)
	ids := e.putVersions("tagged", "k", "secret?public=no", "open?public=yes")
	e.putPolicy("tagged", `{"Effect":"Allow","Principal":"*","Action":["s3:GetObject","s3:GetObjectVersion"],"Resource":"arn:aws:s3:::$B/*",`+
		`"Condition":{"StringEquals":{"s3:ExistingObjectTag/public":"yes"}}}`)
	if code, body := e.anonymousDo("GET", "/tagged/k"); code != 200 || body != "open" {
		t.Fatalf("current version: %d %q", code, body)
	}
	if code, body := e.anonymousDo("GET", "/tagged/k?versionId="+url.QueryEscape(ids[1])); code != 200 || body != "open" {
		t.Fatalf("current version by id: %d %q", code, body)
	}
	if code, body := e.anonymousDo("GET", "/tagged/k?versionId="+url.QueryEscape(ids[0])); code != 403 {
		t.Fatalf("version tagged public=no: %d %q", code, body)
	}
}

// TestBucketWriteDeletesNoVersion: WRITE on the bucket lets its holder
// add objects and delete markers, never delete a version (root's or its
// own) nor change a version's tags, on a bucket with ACLs enabled
// (ObjectWriter) and on a legacy one (no ownership setting, where WRITE
// used to open every object write); the bucket owner and a policy Allow
// of s3:DeleteObjectVersion still may (review finding 1).
func TestBucketWriteDeletesNoVersion(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	grantWrite := func(bucket string) {
		t.Helper()
		if _, err := e.root().PutBucketAcl(ctx, &s3.PutBucketAclInput{Bucket: aws.String(bucket),
			GrantWrite: aws.String("id=" + CanonicalID(otherUser.AccessKey))}); err != nil {
			t.Fatal(err)
		}
	}
	ids := e.putVersions("vbk", "doc", "v1", "v2")
	grantWrite("vbk")
	// The legacy bucket: made as before ownership controls existed.
	if _, err := e.store.CreateBucket(&meta.Bucket{Name: "legacy", Owner: rootUser.AccessKey}); err != nil {
		t.Fatal(err)
	}
	e.enableVersioning("legacy")
	grantWrite("legacy")
	var legacyIDs []string
	for _, body := range []string{"l1", "l2"} {
		out, err := e.root().PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("legacy"), Key: aws.String("doc"), Body: strings.NewReader(body)})
		if err != nil {
			t.Fatal(err)
		}
		legacyIDs = append(legacyIDs, aws.ToString(out.VersionId))
	}

	o := e.other()
	for bucket, ids := range map[string][]string{"vbk": ids, "legacy": legacyIDs} {
		b, k := aws.String(bucket), aws.String("doc")
		_, err := o.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: b, Key: k, VersionId: &ids[0]})
		wantCode(t, err, "AccessDenied")
		out, err := o.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: b, Delete: &types.Delete{
			Objects: []types.ObjectIdentifier{{Key: k, VersionId: &ids[1]}}}})
		if err != nil || len(out.Deleted) != 0 || len(out.Errors) != 1 || aws.ToString(out.Errors[0].Code) != "AccessDenied" {
			t.Errorf("%s: other's DeleteObjects of root's version: %+v %v", bucket, out, err)
		}
		_, err = o.PutObjectTagging(ctx, &s3.PutObjectTaggingInput{Bucket: b, Key: k, VersionId: &ids[0],
			Tagging: &types.Tagging{TagSet: []types.Tag{{Key: aws.String("t"), Value: aws.String("v")}}}})
		wantCode(t, err, "AccessDenied")
		_, err = o.DeleteObjectTagging(ctx, &s3.DeleteObjectTaggingInput{Bucket: b, Key: k, VersionId: &ids[0]})
		wantCode(t, err, "AccessDenied")
		// Its own version is no different: deleting a version is for
		// the bucket owner (or a policy) to allow.
		mine, err := o.PutObject(ctx, &s3.PutObjectInput{Bucket: b, Key: aws.String("mine"), Body: strings.NewReader("x")})
		if err != nil {
			t.Fatal(err)
		}
		_, err = o.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: b, Key: aws.String("mine"), VersionId: mine.VersionId})
		wantCode(t, err, "AccessDenied")
		// A delete marker is an object write: allowed.
		if del, err := o.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: b, Key: k}); err != nil || !aws.ToBool(del.DeleteMarker) {
			t.Fatalf("%s: other's DeleteObject without versionId: %+v %v", bucket, del, err)
		}
		for _, id := range ids {
			if _, err := e.store.HeadVersion(bucket, "doc", e.engineID(id)); err != nil {
				t.Fatalf("%s: version %s is gone: %v", bucket, id, err)
			}
		}
		// The owner may; so may whom a policy allows.
		if _, err := e.root().DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: b, Key: k, VersionId: &ids[0]}); err != nil {
			t.Fatalf("%s: root's DeleteObject of a version: %v", bucket, err)
		}
		e.putPolicy(bucket, `{"Effect":"Allow","Principal":{"AWS":"other"},"Action":"s3:DeleteObjectVersion","Resource":"arn:aws:s3:::$B/*"}`)
		if _, err := o.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: b, Key: k, VersionId: &ids[1]}); err != nil {
			t.Fatalf("%s: other's DeleteObject of a version with s3:DeleteObjectVersion allowed: %v", bucket, err)
		}
	}
}
