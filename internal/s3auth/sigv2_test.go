package s3auth

import (
	"crypto/hmac"
	"crypto/sha1"
	"encoding/base64"
	"net/http"
	"net/url"
	"strconv"
	"testing"
	"time"
)

// TestSigV2BucketResourceSpelling: botocore's SigV2 signer signs the
// resource "/bucket/" for a path-style request to "/bucket"; both
// spellings authenticate there, and nowhere else does an added slash.
func TestSigV2BucketResourceSpelling(t *testing.T) {
	now := time.Now().UTC()
	tests := []struct {
		name, url, resource, secret, code string
	}{
		{"bucket signed with slash", "http://127.0.0.1/bkt", "/bkt/", exampleSecret, ""},
		{"bucket signed without slash", "http://127.0.0.1/bkt", "/bkt", exampleSecret, ""},
		{"bucket with slash signed with slash", "http://127.0.0.1/bkt/", "/bkt/", exampleSecret, ""},
		{"bucket with slash signed without", "http://127.0.0.1/bkt/", "/bkt", exampleSecret, "SignatureDoesNotMatch"},
		{"bucket slash wrong secret", "http://127.0.0.1/bkt", "/bkt/", "wrong", "SignatureDoesNotMatch"},
		{"object signed with slash", "http://127.0.0.1/bkt/key", "/bkt/key/", exampleSecret, "SignatureDoesNotMatch"},
		{"object signed as is", "http://127.0.0.1/bkt/key", "/bkt/key", exampleSecret, ""},
		{"virtual host root", "http://bkt.s3.local/", "/bkt/", exampleSecret, ""},
		{"virtual host key plus slash", "http://bkt.s3.local/key", "/bkt/key/", exampleSecret, "SignatureDoesNotMatch"},
		{"bucket with subresource", "http://127.0.0.1/bkt?acl", "/bkt/?acl", exampleSecret, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := mustRequest(t, "GET", tt.url, "")
			date := now.Format(http.TimeFormat)
			req.Header.Set("Date", date)
			mac := hmac.New(sha1.New, []byte(tt.secret))
			mac.Write([]byte("GET\n\n\n" + date + "\n" + tt.resource))
			req.Header.Set("Authorization", "AWS "+exampleAccessKey+":"+base64.StdEncoding.EncodeToString(mac.Sum(nil)))
			if _, _, code := authenticateAndRead(newVerifier(now), serverView(t, req)); code != tt.code {
				t.Fatalf("code %q, want %q", code, tt.code)
			}
		})
	}
}

// TestSigV2PresignedExpiryCap: a V2 presigned URL may expire at most a
// week (plus the allowed clock skew) after the server's now, as a V4 URL
// may; one that expires later, or never in practice, is AccessDenied, so
// a leaked URL does not outlive the signer's intent by years.
func TestSigV2PresignedExpiryCap(t *testing.T) {
	now := time.Now().UTC().Truncate(time.Second)
	week := int64(MaxPresignExpiry / time.Second)
	skew := int64(DefaultMaxSkew / time.Second)
	for _, tt := range []struct {
		name    string
		expires int64
		code    string
	}{
		{"an hour", now.Unix() + 3600, ""},
		{"a week", now.Unix() + week, ""},
		{"a week and the skew", now.Unix() + week + skew, ""},
		{"a second more", now.Unix() + week + skew + 1, "AccessDenied"},
		{"a year", now.Unix() + 365*24*3600, "AccessDenied"},
		{"year 2999", time.Date(2999, 1, 1, 0, 0, 0, 0, time.UTC).Unix(), "AccessDenied"},
		{"int64 max", 1<<63 - 1, "AccessDenied"},
		{"expired", now.Unix() - 1, "AccessDenied"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			expires := strconv.FormatInt(tt.expires, 10)
			mac := hmac.New(sha1.New, []byte(exampleSecret))
			mac.Write([]byte("GET\n\n\n" + expires + "\n/bkt/key"))
			q := url.Values{"AWSAccessKeyId": {exampleAccessKey}, "Expires": {expires},
				"Signature": {base64.StdEncoding.EncodeToString(mac.Sum(nil))}}
			req := mustRequest(t, "GET", "http://127.0.0.1/bkt/key?"+q.Encode(), "")
			if _, _, code := authenticateAndRead(newVerifier(now), serverView(t, req)); code != tt.code {
				t.Fatalf("Expires now%+d: code %q, want %q", tt.expires-now.Unix(), code, tt.code)
			}
		})
	}
}
