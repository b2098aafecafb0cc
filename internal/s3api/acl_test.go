package s3api

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/b3-storage/b3/internal/meta"
)

// aclBucket creates a bucket with ACLs enabled (ObjectWriter) and no
// public access block, holding "private" and "public" (public-read).
func (e *testEnv) aclBucket(name string) {
	e.t.Helper()
	ctx := context.Background()
	c := e.root()
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: &name, ObjectOwnership: types.ObjectOwnershipObjectWriter}); err != nil {
		e.t.Fatal(err)
	}
	if _, err := c.DeletePublicAccessBlock(ctx, &s3.DeletePublicAccessBlockInput{Bucket: &name}); err != nil {
		e.t.Fatal(err)
	}
	e.mustPut(name, "private", []byte("private"))
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: &name, Key: aws.String("public"), Body: strings.NewReader("public"), ACL: types.ObjectCannedACLPublicRead}); err != nil {
		e.t.Fatal(err)
	}
}

func getObjectACL(key string) s3Call {
	return func(ctx context.Context, c *s3.Client, bucket string) error {
		_, err := c.GetObjectAcl(ctx, &s3.GetObjectAclInput{Bucket: &bucket, Key: &key})
		return err
	}
}

func putObjectACL(key string, acl types.ObjectCannedACL) s3Call {
	return func(ctx context.Context, c *s3.Client, bucket string) error {
		_, err := c.PutObjectAcl(ctx, &s3.PutObjectAclInput{Bucket: &bucket, Key: &key, ACL: acl})
		return err
	}
}

func getBucketACL(ctx context.Context, c *s3.Client, bucket string) error {
	_, err := c.GetBucketAcl(ctx, &s3.GetBucketAclInput{Bucket: &bucket})
	return err
}

