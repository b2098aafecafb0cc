package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"

	"github.com/b3-storage/b3/internal/testutil"
)

// from returns a dialer whose connections leave from the loopback
// address ip (any of 127/8 works on Linux without configuration).
func from(ip string) func(ctx context.Context, network, addr string) (net.Conn, error) {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 5 * time.Second}
	return d.DialContext
}

// TestAuthBackOffProcess: against a real b3 server, a burst of wrong
// signatures from one address gets that address 503 SlowDown with
// Retry-After, even for the right secret, while the same user from
// another address is served; likewise wrong console logins get 429 with
// Retry-After from that address only.
func TestAuthBackOffProcess(t *testing.T) {
	srv := testutil.StartServer(t, testutil.ServerOptions{})
	ctx := context.Background()
	accessKey, secretKey := srv.Keys()
	once := func(o *s3.Options) { o.RetryMaxAttempts = 1 }

	guesser := testutil.S3ClientDial(srv.Endpoint(), accessKey, "guess/000000000000000000000000000000000000", 10*time.Second, from("127.0.0.3"))
	for range 10 {
		if _, err := guesser.ListBuckets(ctx, &s3.ListBucketsInput{}, once); err == nil {
			t.Fatal("a wrong secret accepted")
		}
	}
	right := testutil.S3ClientDial(srv.Endpoint(), accessKey, secretKey, 10*time.Second, from("127.0.0.3"))
	_, err := right.ListBuckets(ctx, &s3.ListBucketsInput{}, once)
	var ae smithy.APIError
	if !errors.As(err, &ae) || ae.ErrorCode() != "SlowDown" {
		t.Errorf("the right secret from the guessing address after 10 failures: %v, want SlowDown", err)
	}
	elsewhere := testutil.S3ClientDial(srv.Endpoint(), accessKey, secretKey, 10*time.Second, from("127.0.0.4"))
	if _, err := elsewhere.ListBuckets(ctx, &s3.ListBucketsInput{}, once); err != nil {
		t.Errorf("the user from another address: %v", err)
	}

	login := func(ip, secret string) *http.Response {
		t.Helper()
		hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DialContext: from(ip)}}
		body, _ := json.Marshal(map[string]string{"accessKey": accessKey, "secretKey": secret})
		req, _ := http.NewRequest("POST", "http://"+srv.ConsoleAddr+"/api/login", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-B3-Console", "1")
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	for i := range 10 {
		if resp := login("127.0.0.5", "wrong-secret"); resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("wrong login %d: %s", i, resp.Status)
		}
	}
	if resp := login("127.0.0.5", secretKey); resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
		t.Errorf("the right login from the guessing address: %s, Retry-After %q; want 429 with Retry-After", resp.Status, resp.Header.Get("Retry-After"))
	}
	if resp := login("127.0.0.6", secretKey); resp.StatusCode != http.StatusOK {
		t.Errorf("the right login from another address: %s", resp.Status)
	}
}
