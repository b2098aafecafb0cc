package s3api

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/b3-storage/b3/internal/testutil/versionmodel"
)

// A random history of PUTs, DELETEs (with and without version IDs) and
// versioning state changes, through the AWS SDK, matches the model of
// AWS's rules after every step: what GET returns (data, version ID, the
// delete marker headers), GET by version ID, and the full
// ListObjectVersions listing paged in small pages.
func TestVersioningMatchesModel(t *testing.T) {
	e := newEnv(t)
	c := e.root()
	ctx := context.Background()
	for seed := range uint64(4) {
		rng := rand.New(rand.NewPCG(seed, 99))
		bucket := fmt.Sprintf("model%d", seed)
		e.mustCreateBucket(bucket)
		m := versionmodel.New()
		keys := []string{"a", "a/b", "b", "dir/c"}
		for step := range 250 {
			key, what := m.Step(t, c, rng, bucket, keys, fmt.Sprintf("%d-%d", seed, step))
			if key == "" {
				continue
			}
			m.CheckKey(t, c, bucket, key, what)
			if step%25 == 24 {
				m.CheckListing(t, c, bucket, int32(1+rng.IntN(4)), fmt.Sprintf("seed %d step %d", seed, step))
			}
		}
		// Emptying the bucket through ListObjectVersions (what Terraform's
		// force_destroy and test cleanups do) lets it be deleted.
		for _, line := range m.Listing() {
			f := strings.Fields(line)
			if _, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: aws.String(f[0]), VersionId: aws.String(f[1])}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := c.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String(bucket)}); err != nil {
			t.Fatalf("delete the emptied bucket: %v", err)
		}
	}
}

// Paging ListObjectVersions through thousands of versions of a few keys
// (and a delimiter's common prefixes) returns every version once, each
// key's newest first, with every page size; the version-id-marker of a
// page that ended inside a key resumes inside it.
func TestListObjectVersionsPagesThousands(t *testing.T) {
	e := newEnv(t)
	c := e.root()
	ctx := context.Background()
	e.mustCreateBucket("many")
	e.enableVersioning("many")
	want := map[string][]string{} // key -> version IDs, oldest first
	keys := []string{"cam/1.ts", "cam/2.ts", "index.m3u8", "z"}
	for i := range 2400 {
		key := keys[i%len(keys)]
		if i%97 == 0 {
			out, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("many"), Key: aws.String(key)})
			if err != nil {
				t.Fatal(err)
			}
			want[key] = append(want[key], aws.ToString(out.VersionId))
			continue
		}
		out, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("many"), Key: aws.String(key), Body: strings.NewReader(fmt.Sprint(i))})
		if err != nil {
			t.Fatal(err)
		}
		want[key] = append(want[key], aws.ToString(out.VersionId))
	}
	for _, pageSize := range []int32{1000, 333, 7} {
		got := map[string][]string{}
		pages := 0
		p := s3.NewListObjectVersionsPaginator(c, &s3.ListObjectVersionsInput{Bucket: aws.String("many"), MaxKeys: aws.Int32(pageSize)})
		for p.HasMorePages() {
			res, err := p.NextPage(ctx)
			if err != nil {
				t.Fatal(err)
			}
			pages++
			type entry struct {
				key, id string
			}
			var page []entry
			for _, v := range res.Versions {
				page = append(page, entry{aws.ToString(v.Key), aws.ToString(v.VersionId)})
			}
			for _, d := range res.DeleteMarkers {
				page = append(page, entry{aws.ToString(d.Key), aws.ToString(d.VersionId)})
			}
			// Newest first within a key: the engine's ids (hex of a
			// growing number) descend. The SDK splits versions from
			// delete markers; the engine's order puts them back.
			slices.SortStableFunc(page, func(a, b entry) int {
				if a.key != b.key {
					return strings.Compare(a.key, b.key)
				}
				return strings.Compare(e.engineID(b.id), e.engineID(a.id))
			})
			for _, en := range page {
				got[en.key] = append(got[en.key], en.id)
			}
		}
		for _, key := range keys {
			w := slices.Clone(want[key])
			slices.Reverse(w)
			if !slices.Equal(got[key], w) {
				t.Fatalf("page size %d: %s: %d versions listed, want %d (first differences: %v vs %v)", pageSize, key, len(got[key]), len(w), head(got[key]), head(w))
			}
		}
		if min := (2400 + int(pageSize) - 1) / int(pageSize); pages < min {
			t.Fatalf("page size %d: %d pages", pageSize, pages)
		}
	}
	// With a delimiter the two cam/ keys roll up into one prefix.
	res, err := c.ListObjectVersions(ctx, &s3.ListObjectVersionsInput{Bucket: aws.String("many"), Delimiter: aws.String("/"), MaxKeys: aws.Int32(1000)})
	if err != nil || len(res.CommonPrefixes) != 1 || aws.ToString(res.CommonPrefixes[0].Prefix) != "cam/" {
		t.Fatalf("delimiter: %+v %v", res.CommonPrefixes, err)
	}
	// A version-id-marker without a key-marker, or a malformed one, is refused.
	_, err = c.ListObjectVersions(ctx, &s3.ListObjectVersionsInput{Bucket: aws.String("many"), VersionIdMarker: aws.String("null")})
	wantCode(t, err, "InvalidArgument")
	_, err = c.ListObjectVersions(ctx, &s3.ListObjectVersionsInput{Bucket: aws.String("many"), KeyMarker: aws.String("z"), VersionIdMarker: aws.String("x")})
	wantCode(t, err, "InvalidArgument")
}