// TestACLDecisions is the table ACL × request → allow/deny through the
// SDK: object ACLs (canned, grant headers, AccessControlPolicy bodies with
// canonical ids, emails and groups), bucket ACLs, and the public access
// block's IgnorePublicAcls and BlockPublicAcls.
func TestACLDecisions(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	otherID := CanonicalID(otherUser.AccessKey)
	type check = accessCheck
	cases := []struct {
		name   string
		setup  func(t *testing.T, bucket string)
		checks []check
	}{
		{name: "public-read object in a private bucket",
			checks: []check{
				{"anon", getObject("public"), ""},
				{"other", getObject("public"), ""},
				{"anon", getObject("private"), "AccessDenied"},
				{"other", getObject("private"), "AccessDenied"},
				{"anon", listObjects("", 0), "AccessDenied"},
				{"anon", getObjectACL("public"), "AccessDenied"},
				{"anon", putObject("new"), "AccessDenied"},
				{"anon", getObject("missing"), "AccessDenied"},
			}},
		{name: "grant headers by id and email",
			setup: func(t *testing.T, bucket string) {
				if _, err := e.root().PutObjectAcl(ctx, &s3.PutObjectAclInput{Bucket: &bucket, Key: aws.String("private"),
					GrantRead: aws.String(`emailAddress="other@example.com"`), GrantReadACP: aws.String(`id="` + otherID + `"`)}); err != nil {
					t.Fatal(err)
				}
			},
			checks: []check{
				{"other", getObject("private"), ""},
				{"other", getObjectACL("private"), ""},
				{"other", putObjectACL("private", types.ObjectCannedACLPublicRead), "AccessDenied"},
				{"anon", getObject("private"), "AccessDenied"},
			}},
		{name: "AccessControlPolicy body with groups",
			setup: func(t *testing.T, bucket string) {
				_, err := e.root().PutObjectAcl(ctx, &s3.PutObjectAclInput{Bucket: &bucket, Key: aws.String("private"),
					AccessControlPolicy: &types.AccessControlPolicy{Owner: &types.Owner{ID: aws.String(CanonicalID(rootUser.AccessKey))},
						Grants: []types.Grant{
							{Grantee: &types.Grantee{Type: types.TypeCanonicalUser, ID: aws.String(CanonicalID(rootUser.AccessKey))}, Permission: types.PermissionFullControl},
							{Grantee: &types.Grantee{Type: types.TypeGroup, URI: aws.String("http://acs.amazonaws.com/groups/global/AuthenticatedUsers")}, Permission: types.PermissionRead},
							{Grantee: &types.Grantee{Type: types.TypeCanonicalUser, ID: aws.String(otherID)}, Permission: types.PermissionWriteAcp},
						}}})
				if err != nil {
					t.Fatal(err)
				}
			},
			checks: []check{
				{"other", getObject("private"), ""},
				{"anon", getObject("private"), "AccessDenied"},
				{"other", getObjectACL("private"), "AccessDenied"},
				{"other", putObjectACL("private", types.ObjectCannedACLPublicRead), ""},
				{"anon", getObject("private"), ""},
			}},
		{name: "bucket public-read lists, does not open objects",
			setup: func(t *testing.T, bucket string) {
				if _, err := e.root().PutBucketAcl(ctx, &s3.PutBucketAclInput{Bucket: &bucket, ACL: types.BucketCannedACLPublicRead}); err != nil {
					t.Fatal(err)
				}
			},
			checks: []check{
				{"anon", listObjects("", 0), ""},
				{"anon", getObject("private"), "AccessDenied"},
				{"anon", getObject("missing"), "NoSuchKey"},
				{"anon", putObject("new"), "AccessDenied"},
				{"anon", getBucketACL, "AccessDenied"},
			}},
		{name: "bucket public-read-write takes writes",
			setup: func(t *testing.T, bucket string) {
				if _, err := e.root().PutBucketAcl(ctx, &s3.PutBucketAclInput{Bucket: &bucket, ACL: types.BucketCannedACLPublicReadWrite}); err != nil {
					t.Fatal(err)
				}
			},
			checks: []check{
				{"other", putObject("by-other"), ""},
				{"other", getObject("by-other"), ""},
				{"other", getObjectACL("by-other"), ""},
				{"root", getObject("by-other"), ""},
				{"anon", deleteObject("by-other"), ""},
				{"other", deletePolicy, "AccessDenied"},
			}},
		{name: "bucket authenticated-read and READ_ACP grant",
			setup: func(t *testing.T, bucket string) {
				if _, err := e.root().PutBucketAcl(ctx, &s3.PutBucketAclInput{Bucket: &bucket,
					GrantRead:    aws.String(`uri="http://acs.amazonaws.com/groups/global/AuthenticatedUsers"`),
					GrantReadACP: aws.String(`id="` + otherID + `"`)}); err != nil {
					t.Fatal(err)
				}
			},
			checks: []check{
				{"other", listObjects("", 0), ""},
				{"anon", listObjects("", 0), "AccessDenied"},
				{"other", getBucketACL, ""},
			}},
		{name: "IgnorePublicAcls",
			setup: func(t *testing.T, bucket string) {
				if _, err := e.root().PutPublicAccessBlock(ctx, &s3.PutPublicAccessBlockInput{Bucket: &bucket,
					PublicAccessBlockConfiguration: &types.PublicAccessBlockConfiguration{IgnorePublicAcls: aws.Bool(true)}}); err != nil {
					t.Fatal(err)
				}
			},
			checks: []check{
				{"anon", getObject("public"), "AccessDenied"},
				{"other", getObject("public"), "AccessDenied"},
				{"root", getObject("public"), ""},
				{"root", putObjectACL("private", types.ObjectCannedACLPublicRead), ""},
			}},
		{name: "BlockPublicAcls",
			setup: func(t *testing.T, bucket string) {
				if _, err := e.root().PutPublicAccessBlock(ctx, &s3.PutPublicAccessBlockInput{Bucket: &bucket,
					PublicAccessBlockConfiguration: &types.PublicAccessBlockConfiguration{BlockPublicAcls: aws.Bool(true)}}); err != nil {
					t.Fatal(err)
				}
			},
			checks: []check{
				{"root", putObjectACL("private", types.ObjectCannedACLPublicRead), "AccessDenied"},
				{"root", putObjectACL("private", types.ObjectCannedACLAuthenticatedRead), "AccessDenied"},
				{"root", putObject("new", withACL(types.ObjectCannedACLPublicReadWrite)), "AccessDenied"},
				{"root", putObject("new", withACL(types.ObjectCannedACLBucketOwnerRead)), ""},
				{"anon", getObject("public"), ""},
			}},
		{name: "ownership enforced ignores object ACLs",
			setup: func(t *testing.T, bucket string) {
				if _, err := e.root().PutBucketOwnershipControls(ctx, &s3.PutBucketOwnershipControlsInput{Bucket: &bucket,
					OwnershipControls: &types.OwnershipControls{Rules: []types.OwnershipControlsRule{{ObjectOwnership: types.ObjectOwnershipBucketOwnerEnforced}}}}); err != nil {
					t.Fatal(err)
				}
			},
			checks: []check{
				{"anon", getObject("public"), "AccessDenied"},
				{"root", putObjectACL("private", types.ObjectCannedACLPublicRead), "AccessControlListNotSupported"},
				{"root", putObject("new", withACL(types.ObjectCannedACLPublicRead)), "AccessControlListNotSupported"},
				{"root", putObject("new", withACL(types.ObjectCannedACLBucketOwnerFullControl)), ""},
				{"root", getObjectACL("public"), ""},
			}},
	}
	clients := map[string]*s3.Client{"root": e.root(), "other": e.other(), "anon": e.anonymous()}
	for i, c := range cases {
		bucket := fmt.Sprintf("acl%d", i)
		t.Run(c.name, func(t *testing.T) {
			e.aclBucket(bucket)
			if c.setup != nil {
				c.setup(t, bucket)
			}
			runAccessChecks(t, ctx, clients, bucket, c.checks)
		})
	}
}

