package sse_test

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/base64"
	"encoding/hex"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/b3-storage/b3/internal/sse"
	"github.com/b3-storage/b3/internal/testutil"
)

// secretMark starts every line of an encrypted object's plaintext: no file
// under a data directory may hold it. plainMark marks the control object
// stored in plaintext, which the same search must find (else the search
// proves nothing).
const (
	secretMark = "B3-SECRET-PLAINTEXT-"
	plainMark  = "B3-CONTROL-PLAINTEXT-"
)

// patterned returns n bytes of lines starting with mark, each line
// numbered, so that every range differs from every other.
func patterned(mark string, n int) []byte {
	var b bytes.Buffer
	for i := 0; b.Len() < n; i++ {
		b.WriteString(mark)
		b.WriteString(hex.EncodeToString([]byte{byte(i >> 24), byte(i >> 16), byte(i >> 8), byte(i)}))
		b.WriteString("|0123456789abcdef\n")
	}
	return b.Bytes()[:n]
}

// customerKey is an SSE-C key with its headers' values.
type customerKey struct{ key, md5 string }

func newCustomerKey(t *testing.T) customerKey {
	t.Helper()
	k, err := sse.NewDataKey()
	if err != nil {
		t.Fatal(err)
	}
	sum := md5.Sum(k[:])
	return customerKey{key: base64.StdEncoding.EncodeToString(k[:]), md5: base64.StdEncoding.EncodeToString(sum[:])}
}

// keyRing returns a --kms-keys value of the named keys.
func keyRing(t *testing.T, names ...string) string {
	t.Helper()
	var spec string
	for i, n := range names {
		e, err := sse.NewKeyEntry(n)
		if err != nil {
			t.Fatal(err)
		}
		if i > 0 {
			spec += ","
		}
		spec += e
	}
	return spec
}

// filesHolding lists the files under roots whose bytes contain mark.
func filesHolding(t *testing.T, mark string, roots ...string) (found []string, files int) {
	t.Helper()
	for _, root := range roots {
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !d.Type().IsRegular() {
				return nil
			}
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			files++
			if bytes.Contains(data, []byte(mark)) {
				found = append(found, path)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return found, files
}

// assertCiphertextOnly fails if any file under roots holds secretMark, or
// if none holds plainMark (the control).
func assertCiphertextOnly(t *testing.T, roots ...string) {
	t.Helper()
	leaks, files := filesHolding(t, secretMark, roots...)
	if len(leaks) > 0 {
		t.Fatalf("plaintext of an encrypted object on disk in %v", leaks)
	}
	control, _ := filesHolding(t, plainMark, roots...)
	if len(control) == 0 {
		t.Fatalf("the plain control object was found in none of %d files: the search is blind", files)
	}
	t.Logf("%d files searched: no encrypted plaintext; control in %v", files, control)
}

// sseOpts are the encryption parameters of one request.
type sseOpts struct {
	sse     types.ServerSideEncryption
	kmsKey  string
	ck      *customerKey
	copySrc *customerKey // the copy source's SSE-C key
}

func (o sseOpts) put(in *s3.PutObjectInput) *s3.PutObjectInput {
	in.ServerSideEncryption = o.sse
	if o.kmsKey != "" {
		in.SSEKMSKeyId = aws.String(o.kmsKey)
	}
	if o.ck != nil {
		in.SSECustomerAlgorithm, in.SSECustomerKey, in.SSECustomerKeyMD5 = aws.String("AES256"), aws.String(o.ck.key), aws.String(o.ck.md5)
	}
	return in
}

func (o sseOpts) get(in *s3.GetObjectInput) *s3.GetObjectInput {
	if o.ck != nil {
		in.SSECustomerAlgorithm, in.SSECustomerKey, in.SSECustomerKeyMD5 = aws.String("AES256"), aws.String(o.ck.key), aws.String(o.ck.md5)
	}
	return in
}

func (o sseOpts) head(in *s3.HeadObjectInput) *s3.HeadObjectInput {
	if o.ck != nil {
		in.SSECustomerAlgorithm, in.SSECustomerKey, in.SSECustomerKeyMD5 = aws.String("AES256"), aws.String(o.ck.key), aws.String(o.ck.md5)
	}
	return in
}

func (o sseOpts) copyObject(in *s3.CopyObjectInput) *s3.CopyObjectInput {
	in.ServerSideEncryption = o.sse
	if o.kmsKey != "" {
		in.SSEKMSKeyId = aws.String(o.kmsKey)
	}
	if o.ck != nil {
		in.SSECustomerAlgorithm, in.SSECustomerKey, in.SSECustomerKeyMD5 = aws.String("AES256"), aws.String(o.ck.key), aws.String(o.ck.md5)
	}
	if o.copySrc != nil {
		in.CopySourceSSECustomerAlgorithm, in.CopySourceSSECustomerKey, in.CopySourceSSECustomerKeyMD5 = aws.String("AES256"), aws.String(o.copySrc.key), aws.String(o.copySrc.md5)
	}
	return in
}

// getBytes reads a whole object (or rng) with o's SSE-C key.
func getBytes(ctx context.Context, c *s3.Client, bucket, key, rng string, o sseOpts) ([]byte, *s3.GetObjectOutput, error) {
	in := &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)}
	if rng != "" {
		in.Range = aws.String(rng)
	}
	out, err := c.GetObject(ctx, o.get(in))
	if err != nil {
		return nil, nil, err
	}
	defer out.Body.Close()
	data, err := io.ReadAll(out.Body)
	return data, out, err
}

