package sse_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/b3-storage/b3/internal/testutil"
)

// retry runs do until it does not answer 503 SlowDown (a group that is
// electing its leader), as clients do.
func retry(ctx context.Context, do func() error) error {
	for {
		err := do()
		if testutil.APICode(err) != "SlowDown" || ctx.Err() != nil {
			return err
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestClusterCiphertextOnly writes encrypted objects of every kind and
// size (inline in the Raft entry, staged and pushed beside the log,
// multipart) into a 3-node group while one follower is stopped, restarts
// it (it catches up by fetching the bytes), reads everything through
// every node, and then searches every node's data directory (segments,
// pebble, the Raft log, staged bytes) for their plaintext.
func TestClusterCiphertextOnly(t *testing.T) {
	cl := testutil.StartCluster(t, testutil.ClusterOptions{Args: []string{"--kms-keys", keyRing(t, "main", "other")}})
	ctx, cancel := context.WithTimeout(context.Background(), 4*timeout)
	defer cancel()
	// One follower is away while the objects are written: back, it
	// fetches their bytes from a peer, which checks them against what the
	// commands name (an encrypted body's ETag is no MD5 of its bytes).
	leader, err := cl.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	away := (leader + 1) % len(cl.Nodes)
	if err := cl.Nodes[away].Proc.Stop(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	c := cl.Client(leader, timeout)
	const bucket = "enc"
	if err := retry(ctx, func() error {
		_, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)})
		if testutil.APICode(err) == "BucketAlreadyOwnedByYou" {
			return nil
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	ck := newCustomerKey(t)
	kinds := []struct {
		name string
		opts sseOpts
	}{
		{"sse-s3", sseOpts{sse: types.ServerSideEncryptionAes256}},
		{"kms", sseOpts{sse: types.ServerSideEncryptionAwsKms, kmsKey: "other"}},
		{"sse-c", sseOpts{ck: &ck}},
	}
	var written []stored
	for _, k := range kinds {
		for _, size := range []int{0, 300, 4096, 100 << 10, 3<<20 + 1} {
			key := fmt.Sprintf("%s/%d", k.name, size)
			body := patterned(secretMark, size)
			if err := retry(ctx, func() error {
				_, err := c.PutObject(ctx, k.opts.put(&s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader(body)}))
				return err
			}); err != nil {
				t.Fatalf("put %s: %v", key, err)
			}
			written = append(written, stored{bucket, key, body, k.opts})
		}
		// Multipart: the parts are staged and pushed as ciphertext too.
		key := "mp/" + k.name
		body := patterned(secretMark, 5<<20+1000)
		create := createUpload(ctx, t, c, bucket, key, k.opts)
		parts := uploadParts(ctx, t, c, bucket, key, create.UploadId, body, []int{5 << 20, 1000}, k.opts)
		if _, err := c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: aws.String(bucket), Key: aws.String(key), UploadId: create.UploadId,
			MultipartUpload: &types.CompletedMultipartUpload{Parts: parts}}); err != nil {
			t.Fatalf("%s: complete: %v", key, err)
		}
		written = append(written, stored{bucket, key, body, k.opts})
	}
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String("control"), Body: bytes.NewReader(patterned(plainMark, 256<<10))}); err != nil {
		t.Fatal(err)
	}
	if err := cl.Start(away); err != nil {
		t.Fatal(err)
	}
	if err := cl.WaitConverged(ctx); err != nil {
		t.Fatalf("node %d, back, did not catch up: %v", away, err)
	}
	for i := range cl.Nodes {
		ci := cl.Client(i, timeout)
		for _, o := range written {
			var got []byte
			if err := retry(ctx, func() error {
				var err error
				got, _, err = getBytes(ctx, ci, o.bucket, o.key, "", o.opts)
				return err
			}); err != nil || !bytes.Equal(got, o.body) {
				t.Fatalf("node %d: get %s: %d bytes, %v", i, o.key, len(got), err)
			}
		}
		// A range across a package boundary, through a follower too.
		o := written[3]
		got, _, err := getBytes(ctx, ci, o.bucket, o.key, "bytes=65000-70000", o.opts)
		if err != nil || !bytes.Equal(got, o.body[65000:70001]) {
			t.Fatalf("node %d: range of %s: %v", i, o.key, err)
		}
	}
	t.Logf("written and read through every node")
	if err := cl.WaitConverged(ctx); err != nil {
		l, _ := cl.Leader(ctx)
		st, serr := cl.Status(l)
		t.Fatalf("%v: leader %d status %+v %v", err, l, st, serr)
	}
	if err := cl.Stop(); err != nil {
		t.Fatal(err)
	}
	var roots []string
	for _, n := range cl.Nodes {
		roots = append(roots, n.Data)
	}
	assertCiphertextOnly(t, roots...)
	// Every node holds the control (it is replicated as plaintext).
	for _, n := range cl.Nodes {
		if found, _ := filesHolding(t, plainMark, n.Data); len(found) == 0 {
			t.Fatalf("node %s holds no copy of the control object", n.ID)
		}
	}
}
