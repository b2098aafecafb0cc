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
)

// anonymous is an SDK client that does not sign its requests.
func (e *testEnv) anonymous() *s3.Client {
	return s3.New(s3.Options{
		Region: testRegion, Credentials: aws.AnonymousCredentials{}, BaseEndpoint: aws.String(e.ts.URL),
		UsePathStyle: true, RetryMaxAttempts: 1, HTTPClient: e.ts.Client(),
	})
}

func (e *testEnv) other() *s3.Client {
	return e.client(otherUser, aws.RequestChecksumCalculationWhenSupported)
}

// s3Call is one request of a decision table; it returns the request's
// error (nil: allowed).
type s3Call func(ctx context.Context, c *s3.Client, bucket string) error

func getObject(key string) s3Call {
	return func(ctx context.Context, c *s3.Client, bucket string) error {
		out, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: &bucket, Key: &key})
		if err == nil {
			out.Body.Close()
		}
		return err
	}
}

func putObject(key string, opts ...func(*s3.PutObjectInput)) s3Call {
	return func(ctx context.Context, c *s3.Client, bucket string) error {
		in := &s3.PutObjectInput{Bucket: &bucket, Key: &key, Body: strings.NewReader("data")}
		for _, o := range opts {
			o(in)
		}
		_, err := c.PutObject(ctx, in)
		return err
	}
}

func deleteObject(key string) s3Call {
	return func(ctx context.Context, c *s3.Client, bucket string) error {
		_, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &bucket, Key: &key})
		return err
	}
}

func listObjects(prefix string, maxKeys int32) s3Call {
	return func(ctx context.Context, c *s3.Client, bucket string) error {
		in := &s3.ListObjectsV2Input{Bucket: &bucket, Prefix: aws.String(prefix)}
		if maxKeys > 0 {
			in.MaxKeys = aws.Int32(maxKeys)
		}
		_, err := c.ListObjectsV2(ctx, in)
		return err
	}
}

func deletePolicy(ctx context.Context, c *s3.Client, bucket string) error {
	_, err := c.DeleteBucketPolicy(ctx, &s3.DeleteBucketPolicyInput{Bucket: &bucket})
	return err
}

func withTagging(v string) func(*s3.PutObjectInput) {
	return func(in *s3.PutObjectInput) { in.Tagging = aws.String(v) }
}

func withACL(acl types.ObjectCannedACL) func(*s3.PutObjectInput) {
	return func(in *s3.PutObjectInput) { in.ACL = acl }
}

// policyDoc wraps statements into a policy for bucket "$B" (replaced by
// the case's bucket).
func policyDoc(statements ...string) string {
	return `{"Version":"2012-10-17","Statement":[` + strings.Join(statements, ",") + `]}`
}