func head(s []string) []string { return s[:min(len(s), 3)] }

// Operations addressed to one version: CopyObject from a source version,
// tagging and ACL of a version, HEAD of a delete marker, DeleteObjects
// with version IDs, and a multipart completion creating a version.
func TestOperationsByVersionID(t *testing.T) {
	e := newEnv(t)
	c := e.root()
	ctx := context.Background()
	e.mustCreateBucket("byver")
	e.enableVersioning("byver")
	putV := func(key, body string) string {
		out, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("byver"), Key: aws.String(key), Body: strings.NewReader(body)})
		if err != nil {
			t.Fatal(err)
		}
		return aws.ToString(out.VersionId)
	}
	v1, v2 := putV("k", "one"), putV("k", "two")

	cp, err := c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String("byver"), Key: aws.String("copy"), CopySource: aws.String("byver/k?versionId=" + v1)})
	if err != nil || aws.ToString(cp.CopySourceVersionId) != v1 || aws.ToString(cp.VersionId) == "" {
		t.Fatalf("copy of version 1: %+v %v", cp, err)
	}
	if got := string(e.mustGet("byver", "copy")); got != "one" {
		t.Fatalf("copy of version 1 holds %q", got)
	}
	// The same key from an older version of itself: allowed (it restores it).
	if _, err := c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String("byver"), Key: aws.String("k"), CopySource: aws.String("byver/k?versionId=" + v1)}); err != nil {
		t.Fatalf("restore version 1 by copy: %v", err)
	}
	if got := string(e.mustGet("byver", "k")); got != "one" {
		t.Fatalf("restored %q", got)
	}

	if _, err := c.PutObjectTagging(ctx, &s3.PutObjectTaggingInput{Bucket: aws.String("byver"), Key: aws.String("k"), VersionId: aws.String(v2),
		Tagging: &types.Tagging{TagSet: []types.Tag{{Key: aws.String("state"), Value: aws.String("old")}}}}); err != nil {
		t.Fatal(err)
	}
	tags, err := c.GetObjectTagging(ctx, &s3.GetObjectTaggingInput{Bucket: aws.String("byver"), Key: aws.String("k"), VersionId: aws.String(v2)})
	if err != nil || len(tags.TagSet) != 1 || aws.ToString(tags.VersionId) != v2 {
		t.Fatalf("tags of version 2: %+v %v", tags, err)
	}
	if cur, err := c.GetObjectTagging(ctx, &s3.GetObjectTaggingInput{Bucket: aws.String("byver"), Key: aws.String("k")}); err != nil || len(cur.TagSet) != 0 {
		t.Fatalf("the current version got version 2's tags: %+v %v", cur, err)
	}
	if _, err := c.GetObjectAcl(ctx, &s3.GetObjectAclInput{Bucket: aws.String("byver"), Key: aws.String("k"), VersionId: aws.String(v1)}); err != nil {
		t.Fatalf("ACL of version 1: %v", err)
	}
	_, err = c.GetObjectAcl(ctx, &s3.GetObjectAclInput{Bucket: aws.String("byver"), Key: aws.String("k"), VersionId: aws.String(e.api.versions.encode("00000000000fffff"))})
	wantCode(t, err, "NoSuchVersion")

	del, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("byver"), Key: aws.String("k")})
	if err != nil || !aws.ToBool(del.DeleteMarker) {
		t.Fatalf("delete: %+v %v", del, err)
	}
	_, err = c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("byver"), Key: aws.String("k"), VersionId: del.VersionId})
	var re *awshttp.ResponseError
	if !errors.As(err, &re) || re.Response.StatusCode != 405 || re.Response.Header.Get("x-amz-delete-marker") != "true" {
		t.Fatalf("HEAD of a delete marker: %v", err)
	}
	_, err = c.PutObjectTagging(ctx, &s3.PutObjectTaggingInput{Bucket: aws.String("byver"), Key: aws.String("k"), VersionId: del.VersionId,
		Tagging: &types.Tagging{TagSet: []types.Tag{}}})
	wantCode(t, err, "MethodNotAllowed")

	out, err := c.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: aws.String("byver"), Delete: &types.Delete{Objects: []types.ObjectIdentifier{
		{Key: aws.String("k"), VersionId: del.VersionId}, {Key: aws.String("k"), VersionId: aws.String(v2)}, {Key: aws.String("copy")}}}})
	if err != nil || len(out.Deleted) != 3 || len(out.Errors) != 0 {
		t.Fatalf("delete objects: %+v %v", out, err)
	}
	for _, d := range out.Deleted {
		switch {
		case aws.ToString(d.VersionId) == aws.ToString(del.VersionId) && !aws.ToBool(d.DeleteMarker):
			t.Errorf("removing a marker is reported without DeleteMarker: %+v", d)
		case aws.ToString(d.Key) == "copy" && (!aws.ToBool(d.DeleteMarker) || aws.ToString(d.DeleteMarkerVersionId) == ""):
			t.Errorf("a new marker is reported without its version: %+v", d)
		}
	}
	// With its marker gone, k's newest version (the restore) is current.
	if got := string(e.mustGet("byver", "k")); got != "one" {
		t.Fatalf("after removing the marker: %q", got)
	}

	// A multipart completion is a new version.
	up, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String("byver"), Key: aws.String("k")})
	if err != nil {
		t.Fatal(err)
	}
	part, err := c.UploadPart(ctx, &s3.UploadPartInput{Bucket: aws.String("byver"), Key: aws.String("k"), UploadId: up.UploadId,
		PartNumber: aws.Int32(1), Body: strings.NewReader("multi")})
	if err != nil {
		t.Fatal(err)
	}
	done, err := c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: aws.String("byver"), Key: aws.String("k"), UploadId: up.UploadId,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: []types.CompletedPart{{ETag: part.ETag, PartNumber: aws.Int32(1)}}}})
	if err != nil || aws.ToString(done.VersionId) == "" {
		t.Fatalf("complete: %+v %v", done, err)
	}
	got, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("byver"), Key: aws.String("k"), VersionId: aws.String(v1)})
	if err != nil {
		t.Fatalf("version 1 after the multipart version: %v", err)
	}
	body, _ := io.ReadAll(got.Body)
	got.Body.Close()
	if string(body) != "one" {
		t.Fatalf("version 1 holds %q", body)
	}
}

