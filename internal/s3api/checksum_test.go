package s3api

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/b3-storage/b3/internal/checksum"
	"github.com/b3-storage/b3/internal/meta"
	"github.com/b3-storage/b3/internal/objstore"
)

// minioChecksums maps every algorithm minio-go offers to b3's, with the
// object checksum type a multipart upload with it gets.
var minioChecksums = []struct {
	minio minio.ChecksumType
	alg   checksum.Algorithm
	typ   checksum.Type
}{
	{minio.ChecksumCRC32, checksum.CRC32, checksum.Composite},
	{minio.ChecksumCRC32C, checksum.CRC32C, checksum.Composite},
	{minio.ChecksumFullObjectCRC32, checksum.CRC32, checksum.FullObject},
	{minio.ChecksumFullObjectCRC32C, checksum.CRC32C, checksum.FullObject},
	{minio.ChecksumCRC64NVME, checksum.CRC64NVME, checksum.FullObject},
	{minio.ChecksumSHA1, checksum.SHA1, checksum.Composite},
	{minio.ChecksumSHA256, checksum.SHA256, checksum.Composite},
	{minio.ChecksumSHA512, checksum.SHA512, checksum.Composite},
	{minio.ChecksumMD5, checksum.MD5, checksum.Composite},
	{minio.ChecksumXXHash64, checksum.XXHASH64, checksum.Composite},
	{minio.ChecksumXXHash3, checksum.XXHASH3, checksum.Composite},
	{minio.ChecksumXXHash128, checksum.XXHASH128, checksum.Composite},
}

// noReadAt hides a reader's ReadAt, sending minio-go down its sequential
// multipart path (checksum headers per part instead of trailers).
type noReadAt struct{ io.Reader }

