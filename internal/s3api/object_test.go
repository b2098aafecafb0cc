package s3api

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

var checksumModes = []struct {
	name string
	calc aws.RequestChecksumCalculation
}{
	{"when_supported", aws.RequestChecksumCalculationWhenSupported},
	{"when_required", aws.RequestChecksumCalculationWhenRequired},
}

func randomBytes(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, seed))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

func TestObjectRoundTrip(t *testing.T) {
	for _, mode := range checksumModes {
		t.Run(mode.name, func(t *testing.T) {
			e := newEnv(t)
			ctx := context.Background()
			c := e.client(rootUser, mode.calc)
			e.mustCreateBucket("media")
			for _, size := range []int{0, 1, 1000, 3 << 20} {
				body := randomBytes(size, uint64(size))
				key := "dir/obj-" + strings.Repeat("x", size%7) + ".bin"
				put, err := c.PutObject(ctx, &s3.PutObjectInput{
					Bucket: aws.String("media"), Key: aws.String(key), Body: bytes.NewReader(body),
					ContentType: aws.String("video/mp2t"), CacheControl: aws.String("max-age=60"),
					ContentDisposition: aws.String("attachment"), ContentLanguage: aws.String("en"),
					Metadata: map[string]string{"camera": "7", "Mixed-Case": "v"},
				})
				if err != nil {
					t.Fatalf("put %d bytes: %v", size, err)
				}
				sum := md5.Sum(body)
				wantETag := `"` + hex.EncodeToString(sum[:]) + `"`
				if aws.ToString(put.ETag) != wantETag {
					t.Fatalf("etag %s, want %s", aws.ToString(put.ETag), wantETag)
				}
				get, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("media"), Key: aws.String(key), ChecksumMode: types.ChecksumModeEnabled})
				if err != nil {
					t.Fatal(err)
				}
				got, err := io.ReadAll(get.Body)
				get.Body.Close()
				if err != nil || !bytes.Equal(got, body) {
					t.Fatalf("get %d bytes: %v (equal %v)", size, err, bytes.Equal(got, body))
				}
				if aws.ToString(get.ETag) != wantETag || aws.ToString(get.ContentType) != "video/mp2t" ||
					aws.ToString(get.CacheControl) != "max-age=60" || aws.ToString(get.ContentDisposition) != "attachment" ||
					aws.ToString(get.ContentLanguage) != "en" || get.Metadata["camera"] != "7" || get.Metadata["mixed-case"] != "v" {
					t.Fatalf("get headers: %+v", get)
				}
				if mode.calc == aws.RequestChecksumCalculationWhenSupported && aws.ToString(get.ChecksumCRC32) == "" {
					t.Fatalf("the SDK's default CRC32 was not stored and returned")
				}
				head, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("media"), Key: aws.String(key)})
				if err != nil || aws.ToInt64(head.ContentLength) != int64(size) || aws.ToString(head.ETag) != wantETag {
					t.Fatalf("head: %+v %v", head, err)
				}
			}
		})
	}
}

func TestGetRange(t *testing.T) {
	e := newEnv(t)
	e.mustCreateBucket("bkt")
	body := []byte("0123456789abcdefghij")
	e.mustPut("bkt", "k", body)
	e.mustPut("bkt", "empty", nil)
	for _, tc := range []struct {
		key, rng     string
		status       int
		want         string
		contentRange string
	}{
		{"k", "bytes=0-4", 206, "01234", "bytes 0-4/20"},
		{"k", "bytes=15-", 206, "fghij", "bytes 15-19/20"},
		{"k", "bytes=-3", 206, "hij", "bytes 17-19/20"},
		{"k", "bytes=-50", 206, string(body), "bytes 0-19/20"},
		{"k", "bytes=18-100", 206, "ij", "bytes 18-19/20"},
		{"k", "bytes=20-", 416, "", "bytes */20"},
		{"k", "bytes=5-2", 200, string(body), ""},     // invalid: ignored
		{"k", "bytes=0-1,3-4", 200, string(body), ""}, // multiple: ignored
		{"k", "items=0-1", 200, string(body), ""},
		{"empty", "bytes=0-", 416, "", "bytes */0"},
	} {
		req := e.signedRequest(rootUser, "GET", "/bkt/"+tc.key, nil, "", http.Header{"Range": {tc.rng}})
		resp, got := e.do(req)
		if resp.StatusCode != tc.status {
			t.Fatalf("%s: status %d, want %d: %s", tc.rng, resp.StatusCode, tc.status, got)
		}
		if tc.status == 416 {
			wantXMLError(t, resp, got, 416, "InvalidRange")
		} else if got != tc.want {
			t.Fatalf("%s: body %q, want %q", tc.rng, got, tc.want)
		}
		if cr := resp.Header.Get("Content-Range"); cr != tc.contentRange {
			t.Fatalf("%s: Content-Range %q, want %q", tc.rng, cr, tc.contentRange)
		}
	}
}

