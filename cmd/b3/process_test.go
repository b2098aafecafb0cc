package main

import (
	"bytes"
	"context"
	"debug/elf"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/b3-storage/b3/internal/testutil"
)

// buildStatic builds the b3 binary as the Dockerfile does (CGO_ENABLED=0)
// and checks it is static: no PT_INTERP program header, no dynamic
// section. The binary is shared by the process tests.
var buildStatic = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "b3-bin")
	if err != nil {
		return "", err
	}
	binDir = dir
	bin := filepath.Join(dir, "b3")
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", bin, ".")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build: %v\n%s", err, out)
	}
	return bin, nil
})

var binDir string

func TestMain(m *testing.M) {
	os.Unsetenv("AWS_CA_BUNDLE")
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

func TestStaticBinary(t *testing.T) {
	bin, err := buildStatic()
	if err != nil {
		t.Fatal(err)
	}
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
			t.Fatalf("binary built with CGO_ENABLED=0 is dynamic: has %v", p.Type)
		}
	}
	if libs, _ := f.ImportedLibraries(); len(libs) > 0 {
		t.Fatalf("binary imports %v", libs)
	}
}

// TestSIGTERMKeepsAcknowledgedWrites: SIGTERM while clients upload; the
// server drains and exits 0; after a restart every object whose PUT was
// acknowledged reads back identical.
func TestSIGTERMKeepsAcknowledgedWrites(t *testing.T) {
	bin, err := buildStatic()
	if err != nil {
		t.Fatal(err)
	}
	srv := testutil.StartServer(t, testutil.ServerOptions{Binary: bin, NoAdmin: true, Args: []string{"--console-address", "", "--log-level", "warn"}})
	client := func() *s3.Client { return srv.Client(30 * time.Second) }
	ctx := context.Background()
	c := client()
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("drain")}); err != nil {
		t.Fatal(err)
	}
	body := func(key string) []byte { return bytes.Repeat([]byte(key), 2000) }

	var mu sync.Mutex
	acked := map[string]bool{}
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				key := fmt.Sprintf("w%d/%05d", w, i)
				_, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("drain"), Key: aws.String(key), Body: bytes.NewReader(body(key))})
				if err != nil {
					return // the server is going away
				}
				mu.Lock()
				acked[key] = true
				mu.Unlock()
			}
		}()
	}
	for {
		mu.Lock()
		n := len(acked)
		mu.Unlock()
		if n >= 200 {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := srv.Stop(); err != nil {
		t.Fatalf("server exit after SIGTERM: %v", err)
	}
	wg.Wait()

	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	c = client()
	for key := range acked {
		out, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("drain"), Key: aws.String(key)})
		if err != nil {
			t.Fatalf("acknowledged %s lost: %v", key, err)
		}
		got, _ := io.ReadAll(out.Body)
		out.Body.Close()
		if !bytes.Equal(got, body(key)) {
			t.Fatalf("acknowledged %s differs after restart", key)
		}
	}
	t.Logf("%d acknowledged objects survived SIGTERM and restart", len(acked))
	if err := srv.Stop(); err != nil {
		t.Fatalf("second exit: %v", err)
	}
}
