package s3auth

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

var sdkCreds = aws.Credentials{AccessKeyID: exampleAccessKey, SecretAccessKey: exampleSecret}

var sdkNow = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

// escapeKey escapes an object key the way the S3 SDK builds the URL path.
func escapeKey(key string) string {
	var b strings.Builder
	uriEncode(&b, key, true)
	return b.String()
}

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// sdkSigned builds a request signed by aws-sdk-go-v2's SigV4 signer with
// the S3 options (no double path escaping).
func sdkSigned(t testing.TB, method, host, escapedPath, rawQuery, body, payloadHash string, secret string, at time.Time, region string, headers map[string]string) *http.Request {
	t.Helper()
	req := mustRequest(t, method, "http://"+host+escapedPath, body)
	req.URL.RawQuery = rawQuery
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	req.Header.Set("X-Amz-Content-Sha256", payloadHash)
	creds := sdkCreds
	creds.SecretAccessKey = secret
	err := v4.NewSigner().SignHTTP(context.Background(), creds, req, payloadHash, "s3", region, at,
		func(o *v4.SignerOptions) { o.DisableURIPathEscaping = true })
	if err != nil {
		t.Fatal(err)
	}
	return req
}

func TestSDKSignedRequests(t *testing.T) {
	keys := []string{"plain.txt", "dir/sub/obj", "with space", "a+b=c&d", "ünïcødé/ファイル", "percent%25", "tilde~_-.", "semi;colon,comma", "(brackets)!*'"}
	queries := []string{"", "versionId=3", "list-type=2&prefix=a%20b&max-keys=10", "uploads", "tagging&x=y%2Fz", "marker=%E2%82%AC"}
	v := newVerifier(sdkNow)
	for _, key := range keys {
		for _, query := range queries {
			body := "hello " + key
			req := sdkSigned(t, "PUT", "bucket.s3.local:9000", "/bucket/"+escapeKey(key), query, body, sha256Hex(body), exampleSecret, sdkNow, testRegion,
				map[string]string{"Content-Type": "text/plain", "X-Amz-Meta-Note": "  spaced   value "})
			result, got, code := authenticateAndRead(v, serverView(t, req))
			if code != "" {
				t.Fatalf("key %q query %q: %s", key, query, code)
			}
			if string(got) != body || result.AccessKey != exampleAccessKey || result.Payload != PayloadSHA256 {
				t.Fatalf("key %q: body %q result %+v", key, got, result)
			}
		}
	}
}

func TestSDKSignedRejections(t *testing.T) {
	const body = "payload"
	sign := func(secret string, at time.Time, region string, payloadHash string) *http.Request {
		return sdkSigned(t, "PUT", "s3.local", "/bucket/key", "acl", body, payloadHash, secret, at, region, nil)
	}
	good := func() *http.Request { return sign(exampleSecret, sdkNow, testRegion, sha256Hex(body)) }
	tests := []struct {
		name string
		req  func() *http.Request
		code string
	}{
		{"valid", good, ""},
		{"unsigned payload", func() *http.Request { return sign(exampleSecret, sdkNow, testRegion, UnsignedPayload) }, ""},
		{"wrong secret", func() *http.Request { return sign("not-the-secret", sdkNow, testRegion, sha256Hex(body)) }, "SignatureDoesNotMatch"},
		{"skewed past", func() *http.Request {
			return sign(exampleSecret, sdkNow.Add(-16*time.Minute), testRegion, sha256Hex(body))
		}, "RequestTimeTooSkewed"},
		{"skewed future", func() *http.Request {
			return sign(exampleSecret, sdkNow.Add(16*time.Minute), testRegion, sha256Hex(body))
		}, "RequestTimeTooSkewed"},
		{"within skew", func() *http.Request {
			return sign(exampleSecret, sdkNow.Add(-14*time.Minute), testRegion, sha256Hex(body))
		}, ""},
		{"other region", func() *http.Request { return sign(exampleSecret, sdkNow, "eu-west-1", sha256Hex(body)) }, "AuthorizationHeaderMalformed"},
		{"body hash mismatch", func() *http.Request { return sign(exampleSecret, sdkNow, testRegion, sha256Hex("other")) }, "XAmzContentSHA256Mismatch"},
		{"bad payload hash", func() *http.Request { return sign(exampleSecret, sdkNow, testRegion, "not-a-hash") }, "InvalidArgument"},
		{"unknown key", func() *http.Request {
			r := good()
			r.Header.Set("Authorization", strings.Replace(r.Header.Get("Authorization"), exampleAccessKey, "NOSUCHKEY", 1))
			return r
		}, "InvalidAccessKeyId"},
		{"tampered path", func() *http.Request { r := good(); r.URL.Path = "/bucket/other"; return r }, "SignatureDoesNotMatch"},
		{"tampered query", func() *http.Request { r := good(); r.URL.RawQuery = "acl&x=1"; return r }, "SignatureDoesNotMatch"},
		{"tampered method", func() *http.Request { r := good(); r.Method = "DELETE"; return r }, "SignatureDoesNotMatch"},
		{"tampered signed header", func() *http.Request {
			r := good()
			r.Header.Set("X-Amz-Date", sdkNow.Add(time.Second).Format(iso8601Format))
			return r
		}, "SignatureDoesNotMatch"},
		{"missing date", func() *http.Request { r := good(); r.Header.Del("X-Amz-Date"); return r }, "AccessDenied"},
		{"missing content sha", func() *http.Request { r := good(); r.Header.Del("X-Amz-Content-Sha256"); return r }, "InvalidRequest"},
		{"unsupported auth type", func() *http.Request { r := good(); r.Header.Set("Authorization", "Bearer abc"); return r }, "InvalidArgument"},
		{"malformed credential", func() *http.Request {
			r := good()
			r.Header.Set("Authorization", strings.Replace(r.Header.Get("Authorization"), "/s3/", "/", 1))
			return r
		}, "AuthorizationHeaderMalformed"},
		{"wrong service", func() *http.Request {
			r := good()
			r.Header.Set("Authorization", strings.Replace(r.Header.Get("Authorization"), "/s3/", "/ec2/", 1))
			return r
		}, "AuthorizationHeaderMalformed"},
		{"missing signature", func() *http.Request {
			r := good()
			a := r.Header.Get("Authorization")
			r.Header.Set("Authorization", a[:strings.Index(a, ", Signature=")])
			return r
		}, "AuthorizationHeaderMalformed"},
		{"two mechanisms", func() *http.Request { r := good(); r.URL.RawQuery = "X-Amz-Signature=00"; return r }, "InvalidArgument"},
		{"scope date differs", func() *http.Request {
			r := good()
			r.Header.Set("Authorization", strings.Replace(r.Header.Get("Authorization"), "/20250301/", "/20250302/", 1))
			return r
		}, "AuthorizationHeaderMalformed"},
	}
	v := newVerifier(sdkNow)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, code := authenticateAndRead(v, serverView(t, tt.req()))
			if code != tt.code {
				t.Fatalf("code %q, want %q", code, tt.code)
			}
		})
	}
}

