package e2e

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// TestMinioGo: streaming PutObject of unknown size, FPutObject multipart,
// GetObject (whole and ranged), ListObjects, RemoveObjects, a presigned
// GET fetched with curl.
func TestMinioGo(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), sdkTimeout)
	defer cancel()
	client, err := minio.New(env.hostPort, &minio.Options{
		Creds:  credentials.NewStaticV4(accessKey, secretKey, ""),
		Region: region,
	})
	if err != nil {
		t.Fatal(err)
	}
	const b = "e2e-minio"
	if err := client.MakeBucket(ctx, b, minio.MakeBucketOptions{Region: region}); err != nil {
		t.Fatalf("MakeBucket: %v", err)
	}

	// Unknown size (-1): minio-go streams it in 16 MiB parts, 40 MiB → 3.
	const streamSize = 40 << 20
	f, err := os.Open(env.bigPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	info, err := client.PutObject(ctx, b, "stream.bin", io.LimitReader(f, streamSize), -1,
		minio.PutObjectOptions{PartSize: 16 << 20, ContentType: "application/x-test"})
	if err != nil {
		t.Fatalf("PutObject of unknown size: %v", err)
	}
	if info.Size != streamSize || !strings.HasSuffix(info.ETag, "-3") {
		t.Fatalf("PutObject of unknown size: size %d ETag %s, want %d bytes in 3 parts", info.Size, info.ETag, streamSize)
	}
	if _, err := client.PutObject(ctx, b, "small.txt", strings.NewReader(smallBody), int64(len(smallBody)), minio.PutObjectOptions{}); err != nil {
		t.Fatalf("PutObject small: %v", err)
	}
	info, err = client.FPutObject(ctx, b, "dir/big.bin", env.bigPath, minio.PutObjectOptions{PartSize: 16 << 20})
	if err != nil {
		t.Fatalf("FPutObject: %v", err)
	}
	if info.Size != bigSize || !strings.HasSuffix(info.ETag, "-7") {
		t.Fatalf("FPutObject: size %d ETag %s, want %d bytes in 7 parts", info.Size, info.ETag, bigSize)
	}

	for _, o := range []struct {
		key, sha string
		size     int64
	}{
		{"dir/big.bin", env.bigSHA, bigSize},
		{"stream.bin", prefixSHA(t, streamSize), streamSize},
		{"small.txt", env.smallSHA, int64(len(smallBody))},
	} {
		obj, err := client.GetObject(ctx, b, o.key, minio.GetObjectOptions{})
		if err != nil {
			t.Fatalf("GetObject %s: %v", o.key, err)
		}
		h := sha256.New()
		n, err := io.Copy(h, obj)
		obj.Close()
		if err != nil || n != o.size || hex.EncodeToString(h.Sum(nil)) != o.sha {
			t.Fatalf("GetObject %s: %d bytes, err %v, or SHA-256 differing from the upload's", o.key, n, err)
		}
	}
	var opts minio.GetObjectOptions
	if err := opts.SetRange(6, 10); err != nil {
		t.Fatal(err)
	}
	obj, err := client.GetObject(ctx, b, "small.txt", opts)
	if err != nil {
		t.Fatal(err)
	}
	part, err := io.ReadAll(obj)
	obj.Close()
	if err != nil || string(part) != smallBody[6:11] {
		t.Fatalf("ranged GetObject: %q, %v; want %q", part, err, smallBody[6:11])
	}

	var keys []string
	for o := range client.ListObjects(ctx, b, minio.ListObjectsOptions{Recursive: true}) {
		if o.Err != nil {
			t.Fatalf("ListObjects: %v", o.Err)
		}
		keys = append(keys, o.Key)
	}
	if want := []string{"dir/big.bin", "small.txt", "stream.bin"}; !slices.Equal(keys, want) {
		t.Fatalf("ListObjects: %q, want %q", keys, want)
	}

	u, err := client.PresignedGetObject(ctx, b, "small.txt", 5*time.Minute, nil)
	if err != nil {
		t.Fatalf("PresignedGetObject: %v", err)
	}
	curlFetchEquals(t, u.String(), env.smallSHA, "minio-go presigned GET")

	toRemove := make(chan minio.ObjectInfo, len(keys))
	for _, k := range keys {
		toRemove <- minio.ObjectInfo{Key: k}
	}
	close(toRemove)
	for e := range client.RemoveObjects(ctx, b, toRemove, minio.RemoveObjectsOptions{}) {
		t.Fatalf("RemoveObjects %s: %v", e.ObjectName, e.Err)
	}
	for o := range client.ListObjects(ctx, b, minio.ListObjectsOptions{Recursive: true}) {
		t.Fatalf("after RemoveObjects: listed %q (err %v)", o.Key, o.Err)
	}
	if err := client.RemoveBucket(ctx, b); err != nil {
		t.Fatalf("RemoveBucket: %v", err)
	}
	if ok, err := client.BucketExists(ctx, b); ok || err != nil {
		t.Fatalf("BucketExists after RemoveBucket: %v, %v", ok, err)
	}
}

// prefixSHA returns the hex SHA-256 of the first n bytes of the big file.
func prefixSHA(t testing.TB, n int64) string {
	t.Helper()
	f, err := os.Open(env.bigPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.CopyN(h, f, n); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}
