package e2e

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/b3-storage/b3/internal/checksum"
)

// multipartSize is the size of the file the checksum tests upload in
// parts: the MinIO clients split it into a 16 MiB part and a 4 MiB one.
const (
	multipartSize = 20 << 20
	minioPartSize = 16 << 20
)

// multipartFile returns a file of the first multipartSize bytes of the
// big test file, written once per run.
var multipartFile = sync.OnceValues(func() (string, error) {
	path := filepath.Join(env.work, "twenty.bin")
	src, err := os.Open(env.bigPath)
	if err != nil {
		return "", err
	}
	defer src.Close()
	dst, err := os.Create(path)
	if err != nil {
		return "", err
	}
	if _, err := io.CopyN(dst, src, multipartSize); err != nil {
		dst.Close()
		return "", err
	}
	return path, dst.Close()
})

func readMultipartFile(t testing.TB) (string, []byte) {
	t.Helper()
	path, err := multipartFile()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return path, data
}

// expectedChecksum is the checksum S3 stores for data uploaded with alg:
// full-object, or composite over minio-go's 16 MiB parts.
func expectedChecksum(alg checksum.Algorithm, typ checksum.Type, data []byte) string {
	if typ != checksum.Composite {
		return checksum.Encode(alg.Sum(data))
	}
	var sums [][]byte
	for off := 0; off < len(data); off += minioPartSize {
		sums = append(sums, alg.Sum(data[off:min(off+minioPartSize, len(data))]))
	}
	composite, _ := checksum.CompositeChecksum(alg, sums)
	return composite
}

// assertStoredChecksum fails unless HEAD with x-amz-checksum-mode:
// ENABLED returns want for alg, with checksum type typ.
func assertStoredChecksum(t testing.TB, bucket, key string, alg checksum.Algorithm, typ checksum.Type, want string) {
	t.Helper()
	req := rawRequest(t, http.MethodHead, "/"+bucket+"/"+key, nil, http.Header{"X-Amz-Checksum-Mode": {"ENABLED"}})
	sign(t, req, secretKey, sha256Of(nil), time.Now())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := resp.Header.Get(alg.HeaderName()); resp.StatusCode != http.StatusOK || got != want || resp.Header.Get(checksum.HeaderType) != typ.String() {
		t.Fatalf("%s/%s: HEAD %d %s=%q %s=%q; want %q %s", bucket, key, resp.StatusCode, alg.HeaderName(), got,
			checksum.HeaderType, resp.Header.Get(checksum.HeaderType), want, typ)
	}
}

// minioClientPath is the MinIO client built by
// scripts/install-test-tools.sh; Debian's "mc" is Midnight Commander.
var minioClientPath = sync.OnceValues(func() (string, error) {
	root, err := moduleRoot()
	if err != nil {
		return "", err
	}
	path := filepath.Join(root, ".tools", "bin", "mc")
	out, err := exec.Command(path, "--version").CombinedOutput()
	if err != nil || !bytes.Contains(out, []byte("MinIO")) {
		return "", &exec.Error{Name: path, Err: os.ErrNotExist}
	}
	return path, nil
})

