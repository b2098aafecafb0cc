package s3api

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// TestUnsignedAmzHeadersRefused: an x-amz-* header outside the signature
// is refused before it can change the operation. With it accepted, a
// presigned PutObject plus x-amz-copy-source copied a private object into
// the presigned key (readable by the URL's holder), a presigned UploadPart
// became UploadPartCopy, and a header-signed PUT replayed with the header
// added did the same.
func TestUnsignedAmzHeadersRefused(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.mustCreateBucket("private")
	e.mustPut("private", "secret", []byte("private data"))
	e.mustCreateBucket("drop")
	presigner := s3.NewPresignClient(e.root(), func(o *s3.PresignOptions) { o.Expires = time.Minute })
	wantNotSigned := func(t *testing.T, req *http.Request, header string) {
		t.Helper()
		resp, body := e.do(req)
		wantXMLError(t, resp, body, http.StatusForbidden, "AccessDenied")
		if !strings.Contains(body, "<HeadersNotSigned>"+header+"</HeadersNotSigned>") ||
			!strings.Contains(body, "There were headers present in the request which were not signed") {
			t.Fatalf("want %s named as not signed: %s", header, body)
		}
	}

	t.Run("presigned PutObject", func(t *testing.T) {
		put, err := presigner.PresignPutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("drop"), Key: aws.String("k")})
		if err != nil {
			t.Fatal(err)
		}
		req, _ := http.NewRequest("PUT", put.URL, nil)
		req.Header.Set("x-amz-copy-source", "/private/secret")
		wantNotSigned(t, req, "x-amz-copy-source")
		e.assertAbsent("drop", "k")

		req, _ = http.NewRequest("PUT", put.URL, strings.NewReader("body"))
		req.Header.Set("x-amz-meta-note", "added")
		wantNotSigned(t, req, "x-amz-meta-note")
		e.assertAbsent("drop", "k")

		// The URL as signed still works, with x-amz-content-sha256 (which
		// a presigned URL carries in its query) sent as a header too.
		req, _ = http.NewRequest("PUT", put.URL, strings.NewReader("body"))
		req.Header.Set("x-amz-content-sha256", "UNSIGNED-PAYLOAD")
		if resp, body := e.do(req); resp.StatusCode != http.StatusOK {
			t.Fatalf("presigned PUT as signed: %d %s", resp.StatusCode, body)
		}
		if got := string(e.mustGet("drop", "k")); got != "body" {
			t.Fatalf("stored %q", got)
		}
	})

	// x-amz-* headers the SDK signs into a presigned URL (metadata,
	// tagging, checksums) are sent as signed, and accepted.
	t.Run("presigned PutObject with signed headers", func(t *testing.T) {
		put, err := presigner.PresignPutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("drop"), Key: aws.String("meta"),
			Metadata: map[string]string{"note": "signed"}, Tagging: aws.String("a=b"), ContentType: aws.String("text/plain"),
			ChecksumCRC32: aws.String("26gLsg==")}) // CRC32 of "body"
		if err != nil {
			t.Fatal(err)
		}
		req, _ := http.NewRequest("PUT", put.URL, strings.NewReader("body"))
		req.Header = put.SignedHeader.Clone()
		if resp, body := e.do(req); resp.StatusCode != http.StatusOK {
			t.Fatalf("presigned PUT with signed x-amz headers %v: %d %s", put.SignedHeader, resp.StatusCode, body)
		}
		head, err := e.store.HeadObject("drop", "meta")
		if err != nil || head.ContentType != "text/plain" || head.Tags["a"] != "b" {
			t.Fatalf("stored: %+v %v", head, err)
		}
	})

	t.Run("presigned UploadPart", func(t *testing.T) {
		up, err := e.root().CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String("drop"), Key: aws.String("mp")})
		if err != nil {
			t.Fatal(err)
		}
		part, err := presigner.PresignUploadPart(ctx, &s3.UploadPartInput{Bucket: aws.String("drop"), Key: aws.String("mp"),
			UploadId: up.UploadId, PartNumber: aws.Int32(1)})
		if err != nil {
			t.Fatal(err)
		}
		req, _ := http.NewRequest("PUT", part.URL, nil)
		req.Header.Set("X-Amz-Copy-Source", "private/secret")
		req.Header.Set("X-Amz-Copy-Source-Range", "bytes=0-6")
		wantNotSigned(t, req, "x-amz-copy-source, x-amz-copy-source-range")
		parts, err := e.root().ListParts(ctx, &s3.ListPartsInput{Bucket: aws.String("drop"), Key: aws.String("mp"), UploadId: up.UploadId})
		if err != nil || len(parts.Parts) != 0 {
			t.Fatalf("parts after the refused copy: %+v %v", parts, err)
		}
	})

	t.Run("header-signed replay", func(t *testing.T) {
		signed := e.signedRequest(rootUser, "PUT", "/drop/replayed", []byte("mine"), "", nil)
		replay := func(extra map[string]string) *http.Request {
			req, _ := http.NewRequest("PUT", signed.URL.String(), bytes.NewReader([]byte("mine")))
			for k, v := range signed.Header {
				req.Header[k] = v
			}
			for k, v := range extra {
				req.Header.Set(k, v)
			}
			return req
		}
		wantNotSigned(t, replay(map[string]string{"x-amz-copy-source": "/private/secret"}), "x-amz-copy-source")
		e.assertAbsent("drop", "replayed")
		if resp, body := e.do(replay(nil)); resp.StatusCode != http.StatusOK {
			t.Fatalf("signed PUT as signed: %d %s", resp.StatusCode, body)
		}
		if got := string(e.mustGet("drop", "replayed")); got != "mine" {
			t.Fatalf("stored %q", got)
		}
	})
}

