package mount

import (
	"bytes"
	"context"
	"io"
	"log"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go/middleware"

	"github.com/b3-storage/b3/internal/testutil"
)

// countGets returns a client of srv that counts its GetObject requests.
func countGets(srv *testutil.Server, n *atomic.Int64) *s3.Client {
	return s3.New(srv.Client(30*time.Second).Options(), func(o *s3.Options) {
		o.APIOptions = append(o.APIOptions, func(stack *middleware.Stack) error {
			return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("countGets",
				func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (
					middleware.InitializeOutput, middleware.Metadata, error) {
					if _, ok := in.Parameters.(*s3.GetObjectInput); ok {
						n.Add(1)
					}
					return next.HandleInitialize(ctx, in)
				}), middleware.Before)
		})
	})
}

// TestReadAheadLateRequest reads an object in 1 MiB requests as the
// kernel's read-ahead sends them: in order, except for requests that
// arrive late, behind parts already read. Every request returns the bytes
// at its offset; the first late request costs one GET of its own, later
// ones are served from the part then kept behind the reads: the read-ahead
// window is never dropped and fetched again.
func TestReadAheadLateRequest(t *testing.T) {
	srv := testutil.StartServer(t, testutil.ServerOptions{})
	var gets atomic.Int64
	client := countGets(srv, &gets)
	ctx := context.Background()
	bucket, key := "readahead", "obj"
	if _, err := client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: &bucket}); err != nil {
		t.Fatal(err)
	}
	const size, part, block = 48 << 20, 4 << 20, 1 << 20
	data := make([]byte, size)
	for i := range data {
		data[i] = byte(i*7 + i>>20)
	}
	if _, err := client.PutObject(ctx, &s3.PutObjectInput{Bucket: &bucket, Key: &key,
		Body: bytes.NewReader(data), ContentLength: aws.Int64(size)}); err != nil {
		t.Fatal(err)
	}
	m := &mountFS{
		cfg: Config{Bucket: bucket, ReadPartSize: part, ReadAhead: 4 * part, SmallFile: block,
			MetadataTTL: time.Second},
		be:    &backend{client: client, bucket: bucket},
		log:   log.New(io.Discard, "", 0),
		readP: newBufferPool(part, 16, false),
	}
	r := m.newReader(key, &fileNode{m: m}, false)
	defer r.Release(ctx)

	// Offsets in MiB: sequential, with two requests arriving late (10
	// after 12, 22 after 24), as concurrent requests of the kernel do.
	var offsets []int
	for mib := 0; mib < size/block; mib++ {
		switch mib {
		case 10, 22:
			continue
		case 13:
			offsets = append(offsets, 10)
		case 25:
			offsets = append(offsets, 22)
		}
		offsets = append(offsets, mib)
	}
	gets.Store(0)
	dest := make([]byte, block)
	for _, mib := range offsets {
		off := int64(mib) * block
		res, errno := r.Read(ctx, dest, off)
		if errno != 0 {
			t.Fatalf("read at %d MiB: %v", mib, errno)
		}
		got, _ := res.Bytes(nil)
		if !bytes.Equal(got, data[off:off+block]) {
			t.Fatalf("read at %d MiB: %d bytes, not the object's", mib, len(got))
		}
	}
	// One GET pins the version (the first MiB), one per part of the
	// read-ahead, and one for the first late request.
	if want := int64(1 + size/part + 1); gets.Load() > want {
		t.Fatalf("%d GETs to read %d MiB with 2 late requests; want at most %d", gets.Load(), size>>20, want)
	}
}
