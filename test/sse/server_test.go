package sse_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/b3-storage/b3/internal/testutil"
)

const (
	timeout = 2 * time.Minute
	hdrSSE  = "x-amz-server-side-encryption"
)

// stored is an object a test wrote and will read back after a restart.
type stored struct {
	bucket, key string
	body        []byte
	opts        sseOpts
}

func put(ctx context.Context, t *testing.T, c *s3.Client, bucket, key string, body []byte, o sseOpts) *s3.PutObjectOutput {
	t.Helper()
	out, err := c.PutObject(ctx, o.put(&s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader(body)}))
	if err != nil {
		t.Fatalf("put %s/%s: %v", bucket, key, err)
	}
	return out
}

func checkRead(ctx context.Context, t *testing.T, c *s3.Client, o stored) {
	t.Helper()
	got, _, err := getBytes(ctx, c, o.bucket, o.key, "", o.opts)
	if err != nil {
		t.Fatalf("get %s/%s: %v", o.bucket, o.key, err)
	}
	if !bytes.Equal(got, o.body) {
		t.Fatalf("get %s/%s: %d bytes, not the %d written", o.bucket, o.key, len(got), len(o.body))
	}
}

func httpStatus(err error) int {
	var re *awshttp.ResponseError
	if errors.As(err, &re) {
		return re.HTTPStatusCode()
	}
	return 0
}

