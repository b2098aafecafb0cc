package s3auth

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

const (
	exampleAccessKey = "AKIAIOSFODNN7EXAMPLE"
	exampleSecret    = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
	testRegion       = "us-east-1"
)

var exampleTime = time.Date(2013, 5, 24, 0, 0, 0, 0, time.UTC)

func newVerifier(now time.Time) *Verifier {
	return &Verifier{
		Credentials: StaticCredentials{exampleAccessKey: exampleSecret, "other": "other-secret"},
		Region:      testRegion,
		Domains:     []string{"s3.amazonaws.com", "s3.local"},
		Now:         func() time.Time { return now },
	}
}

// serverView serialises a client request and parses it back the way
// net/http's server does, so tests verify exactly what a server receives.
func serverView(t testing.TB, req *http.Request) *http.Request {
	t.Helper()
	var wire bytes.Buffer
	if err := req.Write(&wire); err != nil {
		t.Fatalf("write request: %v", err)
	}
	parsed, err := http.ReadRequest(bufio.NewReader(&wire))
	if err != nil {
		t.Fatalf("read request: %v", err)
	}
	return parsed
}

// codeOf returns the S3 code of err ("" for nil and io.EOF).
func codeOf(err error) string {
	var e interface{ S3Code() string }
	switch {
	case err == nil || err == io.EOF:
		return ""
	case errors.As(err, &e):
		return e.S3Code()
	}
	return "non-S3 error: " + err.Error()
}

// authenticateAndRead authenticates and drains the body; it returns the
// decoded body and the S3 code of the first failure ("" on success).
func authenticateAndRead(v *Verifier, r *http.Request) (*Result, []byte, string) {
	result, err := v.Authenticate(r)
	if err != nil {
		return nil, nil, codeOf(err)
	}
	body, err := io.ReadAll(result.Body)
	return result, body, codeOf(err)
}

func mustRequest(t testing.TB, method, url, body string) *http.Request {
	t.Helper()
	var reader io.Reader
	if body != "" {
		reader = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, reader)
	if err != nil {
		t.Fatal(err)
	}
	return req
}