// TestCanonicalUserIDs: listings and ACLs name owners by an opaque
// canonical id, never the access key id, and object ACLs are readable
// only with READ_ACP (the bucket's or the object's owner): an anonymous
// reader of a public-read bucket learned the root access key id from
// GET ?acl or a V1 listing.
func TestCanonicalUserIDs(t *testing.T) {
	// The id is a fixed function of the access key: stable across
	// restarts and versions.
	const rootID = "c9d89f86fcdf533283e4074b64064dade5d9d246cb25290cbc34a62b0e76c71c"
	if got := CanonicalID(rootUser.AccessKey); got != rootID {
		t.Fatalf("CanonicalID changed: %s", got)
	}
	e := newEnv(t)
	ctx := context.Background()
	e.mustCreatePublicBucket("public", types.BucketCannedACLPublicRead)
	e.mustPut("public", "k", []byte("public data"))
	if _, err := e.root().PutObjectAcl(ctx, &s3.PutObjectAclInput{Bucket: aws.String("public"), Key: aws.String("k"), ACL: types.ObjectCannedACLPublicRead}); err != nil {
		t.Fatal(err)
	}

	anonymous := func(target string) (*http.Response, string) {
		req, _ := http.NewRequest("GET", e.ts.URL+target, nil)
		return e.do(req)
	}
	resp, body := anonymous("/public/k")
	if resp.StatusCode != http.StatusOK || body != "public data" {
		t.Fatalf("anonymous read of a public-read object: %d %s", resp.StatusCode, body)
	}
	for _, target := range []string{"/public/k?acl", "/public?acl"} {
		resp, body := anonymous(target)
		wantXMLError(t, resp, body, http.StatusForbidden, "AccessDenied")
	}
	resp, body = anonymous("/public?list-type=2&fetch-owner=true")
	resp1, body1 := anonymous("/public")
	for i, r := range []*http.Response{resp, resp1} {
		text := []string{body, body1}[i]
		if r.StatusCode != http.StatusOK || !strings.Contains(text, "<ID>"+rootID+"</ID>") || strings.Contains(text, rootUser.AccessKey) {
			t.Fatalf("anonymous listing: %d %s", r.StatusCode, text)
		}
	}

	// Another user has no READ_ACP either; the owner reads the ACL, with
	// the same id ListBuckets gives.
	_, err := e.client(otherUser, aws.RequestChecksumCalculationWhenSupported).GetObjectAcl(ctx, &s3.GetObjectAclInput{Bucket: aws.String("public"), Key: aws.String("k")})
	wantCode(t, err, "AccessDenied")
	acl, err := e.root().GetObjectAcl(ctx, &s3.GetObjectAclInput{Bucket: aws.String("public"), Key: aws.String("k")})
	if err != nil || aws.ToString(acl.Owner.ID) != rootID || len(acl.Grants) == 0 || aws.ToString(acl.Grants[0].Grantee.ID) != rootID {
		t.Fatalf("owner's GetObjectAcl: %+v %v", acl, err)
	}
	buckets, err := e.root().ListBuckets(ctx, &s3.ListBucketsInput{})
	if err != nil || aws.ToString(buckets.Owner.ID) != rootID {
		t.Fatalf("ListBuckets owner: %+v %v", buckets, err)
	}
}

// TestLoggedURLsRedacted: a request that fails inside the server is
// logged with its URL, but a presigned URL's signature (V4 or V2) is
// redacted: whoever reads the logs must not be able to replay it.
func TestLoggedURLsRedacted(t *testing.T) {
	var logs lockedBuffer
	var failing atomic.Bool
	e := newEnv(t, func(c *Config) {
		c.Logger = slog.New(slog.NewTextHandler(&logs, nil))
		now := c.Now
		c.Now = func() time.Time {
			if failing.Load() {
				panic("clock failure") // a server fault while authenticating
			}
			return now()
		}
	})
	e.mustCreateBucket("bkt")
	presigned, err := s3.NewPresignClient(e.root()).PresignGetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String("bkt"), Key: aws.String("k")})
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(presigned.URL)
	v4Signature := u.Query().Get("X-Amz-Signature")
	const v2Signature = "c2lnbmF0dXJlLXYyLXNlY3JldA%3D%3D"
	failing.Store(true)
	for _, target := range []string{presigned.URL, e.ts.URL + "/bkt/k?AWSAccessKeyId=" + rootUser.AccessKey + "&Expires=9999999999&Signature=" + v2Signature} {
		resp, body := e.do(mustRequest(t, "GET", target))
		wantXMLError(t, resp, body, http.StatusInternalServerError, "InternalError")
	}
	text := logs.String()
	if !strings.Contains(text, "panic serving request") || !strings.Contains(text, "internal error") ||
		strings.Count(text, "X-Amz-Signature=REDACTED") != 2 || strings.Count(text, "Signature=REDACTED") != 4 {
		t.Fatalf("logs lack the failures with redacted URLs:\n%s", text)
	}
	for _, secret := range []string{v4Signature, v2Signature, "c2lnbmF0dXJlLXYyLXNlY3JldA"} {
		if strings.Contains(text, secret) {
			t.Fatalf("logs carry the signature %s:\n%s", secret, text)
		}
	}
}

// lockedBuffer is a log destination written by the server's goroutines
// and read by the test.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