// TestServerEncryption covers the S3 surface of encryption on one `b3
// server`, then searches its data directory for plaintext, restarts it
// and reads everything back.
func TestServerEncryption(t *testing.T) {
	srv := testutil.StartServer(t, testutil.ServerOptions{Args: []string{"--kms-keys", keyRing(t, "main", "other")}})
	ctx, cancel := context.WithTimeout(context.Background(), 5*timeout)
	defer cancel()
	c := srv.Client(timeout)
	const bucket = "enc"
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatal(err)
	}
	k1, k2 := newCustomerKey(t), newCustomerKey(t)
	var written []stored

	kinds := []struct {
		name     string
		opts     sseOpts
		header   types.ServerSideEncryption
		kmsKey   string
		md5ETag  bool // the ETag is the plaintext's MD5 (SSE-S3, as AWS)
		customer bool
	}{
		{"sse-s3", sseOpts{sse: types.ServerSideEncryptionAes256}, types.ServerSideEncryptionAes256, "", true, false},
		{"kms default key", sseOpts{sse: types.ServerSideEncryptionAwsKms}, types.ServerSideEncryptionAwsKms, "main", false, false},
		{"kms named key", sseOpts{sse: types.ServerSideEncryptionAwsKms, kmsKey: "other"}, types.ServerSideEncryptionAwsKms, "other", false, false},
		{"sse-c", sseOpts{ck: &k1}, "", "", false, true},
	}
	sizes := []int{0, 1, 100, 4096, 64<<10 - 1, 64 << 10, 3<<16 + 100, 2<<20 + 5}
	t.Run("put get head", func(t *testing.T) {
		for _, k := range kinds {
			for _, size := range sizes {
				key := fmt.Sprintf("%s/%d", k.name, size)
				body := patterned(secretMark, size)
				out := put(ctx, t, c, bucket, key, body, k.opts)
				if out.ServerSideEncryption != k.header {
					t.Errorf("%s: PUT answered encryption %q, want %q", key, out.ServerSideEncryption, k.header)
				}
				if k.kmsKey != "" && aws.ToString(out.SSEKMSKeyId) != k.kmsKey {
					t.Errorf("%s: PUT answered KMS key %q, want %q", key, aws.ToString(out.SSEKMSKeyId), k.kmsKey)
				}
				if k.customer && aws.ToString(out.SSECustomerKeyMD5) != k.opts.ck.md5 {
					t.Errorf("%s: PUT answered key MD5 %q", key, aws.ToString(out.SSECustomerKeyMD5))
				}
				if isMD5 := strings.Trim(aws.ToString(out.ETag), `"`) == md5Hex(body); isMD5 != k.md5ETag {
					t.Errorf("%s: ETag %s is the plaintext MD5: %v, want %v", key, aws.ToString(out.ETag), isMD5, k.md5ETag)
				}
				head, err := c.HeadObject(ctx, k.opts.head(&s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)}))
				if err != nil {
					t.Fatalf("head %s: %v", key, err)
				}
				if aws.ToInt64(head.ContentLength) != int64(size) || head.ServerSideEncryption != k.header || aws.ToString(head.ETag) != aws.ToString(out.ETag) {
					t.Errorf("%s: HEAD length %d encryption %q etag %s", key, aws.ToInt64(head.ContentLength), head.ServerSideEncryption, aws.ToString(head.ETag))
				}
				got, gout, err := getBytes(ctx, c, bucket, key, "", k.opts)
				if err != nil || !bytes.Equal(got, body) {
					t.Fatalf("get %s: %d bytes, err %v", key, len(got), err)
				}
				if gout.ServerSideEncryption != k.header || (k.customer && aws.ToString(gout.SSECustomerAlgorithm) != "AES256") {
					t.Errorf("%s: GET encryption headers %q %q", key, gout.ServerSideEncryption, aws.ToString(gout.SSECustomerAlgorithm))
				}
				written = append(written, stored{bucket, key, body, k.opts})
			}
		}
	})

	t.Run("ranges across chunk boundaries", func(t *testing.T) {
		const size = 3<<16 + 100
		ranges := []struct {
			header     string
			start, end int // inclusive
		}{
			{"bytes=0-0", 0, 0},
			{"bytes=65535-65536", 65535, 65536},
			{"bytes=65530-131080", 65530, 131080},
			{"bytes=100-65635", 100, 65635},
			{"bytes=131072-196607", 131072, 196607},
			{"bytes=-10", size - 10, size - 1},
			{"bytes=196600-", 196600, size - 1},
			{"bytes=0-", 0, size - 1},
			{"bytes=5-999999999", 5, size - 1},
		}
		for _, k := range kinds {
			key := fmt.Sprintf("%s/%d", k.name, size)
			body := patterned(secretMark, size)
			for _, r := range ranges {
				got, out, err := getBytes(ctx, c, bucket, key, r.header, k.opts)
				if err != nil {
					t.Fatalf("%s %s: %v", key, r.header, err)
				}
				if !bytes.Equal(got, body[r.start:r.end+1]) {
					t.Fatalf("%s %s: wrong bytes (%d)", key, r.header, len(got))
				}
				if want := fmt.Sprintf("bytes %d-%d/%d", r.start, r.end, size); aws.ToString(out.ContentRange) != want {
					t.Fatalf("%s %s: Content-Range %q, want %q", key, r.header, aws.ToString(out.ContentRange), want)
				}
			}
			_, _, err := getBytes(ctx, c, bucket, key, fmt.Sprintf("bytes=%d-", size), k.opts)
			wantCode(t, key+" range past the end", err, "InvalidRange")
		}
	})

	t.Run("bad requests", func(t *testing.T) {
		key := fmt.Sprintf("sse-c/%d", 3<<16+100)
		body := patterned(secretMark, 10)
		short := customerKey{key: "MDEyMzQ1Njc4OTAxMjM0NQ==", md5: "xLZexHz0k39w1fy7ydVjHg=="}
		cases := []struct {
			name   string
			do     func() error
			code   string
			status int
		}{
			{"GET of an SSE-C object without its key", func() error { _, _, err := getBytes(ctx, c, bucket, key, "", sseOpts{}); return err }, "InvalidRequest", 400},
			{"GET of an SSE-C object with another key", func() error { _, _, err := getBytes(ctx, c, bucket, key, "", sseOpts{ck: &k2}); return err }, "AccessDenied", 403},
			{"ranged GET with another key", func() error { _, _, err := getBytes(ctx, c, bucket, key, "bytes=0-9", sseOpts{ck: &k2}); return err }, "AccessDenied", 403},
			{"HEAD without the key", func() error {
				_, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
				return err
			}, "", 400},
			{"HEAD with another key", func() error {
				_, err := c.HeadObject(ctx, sseOpts{ck: &k2}.head(&s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)}))
				return err
			}, "", 403},
			{"SSE-C key of an SSE-S3 object", func() error {
				_, _, err := getBytes(ctx, c, bucket, "sse-s3/100", "", sseOpts{ck: &k1})
				return err
			}, "InvalidRequest", 400},
			{"SSE-C key MD5 that does not match", func() error {
				_, err := c.PutObject(ctx, sseOpts{ck: &customerKey{key: k1.key, md5: k2.md5}}.put(&s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String("bad"), Body: bytes.NewReader(body)}))
				return err
			}, "InvalidArgument", 400},
			{"SSE-C key of 16 bytes", func() error {
				_, err := c.PutObject(ctx, sseOpts{ck: &short}.put(&s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String("bad"), Body: bytes.NewReader(body)}))
				return err
			}, "InvalidArgument", 400},
			{"SSE-C and SSE-S3 at once", func() error {
				_, err := c.PutObject(ctx, sseOpts{sse: types.ServerSideEncryptionAes256, ck: &k1}.put(&s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String("bad"), Body: bytes.NewReader(body)}))
				return err
			}, "InvalidArgument", 400},
			{"unknown method", func() error {
				_, err := c.PutObject(ctx, sseOpts{sse: "AES512"}.put(&s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String("bad"), Body: bytes.NewReader(body)}))
				return err
			}, "InvalidArgument", 400},
			{"unknown KMS key", func() error {
				_, err := c.PutObject(ctx, sseOpts{sse: types.ServerSideEncryptionAwsKms, kmsKey: "nope"}.put(&s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String("bad"), Body: bytes.NewReader(body)}))
				return err
			}, "KMS.NotFoundException", 400},
			{"GET naming SSE-KMS", func() error {
				in := &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String("sse-s3/100")}
				_, err := c.GetObject(ctx, in, func(o *s3.Options) {
					o.APIOptions = append(o.APIOptions, smithyhttp.AddHeaderValue(hdrSSE, "aws:kms"))
				})
				return err
			}, "InvalidArgument", 400},
			{"KMS key id with SSE-S3", func() error {
				_, err := c.PutObject(ctx, sseOpts{sse: types.ServerSideEncryptionAes256, kmsKey: "main"}.put(&s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String("bad"), Body: bytes.NewReader(body)}))
				return err
			}, "InvalidArgument", 400},
		}
		for _, tc := range cases {
			err := tc.do()
			if err == nil {
				t.Fatalf("%s: succeeded", tc.name)
			}
			if tc.code != "" {
				wantCode(t, tc.name, err, tc.code)
			}
			if httpStatus(err) != tc.status {
				t.Fatalf("%s: status %d, want %d (%v)", tc.name, httpStatus(err), tc.status, err)
			}
		}
		if _, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String("bad")}); httpStatus(err) != 404 {
			t.Fatalf("a refused write stored something: %v", err)
		}
	})

	t.Run("multipart", func(t *testing.T) {
		partSizes := []int{5 << 20, 5<<20 + 3, 100}
		for _, k := range kinds {
			key := "mp/" + k.name
			body := patterned(secretMark, 10<<20+103)
			create := createUpload(ctx, t, c, bucket, key, k.opts)
			if create.ServerSideEncryption != k.header {
				t.Errorf("%s: create answered %q", key, create.ServerSideEncryption)
			}
			if k.customer {
				_, err := c.UploadPart(ctx, &s3.UploadPartInput{Bucket: aws.String(bucket), Key: aws.String(key), UploadId: create.UploadId,
					PartNumber: aws.Int32(1), Body: bytes.NewReader(body[:10])})
				wantCode(t, key+": UploadPart without the key", err, "InvalidRequest")
				_, err = c.UploadPart(ctx, &s3.UploadPartInput{Bucket: aws.String(bucket), Key: aws.String(key), UploadId: create.UploadId,
					PartNumber: aws.Int32(1), Body: bytes.NewReader(body[:10]), SSECustomerAlgorithm: ckAlg(&k2), SSECustomerKey: ckKey(&k2), SSECustomerKeyMD5: ckMD5(&k2)})
				wantCode(t, key+": UploadPart with another key", err, "AccessDenied")
			}
			parts := uploadParts(ctx, t, c, bucket, key, create.UploadId, body, partSizes, k.opts)
			listed, err := c.ListParts(ctx, &s3.ListPartsInput{Bucket: aws.String(bucket), Key: aws.String(key), UploadId: create.UploadId})
			if err != nil {
				t.Fatal(err)
			}
			for i, p := range listed.Parts {
				if aws.ToInt64(p.Size) != int64(partSizes[i]) {
					t.Errorf("%s: ListParts size of part %d: %d, want %d", key, i+1, aws.ToInt64(p.Size), partSizes[i])
				}
			}
			done, err := c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: aws.String(bucket), Key: aws.String(key), UploadId: create.UploadId,
				MultipartUpload: &types.CompletedMultipartUpload{Parts: parts}})
			if err != nil {
				t.Fatalf("%s: complete: %v", key, err)
			}
			if done.ServerSideEncryption != k.header {
				t.Errorf("%s: complete answered %q", key, done.ServerSideEncryption)
			}
			got, _, err := getBytes(ctx, c, bucket, key, "", k.opts)
			if err != nil || !bytes.Equal(got, body) {
				t.Fatalf("%s: get: %d bytes, %v", key, len(got), err)
			}
			// Across the first part boundary, and across the second into
			// the last part.
			for _, r := range [][2]int{{5<<20 - 10, 5<<20 + 10}, {10<<20 - 70000, 10<<20 + 50}, {5 << 20, 5 << 20}} {
				got, _, err := getBytes(ctx, c, bucket, key, fmt.Sprintf("bytes=%d-%d", r[0], r[1]), k.opts)
				if err != nil || !bytes.Equal(got, body[r[0]:r[1]+1]) {
					t.Fatalf("%s: range %v: %d bytes, %v", key, r, len(got), err)
				}
			}
			part2, err := c.GetObject(ctx, k.opts.get(&s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), PartNumber: aws.Int32(2)}))
			if err != nil {
				t.Fatalf("%s: part 2: %v", key, err)
			}
			got, err = io.ReadAll(part2.Body)
			part2.Body.Close()
			if err != nil || !bytes.Equal(got, body[partSizes[0]:partSizes[0]+partSizes[1]]) || aws.ToInt64(part2.ContentLength) != int64(partSizes[1]) {
				t.Fatalf("%s: ?partNumber=2: %d bytes of %d, %v", key, len(got), aws.ToInt64(part2.ContentLength), err)
			}
			written = append(written, stored{bucket, key, body, k.opts})
		}
	})

	t.Run("copies in every direction", func(t *testing.T) {
		ends := []struct {
			name string
			opts sseOpts
			hdr  types.ServerSideEncryption
		}{
			{"plain", sseOpts{}, ""},
			{"sse-s3", sseOpts{sse: types.ServerSideEncryptionAes256}, types.ServerSideEncryptionAes256},
			{"kms", sseOpts{sse: types.ServerSideEncryptionAwsKms, kmsKey: "other"}, types.ServerSideEncryptionAwsKms},
			{"sse-c k1", sseOpts{ck: &k1}, ""},
			{"sse-c k2", sseOpts{ck: &k2}, ""},
		}
		for _, from := range ends {
			// What is copied to a plain object is plaintext on disk,
			// legitimately: it gets a source of its own, marked so.
			src, plainSrc := "copy-src/"+from.name, "copy-src-to-plain/"+from.name
			body, plainBody := patterned(secretMark, 200<<10+11), patterned(plainMark, 100<<10)
			if from.name == "plain" {
				body = plainBody
			}
			put(ctx, t, c, bucket, src, body, from.opts)
			put(ctx, t, c, bucket, plainSrc, plainBody, from.opts)
			for _, to := range ends {
				dst := "copy/" + from.name + "/" + to.name
				o := to.opts
				o.copySrc = from.opts.ck
				src, body := src, body
				if to.name == "plain" {
					src, body = plainSrc, plainBody
				}
				out, err := c.CopyObject(ctx, o.copyObject(&s3.CopyObjectInput{Bucket: aws.String(bucket), Key: aws.String(dst), CopySource: aws.String(bucket + "/" + src)}))
				if err != nil {
					t.Fatalf("copy %s -> %s: %v", from.name, to.name, err)
				}
				if out.ServerSideEncryption != to.hdr {
					t.Errorf("copy %s -> %s: answered %q", from.name, to.name, out.ServerSideEncryption)
				}
				got, _, err := getBytes(ctx, c, bucket, dst, "", to.opts)
				if err != nil || !bytes.Equal(got, body) {
					t.Fatalf("copy %s -> %s: read back %d bytes, %v", from.name, to.name, len(got), err)
				}
				if to.opts.ck != nil || to.opts.sse != "" {
					written = append(written, stored{bucket, dst, body, to.opts})
				}
			}
			if from.opts.ck != nil {
				_, err := c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String(bucket), Key: aws.String("copy/denied"), CopySource: aws.String(bucket + "/" + src)})
				wantCode(t, "copy of an SSE-C source without its key", err, "InvalidRequest")
			}
		}
		// Encrypting an object in place, then re-keying it in place.
		const inPlace = "copy/in-place"
		body := patterned(secretMark, 70<<10)
		put(ctx, t, c, bucket, inPlace, body, sseOpts{sse: types.ServerSideEncryptionAes256})
		if _, err := c.CopyObject(ctx, sseOpts{ck: &k1}.copyObject(&s3.CopyObjectInput{Bucket: aws.String(bucket), Key: aws.String(inPlace), CopySource: aws.String(bucket + "/" + inPlace)})); err != nil {
			t.Fatalf("in-place copy to SSE-C: %v", err)
		}
		if _, err := c.CopyObject(ctx, sseOpts{ck: &k2, copySrc: &k1}.copyObject(&s3.CopyObjectInput{Bucket: aws.String(bucket), Key: aws.String(inPlace), CopySource: aws.String(bucket + "/" + inPlace)})); err != nil {
			t.Fatalf("in-place re-key: %v", err)
		}
		if _, _, err := getBytes(ctx, c, bucket, inPlace, "", sseOpts{ck: &k1}); testutil.APICode(err) != "AccessDenied" {
			t.Fatalf("the old key still reads the re-keyed object: %v", err)
		}
		written = append(written, stored{bucket, inPlace, body, sseOpts{ck: &k2}})
		// Decrypting in place: only the copy-source key is named (the
		// plaintext then on disk is marked as the control).
		const decrypted = "copy/decrypted-in-place"
		plainBody := patterned(plainMark, 70<<10)
		put(ctx, t, c, bucket, decrypted, plainBody, sseOpts{ck: &k2})
		if _, err := c.CopyObject(ctx, sseOpts{copySrc: &k2}.copyObject(&s3.CopyObjectInput{Bucket: aws.String(bucket), Key: aws.String(decrypted), CopySource: aws.String(bucket + "/" + decrypted)})); err != nil {
			t.Fatalf("in-place decryption: %v", err)
		}
		if got, out, err := getBytes(ctx, c, bucket, decrypted, "", sseOpts{}); err != nil || !bytes.Equal(got, plainBody) || out.ServerSideEncryption != "" {
			t.Fatalf("in-place decryption: read back %d bytes, %v", len(got), err)
		}

		// UploadPartCopy: a range of an SSE-C source into an SSE-S3 upload.
		create, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String(bucket), Key: aws.String("copy/parts"), ServerSideEncryption: types.ServerSideEncryptionAes256})
		if err != nil {
			t.Fatal(err)
		}
		srcBody, _, err := getBytes(ctx, c, bucket, "copy-src/sse-c k1", "", sseOpts{ck: &k1})
		if err != nil {
			t.Fatal(err)
		}
		cp, err := c.UploadPartCopy(ctx, &s3.UploadPartCopyInput{Bucket: aws.String(bucket), Key: aws.String("copy/parts"), UploadId: create.UploadId, PartNumber: aws.Int32(1),
			CopySource: aws.String(bucket + "/copy-src/sse-c k1"), CopySourceRange: aws.String("bytes=65000-140000"),
			CopySourceSSECustomerAlgorithm: ckAlg(&k1), CopySourceSSECustomerKey: ckKey(&k1), CopySourceSSECustomerKeyMD5: ckMD5(&k1)})
		if err != nil {
			t.Fatalf("UploadPartCopy: %v", err)
		}
		if _, err := c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: aws.String(bucket), Key: aws.String("copy/parts"), UploadId: create.UploadId,
			MultipartUpload: &types.CompletedMultipartUpload{Parts: []types.CompletedPart{{PartNumber: aws.Int32(1), ETag: cp.CopyPartResult.ETag}}}}); err != nil {
			t.Fatal(err)
		}
		got, _, err := getBytes(ctx, c, bucket, "copy/parts", "", sseOpts{})
		if err != nil || !bytes.Equal(got, srcBody[65000:140001]) {
			t.Fatalf("UploadPartCopy result: %d bytes, %v", len(got), err)
		}
		written = append(written, stored{bucket, "copy/parts", got, sseOpts{}})
	})

	t.Run("bucket default encryption", func(t *testing.T) {
		const b = "enc-default"
		if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(b)}); err != nil {
			t.Fatal(err)
		}
		_, err := c.GetBucketEncryption(ctx, &s3.GetBucketEncryptionInput{Bucket: aws.String(b)})
		wantCode(t, "GetBucketEncryption of a bucket without", err, "ServerSideEncryptionConfigurationNotFoundError")
		rules := []struct {
			alg    types.ServerSideEncryption
			key    string
			code   string
			header types.ServerSideEncryption
		}{
			{types.ServerSideEncryptionAwsKms, "nope", "KMS.NotFoundException", ""},
			{types.ServerSideEncryptionAwsKms, "other", "", types.ServerSideEncryptionAwsKms},
			{types.ServerSideEncryptionAes256, "", "", types.ServerSideEncryptionAes256},
		}
		for i, r := range rules {
			_, err := c.PutBucketEncryption(ctx, &s3.PutBucketEncryptionInput{Bucket: aws.String(b), ServerSideEncryptionConfiguration: &types.ServerSideEncryptionConfiguration{
				Rules: []types.ServerSideEncryptionRule{{ApplyServerSideEncryptionByDefault: &types.ServerSideEncryptionByDefault{SSEAlgorithm: r.alg, KMSMasterKeyID: optString(r.key)}}}}})
			if r.code != "" {
				wantCode(t, "PutBucketEncryption "+r.key, err, r.code)
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			conf, err := c.GetBucketEncryption(ctx, &s3.GetBucketEncryptionInput{Bucket: aws.String(b)})
			if err != nil || conf.ServerSideEncryptionConfiguration.Rules[0].ApplyServerSideEncryptionByDefault.SSEAlgorithm != r.alg {
				t.Fatalf("GetBucketEncryption: %+v %v", conf, err)
			}
			key := fmt.Sprintf("default-%d", i)
			body := patterned(secretMark, 150<<10)
			out := put(ctx, t, c, b, key, body, sseOpts{})
			if out.ServerSideEncryption != r.header {
				t.Fatalf("PUT into a bucket with default %s answered %q", r.alg, out.ServerSideEncryption)
			}
			written = append(written, stored{b, key, body, sseOpts{}})
		}
		// A request's own encryption wins over the default.
		body := patterned(secretMark, 1000)
		if out := put(ctx, t, c, b, "explicit", body, sseOpts{ck: &k1}); out.ServerSideEncryption != "" || aws.ToString(out.SSECustomerAlgorithm) != "AES256" {
			t.Fatalf("SSE-C PUT into a default-encrypted bucket answered %q", out.ServerSideEncryption)
		}
		written = append(written, stored{b, "explicit", body, sseOpts{ck: &k1}})
		if _, err := c.DeleteBucketEncryption(ctx, &s3.DeleteBucketEncryptionInput{Bucket: aws.String(b)}); err != nil {
			t.Fatal(err)
		}
		_, err = c.GetBucketEncryption(ctx, &s3.GetBucketEncryptionInput{Bucket: aws.String(b)})
		wantCode(t, "GetBucketEncryption after delete", err, "ServerSideEncryptionConfigurationNotFoundError")
		if out := put(ctx, t, c, b, "after", patterned(plainMark, 100), sseOpts{}); out.ServerSideEncryption != "" {
			t.Fatalf("PUT after DeleteBucketEncryption answered %q", out.ServerSideEncryption)
		}
	})

	t.Run("listings show plaintext sizes", func(t *testing.T) {
		out, err := c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String("sse-s3/")})
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range out.Contents {
			var size int64
			fmt.Sscanf(strings.TrimPrefix(aws.ToString(o.Key), "sse-s3/"), "%d", &size)
			if aws.ToInt64(o.Size) != size {
				t.Errorf("%s listed with size %d", aws.ToString(o.Key), aws.ToInt64(o.Size))
			}
		}
		if len(out.Contents) != len(sizes) {
			t.Fatalf("%d objects listed, want %d", len(out.Contents), len(sizes))
		}
	})

	// The control: plaintext that must be found on disk.
	put(ctx, t, c, bucket, "control", patterned(plainMark, 256<<10), sseOpts{})
	if err := srv.Proc.Stop(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	assertCiphertextOnly(t, srv.Data)
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	c = srv.Client(timeout)
	for _, o := range written {
		checkRead(ctx, t, c, o)
	}
}
