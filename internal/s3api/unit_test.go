package s3api

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/b3-storage/b3/internal/meta"
)

func TestRoute(t *testing.T) {
	s := New(nil, Config{Domains: []string{"s3.example.com"}})
	for _, tc := range []struct {
		method, target, host string
		header               http.Header
		op, bucket, key      string
		code                 string
	}{
		{"GET", "/", "", nil, "ListBuckets", "", "", ""},
		{"PUT", "/b1", "", nil, "CreateBucket", "b1", "", ""},
		{"GET", "/b1?list-type=2", "", nil, "ListObjectsV2", "b1", "", ""},
		{"GET", "/b1?prefix=a", "", nil, "ListObjects", "b1", "", ""},
		{"GET", "/b1?uploads", "", nil, "ListMultipartUploads", "b1", "", ""},
		{"POST", "/b1?delete", "", nil, "DeleteObjects", "b1", "", ""},
		{"GET", "/b1/a/b//c", "", nil, "GetObject", "b1", "a/b//c", ""},
		{"PUT", "/b1/k?partNumber=1&uploadId=x", "", nil, "UploadPart", "b1", "k", ""},
		{"PUT", "/b1/k?partNumber=1&uploadId=x", "", http.Header{"X-Amz-Copy-Source": {"a/b"}}, "UploadPartCopy", "b1", "k", ""},
		{"PUT", "/b1/k", "", http.Header{"X-Amz-Copy-Source": {"a/b"}}, "CopyObject", "b1", "k", ""},
		{"POST", "/b1/k?uploads", "", nil, "CreateMultipartUpload", "b1", "k", ""},
		{"POST", "/b1/k?uploadId=x", "", nil, "CompleteMultipartUpload", "b1", "k", ""},
		{"DELETE", "/b1/k?uploadId=x", "", nil, "AbortMultipartUpload", "b1", "k", ""},
		{"OPTIONS", "/b1/k", "", nil, "PreflightRequest", "b1", "k", ""},
		{"POST", "/b1", "", http.Header{"Content-Type": {"multipart/form-data; boundary=x"}}, "PostObject", "b1", "", ""},
		{"GET", "/k/x", "b1.s3.example.com:9000", nil, "GetObject", "b1", "k/x", ""},
		{"GET", "/", "b1.s3.example.com", nil, "ListObjects", "b1", "", ""},
		{"GET", "/b1/k", "s3.example.com", nil, "GetObject", "b1", "k", ""},
		{"GET", "/b1?website", "", nil, "", "", "", "NotImplemented"},
		{"PATCH", "/b1/k", "", nil, "", "", "", "MethodNotAllowed"},
		{"POST", "/b1", "", nil, "", "", "", "MethodNotAllowed"},
	} {
		r := httptest.NewRequest(tc.method, tc.target, nil)
		if tc.host != "" {
			r.Host = tc.host
		}
		for k, v := range tc.header {
			r.Header[k] = v
		}
		rq := &request{Request: r}
		err := s.route(rq)
		if tc.code != "" {
			if e, ok := err.(*APIError); !ok || e.Code != tc.code {
				t.Errorf("%s %s: want %s, got %v", tc.method, tc.target, tc.code, err)
			}
			continue
		}
		if err != nil || rq.op.name != tc.op || rq.bucket != tc.bucket || rq.key != tc.key {
			t.Errorf("%s %s (host %q): got op %v bucket %q key %q err %v; want %s %q %q", tc.method, tc.target, tc.host, rq.op, rq.bucket, rq.key, err, tc.op, tc.bucket, tc.key)
		}
	}
}

func TestConditions(t *testing.T) {
	mod := time.Date(2025, 1, 2, 3, 4, 5, 600, time.UTC)
	obj := &meta.Object{ETag: "abc", Modified: mod}
	at := func(d time.Duration) string { return mod.Add(d).Format(http.TimeFormat) }
	for _, tc := range []struct {
		c    conditions
		want string
	}{
		{conditions{}, ""},
		{conditions{ifMatch: `"abc"`}, ""},
		{conditions{ifMatch: `"x", "abc"`}, ""},
		{conditions{ifMatch: "*"}, ""},
		{conditions{ifMatch: `"x"`}, "PreconditionFailed"},
		{conditions{ifNoneMatch: `"abc"`}, "NotModified"},
		{conditions{ifNoneMatch: "*"}, "NotModified"},
		{conditions{ifNoneMatch: `"x"`}, ""},
		{conditions{ifModifiedSince: at(0)}, "NotModified"}, // same second
		{conditions{ifModifiedSince: at(-time.Second)}, ""},
		{conditions{ifUnmodifiedSince: at(0)}, ""},
		{conditions{ifUnmodifiedSince: at(-time.Second)}, "PreconditionFailed"},
		{conditions{ifMatch: `"abc"`, ifUnmodifiedSince: at(-time.Hour)}, ""},
		{conditions{ifNoneMatch: `"x"`, ifModifiedSince: at(time.Hour)}, ""},
		{conditions{ifModifiedSince: "not a date"}, ""},
	} {
		err := tc.c.check(obj, true)
		got := ""
		if err != nil {
			got = err.(*APIError).Code
		}
		if got != tc.want {
			t.Errorf("%+v: got %q, want %q", tc.c, got, tc.want)
		}
	}
}
