package sse_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/b3-storage/b3/internal/sse"
	"github.com/b3-storage/b3/internal/testutil"
)

// TestKeyRotation: data keys sealed under master key "old" are re-sealed
// under "new" by the background job (b3 admin kms rotate), while readers
// read every object throughout; then "old" leaves the key ring and every
// object, current and noncurrent versions, still reads.
func TestKeyRotation(t *testing.T) {
	keyFile := filepath.Join(t.TempDir(), "kms-keys")
	oldKey, newKey := keyRing(t, "old"), keyRing(t, "new")
	if err := os.WriteFile(keyFile, []byte(oldKey+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := testutil.StartServer(t, testutil.ServerOptions{Args: []string{"--kms-keys-file", keyFile}})
	ctx, cancel := context.WithTimeout(context.Background(), 3*timeout)
	defer cancel()
	c := srv.Client(timeout)
	const bucket = "rot"
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.PutBucketVersioning(ctx, &s3.PutBucketVersioningInput{Bucket: aws.String(bucket),
		VersioningConfiguration: &types.VersioningConfiguration{Status: types.BucketVersioningStatusEnabled}}); err != nil {
		t.Fatal(err)
	}
	type version struct {
		key, id string
		body    []byte
	}
	var versions []version
	kinds := []sseOpts{{sse: types.ServerSideEncryptionAes256}, {sse: types.ServerSideEncryptionAwsKms, kmsKey: "old"}}
	const perKind = 40
	for k, o := range kinds {
		for i := 0; i < perKind; i++ {
			key := fmt.Sprintf("k%d/%03d", k, i%30) // 10 keys get a second version
			body := patterned(secretMark, 100+i*1000)
			out := put(ctx, t, c, bucket, key, body, o)
			versions = append(versions, version{key, aws.ToString(out.VersionId), body})
		}
	}
	readAll := func(c *s3.Client) error {
		for _, v := range versions {
			out, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(v.key), VersionId: aws.String(v.id)})
			if err != nil {
				return fmt.Errorf("%s@%s: %w", v.key, v.id, err)
			}
			var got bytes.Buffer
			_, err = got.ReadFrom(out.Body)
			out.Body.Close()
			if err != nil || !bytes.Equal(got.Bytes(), v.body) {
				return fmt.Errorf("%s@%s: %d bytes, %v", v.key, v.id, got.Len(), err)
			}
		}
		return nil
	}

	// "new" becomes the default key; "old" stays while the jobs run.
	if err := os.WriteFile(keyFile, []byte(newKey+"\n"+oldKey+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	restart(t, srv)
	c = srv.Client(timeout)
	var reads atomic.Int64
	var readErr error // set by the reader before failed
	var failed atomic.Bool
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if err := readAll(c); err != nil {
				readErr = err
				failed.Store(true)
				return
			}
			reads.Add(1)
		}
	}()
	adm := srv.Admin()
	rotations := []struct {
		from      string
		rewrapped int64
	}{
		{"", perKind},    // every SSE-S3 key not under the default
		{"old", perKind}, // the SSE-KMS keys that named "old"
		{"old", 0},       // nothing is left under "old"
	}
	for _, r := range rotations {
		if _, err := adm.KMSRotate(ctx, r.from, "new"); err != nil {
			t.Fatalf("rotate from %q: %v", r.from, err)
		}
		st := waitRotation(ctx, t, adm)
		if st.Rotation.Rewrapped != r.rewrapped || st.Rotation.Failed != 0 || st.Rotation.Scanned != 2*perKind || st.Rotation.To != "new" {
			t.Fatalf("rotation from %q: %+v, want %d re-sealed of %d", r.from, st.Rotation, r.rewrapped, 2*perKind)
		}
	}
	// A second job waits for the first; unknown keys are refused.
	if _, err := adm.KMSRotate(ctx, "gone", ""); err == nil {
		t.Fatal("rotation from a key not in the ring was accepted")
	}
	for reads.Load() < 2 && !failed.Load() {
		time.Sleep(10 * time.Millisecond)
	}
	close(stop)
	wg.Wait()
	if readErr != nil {
		t.Fatalf("an object did not read during the rotation: %v", readErr)
	}

	// Without "old" every version still reads: none is sealed under it.
	if err := os.WriteFile(keyFile, []byte(newKey+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	restart(t, srv)
	if err := readAll(srv.Client(timeout)); err != nil {
		t.Fatalf("after the old key left the ring: %v", err)
	}
}

func restart(t *testing.T, srv *testutil.Server) {
	t.Helper()
	if err := srv.Proc.Stop(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
}

func waitRotation(ctx context.Context, t *testing.T, adm interface {
	KMSStatus(context.Context) (sse.KMSStatus, error)
}) sse.KMSStatus {
	t.Helper()
	for {
		st, err := adm.KMSStatus(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !st.Rotation.Running {
			return st
		}
		if ctx.Err() != nil {
			t.Fatalf("rotation still running: %+v", st.Rotation)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
