package objstore

import (
	"bytes"
	"context"
	"errors"
	"io"
	"testing"
	"time"

	pvfs "github.com/cockroachdb/pebble/v2/vfs"

	"github.com/b3-storage/b3/internal/meta"
)

func readObject(t *testing.T, s *Store, bucket, key string) []byte {
	t.Helper()
	_, r, err := s.OpenObject(context.Background(), bucket, key, WholeObject)
	if err != nil {
		t.Fatalf("open %s/%s: %v", bucket, key, err)
	}
	defer r.Close()
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestReplicaApply runs the replicated write path: bytes staged first,
// records decided elsewhere installed later, each with its log position.
// The position survives a crash together with the change it stamped.
func TestReplicaApply(t *testing.T) {
	fs := pvfs.NewCrashableMem()
	s := openStore(t, memOptions(fs))
	ctx := context.Background()
	modified := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	if err := s.ApplyPutBucket(&meta.Bucket{Name: "b", Owner: "o", Created: modified}, true, 1); err != nil {
		t.Fatal(err)
	}
	if err := s.ApplyPutBucket(&meta.Bucket{Name: "b"}, true, 2); !errors.Is(err, ErrBucketExists) {
		t.Fatalf("create of an existing bucket: %v", err)
	}

	// A staged object, installed with the version the caller chose.
	body := value("k", 1, 50<<10)
	st, err := s.Stage(ctx, "b", "k", 1<<32|5, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	obj := &meta.Object{Bucket: "b", Key: "k", Version: 1<<32 | 5, Modified: modified, ETag: "e", Size: st.Size, Extents: st.Extents}
	if err := s.ApplyPutObject(obj, 3); err != nil {
		t.Fatal(err)
	}
	st.Release()
	if got := readObject(t, s, "b", "k"); !bytes.Equal(got, body) {
		t.Fatalf("read %d bytes, not the %d staged", len(got), len(body))
	}
	if head, _ := s.HeadObject("b", "k"); head.Version != 1<<32|5 || !head.Modified.Equal(modified) {
		t.Fatalf("record %+v: version or time not the caller's", head)
	}

	// A discarded stage leaves nothing referenced.
	st2, err := s.Stage(ctx, "b", "gone", 1<<32|6, bytes.NewReader(value("gone", 1, 20<<10)))
	if err != nil {
		t.Fatal(err)
	}
	st2.Discard()
	if _, err := s.HeadObject("b", "gone"); !errors.Is(err, ErrNoSuchKey) {
		t.Fatalf("discarded stage: %v", err)
	}

	// Multipart: two staged parts, completed as one object.
	up := &meta.Upload{Bucket: "b", Key: "m", UploadID: meta.NewUploadID(1<<32 | 7), Version: 1<<32 | 7, Initiated: modified}
	if err := s.ApplyCreateUpload(up, 4); err != nil {
		t.Fatal(err)
	}
	var whole []byte
	for n := 1; n <= 2; n++ {
		p := value("m", n, 30<<10)
		whole = append(whole, p...)
		st, err := s.Stage(ctx, "b", "m", up.Version, bytes.NewReader(p))
		if err != nil {
			t.Fatal(err)
		}
		if err := s.ApplyPutPart("b", "m", &meta.Part{UploadID: up.UploadID, Number: n, Size: st.Size, Extents: st.Extents, Modified: modified}, uint64(4+n)); err != nil {
			t.Fatal(err)
		}
		st.Release()
	}
	if ok, _ := s.HasParts(up.UploadID, []int{1, 2}); !ok {
		t.Fatal("HasParts: parts missing")
	}
	if err := s.ApplyCompleteUpload(&meta.Object{Bucket: "b", Key: "m", Modified: modified}, up.UploadID, []int{1, 2}, nil, 7); err != nil {
		t.Fatal(err)
	}
	if got := readObject(t, s, "b", "m"); !bytes.Equal(got, whole) {
		t.Fatalf("completed object: %d bytes, want %d", len(got), len(whole))
	}

	// Tags on the same version keep the bytes; another version is refused.
	if err := s.ApplyUpdateObject(&meta.Object{Bucket: "b", Key: "k", Version: 1<<32 | 5, Modified: modified, Tags: map[string]string{"t": "1"}}, 8); err != nil {
		t.Fatal(err)
	}
	if err := s.ApplyUpdateObject(&meta.Object{Bucket: "b", Key: "k", Version: 99}, 9); !errors.Is(err, ErrNoSuchKey) {
		t.Fatalf("update of another version: %v", err)
	}
	if _, err := s.ApplyDeleteObject("b", "m", 10); err != nil {
		t.Fatal(err)
	}
	if n, _ := s.Applied(); n != 10 {
		t.Fatalf("Applied = %d, want 10", n)
	}

	// Crash: the stamp and the changes are durable together.
	crashed := fs.CrashClone(pvfs.CrashCloneCfg{})
	s.Close()
	s = openStore(t, memOptions(crashed))
	defer s.Close()
	if n, _ := s.Applied(); n != 10 {
		t.Fatalf("Applied after a crash = %d, want 10", n)
	}
	if got := readObject(t, s, "b", "k"); !bytes.Equal(got, body) {
		t.Fatal("k changed across the crash")
	}
	if head, _ := s.HeadObject("b", "k"); head.Tags["t"] != "1" {
		t.Fatalf("tags lost: %+v", head.Tags)
	}
	if _, err := s.HeadObject("b", "m"); !errors.Is(err, ErrNoSuchKey) {
		t.Fatalf("deleted m: %v", err)
	}
}