func TestResponseOverridesAndConditionals(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	c := e.root()
	e.mustCreateBucket("bkt")
	e.mustPut("bkt", "k", []byte("hello"))
	get, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("bkt"), Key: aws.String("k"),
		ResponseContentType: aws.String("text/plain"), ResponseContentDisposition: aws.String("inline; filename=x"),
		ResponseCacheControl: aws.String("no-cache")})
	if err != nil {
		t.Fatal(err)
	}
	get.Body.Close()
	if aws.ToString(get.ContentType) != "text/plain" || aws.ToString(get.ContentDisposition) != "inline; filename=x" || aws.ToString(get.CacheControl) != "no-cache" {
		t.Fatalf("overrides not applied: %+v", get)
	}
	etag := aws.ToString(get.ETag)
	past, future := time.Now().Add(-time.Hour), time.Now().Add(time.Hour)
	for _, tc := range []struct {
		name string
		in   s3.GetObjectInput
		code string
	}{
		{"if-match ok", s3.GetObjectInput{IfMatch: aws.String(etag)}, ""},
		{"if-match fails", s3.GetObjectInput{IfMatch: aws.String(`"nope"`)}, "PreconditionFailed"},
		{"if-none-match hits", s3.GetObjectInput{IfNoneMatch: aws.String(etag)}, "NotModified"},
		{"if-none-match misses", s3.GetObjectInput{IfNoneMatch: aws.String(`"nope"`)}, ""},
		{"if-modified-since future", s3.GetObjectInput{IfModifiedSince: &future}, "NotModified"},
		{"if-modified-since past", s3.GetObjectInput{IfModifiedSince: &past}, ""},
		{"if-unmodified-since past", s3.GetObjectInput{IfUnmodifiedSince: &past}, "PreconditionFailed"},
		{"if-match beats if-unmodified-since", s3.GetObjectInput{IfMatch: aws.String(etag), IfUnmodifiedSince: &past}, ""},
	} {
		in := tc.in
		in.Bucket, in.Key = aws.String("bkt"), aws.String("k")
		out, err := c.GetObject(ctx, &in)
		if err == nil {
			out.Body.Close()
		}
		if got := errorCode(err); got != tc.code {
			t.Errorf("%s: got %q (%v), want %q", tc.name, got, err, tc.code)
		}
	}

	// Conditional writes.
	_, err = c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("bkt"), Key: aws.String("k"), Body: strings.NewReader("x"), IfNoneMatch: aws.String("*")})
	wantCode(t, err, "PreconditionFailed")
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("bkt"), Key: aws.String("new"), Body: strings.NewReader("x"), IfNoneMatch: aws.String("*")}); err != nil {
		t.Fatal(err)
	}
	_, err = c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("bkt"), Key: aws.String("k"), Body: strings.NewReader("x"), IfMatch: aws.String(`"wrong"`)})
	wantCode(t, err, "PreconditionFailed")
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("bkt"), Key: aws.String("k"), Body: strings.NewReader("x2"), IfMatch: aws.String(etag)}); err != nil {
		t.Fatal(err)
	}
	if got := string(e.mustGet("bkt", "k")); got != "x2" {
		t.Fatalf("after If-Match put: %q", got)
	}
}

func TestDeleteObjects(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	c := e.root()
	e.mustCreateBucket("bkt")
	for _, k := range []string{"k1", "k2", "k3"} {
		e.mustPut("bkt", k, []byte(k))
	}
	out, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("bkt"), Key: aws.String("missing")})
	if err != nil {
		t.Fatalf("deleting a missing key must succeed: %v %+v", err, out)
	}
	del, err := c.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: aws.String("bkt"), Delete: &types.Delete{
		Objects: []types.ObjectIdentifier{{Key: aws.String("k1")}, {Key: aws.String("k2")}, {Key: aws.String("zzz")}},
	}})
	if err != nil || len(del.Deleted) != 3 || len(del.Errors) != 0 {
		t.Fatalf("delete objects: %+v %v", del, err)
	}
	quiet, err := c.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: aws.String("bkt"), Delete: &types.Delete{
		Quiet: aws.Bool(true), Objects: []types.ObjectIdentifier{{Key: aws.String("k3")}},
	}})
	if err != nil || len(quiet.Deleted) != 0 || len(quiet.Errors) != 0 {
		t.Fatalf("quiet delete: %+v %v", quiet, err)
	}
	for _, k := range []string{"k1", "k2", "k3"} {
		e.assertAbsent("bkt", k)
	}
}
