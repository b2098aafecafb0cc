package s3auth

import (
	"bytes"
	"crypto/sha256"
	"hash"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/b3-storage/b3/internal/checksum"
	"github.com/minio/minio-go/v7/pkg/signer"
)

// realClock verifies requests minio-go signed with time.Now.
func realClock() *Verifier {
	v := newVerifier(time.Time{})
	v.Now = nil
	return v
}

func TestMinioSignV4AndPresignV4(t *testing.T) {
	const body = "minio body"
	req := mustRequest(t, "PUT", "http://s3.local/bucket/"+escapeKey("dir/a b+c"), body)
	req.Header.Set("X-Amz-Content-Sha256", sha256Hex(body))
	signed := signer.SignV4(*req, exampleAccessKey, exampleSecret, "", testRegion)
	result, got, code := authenticateAndRead(realClock(), serverView(t, signed))
	if code != "" || string(got) != body || result.Method != SigV4Header {
		t.Fatalf("SignV4: %q %q", code, got)
	}
	bad := signer.SignV4(*mustRequest(t, "PUT", "http://s3.local/bucket/k", body), exampleAccessKey, "wrong", "", testRegion)
	bad.Header.Set("X-Amz-Content-Sha256", UnsignedPayload) // and unsigned after signing
	if _, _, code := authenticateAndRead(realClock(), serverView(t, bad)); code != "SignatureDoesNotMatch" {
		t.Fatalf("SignV4 wrong secret: %q", code)
	}

	get := mustRequest(t, "GET", "http://s3.local/bucket/obj?versionId=7", "")
	presigned := signer.PreSignV4(*get, exampleAccessKey, exampleSecret, "", testRegion, 600)
	result, _, code = authenticateAndRead(realClock(), serverView(t, presigned))
	if code != "" || result.Method != SigV4Presigned {
		t.Fatalf("PreSignV4: %q", code)
	}
	expired := realClock()
	expired.Now = func() time.Time { return time.Now().Add(11 * time.Minute) }
	if _, _, code := authenticateAndRead(expired, serverView(t, presigned)); code != "AccessDenied" {
		t.Fatalf("PreSignV4 expired: %q", code)
	}
}

func TestMinioSignV2(t *testing.T) {
	tests := []struct {
		name        string
		url         string
		virtualHost bool
		headers     map[string]string
	}{
		{"path style", "http://s3.local/bucket/" + escapeKey("a b/c+d"), false, nil},
		{"sub-resources", "http://s3.local/bucket/key?uploadId=xyz&partNumber=3&ignored=1", false, nil},
		{"acl", "http://s3.local/bucket?acl", false, nil},
		{"amz headers", "http://s3.local/bucket/key", false, map[string]string{"X-Amz-Meta-B": "two", "X-Amz-Meta-A": "one", "Content-Type": "text/plain", "Content-Md5": "1B2M2Y8AsgTpgAmY7PhCfg=="}},
		{"virtual host", "http://bucket.s3.local/key?versioning", true, nil},
		{"response override", "http://s3.local/bucket/key?response-content-type=text%2Fplain", false, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			newReq := func() *http.Request {
				req := mustRequest(t, "PUT", tt.url, "v2 body")
				req.Header.Set("Date", time.Now().UTC().Format(http.TimeFormat))
				for k, v := range tt.headers {
					req.Header.Set(k, v)
				}
				return req
			}
			signed := signer.SignV2(*newReq(), exampleAccessKey, exampleSecret, tt.virtualHost)
			result, body, code := authenticateAndRead(realClock(), serverView(t, signed))
			if code != "" || string(body) != "v2 body" || result.Method != SigV2Header || result.AccessKey != exampleAccessKey {
				t.Fatalf("SignV2: %q %q", code, body)
			}
			wrong := signer.SignV2(*newReq(), exampleAccessKey, "wrong", tt.virtualHost)
			if _, _, code := authenticateAndRead(realClock(), serverView(t, wrong)); code != "SignatureDoesNotMatch" {
				t.Fatalf("SignV2 wrong secret: %q", code)
			}

			presigned := signer.PreSignV2(*mustRequest(t, "GET", tt.url, ""), exampleAccessKey, exampleSecret, 60, tt.virtualHost)
			result, _, code = authenticateAndRead(realClock(), serverView(t, presigned))
			if code != "" || result.Method != SigV2Presigned {
				t.Fatalf("PreSignV2: %q", code)
			}
			later := realClock()
			later.Now = func() time.Time { return time.Now().Add(2 * time.Minute) }
			if _, _, code := authenticateAndRead(later, serverView(t, presigned)); code != "AccessDenied" {
				t.Fatalf("PreSignV2 expired: %q", code)
			}
		})
	}
}

