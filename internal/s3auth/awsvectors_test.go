package s3auth

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"
)

// The worked examples of the S3 SigV4 documentation ("Examples: Signature
// Calculations", "sigv4-query-string-auth", "sigv4-streaming"), credentials
// AKIAIOSFODNN7EXAMPLE, 20130524T000000Z, us-east-1.
func TestAWSDocumentationHeaderExamples(t *testing.T) {
	const emptyHash = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
	tests := []struct {
		name    string
		method  string
		target  string
		headers map[string]string
		body    string
		signed  string
		sig     string
	}{
		{
			name: "GET object", method: "GET", target: "/test.txt",
			headers: map[string]string{"Range": "bytes=0-9", "X-Amz-Content-Sha256": emptyHash, "X-Amz-Date": "20130524T000000Z"},
			signed:  "host;range;x-amz-content-sha256;x-amz-date",
			sig:     "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41",
		},
		{
			name: "PUT object", method: "PUT", target: "/test$file.text",
			headers: map[string]string{
				"Date": "Fri, 24 May 2013 00:00:00 GMT", "X-Amz-Date": "20130524T000000Z",
				"X-Amz-Storage-Class":  "REDUCED_REDUNDANCY",
				"X-Amz-Content-Sha256": "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072",
			},
			body:   "Welcome to Amazon S3.",
			signed: "date;host;x-amz-content-sha256;x-amz-date;x-amz-storage-class",
			sig:    "98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd",
		},
		{
			name: "GET bucket lifecycle", method: "GET", target: "/?lifecycle",
			headers: map[string]string{"X-Amz-Content-Sha256": emptyHash, "X-Amz-Date": "20130524T000000Z"},
			signed:  "host;x-amz-content-sha256;x-amz-date",
			sig:     "fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543",
		},
		{
			name: "GET bucket list objects", method: "GET", target: "/?max-keys=2&prefix=J",
			headers: map[string]string{"X-Amz-Content-Sha256": emptyHash, "X-Amz-Date": "20130524T000000Z"},
			signed:  "host;x-amz-content-sha256;x-amz-date",
			sig:     "34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			build := func(sig string) *http.Request {
				req := mustRequest(t, tt.method, "http://examplebucket.s3.amazonaws.com"+tt.target, tt.body)
				for k, v := range tt.headers {
					req.Header.Set(k, v)
				}
				req.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential="+exampleAccessKey+
					"/20130524/us-east-1/s3/aws4_request,SignedHeaders="+tt.signed+",Signature="+sig)
				return serverView(t, req)
			}
			v := newVerifier(exampleTime)
			result, body, code := authenticateAndRead(v, build(tt.sig))
			if code != "" {
				t.Fatalf("documented request rejected: %s", code)
			}
			if result.AccessKey != exampleAccessKey || string(body) != tt.body {
				t.Fatalf("principal %q body %q", result.AccessKey, body)
			}
			bad := []byte(tt.sig)
			bad[0] = "01"[b2i(bad[0] == '0')]
			if _, _, code := authenticateAndRead(v, build(string(bad))); code != "SignatureDoesNotMatch" {
				t.Fatalf("altered signature: %q", code)
			}
		})
	}
}

func TestAWSDocumentationPresignedExample(t *testing.T) {
	target := "http://examplebucket.s3.amazonaws.com/test.txt?X-Amz-Algorithm=AWS4-HMAC-SHA256" +
		"&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524%2Fus-east-1%2Fs3%2Faws4_request" +
		"&X-Amz-Date=20130524T000000Z&X-Amz-Expires=86400&X-Amz-SignedHeaders=host" +
		"&X-Amz-Signature=aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404"
	v := newVerifier(exampleTime.Add(3600e9))
	result, err := v.Authenticate(serverView(t, mustRequest(t, "GET", target, "")))
	if err != nil {
		t.Fatalf("documented presigned URL rejected: %v", err)
	}
	if result.Method != SigV4Presigned || result.AccessKey != exampleAccessKey {
		t.Fatalf("result %+v", result)
	}
	v = newVerifier(exampleTime.Add(86401e9))
	if _, err := v.Authenticate(serverView(t, mustRequest(t, "GET", target, ""))); codeOf(err) != "AccessDenied" || !strings.Contains(err.Error(), "expired") {
		t.Fatalf("expired URL: %v", err)
	}
}