// TestBucketPolicyDecisions is the table request × policy → allow/deny,
// through the SDK: anonymous, another user and the owner, against
// policies using principals, wildcards and the condition keys.
func TestBucketPolicyDecisions(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	type check = accessCheck
	cases := []struct {
		name   string
		policy string
		public bool // needs the public access block lifted
		setup  []string
		checks []check
	}{
		{name: "encoder pushes segments from its network",
			policy: policyDoc(`{"Effect":"Allow","Principal":"*","Action":["s3:PutObject","s3:DeleteObject"],"Resource":"arn:aws:s3:::$B/live/*","Condition":{"IpAddress":{"aws:SourceIp":"127.0.0.0/8"}}}`),
			checks: []check{
				{"anon", putObject("live/seg1.ts"), ""},
				{"anon", deleteObject("live/seg1.ts"), ""},
				{"anon", putObject("vod/seg1.ts"), "AccessDenied"},
				{"anon", getObject("live/seg0.ts"), "AccessDenied"},
				{"anon", listObjects("live/", 0), "AccessDenied"},
				{"other", putObject("live/seg2.ts"), ""},
			}},
		{name: "encoder from another network",
			policy: policyDoc(`{"Effect":"Allow","Principal":"*","Action":["s3:PutObject","s3:DeleteObject"],"Resource":"arn:aws:s3:::$B/live/*","Condition":{"IpAddress":{"aws:SourceIp":"10.0.0.0/8"}}}`),
			checks: []check{
				{"anon", putObject("live/seg1.ts"), "AccessDenied"},
				{"anon", deleteObject("live/seg0.ts"), "AccessDenied"},
			}},
		{name: "NotIpAddress deny",
			policy: policyDoc(`{"Effect":"Deny","Principal":"*","Action":"s3:*","Resource":"arn:aws:s3:::$B/*","Condition":{"NotIpAddress":{"aws:SourceIp":"10.0.0.0/8"}}}`),
			checks: []check{
				{"root", getObject("live/seg0.ts"), "AccessDenied"},
				{"root", listObjects("", 0), ""},
			}},
		{name: "second user reads a prefix",
			policy: policyDoc(
				`{"Effect":"Allow","Principal":{"AWS":"arn:aws:iam::000000000000:user/other"},"Action":"s3:GetObject","Resource":"arn:aws:s3:::$B/live/*"}`,
				`{"Effect":"Allow","Principal":{"AWS":"other"},"Action":"s3:ListBucket","Resource":"arn:aws:s3:::$B","Condition":{"StringLike":{"s3:prefix":"live/*"},"StringEqualsIfExists":{"s3:delimiter":"/"},"NumericLessThanEquals":{"s3:max-keys":"100"}}}`),
			checks: []check{
				{"other", getObject("live/seg0.ts"), ""},
				{"other", getObject("secret"), "AccessDenied"},
				{"other", putObject("live/x"), "AccessDenied"},
				{"other", listObjects("live/", 10), ""},
				{"other", listObjects("live/", 1000), "AccessDenied"},
				{"other", listObjects("", 10), "AccessDenied"},
				{"anon", getObject("live/seg0.ts"), "AccessDenied"},
			}},
		{name: "explicit deny binds the owner",
			policy: policyDoc(`{"Effect":"Deny","Principal":"*","Action":"s3:DeleteObject","Resource":"arn:aws:s3:::$B/keep/*"}`),
			setup:  []string{"keep/a"},
			checks: []check{
				{"root", deleteObject("keep/a"), "AccessDenied"},
				{"root", deleteObject("live/seg0.ts"), ""},
				{"root", getObject("keep/a"), ""},
			}},
		{name: "deny everything: the owner still manages the policy",
			policy: policyDoc(`{"Effect":"Deny","Principal":"*","Action":"s3:*","Resource":["arn:aws:s3:::$B","arn:aws:s3:::$B/*"],"Condition":{"Bool":{"aws:SecureTransport":"false"}}}`),
			checks: []check{
				{"root", getObject("live/seg0.ts"), "AccessDenied"},
				{"root", listObjects("", 0), "AccessDenied"},
				{"other", deletePolicy, "AccessDenied"},
				{"root", deletePolicy, ""},
				{"root", getObject("live/seg0.ts"), ""},
			}},
		{name: "public prefix for players",
			policy: policyDoc(`{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::$B/live/*.m3u8"}`),
			public: true, setup: []string{"live/index.m3u8"},
			checks: []check{
				{"anon", getObject("live/index.m3u8"), ""},
				{"anon", getObject("live/seg0.ts"), "AccessDenied"},
				{"other", getObject("live/index.m3u8"), ""},
			}},
		{name: "existing object tag",
			policy: policyDoc(`{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::$B/*","Condition":{"StringEquals":{"s3:ExistingObjectTag/class":"public"}}}`),
			public: true, setup: []string{"tagged?class=public", "untagged"},
			checks: []check{
				{"anon", getObject("tagged"), ""},
				{"anon", getObject("untagged"), "AccessDenied"},
				{"anon", getObject("missing"), "AccessDenied"},
			}},
		{name: "request object tag and acl",
			policy: policyDoc(
				`{"Effect":"Allow","Principal":{"AWS":"other"},"Action":["s3:PutObject","s3:PutObjectTagging"],"Resource":"arn:aws:s3:::$B/team/*","Condition":{"StringEquals":{"s3:RequestObjectTag/team":"blue"}}}`,
				`{"Effect":"Allow","Principal":{"AWS":"other"},"Action":["s3:PutObject","s3:PutObjectAcl"],"Resource":"arn:aws:s3:::$B/drop/*","Condition":{"StringEquals":{"s3:x-amz-acl":"bucket-owner-full-control"}}}`),
			checks: []check{
				{"other", putObject("team/a", withTagging("team=blue")), ""},
				{"other", putObject("team/b", withTagging("team=red")), "AccessDenied"},
				{"other", putObject("team/c"), "AccessDenied"},
				{"other", putObject("drop/a", withACL(types.ObjectCannedACLBucketOwnerFullControl)), ""},
				{"other", putObject("drop/b"), "AccessDenied"},
			}},
		{name: "username condition and variable",
			policy: policyDoc(
				`{"Effect":"Allow","Principal":"*","Action":"s3:PutObject","Resource":"arn:aws:s3:::$B/home/${aws:username}/*"}`,
				`{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::$B/*","Condition":{"StringEquals":{"aws:username":"other"}}}`),
			public: true,
			checks: []check{
				{"other", putObject("home/other/a"), ""},
				{"other", putObject("home/root/a"), "AccessDenied"},
				{"other", getObject("live/seg0.ts"), ""},
				{"anon", getObject("live/seg0.ts"), "AccessDenied"},
				{"anon", putObject("home//a"), "AccessDenied"},
			}},
		{name: "date condition",
			policy: policyDoc(`{"Effect":"Allow","Principal":{"AWS":"other"},"Action":"s3:GetObject","Resource":"arn:aws:s3:::$B/*","Condition":{"DateLessThan":{"aws:CurrentTime":"2000-01-01T00:00:00Z"}}}`),
			checks: []check{{"other", getObject("live/seg0.ts"), "AccessDenied"}}},
		{name: "null condition",
			policy: policyDoc(`{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::$B/*","Condition":{"Null":{"aws:username":"false"}}}`),
			public: true,
			checks: []check{
				{"other", getObject("live/seg0.ts"), ""},
				{"anon", getObject("live/seg0.ts"), "AccessDenied"},
			}},
	}
	clients := map[string]*s3.Client{"root": e.root(), "other": e.other(), "anon": e.anonymous()}
	for i, c := range cases {
		bucket := fmt.Sprintf("policy%d", i)
		t.Run(c.name, func(t *testing.T) {
			e.mustCreateBucket(bucket)
			e.mustPut(bucket, "live/seg0.ts", []byte("segment"))
			for _, s := range c.setup {
				key, tags, _ := strings.Cut(s, "?")
				if _, err := e.root().PutObject(ctx, &s3.PutObjectInput{Bucket: &bucket, Key: &key, Body: strings.NewReader(key), Tagging: aws.String(tags)}); err != nil {
					t.Fatal(err)
				}
			}
			if c.public {
				if _, err := e.root().DeletePublicAccessBlock(ctx, &s3.DeletePublicAccessBlockInput{Bucket: &bucket}); err != nil {
					t.Fatal(err)
				}
			}
			doc := strings.ReplaceAll(c.policy, "$B", bucket)
			if _, err := e.root().PutBucketPolicy(ctx, &s3.PutBucketPolicyInput{Bucket: &bucket, Policy: &doc}); err != nil {
				t.Fatal(err)
			}
			runAccessChecks(t, ctx, clients, bucket, c.checks)
		})
	}
}

