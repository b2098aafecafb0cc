package e2e

import (
	"bufio"
	"bytes"
	"context"
	"crypto/md5"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/xml"
	"fmt"
	"hash"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/minio/md5-simd"
	"github.com/minio/minio-go/v7/pkg/signer"
)

// Raw requests, signed with the SDK's SigV4 signer, for what no
// well-behaved client sends. Each case asserts the S3 status and code and,
// for writes, that no object was left behind.

const unsignedPayload = "UNSIGNED-PAYLOAD"

// rawRequest builds a request to path (escaped, with query) on the server.
// payloadHash "" means the SHA-256 of body.
func rawRequest(t testing.TB, method, path string, body []byte, header http.Header) *http.Request {
	t.Helper()
	req, err := http.NewRequest(method, env.endpoint+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for name, values := range header {
		req.Header[name] = values
	}
	return req
}

// sign signs req with SigV4 for the given secret at time at.
func sign(t testing.TB, req *http.Request, secret, payloadHash string, at time.Time) {
	t.Helper()
	req.Header.Set("X-Amz-Content-Sha256", payloadHash)
	creds := aws.Credentials{AccessKeyID: accessKey, SecretAccessKey: secret}
	if err := newSigner().SignHTTP(context.Background(), creds, req, payloadHash, "s3", region, at); err != nil {
		t.Fatalf("sign: %v", err)
	}
}

// newSigner returns a SigV4 signer as S3 uses it: the path is escaped
// once, not twice as for other services.
func newSigner() *v4.Signer {
	return v4.NewSigner(func(o *v4.SignerOptions) { o.DisableURIPathEscaping = true })
}

func sha256Of(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// do sends req and returns its status and S3 error code ("" for none).
func do(t testing.TB, req *http.Request) (int, string, []byte) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: read body: %v", req.Method, req.URL, err)
	}
	return resp.StatusCode, errorCode(resp.StatusCode, body, resp.Header), body
}

func errorCode(status int, body []byte, header http.Header) string {
	if status < 300 {
		return ""
	}
	var e struct {
		Code      string
		RequestID string `xml:"RequestId"`
	}
	if err := xml.Unmarshal(body, &e); err != nil || e.Code == "" {
		return fmt.Sprintf("(no S3 error body: %q)", body)
	}
	if e.RequestID == "" && header.Get("X-Amz-Request-Id") == "" {
		return "(no request id in " + e.Code + ")"
	}
	return e.Code
}

// signedDo signs a request with the right secret and sends it.
func signedDo(t testing.TB, method, path string, body []byte, header http.Header) (int, string, []byte) {
	t.Helper()
	req := rawRequest(t, method, path, body, header)
	sign(t, req, secretKey, sha256Of(body), time.Now())
	return do(t, req)
}

// assertNoObject fails if bucket/key exists.
func assertNoObject(t testing.TB, bucket, key string) {
	t.Helper()
	if status, code, _ := signedDo(t, "GET", "/"+bucket+"/"+key, nil, nil); status != http.StatusNotFound || code != "NoSuchKey" {
		t.Fatalf("GET %s/%s after a failed write: %d %s, want 404 NoSuchKey", bucket, key, status, code)
	}
}

// ensureBucket creates bucket b, or finds it made by an earlier run of the
// same test against the same server (go test -count=N).
func ensureBucket(t *testing.T, b string) {
	t.Helper()
	status, code, body := signedDo(t, "PUT", "/"+b, nil, nil)
	if status != http.StatusOK && code != "BucketAlreadyOwnedByYou" {
		t.Fatalf("create bucket %s: %d %s %s", b, status, code, body)
	}
}

