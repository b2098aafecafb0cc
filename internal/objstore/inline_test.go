package objstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"
	"testing/iotest"

	pvfs "github.com/cockroachdb/pebble/v2/vfs"

	"github.com/b3-storage/b3/internal/meta"
	"github.com/b3-storage/b3/internal/sse"
)

// TestInlineObjects writes bodies on both sides of InlineMax: the small ones
// live in their records and append nothing to the segments, the large ones
// the reverse; both read back whole and by range, survive a reopen, and an
// overwrite or delete of either kind counts dead bytes only for segment
// data.
func TestInlineObjects(t *testing.T) {
	fs := pvfs.NewMem()
	opts := memOptions(fs)
	s := openStore(t, opts)
	ensureBucket(t, s, "b")
	max := int(opts.InlineMax)
	cases := []struct {
		key    string
		size   int
		inline bool
	}{{"empty", 0, true}, {"one", 1, true}, {"at-max", max, true}, {"past-max", max + 1, false}, {"large", 3 * max, false}}
	for _, c := range cases {
		before := s.blob.Stats().BytesAppended
		put(t, s, "b", c.key, value(c.key, 0, c.size))
		obj, err := s.HeadObject("b", c.key)
		if err != nil {
			t.Fatal(err)
		}
		appended := s.blob.Stats().BytesAppended - before
		if got := obj.Inline != nil; got != c.inline || (appended == 0) != c.inline || obj.Size != int64(c.size) {
			t.Fatalf("%s (%d bytes): inline %v, %d bytes appended to segments, size %d", c.key, c.size, got, appended, obj.Size)
		}
	}
	// A reader that returns its last bytes together with io.EOF (as
	// net/http's body does) must not sneak one byte past the threshold.
	for _, size := range []int{max, max + 1} {
		key := fmt.Sprintf("eof-with-data-%d", size)
		body := iotest.DataErrReader(bytes.NewReader(value(key, 0, size)))
		obj, err := s.PutObject(context.Background(), PutInput{Bucket: "b", Key: key, Body: body})
		if err != nil {
			t.Fatal(err)
		}
		if inline := obj.Inline != nil; inline != (size <= max) || obj.Size != int64(size) {
			t.Fatalf("%d bytes read with EOF: inline %v, size %d", size, inline, obj.Size)
		}
		if got, err := read(s, "b", key); err != nil || !bytes.Equal(got, value(key, 0, size)) {
			t.Fatalf("%s: read back %d bytes, %v", key, len(got), err)
		}
	}
	check := func(s *Store) {
		t.Helper()
		for _, c := range cases {
			want := value(c.key, 0, c.size)
			got, err := read(s, "b", c.key)
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("%s: read %d bytes, %v", c.key, len(got), err)
			}
			if c.size < 3 {
				continue
			}
			_, r, err := s.OpenObject(context.Background(), "b", c.key, func(*meta.Object) (int64, int64, error) { return 1, 2, nil })
			if err != nil {
				t.Fatal(err)
			}
			part := make([]byte, 3)
			n, _ := r.Read(part)
			r.Close()
			if n != 2 || !bytes.Equal(part[:2], want[1:3]) {
				t.Fatalf("%s: range [1,3) read %q, want %q", c.key, part[:n], want[1:3])
			}
		}
	}
	check(s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openStore(t, opts)
	defer s.Close()
	check(s)

	deadOf := func() int64 { return s.VacuumStatus().DeadBytes }
	// Inline replaced by inline, then by segment data, then deleted: only
	// the segment data becomes dead.
	dead := deadOf()
	put(t, s, "b", "one", value("one", 1, 2))
	put(t, s, "b", "one", value("one", 2, 5*max))
	if got := deadOf(); got != dead {
		t.Fatalf("overwriting inline objects counted %d dead bytes", got-dead)
	}
	if _, err := s.DeleteObject("b", "one"); err != nil {
		t.Fatal(err)
	}
	if got := deadOf(); got <= dead {
		t.Fatalf("deleting a segment object counted no dead bytes (%d -> %d)", dead, got)
	}
	dead = deadOf()
	if _, err := s.DeleteObject("b", "at-max"); err != nil {
		t.Fatal(err)
	}
	if got := deadOf(); got != dead {
		t.Fatalf("deleting an inline object counted %d dead bytes", got-dead)
	}
	if _, err := read(s, "b", "at-max"); !errors.Is(err, ErrNoSuchKey) {
		t.Fatalf("deleted inline object: %v", err)
	}
}

// TestInlineEncrypted: an encrypted body (its record names an SSE key) of
// InlineMax bytes of plaintext is stored with its packages' overhead and
// still lives in its record; one byte of plaintext more does not.
func TestInlineEncrypted(t *testing.T) {
	s := openStore(t, memOptions(pvfs.NewMem()))
	ensureBucket(t, s, "b")
	max := s.opts.InlineMax
	for _, c := range []struct {
		stored int64
		inline bool
	}{{sse.EncryptedSize(max), true}, {sse.EncryptedSize(max + 1), false}} {
		key := fmt.Sprintf("enc-%d", c.stored)
		obj, err := s.PutObject(context.Background(), PutInput{Bucket: "b", Key: key, Body: bytes.NewReader(value(key, 0, int(c.stored))),
			Object: &meta.Object{SSE: &meta.Encryption{Algorithm: meta.SSEAlgorithmS3, KeyID: "k", SealedKey: []byte{1}}}})
		if err != nil {
			t.Fatal(err)
		}
		if inline := obj.Inline != nil; inline != c.inline || obj.Size != c.stored {
			t.Fatalf("%d stored bytes: inline %v, size %d", c.stored, inline, obj.Size)
		}
		got, err := s.HeadObject("b", key)
		if err != nil || got.SSE == nil || got.SSE.KeyID != "k" {
			t.Fatalf("%s: record read back without its key: %+v %v", key, got, err)
		}
	}
	// A plain body of the same size is not inline.
	obj, err := s.PutObject(context.Background(), PutInput{Bucket: "b", Key: "plain", Body: bytes.NewReader(value("plain", 0, int(sse.EncryptedSize(max))))})
	if err != nil || obj.Inline != nil {
		t.Fatalf("a plain body past InlineMax inline: %v", err)
	}
}
