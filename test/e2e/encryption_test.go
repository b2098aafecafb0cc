package e2e

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// sseCustomerKey is a 256-bit SSE-C key and its MD5, base64.
const (
	sseCustomerKey    = "MDEyMzQ1Njc4OTAxMjM0NTY3ODkwMTIzNDU2Nzg5MDE="
	sseCustomerKeyMD5 = "3GvFkB8cQJ/uLyh6w2ZR0Q=="
)

// TestEncryptionRefused: b3 does not encrypt at rest, so requests for
// server-side encryption (SSE-S3, SSE-KMS, SSE-C) answer 501
// NotImplemented and store nothing, from the SDK, the aws CLI and raw
// requests; an in-place copy that asks for encryption too.
func TestEncryptionRefused(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), sdkTimeout)
	defer cancel()
	const b = "e2e-sse"
	ensureBucket(t, b)
	client := sdkClient(t, aws.RequestChecksumCalculationWhenSupported)
	if _, err := client.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(b), Key: aws.String("plain"), Body: strings.NewReader(smallBody)}); err != nil {
		t.Fatal(err)
	}
	wantNotImplemented := func(what string, err error) {
		t.Helper()
		if apiCode(err) != "NotImplemented" {
			t.Fatalf("%s: %v, want NotImplemented", what, err)
		}
	}
	for _, sse := range []types.ServerSideEncryption{types.ServerSideEncryptionAes256, types.ServerSideEncryptionAwsKms} {
		_, err := client.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(b), Key: aws.String("secret"), Body: strings.NewReader(smallBody), ServerSideEncryption: sse})
		wantNotImplemented("PutObject "+string(sse), err)
		_, err = client.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String(b), Key: aws.String("secret"), ServerSideEncryption: sse})
		wantNotImplemented("CreateMultipartUpload "+string(sse), err)
		_, err = client.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String(b), Key: aws.String("secret"), CopySource: aws.String(b + "/plain"), ServerSideEncryption: sse})
		wantNotImplemented("CopyObject "+string(sse), err)
		// Encrypting an object in place.
		_, err = client.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String(b), Key: aws.String("plain"), CopySource: aws.String(b + "/plain"), ServerSideEncryption: sse})
		wantNotImplemented("in-place CopyObject "+string(sse), err)
	}
	_, err := client.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(b), Key: aws.String("secret"), Body: strings.NewReader(smallBody),
		SSECustomerAlgorithm: aws.String("AES256"), SSECustomerKey: aws.String(sseCustomerKey), SSECustomerKeyMD5: aws.String(sseCustomerKeyMD5)})
	wantNotImplemented("PutObject SSE-C", err)
	status, code, _ := signedDo(t, http.MethodPut, "/"+b+"/secret", []byte(smallBody), http.Header{"X-Amz-Server-Side-Encryption": {"AES256"}})
	if status != http.StatusNotImplemented || code != "NotImplemented" {
		t.Fatalf("raw PUT with x-amz-server-side-encryption: %d %s", status, code)
	}
	if _, errOut, err := runToolErr(t, "aws", "--endpoint-url", env.endpoint, "--no-cli-pager", "s3", "cp", "--sse", "AES256", env.smallPath, "s3://"+b+"/secret"); err == nil || !strings.Contains(errOut, "NotImplemented") {
		t.Fatalf("aws s3 cp --sse: %v %s", err, errOut)
	}
	assertNoObject(t, b, "secret")
	if headETag(t, b, "plain") != `"`+md5Hex([]byte(smallBody))+`"` {
		t.Fatal("the source changed")
	}
}
