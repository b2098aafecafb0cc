package s3api

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/b3-storage/b3/internal/meta"
	"github.com/b3-storage/b3/internal/objstore"
)

// swapStore is a test's store that runs swap once, right after the next
// HeadObject of bucket/key returns: a write that lands between a
// decision's read of the current record and the handler's own read.
type swapStore struct {
	*objstore.Store
	mu          sync.Mutex
	bucket, key string
	swap        func()
}

func (s *swapStore) HeadObject(bucket, key string) (*meta.Object, error) {
	o, err := s.Store.HeadObject(bucket, key)
	s.mu.Lock()
	swap := s.swap
	if swap != nil && bucket == s.bucket && key == s.key {
		s.swap = nil
	} else {
		swap = nil
	}
	s.mu.Unlock()
	if swap != nil {
		swap()
	}
	return o, err
}

// arm sets the write to run after the next HeadObject of bucket/key.
func (s *swapStore) arm(bucket, key string, swap func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.bucket, s.key, s.swap = bucket, key, swap
}

// fired reports whether the armed write ran.
func (s *swapStore) fired() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.swap == nil
}

// TestActsOnTheJudgedRecord: a request without versionId whose decision
// read the current record (its ACL, its tags) acts on that record; when
// another write became current between the decision and the handler's
// read, the request is decided again against it (review finding 3). The
// store runs the write exactly there, so the race of the review (11 of
// 4675 anonymous GETs served the private bytes with 200) happens on every
// request: GET, HEAD, GetObjectAttributes and a copy source of a
// public-read object replaced by a private one, on a versioned bucket and
// on one without versioning; PutObjectTagging and GET allowed by an
// s3:ExistingObjectTag condition that the replacement no longer meets.
func TestActsOnTheJudgedRecord(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	store := &swapStore{Store: e.store}
	e.api.store = store
	root := e.root()
	put := func(bucket, key, body string, acl types.ObjectCannedACL, tagging string) {
		t.Helper()
		if _, err := root.PutObject(ctx, &s3.PutObjectInput{Bucket: &bucket, Key: &key, Body: strings.NewReader(body),
			ACL: acl, Tagging: aws.String(tagging)}); err != nil {
			t.Fatal(err)
		}
	}
	// replaced arms the private replacement of bucket/key and checks,
	// after the request, that it happened.
	replaced := func(bucket, key, tagging string) func() {
		t.Helper()
		store.arm(bucket, key, func() { put(bucket, key, "PRIVATE", types.ObjectCannedACLPrivate, tagging) })
		return func() {
			t.Helper()
			if !store.fired() {
				t.Fatalf("%s/%s: the request read no record; nothing was replaced", bucket, key)
			}
		}
	}
	anonymous := func(method, path string, header http.Header) (int, string) {
		t.Helper()
		req, err := http.NewRequest(method, e.ts.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header = header
		resp, body := e.do(req)
		return resp.StatusCode, body
	}

	for _, versioned := range []bool{true, false} {
		bucket := "plain"
		if versioned {
			bucket = "versioned"
			e.putVersions(bucket, "seed")
		} else {
			e.mustCreatePublicBucket(bucket, types.BucketCannedACLPrivate)
		}
		if _, err := root.PutBucketAcl(ctx, &s3.PutBucketAclInput{Bucket: &bucket,
			GrantWrite: aws.String("id=" + CanonicalID(otherUser.AccessKey))}); err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			name, method, query string
			header              http.Header
		}{
			{"GET", "GET", "", nil},
			{"HEAD", "HEAD", "", nil},
			{"GetObjectAttributes", "GET", "?attributes", http.Header{"X-Amz-Object-Attributes": {"ObjectSize"}}},
		} {
			put(bucket, "k", "PUBLIC", types.ObjectCannedACLPublicRead, "")
			done := replaced(bucket, "k", "")
			code, body := anonymous(c.method, "/"+bucket+"/k"+c.query, c.header)
			done()
			if code != http.StatusForbidden || strings.Contains(body, "PRIVATE") || strings.Contains(body, "<ObjectSize>7<") {
				t.Errorf("%s: anonymous %s of a public object replaced by a private one: %d %q", bucket, c.name, code, body)
			}
			if code, body := anonymous(c.method, "/"+bucket+"/k"+c.query, c.header); code != http.StatusForbidden {
				t.Errorf("%s: anonymous %s of the private object: %d %q", bucket, c.name, code, body)
			}
		}

		// A copy source: other may write the bucket, not read root's
		// private object.
		put(bucket, "k", "PUBLIC", types.ObjectCannedACLPublicRead, "")
		done := replaced(bucket, "k", "")
		_, err := e.other().CopyObject(ctx, &s3.CopyObjectInput{Bucket: &bucket, Key: aws.String("stolen"), CopySource: aws.String(bucket + "/k")})
		done()
		if code := errorCode(err); code != "AccessDenied" {
			t.Errorf("%s: other's copy of a public object replaced by a private one: %q (%v)", bucket, code, err)
		}
		if _, err := e.store.HeadObject(bucket, "stolen"); err == nil {
			t.Errorf("%s: the copy was made", bucket)
		}
	}

	// A key judged missing (NoSuchKey for who may list the bucket) that
	// a private object took meanwhile.
	e.mustCreatePublicBucket("listable", types.BucketCannedACLPublicRead)
	done := replaced("listable", "new", "")
	if code, body := anonymous("GET", "/listable/new", nil); code != http.StatusForbidden {
		t.Errorf("anonymous GET of a missing key a private object took: %d %q", code, body)
	}
	done()

	// s3:ExistingObjectTag: the replacement is tagged public=no.
	e.putVersions("tags", "seed")
	e.putPolicy("tags", `{"Effect":"Allow","Principal":"*","Action":["s3:GetObject","s3:PutObjectTagging"],"Resource":"arn:aws:s3:::$B/*",`+
		`"Condition":{"StringEquals":{"s3:ExistingObjectTag/public":"yes"}}}`)
	put("tags", "k", "PUBLIC", "", "public=yes")
	done = replaced("tags", "k", "public=no")
	code, body := anonymous("GET", "/tags/k", nil)
	done()
	if code != http.StatusForbidden || strings.Contains(body, "PRIVATE") {
		t.Errorf("anonymous GET of an object tagged public=yes replaced by one tagged public=no: %d %q", code, body)
	}
	put("tags", "k", "PUBLIC", "", "public=yes")
	done = replaced("tags", "k", "public=no")
	_, err := e.anonymous().PutObjectTagging(ctx, &s3.PutObjectTaggingInput{Bucket: aws.String("tags"), Key: aws.String("k"),
		Tagging: &types.Tagging{TagSet: []types.Tag{{Key: aws.String("public"), Value: aws.String("yes")}}}})
	done()
	if code := errorCode(err); code != "AccessDenied" {
		t.Errorf("anonymous PutObjectTagging of an object tagged public=yes replaced by one tagged public=no: %q (%v)", code, err)
	}
	if o, err := e.store.HeadObject("tags", "k"); err != nil || o.Tags["public"] != "no" {
		t.Errorf("the replacement's tags: %+v %v", o, err)
	}

	// Without a replacement, the same requests are allowed.
	put("tags", "k", "PUBLIC", "", "public=yes")
	if code, body := anonymous("GET", "/tags/k", nil); code != 200 || body != "PUBLIC" {
		t.Fatalf("anonymous GET of the object tagged public=yes: %d %q", code, body)
	}
	put("plain", "k", "PUBLIC", types.ObjectCannedACLPublicRead, "")
	if code, body := anonymous("GET", "/plain/k", nil); code != 200 || body != "PUBLIC" {
		t.Fatalf("anonymous GET of the public object: %d %q", code, body)
	}
}
