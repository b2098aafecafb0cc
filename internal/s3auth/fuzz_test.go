package s3auth

import (
	"bytes"
	"context"
	"encoding/base64"
	"io"
	"net/http"
	"strings"
	"testing"

	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// Fuzz targets run their seed corpus as ordinary tests; `go test -fuzz`
// explores further. Every target only asserts "no panic, typed errors".

func FuzzParseV4Authorization(f *testing.F) {
	for _, seed := range []string{
		"AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,SignedHeaders=host;range;x-amz-content-sha256;x-amz-date,Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41",
		"AWS4-HMAC-SHA256 Credential=a/b/c/d/e, SignedHeaders=host, Signature=00",
		"AWS4-HMAC-SHA256 ",
		"AWS4-HMAC-SHA256 Credential=,,,=,Signature=Signature=",
		"AWS4-HMAC-SHA256 Credential=x//////,SignedHeaders=;;,Signature=" + string(bytes.Repeat([]byte{'f'}, 64)),
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, header string) {
		auth, err := parseV4Authorization(header)
		if err != nil {
			if _, ok := err.(*Error); !ok {
				t.Fatalf("untyped error %T", err)
			}
			return
		}
		if len(auth.signature) != 64 || auth.scope.accessKey == "" {
			t.Fatalf("accepted incomplete header %q", header)
		}
	})
}

func FuzzAuthenticateHeaders(f *testing.F) {
	f.Add("AWS AKIAIOSFODNN7EXAMPLE:frJIUN8DYpKDtOLCwo//yllqDzg=", "Tue, 27 Mar 2007 19:36:42 +0000", "/bucket/key?acl")
	f.Add("AWS :", "", "/")
	f.Add("AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,SignedHeaders=host,Signature="+string(bytes.Repeat([]byte{'0'}, 64)), "20130524T000000Z", "/b/%zz?X-Amz-Signature")
	f.Add("", "", "/b/k?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=a%2F20130524%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date=20130524T000000Z&X-Amz-Expires=9&X-Amz-SignedHeaders=host&X-Amz-Signature=00")
	f.Add("", "", "/b/k?AWSAccessKeyId=AKIAIOSFODNN7EXAMPLE&Expires=1&Signature=%2B%2F")
	f.Fuzz(func(t *testing.T, authorization, date, target string) {
		req, err := http.NewRequest("GET", "http://s3.local/", nil)
		if err != nil {
			t.Skip()
		}
		req.URL.Opaque = ""
		if u, err := req.URL.Parse(target); err == nil {
			req.URL = u
		}
		req.Header.Set("Authorization", authorization)
		req.Header.Set("X-Amz-Date", date)
		req.Header.Set("X-Amz-Content-Sha256", UnsignedPayload)
		result, err := newVerifier(exampleTime).Authenticate(req)
		if err != nil {
			if _, ok := err.(*Error); !ok {
				t.Fatalf("untyped error %T: %v", err, err)
			}
			return
		}
		if result.Body == nil {
			t.Fatal("nil body")
		}
	})
}

func FuzzChunkedDecoder(f *testing.F) {
	f.Add([]byte("5\r\nhello\r\n0\r\nx-amz-checksum-crc32:NhCmhg==\r\n\r\n"), int64(5), false)
	f.Add([]byte("5;chunk-signature="+string(bytes.Repeat([]byte{'a'}, 64))+"\r\nhello\r\n0;chunk-signature="+string(bytes.Repeat([]byte{'b'}, 64))+"\r\n\r\n"), int64(5), true)
	f.Add([]byte("0\r\n\r\n"), int64(0), false)
	f.Add([]byte("ffffffffffffffff\r\n"), int64(1), false)
	f.Add([]byte("3\r\nabc\r\n0\r\na:b\nc:d\r\n\r\n"), int64(3), true)
	f.Fuzz(func(t *testing.T, body []byte, declared int64, signed bool) {
		var chain *chunkSigner
		if signed {
			chain = &chunkSigner{key: []byte("k"), amzDate: "20130524T000000Z", scope: "20130524/us-east-1/s3/aws4_request", previous: string(bytes.Repeat([]byte{'0'}, 64))}
		}
		if declared < 0 {
			declared = -declared
		}
		reader := newChunkedReader(bytes.NewReader(body), declared, chain, true)
		decoded, err := io.ReadAll(reader)
		if err != nil {
			if _, ok := err.(*Error); !ok {
				t.Fatalf("untyped error %T: %v", err, err)
			}
			return
		}
		if int64(len(decoded)) != declared {
			t.Fatalf("decoded %d bytes, declared %d", len(decoded), declared)
		}
	})
}

