package access

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/b3-storage/b3/internal/testutil"
)

// TestVersionsAuthorizedAsVersions drives a `b3 server` process as the
// security review did (issue 28, item 3): a request naming a version is
// decided with AWS's version actions, against that version's ACL.
//   - With GetObject public and an explicit Deny on s3:GetObjectVersion,
//     an anonymous GET or HEAD ?versionId of an overwritten secret is
//     AccessDenied.
//   - An anonymous DELETE ?versionId is refused when only s3:DeleteObject
//     is allowed, as DeleteObjects with the same rights is.
//   - A user with WRITE on the bucket who overwrites root's object can
//     neither read, copy, delete, nor read or change the ACL of root's
//     version.
func TestVersionsAuthorizedAsVersions(t *testing.T) {
	srv := testutil.StartServer(t, testutil.ServerOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	root := srv.Client(30 * time.Second)
	anon := testutil.S3Client(srv.Endpoint(), "", "")
	writer, err := srv.Admin().AddUser(ctx, "writer")
	if err != nil {
		t.Fatal(err)
	}
	w := testutil.S3Client(srv.Endpoint(), writer.AccessKey, writer.Secret)
	raw := func(method, path string) (int, string) {
		t.Helper()
		req, err := http.NewRequestWithContext(ctx, method, srv.Endpoint()+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	wantCode := func(what string, err error, codes ...string) {
		t.Helper()
		got := testutil.APICode(err)
		for _, c := range codes {
			if got == c {
				return
			}
		}
		t.Errorf("%s: got %q (%v), want %v", what, got, err, codes)
	}
	newBucket := func(name string) {
		t.Helper()
		b := aws.String(name)
		if _, err := root.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: b, ObjectOwnership: types.ObjectOwnershipObjectWriter}); err != nil {
			t.Fatal(err)
		}
		if _, err := root.DeletePublicAccessBlock(ctx, &s3.DeletePublicAccessBlockInput{Bucket: b}); err != nil {
			t.Fatal(err)
		}
		if _, err := root.PutBucketVersioning(ctx, &s3.PutBucketVersioningInput{Bucket: b,
			VersioningConfiguration: &types.VersioningConfiguration{Status: types.BucketVersioningStatusEnabled}}); err != nil {
			t.Fatal(err)
		}
	}
	put := func(c *s3.Client, bucket, key, body string) string {
		t.Helper()
		out, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: strings.NewReader(body)})
		if err != nil {
			t.Fatal(err)
		}
		return aws.ToString(out.VersionId)
	}
	putPolicy := func(bucket, doc string) {
		t.Helper()
		doc = strings.ReplaceAll(doc, "$B", bucket)
		if _, err := root.PutBucketPolicy(ctx, &s3.PutBucketPolicyInput{Bucket: aws.String(bucket), Policy: &doc}); err != nil {
			t.Fatal(err)
		}
	}

	t.Run("public GetObject, denied GetObjectVersion", func(t *testing.T) {
		newBucket("pub")
		secret := put(root, "pub", "k", "old secret")
		put(root, "pub", "k", "public")
		putPolicy("pub", `{"Version":"2012-10-17","Statement":[
		 {"Effect":"Allow","Principal":"*","Action":["s3:GetObject","s3:DeleteObject"],"Resource":"arn:aws:s3:::$B/*"},
		 {"Effect":"Deny","Principal":"*","Action":"s3:GetObjectVersion","Resource":"arn:aws:s3:::$B/*"}]}`)
		if code, body := raw("GET", "/pub/k"); code != 200 || body != "public" {
			t.Fatalf("anonymous GET of the current object: %d %q", code, body)
		}
		v := "?versionId=" + url.QueryEscape(secret)
		if code, body := raw("GET", "/pub/k"+v); code != 403 || !strings.Contains(body, "<Code>AccessDenied</Code>") {
			t.Errorf("anonymous GET of the old version: %d %q", code, body)
		}
		if code, _ := raw("HEAD", "/pub/k"+v); code != 403 {
			t.Errorf("anonymous HEAD of the old version: %d", code)
		}
		// Deleting a version needs s3:DeleteObjectVersion, on both paths.
		if code, body := raw("DELETE", "/pub/k"+v); code != 403 {
			t.Errorf("anonymous DELETE of the old version: %d %q", code, body)
		}
		out, err := anon.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: aws.String("pub"), Delete: &types.Delete{
			Objects: []types.ObjectIdentifier{{Key: aws.String("k"), VersionId: aws.String(secret)}}}})
		if err != nil || len(out.Errors) != 1 || aws.ToString(out.Errors[0].Code) != "AccessDenied" {
			t.Errorf("anonymous DeleteObjects of the old version: %+v %v", out, err)
		}
		if _, err := root.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("pub"), Key: aws.String("k"), VersionId: aws.String(secret)}); err != nil {
			t.Fatalf("the old version is gone: %v", err)
		}
	})

	// Version ids are opaque: the engine's counter, which they were, is
	// refused as malformed; the ids handed out stay valid across a
	// restart (the key is kept in the data directory).
	t.Run("version ids cannot be guessed", func(t *testing.T) {
		newBucket("ids")
		first := put(root, "ids", "k", "first")
		second := put(root, "ids", "k", "second")
		for _, id := range []string{first, second} {
			if len(id) != 32 || strings.Trim(id, "0123456789abcdef") != "" {
				t.Fatalf("version id %q is not 32 hex digits", id)
			}
		}
		putPolicy("ids", `{"Version":"2012-10-17","Statement":[
		 {"Effect":"Allow","Principal":"*","Action":["s3:GetObjectVersion","s3:DeleteObjectVersion"],"Resource":"arn:aws:s3:::$B/*"}]}`)
		for _, guess := range []string{"0000000000000001", "0000000000000002", "0000000000000003", "0000000100000001"} {
			if code, body := raw("GET", "/ids/k?versionId="+guess); code != 400 || !strings.Contains(body, "<Code>InvalidArgument</Code>") {
				t.Errorf("anonymous GET of guessed version %s: %d %q", guess, code, body)
			}
			if code, body := raw("DELETE", "/ids/k?versionId="+guess); code != 400 {
				t.Errorf("anonymous DELETE of guessed version %s: %d %q", guess, code, body)
			}
		}
		if err := srv.Restart(); err != nil {
			t.Fatal(err)
		}
		if code, body := raw("GET", "/ids/k?versionId="+url.QueryEscape(first)); code != 200 || body != "first" {
			t.Fatalf("GET of version 1 by its id after a restart: %d %q", code, body)
		}
	})

	t.Run("bucket WRITE does not open others' versions", func(t *testing.T) {
		newBucket("shared")
		b, k := aws.String("shared"), aws.String("k")
		if _, err := root.PutBucketAcl(ctx, &s3.PutBucketAclInput{Bucket: b, GrantWrite: aws.String(`id="` + writer.CanonicalID + `"`)}); err != nil {
			t.Fatal(err)
		}
		old := put(root, "shared", "k", "root's secret")
		mine := put(w, "shared", "k", "writer's")
		if out, err := w.GetObject(ctx, &s3.GetObjectInput{Bucket: b, Key: k, VersionId: &mine}); err != nil {
			t.Fatalf("writer's own version: %v", err)
		} else {
			out.Body.Close()
		}
		_, err := w.GetObject(ctx, &s3.GetObjectInput{Bucket: b, Key: k, VersionId: &old})
		wantCode("GET of root's version", err, "AccessDenied")
		_, err = w.HeadObject(ctx, &s3.HeadObjectInput{Bucket: b, Key: k, VersionId: &old})
		wantCode("HEAD of root's version", err, "Forbidden", "AccessDenied")
		_, err = w.GetObjectAcl(ctx, &s3.GetObjectAclInput{Bucket: b, Key: k, VersionId: &old})
		wantCode("GetObjectAcl of root's version", err, "AccessDenied")
		_, err = w.PutObjectAcl(ctx, &s3.PutObjectAclInput{Bucket: b, Key: k, VersionId: &old, ACL: types.ObjectCannedACLPublicRead})
		wantCode("PutObjectAcl of root's version", err, "AccessDenied")
		_, err = w.CopyObject(ctx, &s3.CopyObjectInput{Bucket: b, Key: aws.String("stolen"), CopySource: aws.String("shared/k?versionId=" + url.QueryEscape(old))})
		wantCode("CopyObject from root's version", err, "AccessDenied")
		// Nor delete them: WRITE gives s3:DeleteObjectVersion to the
		// bucket owner only (review finding 1).
		_, err = w.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: b, Key: k, VersionId: &old})
		wantCode("DeleteObject of root's version", err, "AccessDenied")
		del, err := w.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: b, Delete: &types.Delete{
			Objects: []types.ObjectIdentifier{{Key: k, VersionId: &old}, {Key: k, VersionId: &mine}}}})
		if err != nil || len(del.Deleted) != 0 || len(del.Errors) != 2 {
			t.Errorf("writer's DeleteObjects of both versions: %+v %v", del, err)
		}
		if code, body := raw("GET", "/shared/k?versionId="+url.QueryEscape(old)); code != 403 {
			t.Errorf("anonymous GET of root's version after the PutObjectAcl attempt: %d %q", code, body)
		}
		if _, err := root.HeadObject(ctx, &s3.HeadObjectInput{Bucket: b, Key: aws.String("stolen")}); testutil.APICode(err) != "NotFound" {
			t.Errorf("the copy exists: %v", err)
		}
	})
}