// awsStreamingExample builds the documented 66560-byte chunked upload
// (64 KiB + 1 KiB of 'a') with its documented signatures.
func awsStreamingExample(t testing.TB, mutate func(body []byte) []byte) *http.Request {
	var wire bytes.Buffer
	wire.WriteString("10000;chunk-signature=ad80c730a21e5b8d04586a2213dd63b9a0e99e0e2307b0ade35a65485a288648\r\n")
	wire.Write(bytes.Repeat([]byte{'a'}, 65536))
	wire.WriteString("\r\n400;chunk-signature=0055627c9e194cb4542bae2aa5492e3c1575bbb81b612b7d234b86a503ef5497\r\n")
	wire.Write(bytes.Repeat([]byte{'a'}, 1024))
	wire.WriteString("\r\n0;chunk-signature=b6c6ea8a5354eaf15b3cb7646744f4275b71ea724fed81ceb9323e279d449df9\r\n\r\n")
	body := wire.Bytes()
	if mutate != nil {
		body = mutate(bytes.Clone(body))
	}
	req, err := http.NewRequest("PUT", "http://s3.amazonaws.com/examplebucket/chunkObject.txt", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.ContentLength = 66824 // as documented and signed, whatever the mutation
	req.Header.Set("X-Amz-Date", "20130524T000000Z")
	req.Header.Set("X-Amz-Storage-Class", "REDUCED_REDUNDANCY")
	req.Header.Set("X-Amz-Content-Sha256", StreamingSignedPayload)
	req.Header.Set("Content-Encoding", "aws-chunked")
	req.Header.Set("X-Amz-Decoded-Content-Length", "66560")
	req.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,"+
		"SignedHeaders=content-encoding;content-length;host;x-amz-content-sha256;x-amz-date;x-amz-decoded-content-length;x-amz-storage-class,"+
		"Signature=4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9")
	if mutate == nil {
		return serverView(t, req)
	}
	// A mutated body may no longer match Content-Length; skip the wire.
	req.Header.Set("Content-Length", "66824")
	req.Body = io.NopCloser(bytes.NewReader(body))
	return req
}

func TestAWSDocumentationStreamingExample(t *testing.T) {
	v := newVerifier(exampleTime)
	result, body, code := authenticateAndRead(v, awsStreamingExample(t, nil))
	if code != "" {
		t.Fatalf("documented chunked upload rejected: %s", code)
	}
	if result.Payload != PayloadStreamingSigned || result.ContentLength != 66560 ||
		!bytes.Equal(body, bytes.Repeat([]byte{'a'}, 66560)) {
		t.Fatalf("payload %v length %d body %d bytes", result.Payload, result.ContentLength, len(body))
	}

	mutations := map[string]struct {
		mutate func([]byte) []byte
		code   string
	}{
		"flipped data byte": {func(b []byte) []byte { b[100] = 'b'; return b }, "SignatureDoesNotMatch"},
		"flipped byte of last chunk": {func(b []byte) []byte {
			i := bytes.LastIndex(b, []byte("aaaa\r\n0;"))
			b[i] = 'c'
			return b
		}, "SignatureDoesNotMatch"},
		"wrong final signature": {func(b []byte) []byte {
			return bytes.Replace(b, []byte("b6c6ea8a"), []byte("b6c6ea8b"), 1)
		}, "SignatureDoesNotMatch"},
		"chunks swapped order": {func(b []byte) []byte {
			return bytes.Replace(b, []byte("ad80c730"), []byte("0055627c"), 1)
		}, "SignatureDoesNotMatch"},
		"truncated in data": {func(b []byte) []byte { return b[:40000] }, "IncompleteBody"},
		"truncated before final": {func(b []byte) []byte {
			return b[:bytes.LastIndex(b, []byte("0;chunk-signature"))]
		}, "IncompleteBody"},
		"missing CRLF after data": {func(b []byte) []byte {
			i := bytes.Index(b, []byte("\r\n400;"))
			return append(b[:i], b[i+2:]...)
		}, "IncompleteBody"},
		"bad size": {func(b []byte) []byte { return append([]byte("zz"), b[5:]...) }, "IncompleteBody"},
	}
	for name, m := range mutations {
		t.Run(name, func(t *testing.T) {
			if _, _, code := authenticateAndRead(v, awsStreamingExample(t, m.mutate)); code != m.code {
				t.Fatalf("code %q, want %q", code, m.code)
			}
		})
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
