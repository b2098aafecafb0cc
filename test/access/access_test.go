package access

import (
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/b3-storage/b3/internal/testutil"
)

// TestAccessControlAcrossRestart drives one `b3 server` process through
// the access an HLS deployment sets up — an encoder pushing and deleting
// segments anonymously from its network under a bucket policy, players
// reading a public playlist, a second user reading through an ACL grant —
// and checks that the policy, the grants, the ownership controls and the
// public access block all survive a restart unchanged.
func TestAccessControlAcrossRestart(t *testing.T) {
	srv := testutil.StartServer(t, testutil.ServerOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	root := srv.Client(30 * time.Second)
	anon := testutil.S3Client(srv.Endpoint(), "", "")
	viewer, err := srv.Admin().AddUser(ctx, "viewer")
	if err != nil {
		t.Fatal(err)
	}
	other := testutil.S3Client(srv.Endpoint(), viewer.AccessKey, viewer.Secret)
	bucket := aws.String("live")
	if _, err := root.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: bucket, ObjectOwnership: types.ObjectOwnershipBucketOwnerPreferred}); err != nil {
		t.Fatal(err)
	}
	if _, err := root.PutPublicAccessBlock(ctx, &s3.PutPublicAccessBlockInput{Bucket: bucket,
		PublicAccessBlockConfiguration: &types.PublicAccessBlockConfiguration{BlockPublicAcls: aws.Bool(true)}}); err != nil {
		t.Fatal(err)
	}
	policy := `{"Version":"2012-10-17","Statement":[
	 {"Sid":"encoder","Effect":"Allow","Principal":"*","Action":["s3:PutObject","s3:DeleteObject"],
	  "Resource":"arn:aws:s3:::live/cam1/*","Condition":{"IpAddress":{"aws:SourceIp":["127.0.0.0/8","::1/128"]}}},
	 {"Sid":"players","Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::live/*.m3u8"}]}`
	if _, err := root.PutBucketPolicy(ctx, &s3.PutBucketPolicyInput{Bucket: bucket, Policy: &policy}); err != nil {
		t.Fatal(err)
	}
	put := func(c *s3.Client, key, body string) error {
		_, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: bucket, Key: aws.String(key), Body: strings.NewReader(body)})
		return err
	}
	get := func(c *s3.Client, key string) (string, error) {
		out, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: bucket, Key: aws.String(key)})
		if err != nil {
			return "", err
		}
		defer out.Body.Close()
		b, err := io.ReadAll(out.Body)
		return string(b), err
	}
	wantCode := func(err error, code string) {
		t.Helper()
		if got := testutil.APICode(err); got != code {
			t.Fatalf("got %q (%v), want %q", got, err, code)
		}
	}

	check := func() {
		t.Helper()
		// The encoder, unsigned, pushes and removes segments of its prefix.
		for _, key := range []string{"cam1/seg1.ts", "cam1/seg2.ts", "cam1/index.m3u8"} {
			if err := put(anon, key, "bytes of "+key); err != nil {
				t.Fatalf("anonymous put %s: %v", key, err)
			}
		}
		if _, err := anon.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: bucket, Key: aws.String("cam1/seg1.ts")}); err != nil {
			t.Fatalf("anonymous delete: %v", err)
		}
		wantCode(put(anon, "cam2/seg1.ts", "x"), "AccessDenied")
		// Players read the playlist, not the segments; nobody lists.
		if body, err := get(anon, "cam1/index.m3u8"); err != nil || body != "bytes of cam1/index.m3u8" {
			t.Fatalf("anonymous playlist read: %q %v", body, err)
		}
		_, err := get(anon, "cam1/seg2.ts")
		wantCode(err, "AccessDenied")
		_, err = anon.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: bucket})
		wantCode(err, "AccessDenied")
		// The objects the encoder wrote belong to the bucket's owner.
		if body, err := get(root, "cam1/seg2.ts"); err != nil || body != "bytes of cam1/seg2.ts" {
			t.Fatalf("owner read: %q %v", body, err)
		}
		// The second user reads what an ACL grants it, and nothing else.
		if body, err := get(other, "granted"); err != nil || body != "for the viewer" {
			t.Fatalf("granted read: %q %v", body, err)
		}
		_, err = get(other, "cam1/seg2.ts")
		wantCode(err, "AccessDenied")
		// The public access block refuses public ACLs.
		_, err = root.PutObjectAcl(ctx, &s3.PutObjectAclInput{Bucket: bucket, Key: aws.String("granted"), ACL: types.ObjectCannedACLPublicRead})
		wantCode(err, "AccessDenied")
	}
	if err := put(root, "granted", "for the viewer"); err != nil {
		t.Fatal(err)
	}
	if _, err := root.PutObjectAcl(ctx, &s3.PutObjectAclInput{Bucket: bucket, Key: aws.String("granted"),
		GrantRead: aws.String(`id="` + viewer.CanonicalID + `"`)}); err != nil {
		t.Fatal(err)
	}
	check()
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	check()
	got, err := root.GetBucketPolicy(ctx, &s3.GetBucketPolicyInput{Bucket: bucket})
	if err != nil || aws.ToString(got.Policy) != policy {
		t.Fatalf("policy after restart: %v %v", got, err)
	}
	oc, err := root.GetBucketOwnershipControls(ctx, &s3.GetBucketOwnershipControlsInput{Bucket: bucket})
	if err != nil || oc.OwnershipControls.Rules[0].ObjectOwnership != types.ObjectOwnershipBucketOwnerPreferred {
		t.Fatalf("ownership after restart: %+v %v", oc, err)
	}
	pab, err := root.GetPublicAccessBlock(ctx, &s3.GetPublicAccessBlockInput{Bucket: bucket})
	if err != nil || !aws.ToBool(pab.PublicAccessBlockConfiguration.BlockPublicAcls) || aws.ToBool(pab.PublicAccessBlockConfiguration.BlockPublicPolicy) {
		t.Fatalf("public access block after restart: %+v %v", pab, err)
	}
	// A plain unsigned HTTP GET, as a player fetches the playlist.
	resp, err := http.Get(srv.Endpoint() + "/live/cam1/index.m3u8")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("plain HTTP GET of the playlist: %d", resp.StatusCode)
	}
}

// TestBoto3Access runs boto3_access.py against a server: ACL documents and
// grant headers as boto3 serializes them, policies, Block Public Access,
// ownership controls and unsigned requests (botocore.UNSIGNED). boto3
// comes from scripts/install-test-tools.sh.
func TestBoto3Access(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Fatal("python3 with boto3 is missing: run scripts/install-test-tools.sh")
	}
	srv := testutil.StartServer(t, testutil.ServerOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	viewer, err := srv.Admin().AddUser(ctx, "viewer")
	if err != nil {
		t.Fatal(err)
	}
	key, secret := srv.Keys()
	cmd := exec.CommandContext(ctx, python, "boto3_access.py", "--endpoint", srv.Endpoint(),
		"--root", key, secret, "--viewer", viewer.AccessKey, viewer.Secret, viewer.CanonicalID)
	cmd.Env = append(os.Environ(), "AWS_CONFIG_FILE=/dev/null", "AWS_SHARED_CREDENTIALS_FILE=/dev/null", "AWS_CA_BUNDLE=", "NO_PROXY=127.0.0.1")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "boto3 access: OK") {
		t.Fatalf("boto3 access session: %v\n%s", err, out)
	}
}