func TestSigV2Rejections(t *testing.T) {
	build := func(auth string, date time.Time) *http.Request {
		req := mustRequest(t, "GET", "http://s3.local/bucket/key", "")
		req.Header.Set("Date", date.Format(http.TimeFormat))
		signed := signer.SignV2(*req, exampleAccessKey, exampleSecret, false)
		if auth != "" {
			signed.Header.Set("Authorization", auth)
		}
		return serverView(t, signed)
	}
	now := time.Now()
	tests := []struct {
		name string
		req  *http.Request
		code string
	}{
		{"skewed", build("", now.Add(-20*time.Minute)), "RequestTimeTooSkewed"},
		{"no colon", build("AWS "+exampleAccessKey, now), "InvalidArgument"},
		{"unknown key", build("AWS nobody:c2lnbmF0dXJl", now), "InvalidAccessKeyId"},
		{"not base64", build("AWS "+exampleAccessKey+":***", now), "SignatureDoesNotMatch"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, _, code := authenticateAndRead(realClock(), tt.req); code != tt.code {
				t.Fatalf("code %q, want %q", code, tt.code)
			}
		})
	}
	noDate := build("", now)
	noDate.Header.Del("Date")
	if _, _, code := authenticateAndRead(realClock(), noDate); code != "AccessDenied" {
		t.Fatalf("no date: %q", code)
	}
}

// streamingRequest signs data with minio-go's StreamingSignV4; a non-nil
// trailer adds the signed trailer.
func streamingRequest(t testing.TB, data []byte, trailer http.Header, at time.Time) *http.Request {
	req := mustRequest(t, "PUT", "http://s3.local/bucket/streamed", "")
	req.Body = io.NopCloser(bytes.NewReader(data))
	req.Trailer = trailer
	signed := signer.StreamingSignV4(req, exampleAccessKey, exampleSecret, "", testRegion, int64(len(data)), at, newSimdSHA256())
	return signed
}

func TestMinioStreamingSignV4(t *testing.T) {
	data := bytes.Repeat([]byte("0123456789abcdef"), 10_000) // 160000 bytes: 3 chunks
	crc := checksum.Encode(checksum.CRC32C.Sum(data))
	at := time.Now().UTC()

	t.Run("signed chunks", func(t *testing.T) {
		result, body, code := authenticateAndRead(realClock(), serverView(t, streamingRequest(t, data, nil, at)))
		if code != "" || !bytes.Equal(body, data) || result.Payload != PayloadStreamingSigned || result.ContentLength != int64(len(data)) {
			t.Fatalf("code %q, %d bytes", code, len(body))
		}
	})
	t.Run("signed chunks and trailer", func(t *testing.T) {
		req := serverView(t, streamingRequest(t, data, http.Header{"x-amz-checksum-crc32c": {crc}}, at))
		result, err := realClock().Authenticate(req)
		if err != nil {
			t.Fatal(err)
		}
		expected, err := checksum.ParseHeaders(req.Header)
		if err != nil {
			t.Fatal(err)
		}
		verified := checksum.NewReader(result.Body, expected)
		body, err := io.ReadAll(verified)
		if err != nil || !bytes.Equal(body, data) || result.Payload != PayloadStreamingSignedTrailer {
			t.Fatalf("err %v, %d bytes", err, len(body))
		}
		if verified.Requested().Base64() != crc {
			t.Fatalf("checksum %s, want %s", verified.Requested().Base64(), crc)
		}
	})
	t.Run("wrong trailer checksum", func(t *testing.T) {
		wrong := checksum.Encode(checksum.CRC32C.Sum([]byte("x")))
		req := serverView(t, streamingRequest(t, data, http.Header{"x-amz-checksum-crc32c": {wrong}}, at))
		result, err := realClock().Authenticate(req)
		if err != nil {
			t.Fatal(err)
		}
		expected, _ := checksum.ParseHeaders(req.Header)
		_, err = io.ReadAll(checksum.NewReader(result.Body, expected))
		if codeOf(err) != "BadDigest" || !strings.Contains(err.Error(), "CRC32C you specified did not match") {
			t.Fatalf("err %v", err)
		}
	})
	t.Run("tampered trailer", func(t *testing.T) {
		req := streamingRequest(t, data, http.Header{"x-amz-checksum-crc32c": {crc}}, at)
		wire := serverView(t, req)
		raw, _ := io.ReadAll(wire.Body)
		raw = bytes.Replace(raw, []byte(crc), []byte(checksum.Encode(checksum.CRC32C.Sum([]byte("x")))), 1)
		wire.Body = io.NopCloser(bytes.NewReader(raw))
		if _, _, code := authenticateAndRead(realClock(), wire); code != "SignatureDoesNotMatch" {
			t.Fatalf("code %q", code)
		}
	})
	t.Run("tampered chunk", func(t *testing.T) {
		wire := serverView(t, streamingRequest(t, data, nil, at))
		raw, _ := io.ReadAll(wire.Body)
		raw[len(raw)/2] ^= 0x20
		wire.Body = io.NopCloser(bytes.NewReader(raw))
		if _, _, code := authenticateAndRead(realClock(), wire); code != "SignatureDoesNotMatch" {
			t.Fatalf("code %q", code)
		}
	})
	t.Run("truncated", func(t *testing.T) {
		wire := serverView(t, streamingRequest(t, data, nil, at))
		raw, _ := io.ReadAll(wire.Body)
		for _, cut := range []int{10, 100, len(raw) / 2, len(raw) - 90} {
			wire.Body = io.NopCloser(bytes.NewReader(raw[:cut]))
			if _, _, code := authenticateAndRead(realClock(), wire); code != "IncompleteBody" {
				t.Fatalf("cut at %d: code %q", cut, code)
			}
		}
	})
	t.Run("decoded length lies", func(t *testing.T) {
		wire := serverView(t, streamingRequest(t, data, nil, at))
		wire.Header.Set("X-Amz-Decoded-Content-Length", "5") // signed header: signature fails first
		if _, _, code := authenticateAndRead(realClock(), wire); code != "SignatureDoesNotMatch" {
			t.Fatalf("code %q", code)
		}
	})
}

func TestMinioUnsignedTrailer(t *testing.T) {
	data := bytes.Repeat([]byte("trailer!"), 20_000)
	crc := checksum.Encode(checksum.CRC32.Sum(data))
	for _, sign := range []bool{true, false} {
		req := mustRequest(t, "PUT", "http://s3.local/bucket/t", "")
		req.Body = io.NopCloser(bytes.NewReader(data))
		req.ContentLength = int64(len(data))
		req.Header.Set("X-Amz-Content-Sha256", StreamingUnsignedPayloadTrailer)
		trailer := http.Header{"x-amz-checksum-crc32": {crc}}
		var signed *http.Request
		if sign {
			signed = signer.SignV4Trailer(*req, exampleAccessKey, exampleSecret, "", testRegion, trailer)
		} else {
			signed = signer.UnsignedTrailer(*req, trailer)
		}
		wire := serverView(t, signed)
		result, err := realClock().Authenticate(wire)
		if err != nil {
			t.Fatalf("sign=%v: %v", sign, err)
		}
		if result.Payload != PayloadStreamingTrailer || (result.AccessKey != "") == !sign {
			t.Fatalf("sign=%v: result %+v", sign, result)
		}
		expected, err := checksum.ParseHeaders(wire.Header)
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(checksum.NewReader(result.Body, expected))
		if err != nil || !bytes.Equal(body, data) {
			t.Fatalf("sign=%v: %v, %d bytes", sign, err, len(body))
		}
	}
}

// simdSHA256 adapts crypto/sha256 to the md5simd.Hasher minio-go wants.
type simdSHA256 struct{ hash.Hash }

func (simdSHA256) Close() {}

func newSimdSHA256() simdSHA256 { return simdSHA256{sha256.New()} }
