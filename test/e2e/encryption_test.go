package e2e

import (
	"context"
	"encoding/base64"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// sseCustomerKey is a 256-bit SSE-C key and its MD5, base64.
const (
	sseCustomerKey    = "MDEyMzQ1Njc4OTAxMjM0NTY3ODkwMTIzNDU2Nzg5MDE="
	sseCustomerKeyMD5 = "KYvwGXoFFJ42a2u2GDWhwQ=="
)

// TestEncryptionClients: server-side encryption as the aws CLI and raw
// requests use it (test/sse covers the S3 surface with the SDK): an
// upload with --sse AES256 and one with --sse-c read back with their
// headers; the SSE-C object does not read without its key.
func TestEncryptionClients(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), sdkTimeout)
	defer cancel()
	const b = "e2e-sse"
	ensureBucket(t, b)
	client := sdkClient(t, aws.RequestChecksumCalculationWhenSupported)

	awsCLI(t, "s3", "cp", "--sse", "AES256", env.smallPath, "s3://"+b+"/cli-sse-s3")
	head, err := client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(b), Key: aws.String("cli-sse-s3")})
	if err != nil || head.ServerSideEncryption != types.ServerSideEncryptionAes256 || aws.ToString(head.ETag) != `"`+md5Hex([]byte(smallBody))+`"` {
		t.Fatalf("aws s3 cp --sse AES256: HEAD %+v %v", head, err)
	}

	dir := t.TempDir()
	keyFile := filepath.Join(dir, "key")
	raw, _ := base64.StdEncoding.DecodeString(sseCustomerKey)
	if err := os.WriteFile(keyFile, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	awsCLI(t, "s3", "cp", "--sse-c", "AES256", "--sse-c-key", "fileb://"+keyFile, env.smallPath, "s3://"+b+"/cli-sse-c")
	out := filepath.Join(dir, "out")
	awsCLI(t, "s3", "cp", "--sse-c", "AES256", "--sse-c-key", "fileb://"+keyFile, "s3://"+b+"/cli-sse-c", out)
	if got, err := os.ReadFile(out); err != nil || string(got) != smallBody {
		t.Fatalf("aws s3 cp --sse-c round trip: %q %v", got, err)
	}
	if _, errOut, err := runToolErr(t, "aws", "--endpoint-url", env.endpoint, "--no-cli-pager", "s3", "cp", "s3://"+b+"/cli-sse-c", out); err == nil || !strings.Contains(errOut, "400") {
		t.Fatalf("aws s3 cp of an SSE-C object without its key: %v %s", err, errOut)
	}

	status, code, _ := signedDo(t, http.MethodPut, "/"+b+"/raw", []byte(smallBody), http.Header{"X-Amz-Server-Side-Encryption": {"AES512"}})
	if status != http.StatusBadRequest || code != "InvalidArgument" {
		t.Fatalf("raw PUT with an unknown x-amz-server-side-encryption: %d %s", status, code)
	}
	assertNoObject(t, b, "raw")
	status, code, _ = signedDo(t, http.MethodPut, "/"+b+"/raw", []byte(smallBody), http.Header{"X-Amz-Server-Side-Encryption-Customer-Algorithm": {"AES256"},
		"X-Amz-Server-Side-Encryption-Customer-Key": {sseCustomerKey}, "X-Amz-Server-Side-Encryption-Customer-Key-Md5": {sseCustomerKeyMD5}})
	if status != http.StatusOK {
		t.Fatalf("raw SSE-C PUT: %d %s", status, code)
	}
	status, code, _ = signedDo(t, http.MethodGet, "/"+b+"/raw", nil, nil)
	if status != http.StatusBadRequest || code != "InvalidRequest" {
		t.Fatalf("raw GET of an SSE-C object without its key: %d %s", status, code)
	}
}