// accessCheck is one request of a decision table: who sends it, the
// call, and the error code it must get ("" for allowed).
type accessCheck struct {
	who  string // "root", "other", "anon"
	call s3Call
	want string // "" allowed, else the error code
}

// runAccessChecks runs the checks against bucket, each with its sender's
// client, and reports every outcome that differs.
func runAccessChecks(t *testing.T, ctx context.Context, clients map[string]*s3.Client, bucket string, checks []accessCheck) {
	t.Helper()
	for j, ch := range checks {
		err := ch.call(ctx, clients[ch.who], bucket)
		if got := errorCode(err); got != ch.want {
			t.Errorf("check %d (%s): got %q (%v), want %q", j, ch.who, got, err, ch.want)
		}
	}
}

// TestDeleteObjectsAuthorizesEachKey: a policy allowing deletes under one
// prefix lets DeleteObjects remove those keys and refuses the others one
// by one.
func TestDeleteObjectsAuthorizesEachKey(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.mustCreateBucket("media")
	e.mustPut("media", "tmp/a", []byte("a"))
	e.mustPut("media", "keep/b", []byte("b"))
	doc := policyDoc(`{"Effect":"Allow","Principal":{"AWS":"other"},"Action":"s3:DeleteObject","Resource":"arn:aws:s3:::media/tmp/*"}`)
	if _, err := e.root().PutBucketPolicy(ctx, &s3.PutBucketPolicyInput{Bucket: aws.String("media"), Policy: &doc}); err != nil {
		t.Fatal(err)
	}
	out, err := e.other().DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: aws.String("media"), Delete: &types.Delete{
		Objects: []types.ObjectIdentifier{{Key: aws.String("tmp/a")}, {Key: aws.String("keep/b")}}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Deleted) != 1 || aws.ToString(out.Deleted[0].Key) != "tmp/a" ||
		len(out.Errors) != 1 || aws.ToString(out.Errors[0].Key) != "keep/b" || aws.ToString(out.Errors[0].Code) != "AccessDenied" {
		t.Fatalf("DeleteObjects: deleted %+v errors %+v", out.Deleted, out.Errors)
	}
	e.assertAbsent("media", "tmp/a")
	if got := e.mustGet("media", "keep/b"); string(got) != "b" {
		t.Fatalf("keep/b: %q", got)
	}
}