func TestWrongRegionNamesExpectedRegion(t *testing.T) {
	req := sdkSigned(t, "GET", "s3.local", "/bucket", "", "", emptySHA256, exampleSecret, sdkNow, "eu-west-1", nil)
	_, err := newVerifier(sdkNow).Authenticate(serverView(t, req))
	e, ok := err.(*Error)
	if !ok || e.Code != "AuthorizationHeaderMalformed" || e.Region != testRegion || !strings.Contains(e.Message, "expecting 'us-east-1'") {
		t.Fatalf("err = %#v", err)
	}
}

func TestSDKPresignedURLs(t *testing.T) {
	presign := func(at time.Time, expires string, secret string) *http.Request {
		req := mustRequest(t, "GET", "http://s3.local/bucket/"+escapeKey("my key+1"), "")
		req.URL.RawQuery = "X-Amz-Expires=" + expires + "&response-content-type=text%2Fplain"
		creds := sdkCreds
		creds.SecretAccessKey = secret
		signed, _, err := v4.NewSigner().PresignHTTP(context.Background(), creds, req, UnsignedPayload, "s3", testRegion, at,
			func(o *v4.SignerOptions) { o.DisableURIPathEscaping = true })
		if err != nil {
			t.Fatal(err)
		}
		u, err := url.Parse(signed)
		if err != nil {
			t.Fatal(err)
		}
		out := mustRequest(t, "GET", "http://s3.local/", "")
		out.URL = u
		return serverView(t, out)
	}
	tests := []struct {
		name string
		req  *http.Request
		now  time.Time
		code string
	}{
		{"valid", presign(sdkNow, "3600", exampleSecret), sdkNow.Add(time.Minute), ""},
		{"valid at the last second", presign(sdkNow, "3600", exampleSecret), sdkNow.Add(time.Hour), ""},
		{"expired", presign(sdkNow, "3600", exampleSecret), sdkNow.Add(time.Hour + time.Second), "AccessDenied"},
		{"a week is allowed", presign(sdkNow, "604800", exampleSecret), sdkNow.Add(6 * 24 * time.Hour), ""},
		{"longer than a week", presign(sdkNow, "604801", exampleSecret), sdkNow, "AuthorizationQueryParametersError"},
		{"negative", presign(sdkNow, "-1", exampleSecret), sdkNow, "AuthorizationQueryParametersError"},
		{"not yet valid", presign(sdkNow.Add(time.Hour), "3600", exampleSecret), sdkNow, "AccessDenied"},
		{"wrong secret", presign(sdkNow, "3600", "bad"), sdkNow, "SignatureDoesNotMatch"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			result, _, code := authenticateAndRead(newVerifier(tt.now), tt.req)
			if code != tt.code {
				t.Fatalf("code %q, want %q", code, tt.code)
			}
			if code == "" && (result.Method != SigV4Presigned || result.AccessKey != exampleAccessKey) {
				t.Fatalf("result %+v", result)
			}
		})
	}
	tampered := presign(sdkNow, "3600", exampleSecret)
	tampered.URL.RawQuery = strings.Replace(tampered.URL.RawQuery, "text%2Fplain", "text%2Fhtml", 1)
	if _, err := newVerifier(sdkNow).Authenticate(tampered); codeOf(err) != "SignatureDoesNotMatch" {
		t.Fatalf("tampered presigned query: %v", err)
	}
}

func TestAnonymous(t *testing.T) {
	req := serverView(t, mustRequest(t, "PUT", "http://s3.local/bucket/key", "data"))
	result, body, code := authenticateAndRead(newVerifier(sdkNow), req)
	if code != "" || result.Method != Anonymous || result.AccessKey != "" || string(body) != "data" {
		t.Fatalf("anonymous: %q %+v %q", code, result, body)
	}
}

func TestShortBodyIsIncompleteBody(t *testing.T) {
	const body = "0123456789"
	req := sdkSigned(t, "PUT", "s3.local", "/bucket/key", "", body, UnsignedPayload, exampleSecret, sdkNow, testRegion, nil)
	req = serverView(t, req)
	req.Body = io.NopCloser(io.MultiReader(strings.NewReader(body[:4]), errReader{io.ErrUnexpectedEOF}))
	if _, _, code := authenticateAndRead(newVerifier(sdkNow), req); code != "IncompleteBody" {
		t.Fatalf("code %q", code)
	}
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }
