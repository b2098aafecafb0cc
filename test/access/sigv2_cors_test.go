package access

import (
	"context"
	"crypto/hmac"
	"crypto/sha1"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/b3-storage/b3/internal/testutil"
)

// v2Signature is the SigV2 signature of stringToSign.
func v2Signature(secret, stringToSign string) string {
	mac := hmac.New(sha1.New, []byte(secret))
	mac.Write([]byte(stringToSign))
	return base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// send sends req and returns its status and body.
func send(t *testing.T, req *http.Request) (int, string) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(body)
}

// TestSigV2ReplayAndExpiry: against a real `b3 server`, with raw HTTP, a
// captured SigV2 request for "PUT /bucket" does not replay as
// "PUT /bucket?ownershipControls" (which would turn ACLs off), and a V2
// presigned URL that expires more than a week ahead is refused.
func TestSigV2ReplayAndExpiry(t *testing.T) {
	srv := testutil.StartServer(t, testutil.ServerOptions{})
	accessKey, secret := srv.Keys()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	root := srv.Client(30 * time.Second)
	bucket := "replay"
	if _, err := root.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket),
		ObjectOwnership: types.ObjectOwnershipBucketOwnerPreferred}); err != nil {
		t.Fatal(err)
	}
	if _, err := root.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String("k"),
		Body: strings.NewReader("v")}); err != nil {
		t.Fatal(err)
	}

	// The captured request: a V2-signed "PUT /replay" (CreateBucket).
	date := time.Now().UTC().Format(http.TimeFormat)
	authorization := "AWS " + accessKey + ":" + v2Signature(secret, "PUT\n\n\n"+date+"\n/"+bucket)
	replay := func(query, body string) (int, string) {
		req, err := http.NewRequest("PUT", srv.Endpoint()+"/"+bucket+query, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Date", date)
		req.Header.Set("Authorization", authorization)
		return send(t, req)
	}
	// As captured it authenticates (CreateBucket of a bucket its caller
	// owns succeeds, as in us-east-1).
	if status, body := replay("", ""); status != http.StatusOK {
		t.Fatalf("the captured request as signed: %d %s", status, body)
	}
	ownership := `<OwnershipControls xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Rule><ObjectOwnership>ObjectWriter</ObjectOwnership></Rule></OwnershipControls>`
	for _, query := range []string{"?ownershipControls", "?ownershipControls=", "?policyStatus"} {
		status, body := replay(query, ownership)
		if status != http.StatusForbidden || !strings.Contains(body, "<Code>SignatureDoesNotMatch</Code>") {
			t.Fatalf("PUT /%s%s with the signature of PUT /%s: %d %s", bucket, query, bucket, status, body)
		}
	}
	got, err := root.GetBucketOwnershipControls(ctx, &s3.GetBucketOwnershipControlsInput{Bucket: aws.String(bucket)})
	if err != nil || got.OwnershipControls.Rules[0].ObjectOwnership != types.ObjectOwnershipBucketOwnerPreferred {
		t.Fatalf("ownership after the replays: %+v %v", got, err)
	}

	// V2 presigned GET: a week ahead works, further is AccessDenied.
	presigned := func(expires time.Time) (int, string) {
		e := strconv.FormatInt(expires.Unix(), 10)
		q := url.Values{"AWSAccessKeyId": {accessKey}, "Expires": {e},
			"Signature": {v2Signature(secret, "GET\n\n\n"+e+"\n/"+bucket+"/k")}}
		req, err := http.NewRequest("GET", srv.Endpoint()+"/"+bucket+"/k?"+q.Encode(), nil)
		if err != nil {
			t.Fatal(err)
		}
		return send(t, req)
	}
	now := time.Now()
	if status, body := presigned(now.Add(7 * 24 * time.Hour)); status != http.StatusOK || body != "v" {
		t.Fatalf("V2 presigned URL for a week: %d %s", status, body)
	}
	for _, ahead := range []time.Duration{8 * 24 * time.Hour, 10 * 365 * 24 * time.Hour} {
		status, body := presigned(now.Add(ahead))
		if status != http.StatusForbidden || !strings.Contains(body, "<Code>AccessDenied</Code>") {
			t.Fatalf("V2 presigned URL expiring in %v: %d %s", ahead, status, body)
		}
	}
}

// TestPutBucketCORSCap: against a real `b3 server`, PutBucketCors refuses
// a configuration over 64 KB (MalformedXML) and keeps the one it had; a
// configuration at the cap is accepted and answers preflights.
func TestPutBucketCORSCap(t *testing.T) {
	srv := testutil.StartServer(t, testutil.ServerOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	root := srv.Client(30 * time.Second)
	bucket := aws.String("web")
	if _, err := root.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: bucket}); err != nil {
		t.Fatal(err)
	}
	// rules returns 100 rules of n origins each.
	rules := func(n int) []types.CORSRule {
		var out []types.CORSRule
		for r := range 100 {
			rule := types.CORSRule{AllowedMethods: []string{"GET"}}
			for o := range n {
				rule.AllowedOrigins = append(rule.AllowedOrigins, fmt.Sprintf("https://app-%d-%d.example.org", r, o))
			}
			out = append(out, rule)
		}
		return out
	}
	// An origin is about 60 bytes of XML: 5 a rule make about 35 KB, 15
	// about 95 KB.
	if _, err := root.PutBucketCors(ctx, &s3.PutBucketCorsInput{Bucket: bucket,
		CORSConfiguration: &types.CORSConfiguration{CORSRules: rules(5)}}); err != nil {
		t.Fatalf("a configuration under 64 KB: %v", err)
	}
	_, err := root.PutBucketCors(ctx, &s3.PutBucketCorsInput{Bucket: bucket,
		CORSConfiguration: &types.CORSConfiguration{CORSRules: rules(15)}})
	if code := testutil.APICode(err); code != "MalformedXML" {
		t.Fatalf("a configuration over 64 KB: %q (%v), want MalformedXML", code, err)
	}
	got, err := root.GetBucketCors(ctx, &s3.GetBucketCorsInput{Bucket: bucket})
	if err != nil || len(got.CORSRules) != 100 || len(got.CORSRules[99].AllowedOrigins) != 5 {
		t.Fatalf("configuration after the refused put: %v", err)
	}
	req, err := http.NewRequest("OPTIONS", srv.Endpoint()+"/web/k", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Origin", "https://app-99-4.example.org")
	req.Header.Set("Access-Control-Request-Method", "GET")
	if status, body := send(t, req); status != http.StatusOK {
		t.Fatalf("preflight: %d %s", status, body)
	}
}
