package s3api

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"

	"github.com/b3-storage/b3/internal/blob"
	"github.com/b3-storage/b3/internal/meta"
	"github.com/b3-storage/b3/internal/objstore"
)

func TestMain(m *testing.M) {
	// Some machines point the SDKs at a CA bundle; with it set they refuse
	// custom HTTP clients.
	os.Unsetenv("AWS_CA_BUNDLE")
	os.Exit(m.Run())
}

var (
	rootUser  = User{Name: "root", AccessKey: "AKIAROOTEXAMPLE00001", SecretKey: "rootsecret/K7MDENG/bPxRfiCYEXAMPLEKEY"}
	otherUser = User{Name: "other", AccessKey: "AKIAOTHEREXAMPLE0002", SecretKey: "othersecret/K7MDENG/bPxRfiCYEXAMPLEKEY"}
)

const testRegion = "us-east-1"

// testEnv is a Server on a real objstore in a temporary directory, served
// by httptest.
type testEnv struct {
	t      testing.TB
	store  *objstore.Store
	api    *Server
	ts     *httptest.Server
	offset atomic.Int64 // added to the server clock (presign expiry tests)

	mu       sync.Mutex
	payloads map[string]int // x-amz-content-sha256 values seen, by kind
}

type envOption func(*Config)

func newEnv(t *testing.T, opts ...envOption) *testEnv { return newEnvTB(t, nil, opts...) }

// newEnvStore is newEnv with store options changed by storeOpt.
func newEnvStore(t *testing.T, storeOpt func(*objstore.Options), opts ...envOption) *testEnv {
	return newEnvTB(t, storeOpt, opts...)
}

// newEnvTB builds the environment for a test or a benchmark.
func newEnvTB(t testing.TB, storeOpt func(*objstore.Options), opts ...envOption) *testEnv {
	t.Helper()
	dir := t.TempDir()
	metaDir, dataDir := objstore.DefaultDirs(dir)
	// Bodies up to 1 KiB are kept in their records (as the server does up
	// to --inline-max): the tests' small and large bodies cover both paths.
	storeOpts := objstore.Options{MetaDir: metaDir, DataDir: dataDir, Sync: blob.SyncNone,
		InlineMax: 1 << 10, Logger: slog.New(slog.DiscardHandler)}
	if storeOpt != nil {
		storeOpt(&storeOpts)
	}
	store, err := objstore.Open(storeOpts)
	if err != nil {
		t.Fatal(err)
	}
	e := &testEnv{t: t, store: store}
	cfg := Config{
		Region: testRegion, Users: []User{rootUser, otherUser}, Domains: []string{"s3.test"},
		Logger: slog.New(slog.DiscardHandler),
		Now:    func() time.Time { return time.Now().Add(time.Duration(e.offset.Load())) },
	}
	for _, o := range opts {
		o(&cfg)
	}
	e.api = New(store, cfg)
	e.payloads = map[string]int{}
	e.ts = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		kind := r.Header.Get("x-amz-content-sha256")
		if len(kind) == 64 {
			kind = "sha256"
		}
		e.mu.Lock()
		e.payloads[kind]++
		e.mu.Unlock()
		e.api.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		e.ts.Close()
		if err := store.Close(); err != nil {
			t.Errorf("close store: %v", err)
		}
	})
	return e
}

// client returns an AWS SDK v2 client for user; calc chooses the SDK's
// request checksum behaviour (its default is WhenSupported).
func (e *testEnv) client(user User, calc aws.RequestChecksumCalculation) *s3.Client {
	return s3.New(s3.Options{
		Region:                     testRegion,
		Credentials:                credentials.NewStaticCredentialsProvider(user.AccessKey, user.SecretKey, ""),
		BaseEndpoint:               aws.String(e.ts.URL),
		UsePathStyle:               true,
		RequestChecksumCalculation: calc,
		ResponseChecksumValidation: aws.ResponseChecksumValidationWhenSupported,
		RetryMaxAttempts:           1,
		HTTPClient:                 e.ts.Client(),
	})
}

func (e *testEnv) root() *s3.Client {
	return e.client(rootUser, aws.RequestChecksumCalculationWhenSupported)
}

// mustCreateBucket creates a bucket owned by root.
func (e *testEnv) mustCreateBucket(name string) {
	e.t.Helper()
	if _, err := e.root().CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: aws.String(name)}); err != nil {
		e.t.Fatalf("create bucket %s: %v", name, err)
	}
}