// TestACLDocuments: what GetObjectAcl and GetBucketAcl report, and the
// refusals of ACLs that cannot be stored.
func TestACLDocuments(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	root := e.root()
	rootID, otherID := CanonicalID(rootUser.AccessKey), CanonicalID(otherUser.AccessKey)
	e.aclBucket("docs")
	b := aws.String("docs")
	if _, err := root.PutObjectAcl(ctx, &s3.PutObjectAclInput{Bucket: b, Key: aws.String("private"),
		GrantRead: aws.String(`id="` + otherID + `", uri="http://acs.amazonaws.com/groups/global/AllUsers"`), GrantFullControl: aws.String(`id="` + rootID + `"`)}); err != nil {
		t.Fatal(err)
	}
	acl, err := root.GetObjectAcl(ctx, &s3.GetObjectAclInput{Bucket: b, Key: aws.String("private")})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, g := range acl.Grants {
		got = append(got, fmt.Sprintf("%s %s%s %s", g.Grantee.Type, aws.ToString(g.Grantee.ID), aws.ToString(g.Grantee.URI), g.Permission))
	}
	want := []string{"CanonicalUser " + otherID + " READ", "Group http://acs.amazonaws.com/groups/global/AllUsers READ", "CanonicalUser " + rootID + " FULL_CONTROL"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") || aws.ToString(acl.Owner.ID) != rootID {
		t.Fatalf("GetObjectAcl:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, g := range acl.Grants {
		if g.Grantee.Type == types.TypeCanonicalUser && aws.ToString(g.Grantee.ID) == otherID && aws.ToString(g.Grantee.DisplayName) != "other" {
			t.Fatalf("grantee display name: %q", aws.ToString(g.Grantee.DisplayName))
		}
	}
	// The public-read canned ACL as S3 lists it.
	acl, err = root.GetObjectAcl(ctx, &s3.GetObjectAclInput{Bucket: b, Key: aws.String("public")})
	if err != nil || len(acl.Grants) != 2 || aws.ToString(acl.Grants[1].Grantee.URI) != "http://acs.amazonaws.com/groups/global/AllUsers" || acl.Grants[1].Permission != types.PermissionRead {
		t.Fatalf("public-read object ACL: %+v %v", acl, err)
	}

	for _, tc := range []struct {
		header http.Header
		body   string
		status int
		code   string
	}{
		{http.Header{"X-Amz-Acl": {"public-read"}, "X-Amz-Grant-Read": {`id="` + otherID + `"`}}, "", 400, "InvalidRequest"},
		{http.Header{"X-Amz-Acl": {"world-readable"}}, "", 400, "InvalidArgument"},
		{http.Header{"X-Amz-Grant-Read": {`id="0000"`}}, "", 400, "InvalidArgument"},
		{http.Header{"X-Amz-Grant-Read": {`emailAddress="nobody@example.com"`}}, "", 400, "UnresolvableGrantByEmailAddress"},
		{http.Header{"X-Amz-Grant-Read": {`uri="http://example.com/group"`}}, "", 400, "InvalidArgument"},
		{http.Header{"X-Amz-Grant-Read": {`nonsense`}}, "", 400, "InvalidArgument"},
		{nil, "<AccessControlPolicy><AccessControlList><Grant><Grantee><ID>" + otherID + "</ID></Grantee><Permission>EVERYTHING</Permission></Grant></AccessControlList></AccessControlPolicy>", 400, "MalformedXML"},
		{nil, "<AccessControlPolicy><AccessControlList><Grant><Grantee></Grantee><Permission>READ</Permission></Grant></AccessControlList></AccessControlPolicy>", 400, "MalformedXML"},
		{nil, "<AccessControlPolicy>", 400, "MalformedXML"},
		{nil, "", 400, "MalformedXML"},
	} {
		resp, body := e.do(e.signedRequest(rootUser, "PUT", "/docs/private?acl", []byte(tc.body), "", tc.header))
		wantXMLError(t, resp, body, tc.status, tc.code)
	}
}

// TestBucketAccessDefaults: new buckets get AWS's defaults (ownership
// enforced, public access blocked) and CreateBucket's ACL must fit them;
// buckets from before these settings keep their old behaviour.
func TestBucketAccessDefaults(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.Regions = []string{"eu-west-1"} })
	ctx := context.Background()
	root := e.root()
	e.mustCreateBucket("fresh")
	b := aws.String("fresh")
	oc, err := root.GetBucketOwnershipControls(ctx, &s3.GetBucketOwnershipControlsInput{Bucket: b})
	if err != nil || len(oc.OwnershipControls.Rules) != 1 || oc.OwnershipControls.Rules[0].ObjectOwnership != types.ObjectOwnershipBucketOwnerEnforced {
		t.Fatalf("ownership of a new bucket: %+v %v", oc, err)
	}
	pab, err := root.GetPublicAccessBlock(ctx, &s3.GetPublicAccessBlockInput{Bucket: b})
	if err != nil {
		t.Fatal(err)
	}
	if c := pab.PublicAccessBlockConfiguration; !aws.ToBool(c.BlockPublicAcls) || !aws.ToBool(c.IgnorePublicAcls) || !aws.ToBool(c.BlockPublicPolicy) || !aws.ToBool(c.RestrictPublicBuckets) {
		t.Fatalf("public access block of a new bucket: %+v", c)
	}
	_, err = root.PutBucketAcl(ctx, &s3.PutBucketAclInput{Bucket: b, ACL: types.BucketCannedACLPublicRead})
	wantCode(t, err, "AccessControlListNotSupported")
	if _, err := root.PutBucketAcl(ctx, &s3.PutBucketAclInput{Bucket: b, ACL: types.BucketCannedACLPrivate}); err != nil {
		t.Fatalf("private ACL on an enforced bucket: %v", err)
	}
	acl, err := root.GetBucketAcl(ctx, &s3.GetBucketAclInput{Bucket: b})
	if err != nil || len(acl.Grants) != 1 || acl.Grants[0].Permission != types.PermissionFullControl {
		t.Fatalf("bucket ACL: %+v %v", acl, err)
	}

	_, err = root.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("bkt1"), ACL: types.BucketCannedACLPublicRead})
	wantCode(t, err, "InvalidBucketAclWithObjectOwnership")
	_, err = root.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("bkt2"), ACL: types.BucketCannedACLPublicRead, ObjectOwnership: types.ObjectOwnershipObjectWriter})
	wantCode(t, err, "InvalidBucketAclWithBlockPublicAccessError")
	resp, body := e.do(e.signedRequest(rootUser, "PUT", "/bkt3", nil, "", http.Header{"X-Amz-Object-Ownership": {"Whoever"}}))
	wantXMLError(t, resp, body, 400, "InvalidArgument")
	if _, err := root.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("bkt4"), ACL: types.BucketCannedACLPrivate}); err != nil {
		t.Fatal(err)
	}

	// Ownership: enforcing is refused while the bucket's ACL shares it.
	e.mustCreatePublicBucket("shared", types.BucketCannedACLPublicRead)
	enforce := &s3.PutBucketOwnershipControlsInput{Bucket: aws.String("shared"),
		OwnershipControls: &types.OwnershipControls{Rules: []types.OwnershipControlsRule{{ObjectOwnership: types.ObjectOwnershipBucketOwnerEnforced}}}}
	_, err = root.PutBucketOwnershipControls(ctx, enforce)
	wantCode(t, err, "InvalidBucketAclWithObjectOwnership")
	if _, err := root.PutBucketAcl(ctx, &s3.PutBucketAclInput{Bucket: aws.String("shared"), ACL: types.BucketCannedACLPrivate}); err != nil {
		t.Fatal(err)
	}
	if _, err := root.PutBucketOwnershipControls(ctx, enforce); err != nil {
		t.Fatal(err)
	}
	resp, body = e.do(e.signedRequest(rootUser, "PUT", "/shared?ownershipControls", []byte("<OwnershipControls><Rule><ObjectOwnership>Mine</ObjectOwnership></Rule></OwnershipControls>"), "", nil))
	wantXMLError(t, resp, body, 400, "MalformedXML")
	if _, err := root.DeleteBucketOwnershipControls(ctx, &s3.DeleteBucketOwnershipControlsInput{Bucket: aws.String("shared")}); err != nil {
		t.Fatal(err)
	}
	if _, err := root.DeletePublicAccessBlock(ctx, &s3.DeletePublicAccessBlockInput{Bucket: aws.String("shared")}); err != nil {
		t.Fatal(err)
	}
	_, err = root.GetPublicAccessBlock(ctx, &s3.GetPublicAccessBlockInput{Bucket: aws.String("shared")})
	wantCode(t, err, "NoSuchPublicAccessBlockConfiguration")
	_, err = e.other().GetPublicAccessBlock(ctx, &s3.GetPublicAccessBlockInput{Bucket: b})
	wantCode(t, err, "AccessDenied")

	// CreateBucket of an owned bucket: 200 in us-east-1 (with its ACL
	// reset), BucketAlreadyOwnedByYou elsewhere, as on AWS.
	if _, err := root.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("shared")}); err != nil {
		t.Fatal(err)
	}
	if _, err := root.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("europe"),
		CreateBucketConfiguration: &types.CreateBucketConfiguration{LocationConstraint: types.BucketLocationConstraintEuWest1}}); err != nil {
		t.Fatal(err)
	}
	_, err = root.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("europe")})
	wantCode(t, err, "BucketAlreadyOwnedByYou")
	_, err = e.other().CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("shared")})
	wantCode(t, err, "BucketAlreadyExists")

	// A bucket from before ownership controls: no controls, no public
	// access block, and its public-read ACL still opens its objects.
	if _, err := e.store.CreateBucket(&meta.Bucket{Name: "legacy", Owner: rootUser.AccessKey, ACL: meta.ACLPublicRead}); err != nil {
		t.Fatal(err)
	}
	e.mustPut("legacy", "k", []byte("old"))
	_, err = root.GetBucketOwnershipControls(ctx, &s3.GetBucketOwnershipControlsInput{Bucket: aws.String("legacy")})
	wantCode(t, err, "OwnershipControlsNotFoundError")
	_, err = root.GetPublicAccessBlock(ctx, &s3.GetPublicAccessBlockInput{Bucket: aws.String("legacy")})
	wantCode(t, err, "NoSuchPublicAccessBlockConfiguration")
	anon := e.anonymous()
	for _, call := range []s3Call{getObject("k"), listObjects("", 0)} {
		if err := call(ctx, anon, "legacy"); err != nil {
			t.Fatalf("legacy public-read bucket: %v", err)
		}
	}
	for _, call := range []s3Call{putObject("x"), getObjectACL("k"), getBucketACL} {
		wantCode(t, call(ctx, anon, "legacy"), "AccessDenied")
	}
}

