package blob

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"math/rand/v2"
	"testing"

	"github.com/b3-storage/b3/internal/vfs"
)

// testOptions are small sizes so that a few KiB exercise chunking, full
// buffers and rollover.
func testOptions(fs vfs.FS) Options {
	return Options{
		FS:              fs,
		Dir:             "data",
		SegmentSize:     256 << 10,
		ChunkSize:       8 << 10,
		WriteBuffer:     16 << 10,
		FlushQueue:      2,
		CheckpointBytes: 64 << 10,
		Logger:          slog.New(slog.DiscardHandler),
	}
}

func memFS() vfs.FS { return vfs.Pebble(vfs.NewCrashableMem()) }

func mustOpen(t testing.TB, opts Options) *Store {
	t.Helper()
	s, err := Open(opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return s
}

// value returns n deterministic pseudo-random bytes for seed.
func value(seed uint64, n int) []byte {
	b := make([]byte, n)
	r := rand.New(rand.NewPCG(seed, seed^0x9E3779B97F4A7C15))
	for i := 0; i < n; i += 8 {
		v := r.Uint64()
		for j := 0; j < 8 && i+j < n; j++ {
			b[i+j] = byte(v >> (8 * j))
		}
	}
	return b
}

func mustAppend(t testing.TB, s *Store, key string, data []byte) []Extent {
	t.Helper()
	ext, n, err := s.Append(context.Background(), Owner{Key: []byte(key), Version: 1}, bytes.NewReader(data))
	if err != nil {
		t.Fatalf("Append %s: %v", key, err)
	}
	if n != int64(len(data)) {
		t.Fatalf("Append %s: size %d, want %d", key, n, len(data))
	}
	return ext
}

// ownerAt returns the owner recorded in the first record of ext: the
// tests reading through these helpers check bytes, and read as the owner
// the value was written by; reader_test.go checks owners.
func ownerAt(s *Store, ext []Extent) Owner {
	if len(ext) == 0 {
		return Owner{}
	}
	f, err := s.pin(ext[0].Segment)
	if err != nil {
		return Owner{}
	}
	defer s.unpin(ext[0].Segment)
	if s.ensureFlushed(ext[0].Segment, ext[0].Offset+headerSize) != nil {
		return Owner{}
	}
	hdr := make([]byte, headerSize)
	if _, err := f.ReadAt(hdr, ext[0].Offset); err != nil {
		return Owner{}
	}
	h, err := parseHeader(hdr)
	if err != nil {
		return Owner{}
	}
	key := make([]byte, h.keyLen)
	if _, err := f.ReadAt(key, ext[0].Offset+headerSize); err != nil {
		return Owner{}
	}
	return Owner{Key: key, Version: h.version}
}

func readRange(s *Store, ext []Extent, off, n int64) ([]byte, error) {
	r, err := s.NewReader(context.Background(), ownerAt(s, ext), ext, off, n)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return io.ReadAll(r)
}

func checkRead(t testing.TB, s *Store, ext []Extent, want []byte) {
	t.Helper()
	got, err := readRange(s, ext, 0, int64(len(want)))
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("read %d bytes differ from the %d written", len(got), len(want))
	}
}

func totalSize(ext []Extent) (n int64) {
	for _, e := range ext {
		n += e.Size
	}
	return n
}