func TestBadInput(t *testing.T) {
	t.Parallel()
	const b = "e2e-bad"
	ensureBucket(t, b)
	body := []byte("some object body")
	md5sum := md5.Sum(body)
	otherMD5 := md5.Sum([]byte("something else"))

	t.Run("bad signature", func(t *testing.T) {
		req := rawRequest(t, "PUT", "/"+b+"/badsig", body, nil)
		sign(t, req, "not-the-secret", sha256Of(body), time.Now())
		if status, code, _ := do(t, req); status != http.StatusForbidden || code != "SignatureDoesNotMatch" {
			t.Fatalf("%d %s, want 403 SignatureDoesNotMatch", status, code)
		}
		assertNoObject(t, b, "badsig")
	})
	t.Run("unknown access key", func(t *testing.T) {
		req := rawRequest(t, "PUT", "/"+b+"/badkey", body, nil)
		req.Header.Set("X-Amz-Content-Sha256", sha256Of(body))
		creds := aws.Credentials{AccessKeyID: "NOSUCHKEY", SecretAccessKey: secretKey}
		if err := newSigner().SignHTTP(context.Background(), creds, req, sha256Of(body), "s3", region, time.Now()); err != nil {
			t.Fatal(err)
		}
		if status, code, _ := do(t, req); status != http.StatusForbidden || code != "InvalidAccessKeyId" {
			t.Fatalf("%d %s, want 403 InvalidAccessKeyId", status, code)
		}
		assertNoObject(t, b, "badkey")
	})
	t.Run("skewed request time", func(t *testing.T) {
		req := rawRequest(t, "PUT", "/"+b+"/skewed", body, nil)
		sign(t, req, secretKey, sha256Of(body), time.Now().Add(-time.Hour))
		if status, code, _ := do(t, req); status != http.StatusForbidden || code != "RequestTimeTooSkewed" {
			t.Fatalf("%d %s, want 403 RequestTimeTooSkewed", status, code)
		}
		assertNoObject(t, b, "skewed")
	})
	t.Run("anonymous write", func(t *testing.T) {
		req := rawRequest(t, "PUT", "/"+b+"/anon", body, nil)
		if status, code, _ := do(t, req); status != http.StatusForbidden || code != "AccessDenied" {
			t.Fatalf("%d %s, want 403 AccessDenied", status, code)
		}
		assertNoObject(t, b, "anon")
	})
	t.Run("payload hash mismatch", func(t *testing.T) {
		req := rawRequest(t, "PUT", "/"+b+"/hash", body, nil)
		sign(t, req, secretKey, sha256Of([]byte("other")), time.Now())
		if status, code, _ := do(t, req); status != http.StatusBadRequest || code != "XAmzContentSHA256Mismatch" {
			t.Fatalf("%d %s, want 400 XAmzContentSHA256Mismatch", status, code)
		}
		assertNoObject(t, b, "hash")
	})
	for _, tc := range []struct {
		name, header, value, code string
	}{
		{"wrong Content-MD5", "Content-Md5", base64.StdEncoding.EncodeToString(otherMD5[:]), "BadDigest"},
		{"malformed Content-MD5", "Content-Md5", "not base64!", "InvalidDigest"},
		{"wrong crc32 checksum", "X-Amz-Checksum-Crc32", crc32Base64([]byte("other")), "BadDigest"},
		{"wrong sha256 checksum", "X-Amz-Checksum-Sha256", base64.StdEncoding.EncodeToString(make([]byte, 32)), "BadDigest"},
		{"malformed crc32c checksum", "X-Amz-Checksum-Crc32c", "AAAA", "InvalidRequest"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key := strings.ReplaceAll(tc.name, " ", "-")
			for _, payload := range []string{"signed", unsignedPayload} {
				req := rawRequest(t, "PUT", "/"+b+"/"+key, body, http.Header{tc.header: {tc.value}})
				hash := sha256Of(body)
				if payload == unsignedPayload {
					hash = unsignedPayload
				}
				sign(t, req, secretKey, hash, time.Now())
				if status, code, _ := do(t, req); status != http.StatusBadRequest || code != tc.code {
					t.Fatalf("%s payload: %d %s, want 400 %s", payload, status, code, tc.code)
				}
				assertNoObject(t, b, key)
			}
		})
	}
	t.Run("right Content-MD5", func(t *testing.T) {
		// The control for the cases above: the same request, right digest.
		status, code, _ := signedDo(t, "PUT", "/"+b+"/md5-ok", body, http.Header{"Content-Md5": {base64.StdEncoding.EncodeToString(md5sum[:])}})
		if status != http.StatusOK {
			t.Fatalf("%d %s", status, code)
		}
		if status, _, got := signedDo(t, "GET", "/"+b+"/md5-ok", nil, nil); status != http.StatusOK || !bytes.Equal(got, body) {
			t.Fatalf("GET: %d %q", status, got)
		}
	})

	t.Run("truncated body", func(t *testing.T) {
		// Content-Length promises 1000 bytes; the connection delivers 400
		// and half-closes. The server must answer 400 and store nothing.
		for _, payload := range []string{unsignedPayload, "signed"} {
			full := bytes.Repeat([]byte("x"), 1000)
			req := rawRequest(t, "PUT", "/"+b+"/truncated", full, nil)
			hash := unsignedPayload
			if payload == "signed" {
				hash = sha256Of(full)
			}
			sign(t, req, secretKey, hash, time.Now())
			status, code := sendTruncated(t, req, full[:400])
			if status != http.StatusBadRequest {
				t.Fatalf("%s payload: %d %s, want 400", payload, status, code)
			}
			assertNoObject(t, b, "truncated")
		}
	})

	t.Run("oversized key", func(t *testing.T) {
		long := strings.Repeat("k", 1025)
		if status, code, _ := signedDo(t, "PUT", "/"+b+"/"+long, body, nil); status != http.StatusBadRequest || code != "KeyTooLongError" {
			t.Fatalf("1025-byte key: %d %s, want 400 KeyTooLongError", status, code)
		}
		// 1024 bytes of UTF-8 (341 three-byte runes + 1 byte) is the limit.
		limit := strings.Repeat("€", 341) + "k"
		escaped := strings.ReplaceAll(limit, "€", "%E2%82%AC")
		if status, code, _ := signedDo(t, "PUT", "/"+b+"/"+escaped, body, nil); status != http.StatusOK {
			t.Fatalf("1024-byte key: %d %s, want 200", status, code)
		}
		if status, _, got := signedDo(t, "GET", "/"+b+"/"+escaped, nil, nil); status != http.StatusOK || !bytes.Equal(got, body) {
			t.Fatalf("GET 1024-byte key: %d %q", status, got)
		}
		if status, code, _ := signedDo(t, "DELETE", "/"+b+"/"+escaped, nil, nil); status != http.StatusNoContent {
			t.Fatalf("DELETE 1024-byte key: %d %s", status, code)
		}
		if status, code, _ := signedDo(t, "PUT", "/"+b+"/"+escaped+"k", body, nil); status != http.StatusBadRequest || code != "KeyTooLongError" {
			t.Fatalf("1025-byte UTF-8 key: %d %s, want 400 KeyTooLongError", status, code)
		}
	})

	t.Run("malformed CompleteMultipartUpload", func(t *testing.T) {
		status, code, created := signedDo(t, "POST", "/"+b+"/mpu?uploads", nil, nil)
		if status != http.StatusOK {
			t.Fatalf("CreateMultipartUpload: %d %s", status, code)
		}
		var init struct{ UploadId string }
		if err := xml.Unmarshal(created, &init); err != nil || init.UploadId == "" {
			t.Fatalf("CreateMultipartUpload body %q: %v", created, err)
		}
		upload := "/" + b + "/mpu?uploadId=" + init.UploadId
		if status, code, _ := signedDo(t, "PUT", "/"+b+"/mpu?partNumber=1&uploadId="+init.UploadId, body, nil); status != http.StatusOK {
			t.Fatalf("UploadPart: %d %s", status, code)
		}
		for _, bad := range []string{
			"<CompleteMultipartUpload><Part><PartNumber>1</PartNumber>",
			"not xml at all",
			"<CompleteMultipartUpload><Part><PartNumber>one</PartNumber><ETag>x</ETag></Part></CompleteMultipartUpload>",
			"",
		} {
			if status, code, _ := signedDo(t, "POST", upload, []byte(bad), nil); status != http.StatusBadRequest || code != "MalformedXML" {
				t.Fatalf("Complete with %q: %d %s, want 400 MalformedXML", bad, status, code)
			}
		}
		assertNoObject(t, b, "mpu")
		// The upload is intact after the rejected completions.
		if status, code, _ := signedDo(t, "GET", upload, nil, nil); status != http.StatusOK {
			t.Fatalf("ListParts after malformed completes: %d %s", status, code)
		}
		if status, code, _ := signedDo(t, "DELETE", upload, nil, nil); status != http.StatusNoContent {
			t.Fatalf("AbortMultipartUpload: %d %s", status, code)
		}
	})

	t.Run("malformed DeleteObjects", func(t *testing.T) {
		if status, code, _ := signedDo(t, "PUT", "/"+b+"/keep", body, nil); status != http.StatusOK {
			t.Fatalf("PUT: %d %s", status, code)
		}
		for _, bad := range []string{
			"<Delete><Object><Key>keep</Key></Object>",
			"<Delete><Object><Key>keep</Key></Object></Nope>",
			"{}",
		} {
			sum := md5.Sum([]byte(bad))
			status, code, _ := signedDo(t, "POST", "/"+b+"?delete", []byte(bad), http.Header{"Content-Md5": {base64.StdEncoding.EncodeToString(sum[:])}})
			if status != http.StatusBadRequest || code != "MalformedXML" {
				t.Fatalf("DeleteObjects with %q: %d %s, want 400 MalformedXML", bad, status, code)
			}
		}
		if status, _, got := signedDo(t, "GET", "/"+b+"/keep", nil, nil); status != http.StatusOK || !bytes.Equal(got, body) {
			t.Fatalf("object deleted by a malformed DeleteObjects: %d %q", status, got)
		}
	})

	t.Run("expired SigV4 presign", func(t *testing.T) {
		// Signed an hour ago, valid for a minute: expired now.
		req := rawRequest(t, "GET", "/"+b+"/md5-ok?X-Amz-Expires=60", nil, nil)
		creds := aws.Credentials{AccessKeyID: accessKey, SecretAccessKey: secretKey}
		url, _, err := newSigner().PresignHTTP(context.Background(), creds, req, unsignedPayload, "s3", region, time.Now().Add(-time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		curlExpectError(t, url, http.StatusForbidden, "AccessDenied", "expired presigned GET")
		// The control: the same URL signed now.
		req = rawRequest(t, "GET", "/"+b+"/md5-ok?X-Amz-Expires=60", nil, nil)
		url, _, err = newSigner().PresignHTTP(context.Background(), creds, req, unsignedPayload, "s3", region, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		status, path := curlGet(t, t.TempDir(), url)
		if status != http.StatusOK || fileSHA256(t, path) != sha256Of(body) {
			t.Fatalf("fresh presigned GET: %d", status)
		}
	})
}

// sendTruncated writes req's head and then only part of its body on a raw
// TCP connection, half-closes it and returns the server's status and code.
func sendTruncated(t testing.TB, req *http.Request, part []byte) (int, string) {
	t.Helper()
	conn, err := net.DialTimeout("tcp", env.hostPort, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(30 * time.Second))
	var head bytes.Buffer
	fmt.Fprintf(&head, "%s %s HTTP/1.1\r\nHost: %s\r\nContent-Length: %d\r\n", req.Method, req.URL.RequestURI(), req.Host, req.ContentLength)
	for name, values := range req.Header {
		for _, v := range values {
			fmt.Fprintf(&head, "%s: %s\r\n", name, v)
		}
	}
	head.WriteString("\r\n")
	if _, err := conn.Write(append(head.Bytes(), part...)); err != nil {
		t.Fatal(err)
	}
	if err := conn.(*net.TCPConn).CloseWrite(); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), req)
	if err != nil {
		t.Fatalf("no response to a truncated body: %v", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, errorCode(resp.StatusCode, body, resp.Header)
}

// TestBadStreamingSignature: an aws-chunked upload (what minio-go sends
// over plain HTTP) with one chunk signature or one data byte altered is
// SignatureDoesNotMatch and stores nothing; the untampered upload works.
func TestBadStreamingSignature(t *testing.T) {
	t.Parallel()
	const b = "e2e-bad-streaming"
	ensureBucket(t, b)
	data := bytes.Repeat([]byte("0123456789abcdef"), 5<<10) // 80 KiB: two 64 KiB chunks
	for _, tc := range []struct {
		name   string
		tamper func([]byte) []byte
		status int
		code   string
	}{
		{"untampered", func(b []byte) []byte { return b }, http.StatusOK, ""},
		{"chunk signature", func(b []byte) []byte {
			// The second chunk's signature: its first hex digit changed.
			i := bytes.Index(b[bytes.Index(b, []byte("chunk-signature="))+1:], []byte("chunk-signature="))
			i += bytes.Index(b, []byte("chunk-signature=")) + 1 + len("chunk-signature=")
			b[i] = flipHex(b[i])
			return b
		}, http.StatusForbidden, "SignatureDoesNotMatch"},
		{"chunk data", func(b []byte) []byte {
			i := bytes.Index(b, []byte("\r\n")) + 2 + 100
			b[i] ^= 1
			return b
		}, http.StatusForbidden, "SignatureDoesNotMatch"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key := "streamed-" + strings.ReplaceAll(tc.name, " ", "-")
			req := rawRequest(t, "PUT", "/"+b+"/"+key, nil, nil)
			req.Body = io.NopCloser(bytes.NewReader(data))
			signed := signer.StreamingSignV4(req, accessKey, secretKey, "", region, int64(len(data)), time.Now().UTC(), sha256Hasher())
			wire, err := io.ReadAll(signed.Body)
			if err != nil {
				t.Fatal(err)
			}
			wire = tc.tamper(wire)
			signed.Body = io.NopCloser(bytes.NewReader(wire))
			signed.ContentLength = int64(len(wire))
			status, code, _ := do(t, signed)
			if status != tc.status || code != tc.code {
				t.Fatalf("%d %s, want %d %s", status, code, tc.status, tc.code)
			}
			if tc.status != http.StatusOK {
				assertNoObject(t, b, key)
				return
			}
			if status, _, got := signedDo(t, "GET", "/"+b+"/"+key, nil, nil); status != http.StatusOK || !bytes.Equal(got, data) {
				t.Fatalf("GET the streamed object: %d, %d bytes", status, len(got))
			}
		})
	}
}

func flipHex(c byte) byte {
	if c == '0' {
		return '1'
	}
	return '0'
}

// sha256Hasher adapts crypto/sha256 to minio-go's md5simd.Hasher.
func sha256Hasher() md5simd.Hasher { return &stdHasher{sha256.New()} }

type stdHasher struct{ hash.Hash }

func (*stdHasher) Close() {}