func wantCode(t *testing.T, what string, err error, code string) {
	t.Helper()
	if got := testutil.APICode(err); got != code {
		t.Fatalf("%s: %v (code %q), want %s", what, err, got, code)
	}
}

func md5Hex(b []byte) string {
	s := md5.Sum(b)
	return hex.EncodeToString(s[:])
}

// createUpload starts a multipart upload encrypted as o says.
func createUpload(ctx context.Context, t *testing.T, c *s3.Client, bucket, key string, o sseOpts) *s3.CreateMultipartUploadOutput {
	t.Helper()
	create, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String(bucket), Key: aws.String(key),
		ServerSideEncryption: o.sse, SSEKMSKeyId: optString(o.kmsKey),
		SSECustomerAlgorithm: ckAlg(o.ck), SSECustomerKey: ckKey(o.ck), SSECustomerKeyMD5: ckMD5(o.ck)})
	if err != nil {
		t.Fatalf("%s: create: %v", key, err)
	}
	return create
}

// uploadParts uploads body as parts of the given sizes, with o's SSE-C
// key on each.
func uploadParts(ctx context.Context, t *testing.T, c *s3.Client, bucket, key string, uploadID *string, body []byte, sizes []int, o sseOpts) []types.CompletedPart {
	t.Helper()
	var parts []types.CompletedPart
	off := 0
	for i, n := range sizes {
		up, err := c.UploadPart(ctx, &s3.UploadPartInput{Bucket: aws.String(bucket), Key: aws.String(key), UploadId: uploadID,
			PartNumber: aws.Int32(int32(i + 1)), Body: bytes.NewReader(body[off : off+n]),
			SSECustomerAlgorithm: ckAlg(o.ck), SSECustomerKey: ckKey(o.ck), SSECustomerKeyMD5: ckMD5(o.ck)})
		if err != nil {
			t.Fatalf("%s: part %d: %v", key, i+1, err)
		}
		parts = append(parts, types.CompletedPart{PartNumber: aws.Int32(int32(i + 1)), ETag: up.ETag, ChecksumCRC32: up.ChecksumCRC32})
		off += n
	}
	return parts
}

func optString(s string) *string {
	if s == "" {
		return nil
	}
	return aws.String(s)
}

func ckAlg(k *customerKey) *string {
	if k == nil {
		return nil
	}
	return aws.String("AES256")
}

func ckKey(k *customerKey) *string {
	if k == nil {
		return nil
	}
	return aws.String(k.key)
}

func ckMD5(k *customerKey) *string {
	if k == nil {
		return nil
	}
	return aws.String(k.md5)
}
