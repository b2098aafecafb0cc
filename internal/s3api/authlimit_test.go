package s3api

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/b3-storage/b3/internal/authlimit"
)

// TestAuthBackOff: after a burst of wrong signatures from one address,
// every signed request from it gets 503 SlowDown with Retry-After before
// its signature is checked (a right guess then is no different), while
// clients at other addresses, the same user's included, are served, and
// anonymous requests are not held back.
func TestAuthBackOff(t *testing.T) {
	e := newEnv(t, func(c *Config) {
		c.AuthLimiter = authlimit.New(authlimit.Config{AddrBurst: 3, AddrEvery: time.Minute})
	})
	e.mustCreateBucket("bkt")
	serve := func(user User, from string) *httptest.ResponseRecorder {
		req := e.signedRequest(user, "GET", "/bkt", nil, "", nil)
		if user.AccessKey == "" {
			req, _ = http.NewRequest("GET", e.ts.URL+"/bkt", nil)
		}
		req.RemoteAddr = from
		rec := httptest.NewRecorder()
		e.api.ServeHTTP(rec, req)
		return rec
	}
	const attacker, elsewhere = "192.0.2.1:50000", "198.51.100.2:40000"
	wrong := User{AccessKey: rootUser.AccessKey, SecretKey: "guess/0000000000000000000000000000000000"}
	for i := range 3 {
		if rec := serve(wrong, attacker); rec.Code != http.StatusForbidden {
			t.Fatalf("guess %d: %d %s", i, rec.Code, rec.Body)
		}
	}
	rec := serve(rootUser, attacker)
	if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") != "60" {
		t.Errorf("the right secret after the burst, same address: %d Retry-After %q, want 503 and 60", rec.Code, rec.Header().Get("Retry-After"))
	}
	wantXMLError(t, rec.Result(), rec.Body.String(), http.StatusServiceUnavailable, "SlowDown")
	if rec := serve(rootUser, elsewhere); rec.Code != http.StatusOK {
		t.Errorf("the user from another address: %d %s", rec.Code, rec.Body)
	}
	if rec := serve(User{AccessKey: "AKIANOBODY", SecretKey: "x"}, attacker); rec.Code != http.StatusServiceUnavailable {
		t.Errorf("another key from the held-back address: %d", rec.Code)
	}
	if rec := serve(User{}, attacker); rec.Code == http.StatusServiceUnavailable {
		t.Error("an anonymous request is held back")
	}
}

func TestCredentialKey(t *testing.T) {
	for _, tc := range []struct {
		url, auth string
		key       string
		signed    bool
	}{
		{"/b", "AWS4-HMAC-SHA256 Credential=AKID/20260101/us-east-1/s3/aws4_request, SignedHeaders=host, Signature=00", "AKID", true},
		{"/b", "AWS AKID2:c2ln", "AKID2", true},
		{"/b", "Bearer x", "", true},
		{"/b?X-Amz-Credential=AKID3%2F20260101%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Signature=00", "", "AKID3", true},
		{"/b?AWSAccessKeyId=AKID4&Signature=x&Expires=1", "", "AKID4", true},
		{"/b?list-type=2", "", "", false},
	} {
		r := httptest.NewRequest("GET", tc.url, nil)
		if tc.auth != "" {
			r.Header.Set("Authorization", tc.auth)
		}
		if key, signed := credentialKey(r); key != tc.key || signed != tc.signed {
			t.Errorf("%s %q: %q %v", tc.url, tc.auth, key, signed)
		}
	}
}
