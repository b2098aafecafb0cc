package s3api

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

func TestBadSignature(t *testing.T) {
	e := newEnv(t)
	e.mustCreateBucket("bkt")
	wrong := User{AccessKey: rootUser.AccessKey, SecretKey: "not-the-secret"}
	_, err := e.client(wrong, aws.RequestChecksumCalculationWhenSupported).PutObject(context.Background(),
		&s3.PutObjectInput{Bucket: aws.String("bkt"), Key: aws.String("k"), Body: strings.NewReader("data")})
	wantCode(t, err, "SignatureDoesNotMatch")
	unknown := User{AccessKey: "AKIANOBODY", SecretKey: "x"}
	_, err = e.client(unknown, aws.RequestChecksumCalculationWhenSupported).ListBuckets(context.Background(), &s3.ListBucketsInput{})
	wantCode(t, err, "InvalidAccessKeyId")
	e.assertAbsent("bkt", "k")

	// A signed payload hash that does not match the body.
	req := e.signedRequest(rootUser, "PUT", "/bkt/k", []byte("actual body"), strings.Repeat("ab", 32), nil)
	resp, body := e.do(req)
	wantXMLError(t, resp, body, 400, "XAmzContentSHA256Mismatch")
	e.assertAbsent("bkt", "k")
}

func TestPresign(t *testing.T) {
	e := newEnv(t)
	e.mustCreateBucket("bkt")
	e.mustPut("bkt", "k", []byte("presigned"))
	presigner := s3.NewPresignClient(e.root(), func(o *s3.PresignOptions) { o.Expires = time.Minute })
	signed, err := presigner.PresignGetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String("bkt"), Key: aws.String("k")})
	if err != nil {
		t.Fatal(err)
	}
	resp, body := e.do(mustRequest(t, "GET", signed.URL))
	if resp.StatusCode != 200 || body != "presigned" {
		t.Fatalf("presigned GET: %d %s", resp.StatusCode, body)
	}
	put, err := presigner.PresignPutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String("bkt"), Key: aws.String("up")})
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest("PUT", put.URL, strings.NewReader("uploaded"))
	if resp, body := e.do(req); resp.StatusCode != 200 {
		t.Fatalf("presigned PUT: %d %s", resp.StatusCode, body)
	}
	if got := string(e.mustGet("bkt", "up")); got != "uploaded" {
		t.Fatalf("presigned PUT stored %q", got)
	}
	// Two minutes later the one-minute URL has expired.
	e.offset.Store(int64(2 * time.Minute))
	resp, body = e.do(mustRequest(t, "GET", signed.URL))
	wantXMLError(t, resp, body, 403, "AccessDenied")
}

func TestBadDigest(t *testing.T) {
	for _, mode := range checksumModes {
		t.Run(mode.name, func(t *testing.T) {
			e := newEnv(t)
			ctx := context.Background()
			c := e.client(rootUser, mode.calc)
			e.mustCreateBucket("bkt")
			_, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("bkt"), Key: aws.String("md5"), Body: strings.NewReader("data"),
				ContentMD5: aws.String("1B2M2Y8AsgTpgAmY7PhCfg==")}) // MD5 of ""
			wantCode(t, err, "BadDigest")
			e.assertAbsent("bkt", "md5")
			_, err = c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("bkt"), Key: aws.String("crc"), Body: strings.NewReader("data"),
				ChecksumCRC32: aws.String("AAAAAA==")})
			wantCode(t, err, "BadDigest")
			e.assertAbsent("bkt", "crc")
			_, err = c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("bkt"), Key: aws.String("bad"), Body: strings.NewReader("data"),
				ContentMD5: aws.String("not base64")})
			wantCode(t, err, "InvalidDigest")
			// A correct explicit checksum is stored and returned.
			if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("bkt"), Key: aws.String("ok"), Body: strings.NewReader("data"),
				ChecksumAlgorithm: types.ChecksumAlgorithmSha256}); err != nil {
				t.Fatal(err)
			}
			head, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("bkt"), Key: aws.String("ok"), ChecksumMode: types.ChecksumModeEnabled})
			if err != nil || aws.ToString(head.ChecksumSHA256) != "Om6weQ85rIfJTzhWst0sXREOaBFgImGpqSPTuyOtyLc=" {
				t.Fatalf("sha256 checksum: %+v %v", head, err)
			}
		})
	}
}

