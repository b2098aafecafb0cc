package e2e

import (
	"context"
	"net/url"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// TestSDKListingKeyCharacters (issue 31): keys in listings.
//   - Keys with characters XML allows but escapes (newline, tab, & < > " ',
//     non-ASCII) come back intact in listings asked without
//     encoding-type=url.
//   - Keys with characters XML 1.0 does not allow (most control
//     characters) are written, without encoding-type=url, as character
//     references (&#x1;) as S3 writes them (they used to become U+FFFD);
//     XML 1.0 parsers refuse those (the SDK's does, as it does S3's), so
//     the SDK reads such keys with encoding-type=url, intact.
//   - With encoding-type=url, ListObjects (v1) sends Prefix as given (S3
//     encodes it only in v2; Ceph s3-tests test_bucket_list_prefix_unreadable).
//   - An empty ContinuationToken lists from the start and is echoed back
//     empty (test_bucket_listv2_continuationtoken_empty).
func TestSDKListingKeyCharacters(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	client := sdkClient(t, aws.RequestChecksumCalculationWhenRequired)
	const b = "e2e-listing-chars"
	ensureBucket(t, b)
	escaped := []string{"esc/e\nf", "esc/g\th", "esc/i&<>\"'j", "esc/k\u00e9\u2028l"}
	control := []string{"ctl/a\x01b", "ctl/c\x1fd", "ctl/e\nf"}
	for _, k := range append(slices.Clone(escaped), control...) {
		if _, err := client.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(b), Key: aws.String(k), Body: strings.NewReader("x")}); err != nil {
			t.Fatalf("PutObject %q: %v", k, err)
		}
	}
	slices.Sort(escaped)
	slices.Sort(control)

	// Without encoding-type: the keys XML can carry, intact.
	v2, err := client.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(b), Prefix: aws.String("esc/")})
	if err != nil {
		t.Fatalf("ListObjectsV2: %v", err)
	}
	if got := objectKeys(v2.Contents, false); !slices.Equal(got, escaped) {
		t.Errorf("ListObjectsV2 keys %q, want %q", got, escaped)
	}
	v1, err := client.ListObjects(ctx, &s3.ListObjectsInput{Bucket: aws.String(b), Prefix: aws.String("esc/")})
	if err != nil {
		t.Fatalf("ListObjects: %v", err)
	}
	if got := objectKeys(v1.Contents, false); !slices.Equal(got, escaped) {
		t.Errorf("ListObjects keys %q, want %q", got, escaped)
	}

	// Without encoding-type, control characters: character references
	// on the wire, in each listing.
	for _, q := range []string{"prefix=ctl/", "list-type=2&prefix=ctl/", "versions&prefix=ctl/", "uploads&prefix=ctl/",
		"list-type=2&prefix=ctl/&delimiter=%01"} {
		if q == "uploads&prefix=ctl/" {
			for _, k := range control {
				if _, err := client.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String(b), Key: aws.String(k)}); err != nil {
					t.Fatalf("CreateMultipartUpload %q: %v", k, err)
				}
			}
		}
		status, code, body := signedDo(t, "GET", "/"+b+"?"+q, nil, nil)
		if status != 200 {
			t.Fatalf("GET ?%s: %d %s", q, status, code)
		}
		for _, want := range []string{"ctl/a&#x1;", "ctl/e&#xA;f"} {
			if !strings.Contains(string(body), want) {
				t.Errorf("GET ?%s: no %q in\n%s", q, want, body)
			}
		}
		if strings.Contains(q, "delimiter") {
			if !strings.Contains(string(body), "<Delimiter>&#x1;</Delimiter>") || !strings.Contains(string(body), "<Prefix>ctl/a&#x1;</Prefix>") {
				t.Errorf("GET ?%s: Delimiter or CommonPrefixes not as references in\n%s", q, body)
			}
		} else if !strings.Contains(string(body), "ctl/c&#x1F;d") {
			t.Errorf("GET ?%s: no %q in\n%s", q, "ctl/c&#x1F;d", body)
		}
		if strings.ContainsRune(string(body), utf8.RuneError) {
			t.Errorf("GET ?%s: U+FFFD in\n%s", q, body)
		}
	}
	// With encoding-type=url, the same keys through the SDK, intact.
	u2, err := client.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(b), Prefix: aws.String("ctl/"), EncodingType: types.EncodingTypeUrl})
	if err != nil {
		t.Fatalf("ListObjectsV2 encoding-type=url: %v", err)
	}
	if got := objectKeys(u2.Contents, true); !slices.Equal(got, control) {
		t.Errorf("ListObjectsV2 encoding-type=url keys %q, want %q", got, control)
	}

	// encoding-type=url: v1 sends Prefix raw, Marker and keys encoded;
	// v2 encodes Prefix too.
	e1, err := client.ListObjects(ctx, &s3.ListObjectsInput{Bucket: aws.String(b), Prefix: aws.String("ctl/e\n"),
		Marker: aws.String("ctl/\n"), EncodingType: types.EncodingTypeUrl})
	if err != nil {
		t.Fatalf("ListObjects encoding-type=url: %v", err)
	}
	if aws.ToString(e1.Prefix) != "ctl/e\n" || aws.ToString(e1.Marker) != "ctl/%0A" || len(e1.Contents) != 1 || aws.ToString(e1.Contents[0].Key) != "ctl/e%0Af" {
		t.Errorf("ListObjects encoding-type=url: Prefix %q Marker %q keys %q, want \"ctl/e\\n\", \"ctl/%%0A\", [\"ctl/e%%0Af\"]",
			aws.ToString(e1.Prefix), aws.ToString(e1.Marker), objectKeys(e1.Contents, false))
	}
	e2, err := client.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(b), Prefix: aws.String("ctl/e\n"), EncodingType: types.EncodingTypeUrl})
	if err != nil {
		t.Fatalf("ListObjectsV2 encoding-type=url: %v", err)
	}
	if aws.ToString(e2.Prefix) != "ctl/e%0A" {
		t.Errorf("ListObjectsV2 encoding-type=url: Prefix %q, want \"ctl/e%%0A\"", aws.ToString(e2.Prefix))
	}

	// An empty continuation token: the listing from the start, the token
	// echoed back empty.
	empty, err := client.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(b), Prefix: aws.String("esc/"), ContinuationToken: aws.String("")})
	if err != nil {
		t.Fatalf("ListObjectsV2 with an empty ContinuationToken: %v", err)
	}
	if got := objectKeys(empty.Contents, false); !slices.Equal(got, escaped) || empty.ContinuationToken == nil || *empty.ContinuationToken != "" {
		t.Errorf("ListObjectsV2 with an empty ContinuationToken: keys %q, ContinuationToken %v", got, empty.ContinuationToken)
	}
}

// objectKeys lists the keys of objs, URL-decoded if urlEncoded.
func objectKeys(objs []types.Object, urlEncoded bool) []string {
	var keys []string
	for _, o := range objs {
		k := aws.ToString(o.Key)
		if urlEncoded {
			if d, err := url.QueryUnescape(k); err == nil {
				k = d
			}
		}
		keys = append(keys, k)
	}
	return keys
}