// mustCreatePublicBucket creates a bucket owned by root with a canned ACL.
// mustCreatePublicBucket creates a bucket with the canned ACL acl: as on
// AWS, that takes ACLs enabled (ObjectWriter) and the public access block
// removed.
func (e *testEnv) mustCreatePublicBucket(name string, acl types.BucketCannedACL) {
	e.t.Helper()
	ctx := context.Background()
	c := e.root()
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(name), ObjectOwnership: types.ObjectOwnershipObjectWriter}); err != nil {
		e.t.Fatalf("create bucket %s: %v", name, err)
	}
	if _, err := c.DeletePublicAccessBlock(ctx, &s3.DeletePublicAccessBlockInput{Bucket: aws.String(name)}); err != nil {
		e.t.Fatalf("delete public access block of %s: %v", name, err)
	}
	if _, err := c.PutBucketAcl(ctx, &s3.PutBucketAclInput{Bucket: aws.String(name), ACL: acl}); err != nil {
		e.t.Fatalf("put acl %s on %s: %v", acl, name, err)
	}
}

func (e *testEnv) mustPut(bucket, key string, body []byte) {
	e.t.Helper()
	if _, err := e.root().PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader(body)}); err != nil {
		e.t.Fatalf("put %s/%s: %v", bucket, key, err)
	}
}

// mustGet reads an object's bytes.
func (e *testEnv) mustGet(bucket, key string) []byte {
	e.t.Helper()
	out, err := e.root().GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		e.t.Fatalf("get %s/%s: %v", bucket, key, err)
	}
	defer out.Body.Close()
	data, err := io.ReadAll(out.Body)
	if err != nil {
		e.t.Fatalf("read %s/%s: %v", bucket, key, err)
	}
	return data
}

// assertAbsent checks no object is stored under key.
func (e *testEnv) assertAbsent(bucket, key string) {
	e.t.Helper()
	if obj, err := e.store.HeadObject(bucket, key); !errors.Is(err, objstore.ErrNoSuchKey) {
		e.t.Fatalf("%s/%s: want no object, got %+v, %v", bucket, key, obj, err)
	}
}

// errorCode returns the S3 error code of an SDK error ("" for nil).
func errorCode(err error) string {
	if err == nil {
		return ""
	}
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) {
		return apiErr.ErrorCode()
	}
	return "non-API error: " + err.Error()
}

func wantCode(t *testing.T, err error, code string) {
	t.Helper()
	if got := errorCode(err); got != code {
		t.Fatalf("want error %s, got %q (%v)", code, got, err)
	}
}

// signedRequest builds a request signed with SigV4 by the SDK's signer
// (header auth). payloadHash "" signs the body's SHA-256.
func (e *testEnv) signedRequest(user User, method, path string, body []byte, payloadHash string, header http.Header) *http.Request {
	e.t.Helper()
	return e.sign(e.ts.URL, user, method, path, body, payloadHash, header)
}

// signedRequestTo signs a request for another server.
func (e *testEnv) signedRequestTo(base string, user User, method, path string, body []byte) *http.Request {
	return e.sign(base, user, method, path, body, "", nil)
}

func (e *testEnv) sign(base string, user User, method, path string, body []byte, payloadHash string, header http.Header) *http.Request {
	e.t.Helper()
	req, err := http.NewRequest(method, base+path, bytes.NewReader(body))
	if err != nil {
		e.t.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	if payloadHash == "" {
		sum := sha256.Sum256(body)
		payloadHash = hex.EncodeToString(sum[:])
	}
	req.Header.Set("x-amz-content-sha256", payloadHash)
	creds := aws.Credentials{AccessKeyID: user.AccessKey, SecretAccessKey: user.SecretKey}
	if err := v4.NewSigner().SignHTTP(context.Background(), creds, req, payloadHash, "s3", testRegion, time.Now()); err != nil {
		e.t.Fatal(err)
	}
	return req
}

// do sends req and returns status, body.
func (e *testEnv) do(req *http.Request) (*http.Response, string) {
	e.t.Helper()
	resp, err := e.ts.Client().Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp, string(data)
}

// wantXMLError checks an error response's status, code and request id.
func wantXMLError(t *testing.T, resp *http.Response, body string, status int, code string) {
	t.Helper()
	if resp.StatusCode != status || !strings.Contains(body, "<Code>"+code+"</Code>") {
		t.Fatalf("want %d %s, got %d %s", status, code, resp.StatusCode, body)
	}
	if resp.Header.Get("x-amz-request-id") == "" || !strings.Contains(body, "<RequestId>") {
		t.Fatalf("error response lacks a request id: %v %s", resp.Header, body)
	}
}

func metaUploadOptions() meta.UploadListOptions { return meta.UploadListOptions{} }
