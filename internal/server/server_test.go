package server

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/b3-storage/b3/internal/blob"
	"github.com/b3-storage/b3/internal/s3api"
)

func TestMain(m *testing.M) {
	os.Unsetenv("AWS_CA_BUNDLE")
	os.Exit(m.Run())
}

func TestCredentialsPersist(t *testing.T) {
	dir := t.TempDir()
	first, created, err := LoadOrCreateCredentials(dir)
	if err != nil || !created || first.AccessKey == "" || len(first.SecretKey) != 40 {
		t.Fatalf("first start: %+v %v %v", first, created, err)
	}
	st, err := os.Stat(filepath.Join(dir, CredentialsFile))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("credentials file mode: %v %v", st, err)
	}
	again, created, err := LoadOrCreateCredentials(dir)
	if err != nil || created || again != first {
		t.Fatalf("second start: %+v %v %v", again, created, err)
	}
}

func TestParseUsers(t *testing.T) {
	users, err := ParseUsers("alice:AK1:s1, bob:AK2:s:with:colons")
	want := []s3api.User{{Name: "alice", AccessKey: "AK1", SecretKey: "s1"}, {Name: "bob", AccessKey: "AK2", SecretKey: "s:with:colons"}}
	if err != nil || len(users) != 2 || users[0] != want[0] || users[1] != want[1] {
		t.Fatalf("%+v %v", users, err)
	}
	for _, bad := range []string{"alice", "alice:AK1", ":AK:s"} {
		if _, err := ParseUsers(bad); err == nil {
			t.Errorf("ParseUsers(%q) accepted", bad)
		}
	}
}

// TestRun starts the server on a free port, uses it with the SDK, and
// shuts it down through its context; the data survives a restart.
func TestRun(t *testing.T) {
	root := t.TempDir()
	start := func() (endpoint string, stop func()) {
		ctx, cancel := context.WithCancel(context.Background())
		ready := make(chan string, 1)
		done := make(chan error, 1)
		var banner bytes.Buffer
		go func() {
			done <- Run(ctx, Config{Address: "127.0.0.1:0", Root: root, Sync: blob.SyncNone,
				Logger: slog.New(slog.DiscardHandler), Ready: func(addr string) { ready <- addr }}, &banner)
		}()
		select {
		case addr := <-ready:
			return "http://" + addr, func() {
				cancel()
				if err := <-done; err != nil {
					t.Fatalf("run: %v", err)
				}
				if !strings.Contains(banner.String(), "aws --endpoint-url http://") {
					t.Fatalf("banner lacks the example: %s", banner.String())
				}
			}
		case err := <-done:
			t.Fatalf("run: %v", err)
		}
		return "", nil
	}
	endpoint, stop := start()
	user, _, err := LoadOrCreateCredentials(root)
	if err != nil {
		t.Fatal(err)
	}
	client := func(endpoint string) *s3.Client {
		return s3.New(s3.Options{Region: "us-east-1", BaseEndpoint: aws.String(endpoint), UsePathStyle: true,
			Credentials: credentials.NewStaticCredentialsProvider(user.AccessKey, user.SecretKey, "")})
	}
	ctx := context.Background()
	c := client(endpoint)
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("keep")}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("keep"), Key: aws.String("k"), Body: strings.NewReader("durable")}); err != nil {
		t.Fatal(err)
	}
	stop()
	if _, err := http.Get(endpoint); err == nil {
		t.Fatal("server still answering after shutdown")
	}

	endpoint, stop = start()
	defer stop()
	out, err := client(endpoint).GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("keep"), Key: aws.String("k")})
	if err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(out.Body)
	out.Body.Close()
	if string(data) != "durable" {
		t.Fatalf("after restart: %q", data)
	}
}
