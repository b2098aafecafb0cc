package main

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/b3-storage/b3/internal/testutil"
)

// TestServerRegionsMinio: `b3 server --regions` lets minio-go make buckets
// in those regions as its functional tests do (a client configured for no
// region, which looks each bucket's region up and signs for it): the
// bucket reports its region, takes and serves objects, and goes; a region
// not configured is refused.
func TestServerRegionsMinio(t *testing.T) {
	srv := testutil.StartServer(t, testutil.ServerOptions{Args: []string{"--regions", "eu-central-1,us-west-2"}})
	ak, sk := srv.Keys()
	mc, err := minio.New(srv.S3Addr, &minio.Options{Creds: credentials.NewStaticV4(ak, sk, "")})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, tc := range []struct{ bucket, region string }{{"in-frankfurt", "eu-central-1"}, {"in.oregon.withperiod", "us-west-2"}} {
		if err := mc.MakeBucket(ctx, tc.bucket, minio.MakeBucketOptions{Region: tc.region}); err != nil {
			t.Fatalf("MakeBucket %s in %s: %v", tc.bucket, tc.region, err)
		}
		if loc, err := mc.GetBucketLocation(ctx, tc.bucket); err != nil || loc != tc.region {
			t.Fatalf("GetBucketLocation %s: %q, %v; want %s", tc.bucket, loc, err, tc.region)
		}
		if _, err := mc.PutObject(ctx, tc.bucket, "k", strings.NewReader("in "+tc.region), -1, minio.PutObjectOptions{}); err != nil {
			t.Fatalf("PutObject in %s: %v", tc.region, err)
		}
		obj, err := mc.GetObject(ctx, tc.bucket, "k", minio.GetObjectOptions{})
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(obj)
		obj.Close()
		if err != nil || string(body) != "in "+tc.region {
			t.Fatalf("GetObject in %s: %q, %v", tc.region, body, err)
		}
		if err := mc.RemoveObject(ctx, tc.bucket, "k", minio.RemoveObjectOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := mc.RemoveBucket(ctx, tc.bucket); err != nil {
			t.Fatalf("RemoveBucket %s: %v", tc.bucket, err)
		}
	}
	// minio-go signs for the region it asks for: a region the server
	// does not answer for is refused at the signature, as AWS refuses a
	// request signed for a region its endpoint is not in.
	err = mc.MakeBucket(ctx, "in-mumbai", minio.MakeBucketOptions{Region: "ap-south-1"})
	if code := minio.ToErrorResponse(err).Code; code != "AuthorizationHeaderMalformed" {
		t.Fatalf("MakeBucket in a region not configured: %q (%v), want AuthorizationHeaderMalformed", code, err)
	}
	if ok, err := mc.BucketExists(ctx, "in-mumbai"); ok || err != nil {
		t.Fatalf("the refused bucket exists: %v, %v", ok, err)
	}
}

// TestServerLegacyBucketDefaults: `b3 server` with the legacy-compatible
// defaults in its YAML config file says so at start, and its new buckets
// take ACLs (ObjectWriter) without Block Public Access: a bucket created
// with a public canned ACL, and an object with public-read that anyone
// reads, as older applications and the suites expect.
func TestServerLegacyBucketDefaults(t *testing.T) {
	conf := filepath.Join(t.TempDir(), "b3.yaml")
	if err := os.WriteFile(conf, []byte("default-object-ownership: ObjectWriter\ndefault-block-public-access: false\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := testutil.StartServer(t, testutil.ServerOptions{Args: []string{"--config", conf}})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := srv.Client(10 * time.Second)
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("legacy"), ACL: types.BucketCannedACLPublicRead}); err != nil {
		t.Fatalf("CreateBucket with ACL public-read: %v", err)
	}
	oc, err := c.GetBucketOwnershipControls(ctx, &s3.GetBucketOwnershipControlsInput{Bucket: aws.String("legacy")})
	if err != nil || oc.OwnershipControls.Rules[0].ObjectOwnership != types.ObjectOwnershipObjectWriter {
		t.Fatalf("ownership: %+v, %v", oc, err)
	}
	_, err = c.GetPublicAccessBlock(ctx, &s3.GetPublicAccessBlockInput{Bucket: aws.String("legacy")})
	if code := testutil.APICode(err); code != "NoSuchPublicAccessBlockConfiguration" {
		t.Fatalf("GetPublicAccessBlock: %q (%v)", code, err)
	}
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("legacy"), Key: aws.String("page.html"), Body: strings.NewReader("<p>hi"),
		ACL: types.ObjectCannedACLPublicRead}); err != nil {
		t.Fatalf("PutObject with ACL public-read: %v", err)
	}
	resp, err := http.Get(srv.Endpoint() + "/legacy/page.html")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || string(body) != "<p>hi" {
		t.Fatalf("anonymous GET: %d %s", resp.StatusCode, body)
	}
	for _, want := range []string{"Object Ownership ObjectWriter", "no Block Public Access"} {
		if !strings.Contains(srv.Output(), want) {
			t.Errorf("the start-up log does not warn of %q:\n%s", want, srv.Output())
		}
	}
}
