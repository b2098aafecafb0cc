package testutil

import (
	"bytes"
	"context"
	"io"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// TestStartServer starts a server, writes an object, restarts the server
// on the same data and reads the object back.
func TestStartServer(t *testing.T) {
	s := StartServer(t, ServerOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := s.Client(10 * time.Second)
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("bkt")}); err != nil {
		t.Fatal(err)
	}
	body := []byte("kept across a restart")
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("bkt"), Key: aws.String("k"), Body: bytes.NewReader(body)}); err != nil {
		t.Fatal(err)
	}
	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
	out, err := s.Client(10*time.Second).GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("bkt"), Key: aws.String("k")})
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(out.Body)
	out.Body.Close()
	if err != nil || !bytes.Equal(got, body) {
		t.Fatalf("after restart: %q, %v; want %q", got, err, body)
	}
	if _, err := s.Admin().Stats(ctx, false); err != nil {
		t.Fatalf("admin API: %v", err)
	}
}
