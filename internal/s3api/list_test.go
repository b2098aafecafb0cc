package s3api

import (
	"context"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

func TestListObjects(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	c := e.root()
	e.mustCreateBucket("list")
	keys := []string{"a/1", "a/2", "a/b/3", "b/1", "c", "d e+f", "é/x"}
	for _, k := range keys {
		e.mustPut("list", k, []byte(k))
	}

	// V2 paging with a page size of 2 visits every key once, in order.
	var got []string
	p := s3.NewListObjectsV2Paginator(c, &s3.ListObjectsV2Input{Bucket: aws.String("list"), MaxKeys: aws.Int32(2)})
	pages := 0
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		pages++
		for _, o := range page.Contents {
			got = append(got, aws.ToString(o.Key))
		}
	}
	if !reflect.DeepEqual(got, keys) || pages != 4 {
		t.Fatalf("v2 paging: %d pages, %q", pages, got)
	}

	for _, tc := range []struct {
		name           string
		in             s3.ListObjectsV2Input
		keys, prefixes []string
		truncated      bool
	}{
		{"delimiter", s3.ListObjectsV2Input{Delimiter: aws.String("/")}, []string{"c", "d e+f"}, []string{"a/", "b/", "é/"}, false},
		{"prefix+delimiter", s3.ListObjectsV2Input{Prefix: aws.String("a/"), Delimiter: aws.String("/")}, []string{"a/1", "a/2"}, []string{"a/b/"}, false},
		{"start-after", s3.ListObjectsV2Input{StartAfter: aws.String("b/1")}, []string{"c", "d e+f", "é/x"}, nil, false},
		{"max-keys with prefixes", s3.ListObjectsV2Input{Delimiter: aws.String("/"), MaxKeys: aws.Int32(2)}, nil, []string{"a/", "b/"}, true},
		{"max-keys 0", s3.ListObjectsV2Input{MaxKeys: aws.Int32(0)}, nil, nil, false},
	} {
		in := tc.in
		in.Bucket = aws.String("list")
		out, err := c.ListObjectsV2(ctx, &in)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		var gotKeys, gotPrefixes []string
		for _, o := range out.Contents {
			gotKeys = append(gotKeys, aws.ToString(o.Key))
		}
		for _, cp := range out.CommonPrefixes {
			gotPrefixes = append(gotPrefixes, aws.ToString(cp.Prefix))
		}
		if !reflect.DeepEqual(gotKeys, tc.keys) || !reflect.DeepEqual(gotPrefixes, tc.prefixes) || aws.ToBool(out.IsTruncated) != tc.truncated {
			t.Fatalf("%s: keys %q prefixes %q truncated %v", tc.name, gotKeys, gotPrefixes, aws.ToBool(out.IsTruncated))
		}
		if int(aws.ToInt32(out.KeyCount)) != len(tc.keys)+len(tc.prefixes) {
			t.Fatalf("%s: KeyCount %d", tc.name, aws.ToInt32(out.KeyCount))
		}
	}

	// V1 with a marker, and NextMarker with a delimiter.
	v1, err := c.ListObjects(ctx, &s3.ListObjectsInput{Bucket: aws.String("list"), Marker: aws.String("a/b/3"), MaxKeys: aws.Int32(2)})
	if err != nil || len(v1.Contents) != 2 || aws.ToString(v1.Contents[0].Key) != "b/1" || !aws.ToBool(v1.IsTruncated) {
		t.Fatalf("v1 marker: %+v %v", v1, err)
	}
	if v1.Contents[0].Owner == nil || aws.ToString(v1.Contents[0].Owner.ID) != CanonicalID(rootUser.AccessKey) {
		t.Fatalf("v1 lists owners: %+v", v1.Contents[0].Owner)
	}
	v1d, err := c.ListObjects(ctx, &s3.ListObjectsInput{Bucket: aws.String("list"), Delimiter: aws.String("/"), MaxKeys: aws.Int32(1)})
	if err != nil || aws.ToString(v1d.NextMarker) != "a/" {
		t.Fatalf("v1 NextMarker: %+v %v", v1d, err)
	}

	// encoding-type=url, checked on the raw document (the SDK decodes).
	req := e.signedRequest(rootUser, "GET", "/list?list-type=2&encoding-type=url&prefix=d", nil, "", nil)
	resp, body := e.do(req)
	if resp.StatusCode != 200 || !strings.Contains(body, "<Key>d%20e%2Bf</Key>") || !strings.Contains(body, "<EncodingType>url</EncodingType>") {
		t.Fatalf("encoding-type=url: %s", body)
	}
	// fetch-owner.
	out, err := c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String("list"), FetchOwner: aws.Bool(true), MaxKeys: aws.Int32(1)})
	if err != nil || out.Contents[0].Owner == nil || aws.ToString(out.Contents[0].Owner.DisplayName) != "root" {
		t.Fatalf("fetch-owner: %+v %v", out, err)
	}
	out, err = c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String("list"), MaxKeys: aws.Int32(1)})
	if err != nil || out.Contents[0].Owner != nil {
		t.Fatalf("owner without fetch-owner: %+v %v", out.Contents[0].Owner, err)
	}

	for _, bad := range []string{"max-keys=-1", "max-keys=x", "encoding-type=base64", "list-type=2&continuation-token=%21%21"} {
		resp, body := e.do(e.signedRequest(rootUser, "GET", "/list?"+bad, nil, "", nil))
		wantXMLError(t, resp, body, http.StatusBadRequest, "InvalidArgument")
	}
	_, err = c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String("nope")})
	wantCode(t, err, "NoSuchBucket")
}

func TestS3URLEncode(t *testing.T) {
	for in, want := range map[string]string{"a/b c": "a/b%20c", "x+y": "x%2By", "é": "%C3%A9", "a&b=c": "a%26b%3Dc"} {
		if got := s3URLEncode(in); got != want {
			t.Errorf("s3URLEncode(%q) = %q, want %q", in, got, want)
		}
		if back, err := url.QueryUnescape(s3URLEncode(in)); err != nil || back != in {
			t.Errorf("round trip of %q: %q %v", in, back, err)
		}
	}
}