func FuzzPostPolicy(f *testing.F) {
	f.Add(`{"expiration":"2013-05-25T00:00:00Z","conditions":[{"bucket":"b"},["starts-with","$key",""],["content-length-range",1,10]]}`, "")
	f.Add(`{"expiration":1,"conditions":{}}`, "")
	f.Add(`{"conditions":[[],[1,2,3],["eq"],{"a":1}]}`, "")
	f.Add(`[]`, "")
	// A second field whose name differs from one of the form's only in
	// case: refused whatever the policy says.
	f.Add(`{"expiration":"2099-01-01T00:00:00Z","conditions":[{"bucket":"b"},["starts-with","$key",""]]}`, "KEY")
	f.Add(`{"expiration":"2099-01-01T00:00:00Z","conditions":[{"bucket":"b"},["starts-with","$key",""]]}`, "Policy")
	f.Add(`{"expiration":"2099-01-01T00:00:00Z","conditions":[{"bucket":"b"},["starts-with","$key",""],["eq","$content-type","image/png"]]}`, "Signature")
	f.Add(`{"expiration":"2099-01-01T00:00:00Z","conditions":[{"bucket":"b"},["starts-with","$key",""]]}`, "awsaccesskeyid")
	f.Fuzz(func(t *testing.T, document, second string) {
		policy := base64.StdEncoding.EncodeToString([]byte(document))
		form := map[string]string{"key": "k", "policy": policy, "AWSAccessKeyId": exampleAccessKey,
			"signature": base64.StdEncoding.EncodeToString(postV2Signature(exampleSecret, policy))}
		duplicate := false
		if _, exact := form[second]; second != "" && !exact {
			for name := range form {
				duplicate = duplicate || strings.EqualFold(name, second)
			}
			form[second] = "other"
		}
		_, err := newVerifier(exampleTime).VerifyPostPolicy("b", form, "f")
		if err != nil {
			if _, ok := err.(*Error); !ok {
				t.Fatalf("untyped error %T: %v", err, err)
			}
		}
		if duplicate && codeOf(err) != "InvalidArgument" {
			t.Fatalf("field %q given twice: %v", second, err)
		}
		_, _, _, _ = parsePostPolicy(document) // raw, not base64: must not panic either
	})
}

// FuzzUnsignedHeaders adds a header the signature does not cover to an
// SDK-signed request (Authorization header or presigned URL): an x-amz-*
// header must be refused unless exempt, and the request must never pass
// with a header that changes the operation.
func FuzzUnsignedHeaders(f *testing.F) {
	for _, seed := range []struct {
		name, value string
		presigned   bool
	}{
		{"x-amz-copy-source", "/private/secret", true},
		{"X-Amz-Copy-Source", "private/secret", false},
		{"x-amz-copy-source-range", "bytes=0-9", true},
		{"x-amz-acl", "public-read", false},
		{"x-amz-meta-a", "1", true},
		{"x-amz-tagging", "a=b", false},
		{"x-amz-content-sha256", UnsignedPayload, true},
		{"x-amz-decoded-content-length", "5", true},
		{"x-amz-trailer", "x-amz-checksum-crc32", false},
		{"X-AMZ-DATE", "20250301T120000Z", true},
		{"x-amzcopy", "x", false},
		{"content-type", "text/html", true},
	} {
		f.Add(seed.name, seed.value, seed.presigned)
	}
	f.Fuzz(func(t *testing.T, name, value string, presigned bool) {
		var req *http.Request
		if presigned {
			req = mustRequest(t, "PUT", "http://s3.local/bucket/key", "")
			req.URL.RawQuery = "X-Amz-Expires=60"
			signed, _, err := v4.NewSigner().PresignHTTP(context.Background(), sdkCreds, req, UnsignedPayload, "s3", testRegion, sdkNow,
				func(o *v4.SignerOptions) { o.DisableURIPathEscaping = true })
			if err != nil {
				t.Fatal(err)
			}
			req = mustRequest(t, "PUT", signed, "")
		} else {
			req = sdkSigned(t, "PUT", "s3.local", "/bucket/key", "", "", sha256Hex(""), exampleSecret, sdkNow, testRegion, nil)
		}
		canonical := http.CanonicalHeaderKey(name)
		if req.Header.Get(canonical) != "" {
			return // replaces a signed header: the signature decides
		}
		req.Header.Set(canonical, value)
		_, err := newVerifier(sdkNow).Authenticate(req)
		lower := strings.ToLower(name)
		mustRefuse := strings.HasPrefix(lower, "x-amz-") && !amzHeaderExempt(lower, presigned)
		switch {
		case mustRefuse && codeOf(err) != "AccessDenied":
			t.Fatalf("unsigned %s accepted or misreported: %v", name, err)
		case mustRefuse:
			if e := err.(*Error); e.HeadersNotSigned != lower {
				t.Fatalf("HeadersNotSigned %q, want %q", e.HeadersNotSigned, lower)
			}
		case err != nil && lower != "x-amz-content-sha256" && lower != "x-amz-decoded-content-length" && lower != "x-amz-trailer":
			t.Fatalf("unsigned %s (not x-amz-*) refused: %v", name, err)
		}
	})
}