// TestMinioChecksums uploads with minio-go and every checksum algorithm
// it offers: single-part (trailing checksum), multipart from a ReaderAt
// (trailing checksum per part) and from a plain reader (checksum header
// per part). Each upload must succeed (CompleteMultipartUpload's
// x-amz-checksum-* header is the object's checksum, not the XML body's)
// and the object must carry exactly the checksum S3 would compute.
func TestMinioChecksums(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	u, _ := url.Parse(e.ts.URL)
	const partSize = 5 << 20
	body := randomBytes(partSize+123, 7)
	parts := [][]byte{body[:partSize], body[partSize:]}
	mc, err := minio.New(u.Host, &minio.Options{Creds: credentials.NewStaticV4(rootUser.AccessKey, rootUser.SecretKey, ""),
		Region: testRegion, TrailingHeaders: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := mc.MakeBucket(ctx, "sums", minio.MakeBucketOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, c := range minioChecksums {
		for _, variant := range []string{"single", "multipart-trailer", "multipart-header"} {
			name := c.minio.String()
			if c.minio.Is(minio.ChecksumFullObject) {
				name += "-full"
			}
			key, data := name+"/"+variant, body
			var src io.Reader = bytes.NewReader(data)
			switch variant {
			case "single":
				data = body[:1000]
				src = bytes.NewReader(data)
			case "multipart-header":
				src = noReadAt{src}
			}
			if _, err := mc.PutObject(ctx, "sums", key, src, int64(len(data)), minio.PutObjectOptions{Checksum: c.minio, PartSize: partSize}); err != nil {
				t.Fatalf("%s: %v", key, err)
			}
			want, typ := checksum.Encode(c.alg.Sum(data)), checksum.FullObject
			if variant != "single" && c.typ == checksum.Composite {
				want, _ = checksum.CompositeChecksum(c.alg, [][]byte{c.alg.Sum(parts[0]), c.alg.Sum(parts[1])})
				typ = checksum.Composite
			}
			resp, _ := e.do(e.signedRequest(rootUser, http.MethodHead, "/sums/"+key, nil, "", http.Header{"X-Amz-Checksum-Mode": {"ENABLED"}}))
			if got := resp.Header.Get(c.alg.HeaderName()); got != want || resp.Header.Get(checksum.HeaderType) != typ.String() {
				t.Fatalf("%s: stored %s=%q type %q, want %q %s", key, c.alg, got, resp.Header.Get(checksum.HeaderType), want, typ)
			}
			if got := e.mustGet("sums", key); !bytes.Equal(got, data) {
				t.Fatalf("%s: read back differs", key)
			}
		}
	}
}

// TestCompleteVerifiesObjectChecksum: the SDK's ChecksumCRC32C on
// CompleteMultipartUpload is compared with the object's composite
// checksum; a wrong one stores nothing and leaves the upload to retry.
func TestCompleteVerifiesObjectChecksum(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.MinPartSize = 1 << 10 })
	ctx := context.Background()
	c := e.root()
	e.mustCreateBucket("mpu")
	create, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String("mpu"), Key: aws.String("k"), ChecksumAlgorithm: types.ChecksumAlgorithmCrc32c})
	if err != nil {
		t.Fatal(err)
	}
	parts, body := uploadParts(t, c, "mpu", "k", aws.ToString(create.UploadId), []int{2 << 10, 100}, types.ChecksumAlgorithmCrc32c)
	composite, _ := checksum.CompositeChecksum(checksum.CRC32C, [][]byte{checksum.CRC32C.Sum(body[:2<<10]), checksum.CRC32C.Sum(body[2<<10:])})
	complete := func(value string, size int64) error {
		_, err := c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: aws.String("mpu"), Key: aws.String("k"), UploadId: create.UploadId,
			ChecksumCRC32C: aws.String(value), MpuObjectSize: aws.Int64(size), MultipartUpload: &types.CompletedMultipartUpload{Parts: parts}})
		return err
	}
	wantCode(t, complete(checksum.Encode(checksum.CRC32C.Sum(body)), int64(len(body))), "BadDigest") // a full-object value
	wantCode(t, complete(strings.TrimSuffix(composite, "-2"), int64(len(body))-1), "InvalidRequest")
	e.assertAbsent("mpu", "k")
	if err := complete(strings.TrimSuffix(composite, "-2"), int64(len(body))); err != nil {
		t.Fatal(err)
	}
	head, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("mpu"), Key: aws.String("k"), ChecksumMode: types.ChecksumModeEnabled})
	if err != nil || aws.ToString(head.ChecksumCRC32C) != composite || head.ChecksumType != types.ChecksumTypeComposite {
		t.Fatalf("head: %v %v %v", aws.ToString(head.ChecksumCRC32C), head.ChecksumType, err)
	}
}

// TestUnverifiedChecksumRefused: a checksum b3 cannot verify is refused,
// never stored as if it had been checked.
func TestUnverifiedChecksumRefused(t *testing.T) {
	e := newEnv(t)
	e.mustCreateBucket("bkt")
	body := []byte("payload")
	for _, h := range []http.Header{
		{"X-Amz-Checksum-Crc16": {"AAA="}},
		{"X-Amz-Checksum-Blake3": {checksum.Encode(checksum.SHA256.Sum(body))}},
		{"X-Amz-Checksum-Crc32": {checksum.Encode(checksum.CRC32.Sum(body))}, "X-Amz-Checksum-Xxh4": {"AAAAAA=="}},
		{"X-Amz-Checksum-Algorithm": {"BLAKE3"}},
		{"X-Amz-Sdk-Checksum-Algorithm": {"BLAKE3"}, "X-Amz-Checksum-Blake3": {"AAAAAA=="}},
	} {
		resp, data := e.do(e.signedRequest(rootUser, http.MethodPut, "/bkt/k", body, "", h))
		wantXMLError(t, resp, data, http.StatusBadRequest, "InvalidRequest")
		e.assertAbsent("bkt", "k")
	}
	// A wrong value of each newly supported algorithm is caught.
	for _, alg := range []checksum.Algorithm{checksum.SHA512, checksum.MD5, checksum.XXHASH64, checksum.XXHASH3, checksum.XXHASH128} {
		h := http.Header{http.CanonicalHeaderKey(alg.HeaderName()): {checksum.Encode(alg.Sum([]byte("other")))}}
		resp, data := e.do(e.signedRequest(rootUser, http.MethodPut, "/bkt/k", body, "", h))
		wantXMLError(t, resp, data, http.StatusBadRequest, "BadDigest")
		e.assertAbsent("bkt", "k")
	}
}