// TestTruncatedBody sends fewer bytes than Content-Length and closes: the
// upload fails with IncompleteBody and leaves nothing behind.
func TestTruncatedBody(t *testing.T) {
	e := newEnv(t)
	e.mustCreateBucket("bkt")
	body := bytes.Repeat([]byte("z"), 1000)
	req := e.signedRequest(rootUser, "PUT", "/bkt/short", body, "UNSIGNED-PAYLOAD", nil)
	conn, err := net.Dial("tcp", e.ts.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var head bytes.Buffer
	fmt.Fprintf(&head, "PUT %s HTTP/1.1\r\nHost: %s\r\nContent-Length: 1000\r\n", req.URL.RequestURI(), req.Host)
	for k, v := range req.Header {
		fmt.Fprintf(&head, "%s: %s\r\n", k, v[0])
	}
	head.WriteString("\r\n")
	head.Write(body[:500])
	if _, err := conn.Write(head.Bytes()); err != nil {
		t.Fatal(err)
	}
	conn.(*net.TCPConn).CloseWrite()
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err == nil {
		data, _ := io.ReadAll(resp.Body)
		wantXMLError(t, resp, string(data), 400, "IncompleteBody")
	}
	// Whether or not the answer could be read, the handler has finished
	// once the server closed the connection.
	_, _ = io.Copy(io.Discard, conn)
	e.assertAbsent("bkt", "short")
}

func TestKeyTooLongAndMalformedXML(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	c := e.root()
	e.mustCreateBucket("bkt")
	long := strings.Repeat("k", 1025)
	_, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("bkt"), Key: aws.String(long), Body: strings.NewReader("x")})
	wantCode(t, err, "KeyTooLongError")
	ok := strings.Repeat("é", 512) // 1024 bytes
	e.mustPut("bkt", ok, []byte("x"))
	if got := string(e.mustGet("bkt", ok)); got != "x" {
		t.Fatalf("1024-byte key: %q", got)
	}
	for _, doc := range []string{"<Delete><Object><Key>a</Key>", "garbage", "<Delete></Delete>", "<Other/>"} {
		resp, body := e.do(e.signedRequest(rootUser, "POST", "/bkt?delete", []byte(doc), "", nil))
		wantXMLError(t, resp, body, 400, "MalformedXML")
	}
	resp, body := e.do(e.signedRequest(rootUser, "PUT", "/bkt?tagging", []byte("<Tagging><TagSet>"), "", nil))
	wantXMLError(t, resp, body, 400, "MalformedXML")
	_, err = c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("bkt"), Key: aws.String("meta"), Body: strings.NewReader("x"),
		Metadata: map[string]string{"big": strings.Repeat("m", 3000)}})
	wantCode(t, err, "MetadataTooLarge")
	resp, body = e.do(e.signedRequest(rootUser, "PATCH", "/bkt/k", nil, "", nil))
	wantXMLError(t, resp, body, 405, "MethodNotAllowed")
}

// TestPanicBecomesInternalError: a Server without a store panics on its
// first store access; the client gets InternalError, not a dropped
// connection.
func TestPanicBecomesInternalError(t *testing.T) {
	e := newEnv(t)
	broken := httptest.NewServer(New(nil, Config{Region: testRegion, Users: []User{rootUser}, Logger: e.api.log}))
	defer broken.Close()
	req := e.signedRequestTo(broken.URL, rootUser, "GET", "/", nil)
	resp, body := e.do(req)
	wantXMLError(t, resp, body, 500, "InternalError")
}
