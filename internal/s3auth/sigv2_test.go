package s3auth

import (
	"crypto/hmac"
	"crypto/sha1"
	"encoding/base64"
	"net/http"
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
