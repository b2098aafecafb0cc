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
	"github.com/hanwen/go-fuse/v2/fuse"

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
	const size, part, block = 48 << 20, 4 << 20, 1 << 20
	r, data, gets := readerOf(t, size, part, 16)
	ctx := context.Background()

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
		res.Done()
	}
	// One GET pins the version (the first MiB), one per part of the
	// read-ahead, and one for the first late request.
	if want := int64(1 + size/part + 1); gets.Load() > want {
		t.Fatalf("%d GETs to read %d MiB with 2 late requests; want at most %d", gets.Load(), size>>20, want)
	}
}

// readerOf stores an object of size bytes on a fresh server and returns a
// reader of it with parts of part bytes and a pool of buffers buffers,
// the object's bytes, and the count of the reader's GETs.
func readerOf(t *testing.T, size, part, buffers int) (*reader, []byte, *atomic.Int64) {
	t.Helper()
	srv := testutil.StartServer(t, testutil.ServerOptions{})
	gets := new(atomic.Int64)
	client := countGets(srv, gets)
	ctx := context.Background()
	bucket, key := "readahead", "obj"
	if _, err := client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: &bucket}); err != nil {
		t.Fatal(err)
	}
	data := make([]byte, size)
	for i := range data {
		data[i] = byte(i*7 + i>>20)
	}
	if _, err := client.PutObject(ctx, &s3.PutObjectInput{Bucket: &bucket, Key: &key,
		Body: bytes.NewReader(data), ContentLength: aws.Int64(int64(size))}); err != nil {
		t.Fatal(err)
	}
	m := &mountFS{
		cfg: Config{Bucket: bucket, ReadPartSize: part, ReadAhead: 4 * part, SmallFile: 1 << 20,
			MetadataTTL: time.Second},
		be:    &backend{client: client, bucket: bucket},
		log:   log.New(io.Discard, "", 0),
		readP: newBufferPool(part, buffers, false),
	}
	r := m.newReader(key, &fileNode{m: m}, false)
	t.Cleanup(func() { r.Release(ctx) })
	return r, data, gets
}

// TestReadRepliesKeepTheirBuffer: a reply that points into a read-ahead
// buffer keeps it from the pool until go-fuse has written it (Done), even
// after the reader has moved past its part: with 3 buffers, a reader that
// read 8 parts on has reused every buffer but the held replies', whose
// bytes are still the object's. After Done every buffer is free again.
func TestReadRepliesKeepTheirBuffer(t *testing.T) {
	const size, part, block = 40 << 20, 4 << 20, 1 << 20
	r, data, _ := readerOf(t, size, part, 3)
	ctx := context.Background()
	dest := make([]byte, block)
	type held struct {
		off int64
		res interface {
			Bytes([]byte) ([]byte, fuse.Status)
			Done()
		}
	}
	var keep []held
	for off := int64(0); off < size; off += block {
		res, errno := r.Read(ctx, dest, off)
		if errno != 0 {
			t.Fatalf("read at %d: %v", off, errno)
		}
		got, _ := res.Bytes(nil)
		if !bytes.Equal(got, data[off:off+block]) {
			t.Fatalf("read at %d MiB: not the object's bytes", off>>20)
		}
		if off == 1<<20 || off == 9<<20 {
			keep = append(keep, held{off, res}) // not written yet
			continue
		}
		res.Done()
	}
	for _, h := range keep {
		got, _ := h.res.Bytes(nil)
		if !bytes.Equal(got, data[h.off:h.off+block]) {
			t.Fatalf("the reply held for %d MiB changed: its buffer went back to the pool before Done", h.off>>20)
		}
		h.res.Done()
	}
	r.Release(ctx)
	deadline := time.Now().Add(10 * time.Second)
	for len(r.m.readP.free) != 3 {
		if time.Now().After(deadline) {
			t.Fatalf("%d of 3 read buffers back in the pool after every Done and Release", len(r.m.readP.free))
		}
		time.Sleep(10 * time.Millisecond)
	}
}
