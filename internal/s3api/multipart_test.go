package s3api

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// uploadParts uploads parts of the given sizes and returns the completed
// parts list and the concatenated body.
func uploadParts(t *testing.T, c *s3.Client, bucket, key, uploadID string, sizes []int, alg types.ChecksumAlgorithm) ([]types.CompletedPart, []byte) {
	t.Helper()
	var parts []types.CompletedPart
	var all []byte
	for i, size := range sizes {
		body := randomBytes(size, uint64(i+1))
		all = append(all, body...)
		out, err := c.UploadPart(context.Background(), &s3.UploadPartInput{Bucket: aws.String(bucket), Key: aws.String(key), UploadId: aws.String(uploadID),
			PartNumber: aws.Int32(int32(i + 1)), Body: bytes.NewReader(body), ChecksumAlgorithm: alg})
		if err != nil {
			t.Fatalf("upload part %d: %v", i+1, err)
		}
		parts = append(parts, types.CompletedPart{PartNumber: aws.Int32(int32(i + 1)), ETag: out.ETag,
			ChecksumCRC32: out.ChecksumCRC32, ChecksumCRC32C: out.ChecksumCRC32C, ChecksumSHA256: out.ChecksumSHA256, ChecksumCRC64NVME: out.ChecksumCRC64NVME})
	}
	return parts, all
}

func multipartETag(t *testing.T, parts []types.CompletedPart) string {
	h := md5.New()
	for _, p := range parts {
		sum, err := hex.DecodeString(strings.Trim(aws.ToString(p.ETag), `"`))
		if err != nil {
			t.Fatal(err)
		}
		h.Write(sum)
	}
	return fmt.Sprintf(`"%x-%d"`, h.Sum(nil), len(parts))
}

func TestMultipart(t *testing.T) {
	for _, tc := range []struct {
		name string
		alg  types.ChecksumAlgorithm
		typ  types.ChecksumType
	}{
		{"no checksum", "", ""},
		{"crc32 composite", types.ChecksumAlgorithmCrc32, ""},
		{"crc32c full object", types.ChecksumAlgorithmCrc32c, types.ChecksumTypeFullObject},
		{"sha256", types.ChecksumAlgorithmSha256, ""},
		{"crc64nvme", types.ChecksumAlgorithmCrc64nvme, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, func(c *Config) { c.MinPartSize = 1 << 10 })
			ctx := context.Background()
			c := e.root()
			e.mustCreateBucket("mpu")
			create, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String("mpu"), Key: aws.String("big"),
				ContentType: aws.String("video/mp4"), Metadata: map[string]string{"m": "1"}, ChecksumAlgorithm: tc.alg, ChecksumType: tc.typ})
			if err != nil {
				t.Fatal(err)
			}
			id := aws.ToString(create.UploadId)
			parts, body := uploadParts(t, c, "mpu", "big", id, []int{3 << 10, 2 << 10, 100}, tc.alg)

			lp, err := c.ListParts(ctx, &s3.ListPartsInput{Bucket: aws.String("mpu"), Key: aws.String("big"), UploadId: aws.String(id), MaxParts: aws.Int32(2)})
			if err != nil || len(lp.Parts) != 2 || !aws.ToBool(lp.IsTruncated) || aws.ToString(lp.NextPartNumberMarker) != "2" {
				t.Fatalf("list parts: %+v %v", lp, err)
			}
			lu, err := c.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: aws.String("mpu")})
			if err != nil || len(lu.Uploads) != 1 || aws.ToString(lu.Uploads[0].UploadId) != id {
				t.Fatalf("list uploads: %+v %v", lu, err)
			}

			done, err := c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: aws.String("mpu"), Key: aws.String("big"), UploadId: aws.String(id),
				MultipartUpload: &types.CompletedMultipartUpload{Parts: parts}})
			if err != nil {
				t.Fatal(err)
			}
			if want := multipartETag(t, parts); aws.ToString(done.ETag) != want {
				t.Fatalf("etag %s, want %s", aws.ToString(done.ETag), want)
			}
			if got := e.mustGet("mpu", "big"); !bytes.Equal(got, body) {
				t.Fatalf("completed object differs (%d vs %d bytes)", len(got), len(body))
			}
			head, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("mpu"), Key: aws.String("big"), ChecksumMode: types.ChecksumModeEnabled})
			if err != nil || aws.ToString(head.ContentType) != "video/mp4" || head.Metadata["m"] != "1" || aws.ToInt32(head.PartsCount) != 3 {
				t.Fatalf("head: %+v %v", head, err)
			}
			if tc.alg != "" && aws.ToString(head.ChecksumCRC32)+aws.ToString(head.ChecksumCRC32C)+aws.ToString(head.ChecksumSHA256)+aws.ToString(head.ChecksumCRC64NVME) == "" {
				t.Fatalf("no checksum returned for %s", tc.alg)
			}
			// GET ?partNumber= reads one part.
			part2, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("mpu"), Key: aws.String("big"), PartNumber: aws.Int32(2)})
			if err != nil || aws.ToInt64(part2.ContentLength) != 2<<10 {
				t.Fatalf("get part 2: %+v %v", part2, err)
			}
			part2.Body.Close()
			lu, err = c.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: aws.String("mpu")})
			if err != nil || len(lu.Uploads) != 0 {
				t.Fatalf("upload still listed after completion: %+v %v", lu, err)
			}
		})
	}
}