// TestACLOnUploadsAndCopies: the ACL asked for at CreateMultipartUpload
// reaches the completed object; CopyObject takes the ACL of its request,
// and the copy source is authorized by the source bucket's policy.
func TestACLOnUploadsAndCopies(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.MinPartSize = 100 })
	ctx := context.Background()
	root, other, anon := e.root(), e.other(), e.anonymous()
	e.aclBucket("uploads")
	create, err := root.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String("uploads"), Key: aws.String("mp"), ACL: types.ObjectCannedACLPublicRead})
	if err != nil {
		t.Fatal(err)
	}
	parts, _ := uploadParts(t, root, "uploads", "mp", aws.ToString(create.UploadId), []int{100, 10}, "")
	if _, err := root.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: aws.String("uploads"), Key: aws.String("mp"), UploadId: create.UploadId,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: parts}}); err != nil {
		t.Fatal(err)
	}
	if err := getObject("mp")(ctx, anon, "uploads"); err != nil {
		t.Fatalf("anonymous read of a public-read multipart object: %v", err)
	}
	for key, acl := range map[string]types.ObjectCannedACL{"copy-public": types.ObjectCannedACLPublicRead, "copy-private": ""} {
		if _, err := root.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String("uploads"), Key: aws.String(key), CopySource: aws.String("uploads/public"), ACL: acl}); err != nil {
			t.Fatal(err)
		}
	}
	if err := getObject("copy-public")(ctx, anon, "uploads"); err != nil {
		t.Fatalf("copy with public-read: %v", err)
	}
	wantCode(t, getObject("copy-private")(ctx, anon, "uploads"), "AccessDenied")

	e.mustCreateBucket("src")
	e.mustPut("src", "shared/k", []byte("shared"))
	e.mustPut("src", "secret", []byte("secret"))
	doc := policyDoc(`{"Effect":"Allow","Principal":{"AWS":"other"},"Action":"s3:GetObject","Resource":"arn:aws:s3:::src/shared/*"}`)
	if _, err := root.PutBucketPolicy(ctx, &s3.PutBucketPolicyInput{Bucket: aws.String("src"), Policy: &doc}); err != nil {
		t.Fatal(err)
	}
	if _, err := other.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("dest")}); err != nil {
		t.Fatal(err)
	}
	if _, err := other.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String("dest"), Key: aws.String("k"), CopySource: aws.String("src/shared/k")}); err != nil {
		t.Fatalf("copy allowed by the source's policy: %v", err)
	}
	_, err = other.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String("dest"), Key: aws.String("s"), CopySource: aws.String("src/secret")})
	wantCode(t, err, "AccessDenied")
}
