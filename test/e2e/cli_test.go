package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// multipartETag matches the ETag of a multipart object: "<md5>-<parts>".
var multipartETag = regexp.MustCompile(`^"?[0-9a-f]{32}-[0-9]+"?$`)

// awsCLI runs the aws CLI against the server.
func awsCLI(t *testing.T, args ...string) string {
	t.Helper()
	return runTool(t, "aws", append([]string{"--endpoint-url", env.endpoint, "--no-cli-pager"}, args...)...)
}

// TestAWSCLI is a scripted session with the aws CLI: bucket, small and
// multipart uploads, listing, downloads, presign + curl, copy, delete.
func TestAWSCLI(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	const b = "e2e-awscli"
	awsCLI(t, "s3", "mb", "s3://"+b)
	if out := awsCLI(t, "s3", "ls"); !strings.Contains(out, b) {
		t.Fatalf("aws s3 ls does not list %s:\n%s", b, out)
	}
	awsCLI(t, "s3", "cp", env.smallPath, "s3://"+b+"/small.txt")
	awsCLI(t, "s3", "cp", env.bigPath, "s3://"+b+"/dir/big.bin")

	etag := strings.TrimSpace(awsCLI(t, "s3api", "head-object", "--bucket", b, "--key", "dir/big.bin", "--query", "ETag", "--output", "text"))
	if !multipartETag.MatchString(etag) {
		t.Fatalf("big object ETag %s: not a multipart upload", etag)
	}
	etag = strings.TrimSpace(awsCLI(t, "s3api", "head-object", "--bucket", b, "--key", "small.txt", "--query", "ETag", "--output", "text"))
	if want := `"` + md5Hex([]byte(smallBody)) + `"`; etag != want {
		t.Fatalf("small object ETag %s, want %s", etag, want)
	}

	listing := awsCLI(t, "s3", "ls", "--recursive", "s3://"+b)
	for _, want := range []string{"small.txt", "dir/big.bin", "104857600"} {
		if !strings.Contains(listing, want) {
			t.Fatalf("aws s3 ls --recursive lacks %q:\n%s", want, listing)
		}
	}
	if out := awsCLI(t, "s3", "ls", "s3://"+b+"/"); !strings.Contains(out, "PRE dir/") {
		t.Fatalf("delimited listing lacks the dir/ prefix:\n%s", out)
	}

	awsCLI(t, "s3", "cp", "s3://"+b+"/dir/big.bin", filepath.Join(dir, "big"))
	assertSameFile(t, filepath.Join(dir, "big"), env.bigSHA, "aws s3 cp big")
	awsCLI(t, "s3", "cp", "s3://"+b+"/small.txt", filepath.Join(dir, "small"))
	assertSameFile(t, filepath.Join(dir, "small"), env.smallSHA, "aws s3 cp small")

	url := strings.TrimSpace(awsCLI(t, "s3", "presign", "s3://"+b+"/small.txt", "--expires-in", "300"))
	curlFetchEquals(t, url, env.smallSHA, "aws s3 presign small")
	url = strings.TrimSpace(awsCLI(t, "s3", "presign", "s3://"+b+"/dir/big.bin", "--expires-in", "300"))
	curlFetchEquals(t, url, env.bigSHA, "aws s3 presign big")

	awsCLI(t, "s3", "cp", "s3://"+b+"/small.txt", "s3://"+b+"/copy.txt")
	awsCLI(t, "s3", "cp", "s3://"+b+"/copy.txt", filepath.Join(dir, "copy"))
	assertSameFile(t, filepath.Join(dir, "copy"), env.smallSHA, "aws s3 cp (server-side copy)")

	awsCLI(t, "s3", "rm", "s3://"+b+"/small.txt")
	if _, errOut, err := runToolErr(t, "aws", "--endpoint-url", env.endpoint, "s3api", "head-object", "--bucket", b, "--key", "small.txt"); err == nil || !strings.Contains(errOut, "404") {
		t.Fatalf("head-object after rm: err %v, stderr %s; want a 404", err, errOut)
	}
	// A non-empty bucket cannot be removed.
	if _, errOut, err := runToolErr(t, "aws", "--endpoint-url", env.endpoint, "s3", "rb", "s3://"+b); err == nil || !strings.Contains(errOut, "BucketNotEmpty") {
		t.Fatalf("rb of a non-empty bucket: err %v, stderr %s; want BucketNotEmpty", err, errOut)
	}
	awsCLI(t, "s3", "rm", "--recursive", "s3://"+b)
	awsCLI(t, "s3", "rb", "s3://"+b)
	if _, errOut, err := runToolErr(t, "aws", "--endpoint-url", env.endpoint, "s3api", "head-bucket", "--bucket", b); err == nil || !strings.Contains(errOut, "404") {
		t.Fatalf("head-bucket after rb: err %v, stderr %s; want a 404", err, errOut)
	}
}