// mcCommand runs the MinIO client with its own configuration directory
// and an alias "b3" for the server; a failure fails the test.
func mcCommand(t testing.TB, configDir string, args ...string) string {
	t.Helper()
	path, err := minioClientPath()
	if err != nil {
		t.Fatalf("no MinIO client (%v): run `sh scripts/install-test-tools.sh` (or `make tools`), which builds it into .tools/bin", err)
	}
	args = append([]string{"--config-dir", configDir, "--no-color", "--quiet"}, args...)
	out, errOut, err := runPathErr(t, "mc", path, args...)
	if err != nil {
		t.Fatalf("mc %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, out, errOut)
	}
	return out
}

// TestMinioClientChecksums: `mc cp --checksum` with every algorithm mc
// offers, single-part and multipart. Each upload must succeed, store the
// checksum S3 would, and read back byte for byte.
func TestMinioClientChecksums(t *testing.T) {
	t.Parallel()
	configDir := t.TempDir()
	mcCommand(t, configDir, "alias", "set", "b3", env.endpoint, accessKey, secretKey, "--api", "s3v4", "--path", "on")
	const b = "e2e-mc-checksums"
	ensureBucket(t, b)
	bigPath, bigData := readMultipartFile(t)
	for _, c := range []struct {
		flag string
		alg  checksum.Algorithm
		typ  checksum.Type // of a multipart upload
	}{
		{"CRC32", checksum.CRC32, checksum.Composite},
		{"CRC32C", checksum.CRC32C, checksum.Composite},
		{"CRC32-FO", checksum.CRC32, checksum.FullObject},
		{"CRC32C-FO", checksum.CRC32C, checksum.FullObject},
		{"CRC64NVME", checksum.CRC64NVME, checksum.FullObject},
		{"SHA1", checksum.SHA1, checksum.Composite},
		{"SHA256", checksum.SHA256, checksum.Composite},
		// mc's MD5 is Content-MD5, not a flexible checksum: the object
		// gets the default CRC64NVME.
		{"MD5", checksum.CRC64NVME, checksum.FullObject},
	} {
		for _, multipart := range []bool{false, true} {
			path, data, typ, key := env.smallPath, []byte(smallBody), checksum.FullObject, c.flag+"/single"
			if multipart {
				path, data, typ, key = bigPath, bigData, c.typ, c.flag+"/multipart"
			}
			mcCommand(t, configDir, "cp", "--checksum", c.flag, path, "b3/"+b+"/"+key)
			assertStoredChecksum(t, b, key, c.alg, typ, expectedChecksum(c.alg, typ, data))
			got := filepath.Join(t.TempDir(), "got")
			mcCommand(t, configDir, "cp", "b3/"+b+"/"+key, got)
			assertSameFile(t, got, sha256Hex(data), "mc cp "+key)
		}
	}
}

// TestMinioGoChecksums: minio-go's FPutObject (multipart, trailing
// checksum per part) and PutObject (single part, trailing checksum) with
// every algorithm minio-go offers.
func TestMinioGoChecksums(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), sdkTimeout)
	defer cancel()
	client, err := minio.New(env.hostPort, &minio.Options{Creds: credentials.NewStaticV4(accessKey, secretKey, ""), Region: region, TrailingHeaders: true})
	if err != nil {
		t.Fatal(err)
	}
	const b = "e2e-minio-checksums"
	ensureBucket(t, b)
	bigPath, bigData := readMultipartFile(t)
	for _, c := range []struct {
		minio minio.ChecksumType
		alg   checksum.Algorithm
		typ   checksum.Type
	}{
		{minio.ChecksumCRC32, checksum.CRC32, checksum.Composite},
		{minio.ChecksumCRC32C, checksum.CRC32C, checksum.Composite},
		{minio.ChecksumFullObjectCRC32, checksum.CRC32, checksum.FullObject},
		{minio.ChecksumFullObjectCRC32C, checksum.CRC32C, checksum.FullObject},
		{minio.ChecksumCRC64NVME, checksum.CRC64NVME, checksum.FullObject},
		{minio.ChecksumSHA1, checksum.SHA1, checksum.Composite},
		{minio.ChecksumSHA256, checksum.SHA256, checksum.Composite},
		{minio.ChecksumSHA512, checksum.SHA512, checksum.Composite},
		{minio.ChecksumMD5, checksum.MD5, checksum.Composite},
		{minio.ChecksumXXHash64, checksum.XXHASH64, checksum.Composite},
		{minio.ChecksumXXHash3, checksum.XXHASH3, checksum.Composite},
		{minio.ChecksumXXHash128, checksum.XXHASH128, checksum.Composite},
	} {
		name := c.minio.String()
		if c.minio.Is(minio.ChecksumFullObject) {
			name += "-FO"
		}
		key := name + "/multipart"
		if _, err := client.FPutObject(ctx, b, key, bigPath, minio.PutObjectOptions{Checksum: c.minio, PartSize: minioPartSize}); err != nil {
			t.Fatalf("FPutObject %s: %v", key, err)
		}
		assertStoredChecksum(t, b, key, c.alg, c.typ, expectedChecksum(c.alg, c.typ, bigData))
		got := filepath.Join(t.TempDir(), "got")
		if err := client.FGetObject(ctx, b, key, got, minio.GetObjectOptions{}); err != nil {
			t.Fatal(err)
		}
		assertSameFile(t, got, sha256Hex(bigData), "minio-go "+key)

		key = name + "/single"
		if _, err := client.PutObject(ctx, b, key, strings.NewReader(smallBody), int64(len(smallBody)), minio.PutObjectOptions{Checksum: c.minio}); err != nil {
			t.Fatalf("PutObject %s: %v", key, err)
		}
		assertStoredChecksum(t, b, key, c.alg, checksum.FullObject, expectedChecksum(c.alg, checksum.FullObject, []byte(smallBody)))
	}
}

// TestChecksumRefusedAndDefault: a checksum header b3 cannot verify is
// refused and nothing stored; an upload without a checksum gets the
// default FULL_OBJECT CRC64NVME, which the SDK reads with ChecksumMode
// ENABLED (and validates on GET).
func TestChecksumRefusedAndDefault(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), sdkTimeout)
	defer cancel()
	const b = "e2e-checksum-default"
	ensureBucket(t, b)
	body := []byte(smallBody)
	for _, h := range []http.Header{
		{"X-Amz-Checksum-Crc16": {"AAA="}},
		{"X-Amz-Checksum-Blake3": {checksum.Encode(checksum.SHA256.Sum(body))}},
		{"X-Amz-Sdk-Checksum-Algorithm": {"BLAKE3"}, "X-Amz-Checksum-Blake3": {"AAAA"}},
	} {
		if status, code, _ := signedDo(t, http.MethodPut, "/"+b+"/refused", body, h); status != http.StatusBadRequest || code != "InvalidRequest" {
			t.Fatalf("PUT with %v: %d %s, want 400 InvalidRequest", h, status, code)
		}
		assertNoObject(t, b, "refused")
	}

	client := sdkClient(t, aws.RequestChecksumCalculationWhenRequired) // sends no checksum
	_, data := readMultipartFile(t)
	if _, err := client.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(b), Key: aws.String("plain"), Body: bytes.NewReader(data)}); err != nil {
		t.Fatal(err)
	}
	head, err := client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(b), Key: aws.String("plain"), ChecksumMode: types.ChecksumModeEnabled})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := aws.ToString(head.ChecksumCRC64NVME), checksum.Encode(checksum.CRC64NVME.Sum(data)); got != want || head.ChecksumType != types.ChecksumTypeFullObject {
		t.Fatalf("default checksum %q %q, want %q FULL_OBJECT", got, head.ChecksumType, want)
	}
	validating := sdkClient(t, aws.RequestChecksumCalculationWhenSupported)
	get, err := validating.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(b), Key: aws.String("plain"), ChecksumMode: types.ChecksumModeEnabled})
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(get.Body)
	get.Body.Close()
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("GET with checksum validation: %v", err)
	}
}