// TestDefaultChecksum: objects uploaded without a checksum get a
// FULL_OBJECT CRC64NVME (single PUT, multipart, copy), returned with
// x-amz-checksum-mode: ENABLED; objects stored before (no checksum in
// their record) still read, without one.
func TestDefaultChecksum(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.MinPartSize = 1 << 10 })
	ctx := context.Background()
	c := e.client(rootUser, aws.RequestChecksumCalculationWhenRequired) // sends no checksum
	e.mustCreateBucket("dflt")
	head := func(key string) *s3.HeadObjectOutput {
		t.Helper()
		out, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("dflt"), Key: aws.String(key), ChecksumMode: types.ChecksumModeEnabled})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	wantDefault := func(key string, body []byte) {
		t.Helper()
		out := head(key)
		if got, want := aws.ToString(out.ChecksumCRC64NVME), checksum.Encode(checksum.CRC64NVME.Sum(body)); got != want || out.ChecksumType != types.ChecksumTypeFullObject {
			t.Fatalf("%s: CRC64NVME %q type %q, want %q FULL_OBJECT", key, got, out.ChecksumType, want)
		}
		// The SDK validates the returned checksum while reading.
		get, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("dflt"), Key: aws.String(key), ChecksumMode: types.ChecksumModeEnabled})
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(get.Body)
		get.Body.Close()
		if err != nil || !bytes.Equal(data, body) {
			t.Fatalf("%s: get: %v", key, err)
		}
	}
	for _, size := range []int{0, 100, 64 << 10} { // inline and in segments
		body := randomBytes(size, uint64(size))
		put, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("dflt"), Key: aws.String("put"), Body: bytes.NewReader(body)})
		if err != nil {
			t.Fatal(err)
		}
		if aws.ToString(put.ChecksumCRC64NVME) != checksum.Encode(checksum.CRC64NVME.Sum(body)) {
			t.Fatalf("PUT response: CRC64NVME %q", aws.ToString(put.ChecksumCRC64NVME))
		}
		wantDefault("put", body)
	}

	create, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String("dflt"), Key: aws.String("mpu")})
	if err != nil {
		t.Fatal(err)
	}
	parts, body := uploadParts(t, c, "dflt", "mpu", aws.ToString(create.UploadId), []int{3 << 10, 2 << 10, 7}, "")
	if _, err := c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: aws.String("dflt"), Key: aws.String("mpu"), UploadId: create.UploadId,
		ChecksumCRC64NVME: aws.String(checksum.Encode(checksum.CRC64NVME.Sum(body))), MultipartUpload: &types.CompletedMultipartUpload{Parts: parts}}); err != nil {
		t.Fatal(err)
	}
	wantDefault("mpu", body)

	if _, err := c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String("dflt"), Key: aws.String("copy"), CopySource: aws.String("dflt/mpu")}); err != nil {
		t.Fatal(err)
	}
	wantDefault("copy", body)

	// A record written without a checksum, as every record was before
	// default checksums: it reads back, and reports none.
	old := []byte("stored by an older b3")
	if _, err := e.store.PutObject(ctx, objstore.PutInput{Bucket: "dflt", Key: "old", Body: bytes.NewReader(old), Object: &meta.Object{Owner: rootUser.AccessKey},
		Finish: func(o *meta.Object) error { o.ETag = "0"; return nil }}); err != nil {
		t.Fatal(err)
	}
	if out := head("old"); out.ChecksumCRC64NVME != nil || out.ChecksumType != "" {
		t.Fatalf("old object reports a checksum: %v %v", aws.ToString(out.ChecksumCRC64NVME), out.ChecksumType)
	}
	if !bytes.Equal(e.mustGet("dflt", "old"), old) {
		t.Fatal("old object reads back different")
	}
}