func TestMultipartErrors(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	c := e.root()
	e.mustCreateBucket("mpu")
	create, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String("mpu"), Key: aws.String("k")})
	if err != nil {
		t.Fatal(err)
	}
	id := aws.ToString(create.UploadId)
	parts, _ := uploadParts(t, c, "mpu", "k", id, []int{100, 100}, "")
	complete := func(parts []types.CompletedPart) error {
		_, err := c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: aws.String("mpu"), Key: aws.String("k"), UploadId: aws.String(id),
			MultipartUpload: &types.CompletedMultipartUpload{Parts: parts}})
		return err
	}
	wantCode(t, complete(parts), "EntityTooSmall")
	wantCode(t, complete([]types.CompletedPart{parts[1], parts[0]}), "InvalidPartOrder")
	wantCode(t, complete([]types.CompletedPart{{PartNumber: aws.Int32(1), ETag: aws.String(`"0123456789abcdef0123456789abcdef"`)}}), "InvalidPart")
	wantCode(t, complete([]types.CompletedPart{{PartNumber: aws.Int32(7), ETag: parts[0].ETag}}), "InvalidPart")
	// A single small part is fine: the last part has no minimum.
	first, err := c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: aws.String("mpu"), Key: aws.String("k"), UploadId: aws.String(id),
		MultipartUpload: &types.CompletedMultipartUpload{Parts: parts[:1]}})
	if err != nil {
		t.Fatal(err)
	}
	e.assertAbsentUpload(id)
	// A retry of the completion (an SDK after a timeout) succeeds with the
	// same ETag; another part list, or the key overwritten since, is
	// NoSuchUpload.
	again, err := c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: aws.String("mpu"), Key: aws.String("k"), UploadId: aws.String(id),
		MultipartUpload: &types.CompletedMultipartUpload{Parts: parts[:1]}})
	if err != nil || aws.ToString(again.ETag) != aws.ToString(first.ETag) || aws.ToString(again.ChecksumCRC64NVME) != aws.ToString(first.ChecksumCRC64NVME) {
		t.Fatalf("retried completion: %+v %v, first %+v", again, err, first)
	}
	wantCode(t, complete(parts), "NoSuchUpload")
	e.mustPut("mpu", "k", []byte("overwritten"))
	wantCode(t, complete(parts[:1]), "NoSuchUpload")

	_, err = c.UploadPart(ctx, &s3.UploadPartInput{Bucket: aws.String("mpu"), Key: aws.String("k"), UploadId: aws.String(id), PartNumber: aws.Int32(1), Body: strings.NewReader("x")})
	wantCode(t, err, "NoSuchUpload")
	create, err = c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String("mpu"), Key: aws.String("k2")})
	if err != nil {
		t.Fatal(err)
	}
	id2 := aws.ToString(create.UploadId)
	for _, n := range []string{"0", "10001", "x"} {
		resp, body := e.do(e.signedRequest(rootUser, "PUT", "/mpu/k2?uploadId="+id2+"&partNumber="+n, []byte("x"), "", nil))
		wantXMLError(t, resp, body, http.StatusBadRequest, "InvalidArgument")
	}
	// Malformed completion documents.
	for _, doc := range []string{"<CompleteMultipartUpload>", "not xml", "<CompleteMultipartUpload></CompleteMultipartUpload>", ""} {
		resp, body := e.do(e.signedRequest(rootUser, "POST", "/mpu/k2?uploadId="+id2, []byte(doc), "", nil))
		wantXMLError(t, resp, body, http.StatusBadRequest, "MalformedXML")
	}
	if _, err := c.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: aws.String("mpu"), Key: aws.String("k2"), UploadId: aws.String(id2)}); err != nil {
		t.Fatal(err)
	}
	_, err = c.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: aws.String("mpu"), Key: aws.String("k2"), UploadId: aws.String(id2)})
	wantCode(t, err, "NoSuchUpload")
	_, err = c.ListParts(ctx, &s3.ListPartsInput{Bucket: aws.String("mpu"), Key: aws.String("k2"), UploadId: aws.String("garbage")})
	wantCode(t, err, "NoSuchUpload")
}

