package s3api

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// TestExpirationHeader: GET and HEAD of an object a lifecycle rule will
// expire carry x-amz-expiration with the instant and the rule's id.
func TestExpirationHeader(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	c := e.root()
	e.mustCreateBucket("life")
	if _, err := c.PutBucketLifecycleConfiguration(ctx, &s3.PutBucketLifecycleConfigurationInput{Bucket: aws.String("life"),
		LifecycleConfiguration: &types.BucketLifecycleConfiguration{Rules: []types.LifecycleRule{
			{ID: aws.String("month"), Status: types.ExpirationStatusEnabled, Filter: &types.LifecycleRuleFilter{Prefix: aws.String("tmp/")},
				Expiration: &types.LifecycleExpiration{Days: aws.Int32(30)}},
			{ID: aws.String("end-of-century"), Status: types.ExpirationStatusEnabled, Filter: &types.LifecycleRuleFilter{Prefix: aws.String("")},
				Expiration: &types.LifecycleExpiration{Date: aws.Time(time.Date(2099, 1, 1, 0, 0, 0, 0, time.UTC))}},
		}}}); err != nil {
		t.Fatal(err)
	}
	e.mustPut("life", "tmp/a", []byte("a"))
	e.mustPut("life", "keep/b", []byte("b"))
	month := time.Now().UTC().AddDate(0, 0, 30).Truncate(24 * time.Hour).Add(24 * time.Hour).Format(http.TimeFormat)
	for key, want := range map[string]string{
		"tmp/a":  `expiry-date="` + month + `", rule-id="month"`,
		"keep/b": `expiry-date="Thu, 01 Jan 2099 00:00:00 GMT", rule-id="end-of-century"`,
	} {
		for _, method := range []string{"GET", "HEAD"} {
			resp, _ := e.do(e.signedRequest(rootUser, method, "/life/"+key, nil, "", nil))
			if got := resp.Header.Get("x-amz-expiration"); resp.StatusCode != 200 || got != want {
				t.Errorf("%s %s: %d x-amz-expiration %q, want %q", method, key, resp.StatusCode, got, want)
			}
		}
	}
	head, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("life"), Key: aws.String("tmp/a")})
	if err != nil || !strings.Contains(aws.ToString(head.Expiration), `rule-id="month"`) {
		t.Fatalf("SDK Expiration: %v %v", head, err)
	}
	e.mustCreateBucket("plain")
	e.mustPut("plain", "k", []byte("k"))
	if resp, _ := e.do(e.signedRequest(rootUser, "GET", "/plain/k", nil, "", nil)); resp.Header.Get("x-amz-expiration") != "" {
		t.Fatalf("x-amz-expiration without a rule: %q", resp.Header.Get("x-amz-expiration"))
	}
}