// TestEncryptionWithoutMasterKeys: a server without master keys (a b3
// node started without --kms-keys) refuses SSE-S3 and SSE-KMS with
// NotImplemented and stores nothing, while SSE-C, which needs none,
// works; an SSE-C key whose MD5 does not match is refused.
func TestEncryptionWithoutMasterKeys(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	c := e.root()
	e.mustCreateBucket("enc")
	e.mustPut("enc", "plain", []byte("plain"))
	key := aws.String("k")
	const customerKey, customerKeyMD5 = "MDEyMzQ1Njc4OTAxMjM0NTY3ODkwMTIzNDU2Nzg5MDE=", "KYvwGXoFFJ42a2u2GDWhwQ=="
	for name, edit := range map[string]func(*s3.PutObjectInput){
		"AES256": func(in *s3.PutObjectInput) { in.ServerSideEncryption = types.ServerSideEncryptionAes256 },
		"aws:kms": func(in *s3.PutObjectInput) {
			in.ServerSideEncryption = types.ServerSideEncryptionAwsKms
			in.SSEKMSKeyId = aws.String("key")
		},
	} {
		in := &s3.PutObjectInput{Bucket: aws.String("enc"), Key: key, Body: strings.NewReader("secret")}
		edit(in)
		if _, err := c.PutObject(ctx, in); errorCode(err) != "NotImplemented" {
			t.Fatalf("PUT with %s: %v, want NotImplemented", name, err)
		}
		e.assertAbsent("enc", "k")
	}
	_, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String("enc"), Key: key, ServerSideEncryption: types.ServerSideEncryptionAes256})
	wantCode(t, err, "NotImplemented")
	_, err = c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String("enc"), Key: key, CopySource: aws.String("enc/plain"), ServerSideEncryption: types.ServerSideEncryptionAwsKms})
	wantCode(t, err, "NotImplemented")
	e.assertAbsent("enc", "k")
	_, err = c.PutBucketEncryption(ctx, &s3.PutBucketEncryptionInput{Bucket: aws.String("enc"), ServerSideEncryptionConfiguration: &types.ServerSideEncryptionConfiguration{
		Rules: []types.ServerSideEncryptionRule{{ApplyServerSideEncryptionByDefault: &types.ServerSideEncryptionByDefault{SSEAlgorithm: types.ServerSideEncryptionAes256}}}}})
	wantCode(t, err, "NotImplemented")

	sseC := &s3.PutObjectInput{Bucket: aws.String("enc"), Key: key, Body: strings.NewReader("secret"),
		SSECustomerAlgorithm: aws.String("AES256"), SSECustomerKey: aws.String(customerKey), SSECustomerKeyMD5: aws.String("3GvFkB8cQJ/uLyh6w2ZR0Q==")}
	_, err = c.PutObject(ctx, sseC)
	wantCode(t, err, "InvalidArgument")
	e.assertAbsent("enc", "k")
	sseC.Body, sseC.SSECustomerKeyMD5 = strings.NewReader("secret"), aws.String(customerKeyMD5)
	if _, err := c.PutObject(ctx, sseC); err != nil {
		t.Fatalf("SSE-C PUT: %v", err)
	}
	out, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("enc"), Key: key,
		SSECustomerAlgorithm: aws.String("AES256"), SSECustomerKey: aws.String(customerKey), SSECustomerKeyMD5: aws.String(customerKeyMD5)})
	if err != nil {
		t.Fatalf("SSE-C GET: %v", err)
	}
	defer out.Body.Close()
	if got, err := io.ReadAll(out.Body); err != nil || string(got) != "secret" {
		t.Fatalf("SSE-C GET: %q %v", got, err)
	}
	if !bytes.Equal(e.mustGet("enc", "plain"), []byte("plain")) {
		t.Fatal("source changed")
	}
}