// TestMultipartMinimumPartSize uses real 5 MiB parts against the default
// minimum.
func TestMultipartMinimumPartSize(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	c := e.root()
	e.mustCreateBucket("mpu")
	create, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String("mpu"), Key: aws.String("k")})
	if err != nil {
		t.Fatal(err)
	}
	id := aws.ToString(create.UploadId)
	parts, body := uploadParts(t, c, "mpu", "k", id, []int{5 << 20, 5<<20 - 1, 10}, "")
	_, err = c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: aws.String("mpu"), Key: aws.String("k"), UploadId: aws.String(id),
		MultipartUpload: &types.CompletedMultipartUpload{Parts: parts}})
	wantCode(t, err, "EntityTooSmall")
	// Re-upload part 2 at full size; then it completes.
	part2 := randomBytes(5<<20, 99)
	out, err := c.UploadPart(ctx, &s3.UploadPartInput{Bucket: aws.String("mpu"), Key: aws.String("k"), UploadId: aws.String(id), PartNumber: aws.Int32(2), Body: bytes.NewReader(part2)})
	if err != nil {
		t.Fatal(err)
	}
	parts[1].ETag, parts[1].ChecksumCRC32 = out.ETag, out.ChecksumCRC32
	if _, err := c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: aws.String("mpu"), Key: aws.String("k"), UploadId: aws.String(id),
		MultipartUpload: &types.CompletedMultipartUpload{Parts: parts}}); err != nil {
		t.Fatal(err)
	}
	want := append(append(append([]byte{}, body[:5<<20]...), part2...), body[len(body)-10:]...)
	if got := e.mustGet("mpu", "k"); !bytes.Equal(got, want) {
		t.Fatal("completed object differs")
	}
}

func (e *testEnv) assertAbsentUpload(id string) {
	e.t.Helper()
	res, err := e.store.Meta().ListUploads("mpu", metaUploadOptions())
	if err != nil {
		e.t.Fatal(err)
	}
	for _, u := range res.Uploads {
		if u.UploadID == id {
			e.t.Fatalf("upload %s still present", id)
		}
	}
}

// TestCompleteMultipartUploadConditional: CompleteMultipartUpload with
// If-Match replaces only the version whose ETag it names (412 else, 404
// NoSuchKey with no object), and with If-None-Match: * only creates, as
// AWS's conditional writes; If-None-Match takes only "*" (501 else).
func TestCompleteMultipartUploadConditional(t *testing.T) {
	e := newEnv(t)
	ctx, c := context.Background(), e.root()
	e.mustCreateBucket("cond")
	complete := func(key string, setup func(*s3.CompleteMultipartUploadInput)) error {
		t.Helper()
		create, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String("cond"), Key: aws.String(key)})
		if err != nil {
			t.Fatal(err)
		}
		part, err := c.UploadPart(ctx, &s3.UploadPartInput{Bucket: aws.String("cond"), Key: aws.String(key), UploadId: create.UploadId,
			PartNumber: aws.Int32(1), Body: strings.NewReader("new " + key)})
		if err != nil {
			t.Fatal(err)
		}
		in := &s3.CompleteMultipartUploadInput{Bucket: aws.String("cond"), Key: aws.String(key), UploadId: create.UploadId,
			MultipartUpload: &types.CompletedMultipartUpload{Parts: []types.CompletedPart{{ETag: part.ETag, PartNumber: aws.Int32(1)}}}}
		setup(in)
		_, err = c.CompleteMultipartUpload(ctx, in)
		return err
	}
	put, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("cond"), Key: aws.String("k"), Body: strings.NewReader("old")})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, key string
		setup     func(*s3.CompleteMultipartUploadInput)
		code      string
		body      string // of key afterwards
	}{
		{"If-Match of another ETag", "k", func(in *s3.CompleteMultipartUploadInput) { in.IfMatch = aws.String(`"0123"`) }, "PreconditionFailed", "old"},
		{"If-None-Match * of an object", "k", func(in *s3.CompleteMultipartUploadInput) { in.IfNoneMatch = aws.String("*") }, "PreconditionFailed", "old"},
		{"If-None-Match of an ETag", "k", func(in *s3.CompleteMultipartUploadInput) { in.IfNoneMatch = put.ETag }, "NotImplemented", "old"},
		{"If-Match of its ETag", "k", func(in *s3.CompleteMultipartUploadInput) { in.IfMatch = put.ETag }, "", "new k"},
		{"If-Match with no object", "none", func(in *s3.CompleteMultipartUploadInput) { in.IfMatch = put.ETag }, "NoSuchKey", ""},
		{"If-None-Match * of no object", "fresh", func(in *s3.CompleteMultipartUploadInput) { in.IfNoneMatch = aws.String("*") }, "", "new fresh"},
	} {
		if got := errorCode(complete(tc.key, tc.setup)); got != tc.code {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.code)
		}
		if tc.body == "" {
			e.assertAbsent("cond", tc.key)
		} else if got := string(e.mustGet("cond", tc.key)); got != tc.body {
			t.Errorf("%s: %s holds %q, want %q", tc.name, tc.key, got, tc.body)
		}
	}
}