// TestGetObjectAttributes: the attributes asked for, with the parts of a
// multipart object paged.
func TestGetObjectAttributes(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.MinPartSize = 100 })
	ctx := context.Background()
	c := e.root()
	e.mustCreateBucket("attrs")
	e.mustPut("attrs", "small", []byte("hello"))
	out, err := c.GetObjectAttributes(ctx, &s3.GetObjectAttributesInput{Bucket: aws.String("attrs"), Key: aws.String("small"),
		ObjectAttributes: []types.ObjectAttributes{types.ObjectAttributesEtag, types.ObjectAttributesObjectSize, types.ObjectAttributesStorageClass, types.ObjectAttributesChecksum}})
	if err != nil {
		t.Fatal(err)
	}
	if aws.ToString(out.ETag) != "5d41402abc4b2a76b9719d911017c592" || aws.ToInt64(out.ObjectSize) != 5 || out.StorageClass != types.StorageClassStandard ||
		out.Checksum == nil || aws.ToString(out.Checksum.ChecksumCRC32) == "" || out.ObjectParts != nil || out.LastModified == nil {
		t.Fatalf("attributes: %+v checksum %+v", out, out.Checksum)
	}

	create, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String("attrs"), Key: aws.String("big"), ChecksumAlgorithm: types.ChecksumAlgorithmCrc32c})
	if err != nil {
		t.Fatal(err)
	}
	parts, _ := uploadParts(t, c, "attrs", "big", aws.ToString(create.UploadId), []int{100, 100, 50}, types.ChecksumAlgorithmCrc32c)
	if _, err := c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: aws.String("attrs"), Key: aws.String("big"), UploadId: create.UploadId,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: parts}}); err != nil {
		t.Fatal(err)
	}
	out, err = c.GetObjectAttributes(ctx, &s3.GetObjectAttributesInput{Bucket: aws.String("attrs"), Key: aws.String("big"),
		ObjectAttributes: []types.ObjectAttributes{types.ObjectAttributesObjectParts}, MaxParts: aws.Int32(2)})
	if err != nil {
		t.Fatal(err)
	}
	op := out.ObjectParts
	if op == nil || aws.ToInt32(op.TotalPartsCount) != 3 || !aws.ToBool(op.IsTruncated) || len(op.Parts) != 2 ||
		aws.ToString(op.NextPartNumberMarker) != "2" || aws.ToInt64(op.Parts[1].Size) != 100 || aws.ToString(op.Parts[0].ChecksumCRC32C) == "" || out.ETag != nil {
		t.Fatalf("parts page 1: %+v", op)
	}
	out, err = c.GetObjectAttributes(ctx, &s3.GetObjectAttributesInput{Bucket: aws.String("attrs"), Key: aws.String("big"),
		ObjectAttributes: []types.ObjectAttributes{types.ObjectAttributesObjectParts}, PartNumberMarker: aws.String("2")})
	if err != nil || len(out.ObjectParts.Parts) != 1 || aws.ToInt32(out.ObjectParts.Parts[0].PartNumber) != 3 || aws.ToBool(out.ObjectParts.IsTruncated) {
		t.Fatalf("parts page 2: %+v %v", out, err)
	}

	resp, body := e.do(e.signedRequest(rootUser, "GET", "/attrs/small?attributes", nil, "", nil))
	wantXMLError(t, resp, body, 400, "InvalidArgument")
	resp, body = e.do(e.signedRequest(rootUser, "GET", "/attrs/small?attributes", nil, "", http.Header{"X-Amz-Object-Attributes": {"ETag,Colour"}}))
	wantXMLError(t, resp, body, 400, "InvalidArgument")
	_, err = c.GetObjectAttributes(ctx, &s3.GetObjectAttributesInput{Bucket: aws.String("attrs"), Key: aws.String("missing"), ObjectAttributes: []types.ObjectAttributes{types.ObjectAttributesEtag}})
	wantCode(t, err, "NoSuchKey")
	_, err = e.anonymous().GetObjectAttributes(ctx, &s3.GetObjectAttributesInput{Bucket: aws.String("attrs"), Key: aws.String("small"), ObjectAttributes: []types.ObjectAttributes{types.ObjectAttributesEtag}})
	wantCode(t, err, "AccessDenied")
}

// TestListBucketsPaging: max-buckets pages, continuation tokens, prefix.
func TestListBucketsPaging(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	c := e.root()
	for i := range 5 {
		e.mustCreateBucket(fmt.Sprintf("cam%d", i))
	}
	e.mustCreateBucket("other-thing")
	var names []string
	p := s3.NewListBucketsPaginator(c, &s3.ListBucketsInput{MaxBuckets: aws.Int32(2), Prefix: aws.String("cam")})
	pages := 0
	for p.HasMorePages() {
		out, err := p.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		pages++
		if aws.ToString(out.Prefix) != "cam" || len(out.Buckets) > 2 {
			t.Fatalf("page %d: %+v", pages, out)
		}
		for _, b := range out.Buckets {
			names = append(names, aws.ToString(b.Name))
		}
	}
	if strings.Join(names, ",") != "cam0,cam1,cam2,cam3,cam4" || pages != 3 {
		t.Fatalf("paged %d pages: %v", pages, names)
	}
	all, err := c.ListBuckets(ctx, &s3.ListBucketsInput{})
	if err != nil || len(all.Buckets) != 6 || all.ContinuationToken != nil {
		t.Fatalf("unpaged: %+v %v", all, err)
	}
	for _, q := range []string{"max-buckets=0", "max-buckets=10001", "max-buckets=x", "continuation-token=%25%25"} {
		resp, body := e.do(e.signedRequest(rootUser, "GET", "/?"+q, nil, "", nil))
		wantXMLError(t, resp, body, 400, "InvalidArgument")
	}
}

