package s3api

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// BenchmarkPutGet measures a PUT then a GET through the whole HTTP stack
// (SDK client, SigV4, checksums, objstore on a temp dir, fsync off).
func BenchmarkPutGet(b *testing.B) {
	for _, size := range []int{4 << 10, 256 << 10, 4 << 20} {
		b.Run(fmt.Sprintf("%dKiB", size>>10), func(b *testing.B) {
			e := newEnvTB(b, nil)
			c := e.root()
			e.mustCreateBucket("bench")
			body := randomBytes(size, 1)
			b.SetBytes(int64(2 * size))
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				putGet(b, c, fmt.Sprintf("k%d", i), body)
			}
		})
	}
}

// BenchmarkPut measures single-part PUTs from a client that sends no
// checksum (the SDK with when_required), so the server computes the ETag's
// MD5 and the default CRC64NVME: the cost of default checksums shows
// against a build without them (docs/PERFORMANCE.md).
func BenchmarkPut(b *testing.B) {
	for _, size := range []int{1 << 20, 64 << 20} {
		b.Run(fmt.Sprintf("%dMiB", size>>20), func(b *testing.B) {
			e := newEnvTB(b, nil)
			c := e.client(rootUser, aws.RequestChecksumCalculationWhenRequired)
			e.mustCreateBucket("bench")
			body := randomBytes(size, 1)
			ctx := context.Background()
			b.SetBytes(int64(size))
			for b.Loop() {
				if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("bench"), Key: aws.String("k"), Body: bytes.NewReader(body)}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkPutGetVersioning measures a PUT then a GET of one of 100 keys
// (so most PUTs replace a version) through the whole HTTP stack, in a
// bucket that never had versioning and in a versioned one: what
// versioning costs, and that an unversioned bucket pays nothing for it
// (docs/PERFORMANCE.md, Versioning, and docs/bench/2026-11-23/versioning.md
// compare the unversioned case with the build before versioning existed).
func BenchmarkPutGetVersioning(b *testing.B) {
	for _, state := range []string{"unversioned", "versioned"} {
		for _, size := range []int{4 << 10, 1 << 20} {
			b.Run(fmt.Sprintf("%s/%dKiB", state, size>>10), func(b *testing.B) {
				e := newEnvTB(b, nil)
				c := e.root()
				e.mustCreateBucket("bench")
				ctx := context.Background()
				if state == "versioned" {
					if _, err := c.PutBucketVersioning(ctx, &s3.PutBucketVersioningInput{Bucket: aws.String("bench"),
						VersioningConfiguration: &types.VersioningConfiguration{Status: types.BucketVersioningStatusEnabled}}); err != nil {
						b.Fatal(err)
					}
				}
				body := randomBytes(size, 1)
				b.SetBytes(int64(2 * size))
				i := 0
				for b.Loop() {
					putGet(b, c, fmt.Sprintf("k%d", i%100), body)
					i++
				}
			})
		}
	}
}

// putGet PUTs body as key of bucket "bench" and GETs it back.
func putGet(b *testing.B, c *s3.Client, key string, body []byte) {
	ctx := context.Background()
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("bench"), Key: aws.String(key), Body: bytes.NewReader(body)}); err != nil {
		b.Fatal(err)
	}
	out, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("bench"), Key: aws.String(key)})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := io.Copy(io.Discard, out.Body); err != nil {
		b.Fatal(err)
	}
	out.Body.Close()
}