// s3cmdConfig writes an s3cmd configuration for the server (path-style,
// plain HTTP) and returns its path.
func s3cmdConfig(t *testing.T) string {
	t.Helper()
	cfg := filepath.Join(t.TempDir(), "s3cfg")
	body := strings.Join([]string{
		"[default]",
		"access_key = " + accessKey,
		"secret_key = " + secretKey,
		"host_base = " + env.hostPort,
		"host_bucket = " + env.hostPort,
		"bucket_location = " + region,
		"use_https = False",
		"signature_v2 = False",
		"check_ssl_certificate = False",
		"guess_mime_type = False",
		"progress_meter = False",
		"",
	}, "\n")
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// TestS3cmd is a scripted session with s3cmd, SigV4 and, for some
// commands, SigV2 (--signature-v2); signurl presigns with SigV2.
func TestS3cmd(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := s3cmdConfig(t)
	s3cmd := func(args ...string) string {
		t.Helper()
		return runTool(t, "s3cmd", append([]string{"-c", cfg}, args...)...)
	}
	const b = "e2e-s3cmd"
	s3cmd("mb", "s3://"+b)
	s3cmd("put", env.smallPath, "s3://"+b+"/small.txt")
	// 15 MiB parts by default: the 100 MiB object goes up in 7 parts.
	s3cmd("put", "--multipart-chunk-size-mb=15", env.bigPath, "s3://"+b+"/dir/big.bin")
	s3cmd("--signature-v2", "put", env.smallPath, "s3://"+b+"/small-v2.txt")

	// s3cmd shows the MD5 it keeps in metadata; the server's ETag
	// tells how the object went up.
	if etag := headETag(t, "e2e-s3cmd", "dir/big.bin"); !strings.HasSuffix(etag, "-7\"") {
		t.Fatalf("ETag of s3cmd's big object %s: not a 7-part multipart upload", etag)
	}
	for _, args := range [][]string{{"ls", "-r", "s3://" + b}, {"--signature-v2", "ls", "-r", "s3://" + b}} {
		listing := s3cmd(args...)
		for _, want := range []string{"s3://" + b + "/small.txt", "s3://" + b + "/small-v2.txt", "s3://" + b + "/dir/big.bin", "104857600"} {
			if !strings.Contains(listing, want) {
				t.Fatalf("s3cmd %v lacks %q:\n%s", args, want, listing)
			}
		}
	}

	s3cmd("get", "--force", "s3://"+b+"/dir/big.bin", filepath.Join(dir, "big"))
	assertSameFile(t, filepath.Join(dir, "big"), env.bigSHA, "s3cmd get big")
	s3cmd("--signature-v2", "get", "--force", "s3://"+b+"/small-v2.txt", filepath.Join(dir, "small"))
	assertSameFile(t, filepath.Join(dir, "small"), env.smallSHA, "s3cmd get small (SigV2)")

	url := strings.TrimSpace(s3cmd("signurl", "s3://"+b+"/small.txt", "+300"))
	if !strings.Contains(url, "Signature=") {
		t.Fatalf("s3cmd signurl: not a SigV2 presigned URL: %s", url)
	}
	curlFetchEquals(t, url, env.smallSHA, "s3cmd signurl")

	s3cmd("cp", "s3://"+b+"/small.txt", "s3://"+b+"/copy.txt")
	s3cmd("get", "--force", "s3://"+b+"/copy.txt", filepath.Join(dir, "copy"))
	assertSameFile(t, filepath.Join(dir, "copy"), env.smallSHA, "s3cmd cp")

	s3cmd("del", "s3://"+b+"/small.txt")
	if listing := s3cmd("ls", "-r", "s3://"+b); strings.Contains(listing, "/small.txt") {
		t.Fatalf("small.txt still listed after del:\n%s", listing)
	}
	s3cmd("del", "--recursive", "--force", "s3://"+b)
	s3cmd("rb", "s3://"+b)
	if listing := s3cmd("ls"); strings.Contains(listing, b) {
		t.Fatalf("bucket still listed after rb:\n%s", listing)
	}
}

// TestRclone is a scripted session with rclone's S3 backend; the upload
// cutoff is lowered so the 100 MiB object goes up in parts.
func TestRclone(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := filepath.Join(t.TempDir(), "rclone.conf")
	body := strings.Join([]string{
		"[b3]",
		"type = s3",
		"provider = Other",
		"env_auth = false",
		"access_key_id = " + accessKey,
		"secret_access_key = " + secretKey,
		"endpoint = " + env.endpoint,
		"region = " + region,
		"force_path_style = true",
		"",
	}, "\n")
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	rclone := func(args ...string) string {
		t.Helper()
		return runTool(t, "rclone", append([]string{"--config", cfg, "--retries", "1", "--low-level-retries", "1"}, args...)...)
	}
	const b = "b3:e2e-rclone"
	rclone("mkdir", b)
	rclone("copyto", env.smallPath, b+"/small.txt")
	rclone("copyto", "--s3-upload-cutoff", "16M", "--s3-chunk-size", "16M", env.bigPath, b+"/dir/big.bin")

	if etag := headETag(t, "e2e-rclone", "dir/big.bin"); !strings.HasSuffix(etag, "-7\"") {
		t.Fatalf("ETag of rclone's big object %s: not a 7-part multipart upload", etag)
	}
	listing := rclone("lsl", b)
	for _, want := range []string{"small.txt", "dir/big.bin", "104857600"} {
		if !strings.Contains(listing, want) {
			t.Fatalf("rclone lsl lacks %q:\n%s", want, listing)
		}
	}
	// rclone keeps the MD5 of a multipart upload in metadata; the
	// server's own ETag must still be the multipart form.
	var objects []struct {
		Path   string
		Size   int64
		Hashes map[string]string
	}
	if err := json.Unmarshal([]byte(rclone("lsjson", "-R", "--hash", b)), &objects); err != nil {
		t.Fatalf("rclone lsjson: %v", err)
	}
	found := 0
	for _, o := range objects {
		switch o.Path {
		case "small.txt":
			found++
			if o.Hashes["md5"] != md5Hex([]byte(smallBody)) {
				t.Fatalf("rclone md5 of small.txt %q", o.Hashes["md5"])
			}
		case "dir/big.bin":
			found++
			if o.Size != bigSize {
				t.Fatalf("rclone size of big.bin %d", o.Size)
			}
		}
	}
	if found != 2 {
		t.Fatalf("rclone lsjson: %+v", objects)
	}

	rclone("copyto", b+"/dir/big.bin", filepath.Join(dir, "big"))
	assertSameFile(t, filepath.Join(dir, "big"), env.bigSHA, "rclone copyto big")
	if got := rclone("cat", b+"/small.txt"); got != smallBody {
		t.Fatalf("rclone cat small.txt: %q", got)
	}

	url := strings.TrimSpace(rclone("link", "--expire", "5m", b+"/small.txt"))
	curlFetchEquals(t, url, env.smallSHA, "rclone link")

	rclone("copyto", b+"/small.txt", b+"/copy.txt") // server-side copy
	rclone("copyto", b+"/copy.txt", filepath.Join(dir, "copy"))
	assertSameFile(t, filepath.Join(dir, "copy"), env.smallSHA, "rclone server-side copy")

	rclone("deletefile", b+"/small.txt")
	lines := strings.Split(rclone("lsf", "-R", b), "\n")
	if slices.Contains(lines, "small.txt") || !slices.Contains(lines, "copy.txt") {
		t.Fatalf("rclone lsf after deleting small.txt: %q", lines)
	}
	rclone("purge", b)
	if listing := rclone("lsd", "b3:"); strings.Contains(listing, "e2e-rclone") {
		t.Fatalf("bucket still listed after purge:\n%s", listing)
	}
}

// TestBoto3 runs boto3_session.py with the Debian python3 that has boto3:
// SigV4 and SigV2 clients, upload_file multipart, presigned URLs (SigV4,
// SigV2, an expired SigV2) fetched with curl, copy, delete.
func TestBoto3(t *testing.T) {
	t.Parallel()
	script, err := filepath.Abs("boto3_session.py")
	if err != nil {
		t.Fatal(err)
	}
	out := runTool(t, "python3", script,
		"--endpoint", env.endpoint,
		"--bucket", "e2e-boto3",
		"--small", env.smallPath, "--small-sha256", env.smallSHA,
		"--big", env.bigPath, "--big-sha256", env.bigSHA,
		"--curl", tool(t, "curl"),
		"--workdir", t.TempDir())
	if !strings.Contains(out, "boto3 session: OK") {
		t.Fatalf("boto3 session did not finish:\n%s", out)
	}
	t.Logf("%s", out)
}