// TestNonASCIIMetadata: metadata values outside US-ASCII come back RFC
// 2047 encoded, and encoded values sent are stored decoded, as S3 does.
func TestNonASCIIMetadata(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	c := e.root()
	e.mustCreateBucket("meta")
	resp, body := e.do(e.signedRequest(rootUser, "PUT", "/meta/encoded", []byte("x"), "", http.Header{
		"X-Amz-Meta-Title": {"=?UTF-8?B?w6l0w6kgw6AgUGFyaXM=?="}, "X-Amz-Meta-Plain": {"plain"}}))
	if resp.StatusCode != 200 {
		t.Fatalf("put: %d %s", resp.StatusCode, body)
	}
	resp, _ = e.do(e.signedRequest(rootUser, "HEAD", "/meta/encoded", nil, "", nil))
	if got := resp.Header.Get("x-amz-meta-title"); got != "=?UTF-8?b?w6l0w6kgw6AgUGFyaXM=?=" {
		t.Fatalf("encoded value on the wire: %q", got)
	}
	if got := resp.Header.Get("x-amz-meta-plain"); got != "plain" {
		t.Fatalf("ASCII value on the wire: %q", got)
	}
	head, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("meta"), Key: aws.String("encoded")})
	if err != nil {
		t.Fatal(err)
	}
	if v := head.Metadata["title"]; v != "=?UTF-8?b?w6l0w6kgw6AgUGFyaXM=?=" {
		t.Fatalf("SDK metadata: %q", v)
	}
	out, err := c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String("meta")})
	if err != nil || len(out.Contents) != 1 {
		t.Fatal(err)
	}
	obj, err := e.store.HeadObject("meta", "encoded")
	if err != nil || obj.UserMeta["title"] != "été à Paris" {
		t.Fatalf("stored value: %q %v", obj.UserMeta["title"], err)
	}
}

// TestGetObjectAttributesVersionedComposite: GetObjectAttributes of a
// versioned bucket's multipart object answers its version id (the current
// one, and the one asked for), its COMPOSITE checksum bare (the part count
// is ObjectParts', not a "-N" suffix) and, for a version id b3 never
// issued, 400 InvalidArgument as AWS.
func TestGetObjectAttributesVersionedComposite(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.MinPartSize = 100 })
	ctx := context.Background()
	c := e.root()
	e.mustCreateBucket("attrv")
	e.enableVersioning("attrv")
	create, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String("attrv"), Key: aws.String("big"), ChecksumAlgorithm: types.ChecksumAlgorithmCrc32})
	if err != nil {
		t.Fatal(err)
	}
	parts, _ := uploadParts(t, c, "attrv", "big", aws.ToString(create.UploadId), []int{100, 50}, types.ChecksumAlgorithmCrc32)
	done, err := c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: aws.String("attrv"), Key: aws.String("big"), UploadId: create.UploadId,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: parts}})
	if err != nil {
		t.Fatal(err)
	}
	whole, found := strings.CutSuffix(aws.ToString(done.ChecksumCRC32), "-2")
	if !found || aws.ToString(done.VersionId) == "" {
		t.Fatalf("complete: checksum %q version %q", aws.ToString(done.ChecksumCRC32), aws.ToString(done.VersionId))
	}
	e.mustPut("attrv", "big", []byte("newer"))
	attrs := []types.ObjectAttributes{types.ObjectAttributesChecksum, types.ObjectAttributesObjectParts}
	for _, tc := range []struct {
		name    string
		version *string
		want    string
	}{
		{"by version id", done.VersionId, aws.ToString(done.VersionId)},
		{"current", nil, ""},
	} {
		out, err := c.GetObjectAttributes(ctx, &s3.GetObjectAttributesInput{Bucket: aws.String("attrv"), Key: aws.String("big"), VersionId: tc.version, ObjectAttributes: attrs})
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if aws.ToString(out.VersionId) == "" || tc.want != "" && aws.ToString(out.VersionId) != tc.want {
			t.Errorf("%s: VersionId %q, want %q", tc.name, aws.ToString(out.VersionId), tc.want)
		}
		if tc.version == nil {
			continue
		}
		if out.Checksum == nil || aws.ToString(out.Checksum.ChecksumCRC32) != whole || out.Checksum.ChecksumType != types.ChecksumTypeComposite {
			t.Errorf("%s: checksum %+v, want %q COMPOSITE", tc.name, out.Checksum, whole)
		}
		if out.ObjectParts == nil || aws.ToInt32(out.ObjectParts.TotalPartsCount) != 2 {
			t.Errorf("%s: parts %+v", tc.name, out.ObjectParts)
		}
	}
	_, err = c.GetObjectAttributes(ctx, &s3.GetObjectAttributesInput{Bucket: aws.String("attrv"), Key: aws.String("big"), VersionId: aws.String("not-a-version"), ObjectAttributes: attrs})
	wantCode(t, err, "InvalidArgument")
}