func (e *testEnv) enableVersioning(bucket string) {
	e.t.Helper()
	e.setVersioning(bucket, types.BucketVersioningStatusEnabled)
}

// setVersioning sets bucket's versioning to status (as root).
func (e *testEnv) setVersioning(bucket string, status types.BucketVersioningStatus) {
	e.t.Helper()
	if _, err := e.root().PutBucketVersioning(context.Background(), &s3.PutBucketVersioningInput{Bucket: aws.String(bucket),
		VersioningConfiguration: &types.VersioningConfiguration{Status: status}}); err != nil {
		e.t.Fatal(err)
	}
}

// TestSuspendedWritesSendNoVersionID: in a versioning-suspended bucket,
// PutObject, CopyObject, CompleteMultipartUpload and a POST store the null
// version and answer without x-amz-version-id, as AWS; HEAD still names
// the version "null", and an Enabled bucket's writes name their version.
func TestSuspendedWritesSendNoVersionID(t *testing.T) {
	e, ctx := newEnv(t), context.Background()
	c := e.root()
	e.mustCreateBucket("susp")
	e.setVersioning("susp", types.BucketVersioningStatusEnabled)
	enabled, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("susp"), Key: aws.String("k"), Body: strings.NewReader("v1")})
	if err != nil || aws.ToString(enabled.VersionId) == "" {
		t.Fatalf("put while enabled: version %q, %v", aws.ToString(enabled.VersionId), err)
	}
	e.setVersioning("susp", types.BucketVersioningStatusSuspended)
	writes := map[string]func() (*string, error){
		"PutObject": func() (*string, error) {
			out, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("susp"), Key: aws.String("k"), Body: strings.NewReader("v2")})
			if err != nil {
				return nil, err
			}
			return out.VersionId, nil
		},
		"CopyObject": func() (*string, error) {
			out, err := c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String("susp"), Key: aws.String("copy"), CopySource: aws.String("susp/k")})
			if err != nil {
				return nil, err
			}
			return out.VersionId, nil
		},
		"CompleteMultipartUpload": func() (*string, error) {
			create, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String("susp"), Key: aws.String("mpu")})
			if err != nil {
				return nil, err
			}
			part, err := c.UploadPart(ctx, &s3.UploadPartInput{Bucket: aws.String("susp"), Key: aws.String("mpu"), UploadId: create.UploadId,
				PartNumber: aws.Int32(1), Body: strings.NewReader("part")})
			if err != nil {
				return nil, err
			}
			out, err := c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: aws.String("susp"), Key: aws.String("mpu"), UploadId: create.UploadId,
				MultipartUpload: &types.CompletedMultipartUpload{Parts: []types.CompletedPart{{ETag: part.ETag, PartNumber: aws.Int32(1)}}}})
			if err != nil {
				return nil, err
			}
			return out.VersionId, nil
		},
		"POST": func() (*string, error) {
			target, fields := e.presignedPost("susp", "form", nil)
			resp, body := e.postForm(target.String(), "", fields, strings.NewReader("form"), false)
			if resp.StatusCode != 204 {
				return nil, fmt.Errorf("POST: %d %s", resp.StatusCode, body)
			}
			if v, ok := resp.Header["X-Amz-Version-Id"]; ok {
				return aws.String(v[0]), nil
			}
			return nil, nil
		},
	}
	for name, write := range writes {
		version, err := write()
		if err != nil || version != nil {
			t.Errorf("%s in a suspended bucket: version %q, %v; want no header", name, aws.ToString(version), err)
		}
	}
	head, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("susp"), Key: aws.String("k")})
	if err != nil || aws.ToString(head.VersionId) != "null" {
		t.Fatalf("HEAD of the null version: %q, %v", aws.ToString(head.VersionId), err)
	}
}
