package server

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/b3-storage/b3/internal/testutil"
)

// TestDataIsPrivate: after a real start and writes (an inline object in
// pebble's log, one in the segments), every
// directory under the data root is 0700 and every file 0600, so no other
// local user reads objects out of the segments or the pebble log.
func TestDataIsPrivate(t *testing.T) {
	root := filepath.Join(t.TempDir(), "data") // Run creates it
	n := startNode(t, Config{Root: root, InlineMax: 4096})
	user, _, err := LoadOrCreateCredentials(root)
	if err != nil {
		t.Fatal(err)
	}
	c := n.client(t, user.AccessKey, user.SecretKey)
	ctx := context.Background()
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("private")}); err != nil {
		t.Fatal(err)
	}
	for key, size := range map[string]int{"inline": 100, "segment": 3 << 20} {
		if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("private"), Key: aws.String(key),
			Body: bytes.NewReader(bytes.Repeat([]byte("secret "), size/7))}); err != nil {
			t.Fatal(err)
		}
	}
	n.stop() // closing writes the segment checkpoint
	files := testutil.CheckPrivate(t, root)
	// A segment and its checkpoint, pebble's log, MANIFEST, OPTIONS, LOCK
	// and markers, the credentials and the admin token.
	if files < 8 {
		t.Fatalf("only %d files under %s", files, root)
	}
}

// TestBannerSecret: the banner shows the root secret on the start that
// generated it, never again, and never one the operator supplied.
func TestBannerSecret(t *testing.T) {
	root := t.TempDir()
	first := startNode(t, Config{Root: root})
	user, _, err := LoadOrCreateCredentials(root)
	if err != nil {
		t.Fatal(err)
	}
	first.stop()
	if strings.Count(first.banner, user.SecretKey) != 2 { // the key line and the example
		t.Fatalf("first start's banner lacks the generated secret:\n%s", first.banner)
	}
	again := startNode(t, Config{Root: root})
	again.stop()
	if strings.Contains(again.banner, user.SecretKey) || !strings.Contains(again.banner, user.AccessKey) {
		t.Fatalf("second start's banner shows the kept secret:\n%s", again.banner)
	}

	const supplied = "operator/supplied/secret/0000000000000000"
	given := startNode(t, Config{Root: t.TempDir(), AccessKey: "OPERATORKEY", SecretKey: supplied})
	given.stop()
	if strings.Contains(given.banner, supplied) || !strings.Contains(given.banner, "OPERATORKEY") ||
		!strings.Contains(given.banner, "aws --endpoint-url http://") {
		t.Fatalf("banner with a supplied secret:\n%s", given.banner)
	}
}
