package s3api

import (
	"crypto/hmac"
	"crypto/sha1"
	"encoding/base64"
	"net/http"
	"testing"
	"time"
)

// TestSigV2BucketTrailingSlash: botocore's SigV2 signs "/bucket/" for a
// request to "/bucket"; both spellings authenticate, a wrong key not.
func TestSigV2BucketTrailingSlash(t *testing.T) {
	e := newEnv(t)
	e.mustCreateBucket("bkt")
	for _, tc := range []struct {
		resource string
		secret   string
		status   int
	}{
		{"/bkt/", rootUser.SecretKey, 200},
		{"/bkt", rootUser.SecretKey, 200},
		{"/bkt/", "wrong", 403},
	} {
		date := time.Now().UTC().Format(http.TimeFormat)
		mac := hmac.New(sha1.New, []byte(tc.secret))
		mac.Write([]byte("GET\n\n\n" + date + "\n" + tc.resource))
		req := mustRequest(t, "GET", e.ts.URL+"/bkt")
		req.Header.Set("Date", date)
		req.Header.Set("Authorization", "AWS "+rootUser.AccessKey+":"+base64.StdEncoding.EncodeToString(mac.Sum(nil)))
		if resp, body := e.do(req); resp.StatusCode != tc.status {
			t.Fatalf("signed %s with %s: %d %s", tc.resource, tc.secret, resp.StatusCode, body)
		}
	}
}
