package s3api

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// TestNewBucketDefaults: the access settings CreateBucket gives a bucket
// that does not choose them follow Config.NewBuckets, AWS's by default;
// a request's x-amz-object-ownership still chooses. With the legacy
// defaults (ObjectWriter, no Block Public Access) a public canned ACL is
// taken at creation and on an object, and anyone reads that object; with
// AWS's both are refused.
func TestNewBucketDefaults(t *testing.T) {
	for _, tc := range []struct {
		name       string
		defaults   BucketDefaults
		ownership  types.ObjectOwnership
		blocked    bool   // a PublicAccessBlock with all four settings
		publicCode string // of CreateBucket with ACL public-read
	}{
		{"AWS", BucketDefaults{}, types.ObjectOwnershipBucketOwnerEnforced, true, "InvalidBucketAclWithObjectOwnership"},
		{"preferred", BucketDefaults{ObjectOwnership: "BucketOwnerPreferred"}, types.ObjectOwnershipBucketOwnerPreferred, true, "InvalidBucketAclWithBlockPublicAccessError"},
		{"legacy", BucketDefaults{ObjectOwnership: "ObjectWriter", NoPublicAccessBlock: true}, types.ObjectOwnershipObjectWriter, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, func(c *Config) { c.NewBuckets = tc.defaults })
			ctx, c := context.Background(), e.root()
			e.mustCreateBucket("plain")
			oc, err := c.GetBucketOwnershipControls(ctx, &s3.GetBucketOwnershipControlsInput{Bucket: aws.String("plain")})
			if err != nil || oc.OwnershipControls.Rules[0].ObjectOwnership != tc.ownership {
				t.Fatalf("ownership %+v, %v; want %s", oc, err, tc.ownership)
			}
			pab, err := c.GetPublicAccessBlock(ctx, &s3.GetPublicAccessBlockInput{Bucket: aws.String("plain")})
			if tc.blocked {
				conf := pab.PublicAccessBlockConfiguration
				if err != nil || !aws.ToBool(conf.BlockPublicAcls) || !aws.ToBool(conf.IgnorePublicAcls) || !aws.ToBool(conf.BlockPublicPolicy) || !aws.ToBool(conf.RestrictPublicBuckets) {
					t.Fatalf("public access block %+v, %v; want all four on", conf, err)
				}
			} else {
				wantCode(t, err, "NoSuchPublicAccessBlockConfiguration")
			}
			// The request's header chooses over the default.
			if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("chosen"), ObjectOwnership: types.ObjectOwnershipBucketOwnerPreferred}); err != nil {
				t.Fatal(err)
			}
			oc, err = c.GetBucketOwnershipControls(ctx, &s3.GetBucketOwnershipControlsInput{Bucket: aws.String("chosen")})
			if err != nil || oc.OwnershipControls.Rules[0].ObjectOwnership != types.ObjectOwnershipBucketOwnerPreferred {
				t.Fatalf("ownership asked for: %+v, %v", oc, err)
			}
			_, err = c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("public"), ACL: types.BucketCannedACLPublicRead})
			wantCode(t, err, tc.publicCode)
			_, err = c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("plain"), Key: aws.String("shared"), Body: strings.NewReader("for all"), ACL: types.ObjectCannedACLPublicRead})
			if tc.blocked {
				if err == nil {
					t.Fatal("a public-read object ACL was taken under Block Public Access")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			resp, err := http.Get(e.ts.URL + "/plain/shared")
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 || string(body) != "for all" {
				t.Fatalf("anonymous GET of a public-read object: %d %s", resp.StatusCode, body)
			}
		})
	}
}
