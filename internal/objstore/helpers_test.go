package objstore

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"math/rand/v2"
	"testing"

	pvfs "github.com/cockroachdb/pebble/v2/vfs"

	"github.com/b3-storage/b3/internal/blob"
	"github.com/b3-storage/b3/internal/meta"
	"github.com/b3-storage/b3/internal/vfs"
)

// memOptions puts metadata and segments on one in-memory filesystem, so a
// CrashClone of it is a crash of the whole store at one instant. Segments
// and chunks are small so that tests roll over segments and split values.
func memOptions(fs pvfs.FS) Options {
	return Options{
		MetaDir:         "/meta",
		DataDir:         "/data",
		FS:              vfs.Pebble(fs),
		MetaFS:          fs,
		SegmentSize:     64 << 10,
		ChunkSize:       4 << 10,
		VacuumThreshold: 0.3,
		// Bodies up to 2 KiB live in their records: the model and crash
		// tests write sizes on both sides of it and so cover both paths.
		InlineMax: 2 << 10,
	}
}

func openStore(t testing.TB, opts Options) *Store {
	t.Helper()
	s, err := Open(opts)
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	return s
}

func ensureBucket(t testing.TB, s *Store, name string) {
	t.Helper()
	if _, err := s.CreateBucket(&meta.Bucket{Name: name, Owner: "test"}); err != nil && err != ErrBucketExists {
		t.Fatalf("create bucket: %v", err)
	}
}

// value returns deterministic content for (key, seq) of the given size.
func value(key string, seq, size int) []byte {
	r := rand.New(rand.NewPCG(uint64(len(key))*7919+uint64(seq), uint64(size)))
	b := make([]byte, size)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	copy(b, fmt.Sprintf("%s#%d#", key, seq))
	return b
}

func digest(b []byte) [32]byte { return sha256.Sum256(b) }

func put(t testing.TB, s *Store, bucket, key string, data []byte) {
	t.Helper()
	if _, err := s.PutObject(context.Background(), PutInput{Bucket: bucket, Key: key, Body: bytes.NewReader(data)}); err != nil {
		t.Fatalf("put %s: %v", key, err)
	}
}

// read returns the object's bytes, or nil and ErrNoSuchKey.
func read(s *Store, bucket, key string) ([]byte, error) {
	obj, r, err := s.OpenObject(context.Background(), bucket, key, WholeObject)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", key, err)
	}
	if int64(len(data)) != obj.Size {
		return nil, fmt.Errorf("read %s: %d bytes, record says %d", key, len(data), obj.Size)
	}
	return data, nil
}

func bucketRecord(name string) *meta.Bucket { return &meta.Bucket{Name: name, Owner: "test"} }

// checkUploadParts reads every part of every upload in progress: each
// must still be whole (its segments present, its records its own). It
// returns how many parts it read.
func checkUploadParts(t testing.TB, s *Store) int {
	t.Helper()
	uploads := map[string]*meta.Upload{}
	err := s.meta.ScanUploads("", func(up *meta.Upload) error {
		uploads[up.UploadID] = up
		return nil
	})
	n := 0
	if err == nil {
		err = s.meta.ScanParts(func(p *meta.Part) error {
			up := uploads[p.UploadID]
			if up == nil {
				return nil // completed or aborted since the uploads were scanned
			}
			owner := blob.Owner{Key: ownerKey(up.Bucket, up.Key), Version: up.Version}
			r, err := s.blob.NewReader(context.Background(), owner, toBlob(p.Extents), 0, p.Size)
			if err != nil {
				return fmt.Errorf("part %d of %q upload %s: %w", p.Number, up.Key, up.UploadID, err)
			}
			got, err := io.Copy(io.Discard, r)
			r.Close()
			if err != nil || got != p.Size {
				return fmt.Errorf("part %d of %q upload %s: %d of %d bytes: %v", p.Number, up.Key, up.UploadID, got, p.Size, err)
			}
			n++
			return nil
		})
	}
	if err != nil {
		t.Fatalf("uploads in progress: %v", err)
	}
	return n
}