// TestBucketPolicyDocuments: Put/Get/Delete/GetBucketPolicyStatus, the
// public access block's refusal of public policies, and MalformedPolicy
// (never a 500) for bad documents.
func TestBucketPolicyDocuments(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	c := e.root()
	e.mustCreateBucket("media")
	b := aws.String("media")
	_, err := c.GetBucketPolicy(ctx, &s3.GetBucketPolicyInput{Bucket: b})
	wantCode(t, err, "NoSuchBucketPolicy")
	_, err = c.GetBucketPolicyStatus(ctx, &s3.GetBucketPolicyStatusInput{Bucket: b})
	wantCode(t, err, "NoSuchBucketPolicy")

	public := policyDoc(`{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::media/*"}`)
	private := policyDoc(`{"Effect":"Allow","Principal":"*","Action":"s3:PutObject","Resource":"arn:aws:s3:::media/*","Condition":{"IpAddress":{"aws:SourceIp":"192.0.2.0/24"}}}`)
	// New buckets block public policies, as on AWS.
	_, err = c.PutBucketPolicy(ctx, &s3.PutBucketPolicyInput{Bucket: b, Policy: &public})
	wantCode(t, err, "AccessDenied")
	for _, tc := range []struct {
		doc      string
		isPublic bool
	}{{private, false}} {
		if _, err := c.PutBucketPolicy(ctx, &s3.PutBucketPolicyInput{Bucket: b, Policy: &tc.doc}); err != nil {
			t.Fatal(err)
		}
		got, err := c.GetBucketPolicy(ctx, &s3.GetBucketPolicyInput{Bucket: b})
		if err != nil || aws.ToString(got.Policy) != tc.doc {
			t.Fatalf("GetBucketPolicy: %v %v", got, err)
		}
		st, err := c.GetBucketPolicyStatus(ctx, &s3.GetBucketPolicyStatusInput{Bucket: b})
		if err != nil || aws.ToBool(st.PolicyStatus.IsPublic) != tc.isPublic {
			t.Fatalf("GetBucketPolicyStatus: %+v %v", st, err)
		}
	}
	if _, err := c.DeletePublicAccessBlock(ctx, &s3.DeletePublicAccessBlockInput{Bucket: b}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.PutBucketPolicy(ctx, &s3.PutBucketPolicyInput{Bucket: b, Policy: &public}); err != nil {
		t.Fatal(err)
	}
	st, err := c.GetBucketPolicyStatus(ctx, &s3.GetBucketPolicyStatusInput{Bucket: b})
	if err != nil || !aws.ToBool(st.PolicyStatus.IsPublic) {
		t.Fatalf("GetBucketPolicyStatus of a public policy: %+v %v", st, err)
	}
	// Others may not read or change it.
	_, err = e.other().GetBucketPolicy(ctx, &s3.GetBucketPolicyInput{Bucket: b})
	wantCode(t, err, "AccessDenied")
	_, err = e.anonymous().PutBucketPolicy(ctx, &s3.PutBucketPolicyInput{Bucket: b, Policy: &public})
	wantCode(t, err, "AccessDenied")

	for _, bad := range []string{
		"", "not json", "{", `{"Statement":[]}`, `[]`, `{"Version":"2012-10-17","Statement":{"Effect":"Allow"}}`,
		policyDoc(`{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::other-bucket/*"}`),
		policyDoc(`{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::media/*","Condition":{"IpAddress":{"aws:SourceIp":"300.0.0.0/8"}}}`),
		policyDoc(`{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::media/*","Condition":{"StringFancy":{"s3:prefix":"a"}}}`),
		policyDoc(`{"Effect":"Maybe","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::media/*"}`),
		"\x00\xff\xfe",
		strings.Repeat(" ", 21<<10) + public,
	} {
		resp, body := e.do(e.signedRequest(rootUser, "PUT", "/media?policy", []byte(bad), "", nil))
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, "<Code>MalformedPolicy</Code>") {
			t.Errorf("policy %.40q: %d %s", bad, resp.StatusCode, body)
		}
	}
	got, err := c.GetBucketPolicy(ctx, &s3.GetBucketPolicyInput{Bucket: b})
	if err != nil || aws.ToString(got.Policy) != public {
		t.Fatalf("a refused policy replaced the stored one: %v %v", got, err)
	}
	if _, err := c.DeleteBucketPolicy(ctx, &s3.DeleteBucketPolicyInput{Bucket: b}); err != nil {
		t.Fatal(err)
	}
	_, err = c.GetBucketPolicy(ctx, &s3.GetBucketPolicyInput{Bucket: b})
	wantCode(t, err, "NoSuchBucketPolicy")
}
