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
// Stamped batches are not synced: after a crash the store holds exactly
// the commands up to Applied, and replaying the rest ends in the same
// state as without the crash.
func TestReplicaApply(t *testing.T) {
	fs := pvfs.NewCrashableMem()
	s := openStore(t, memOptions(fs))
	ctx := context.Background()
	modified := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	body := value("k", 1, 50<<10)
	up := &meta.Upload{Bucket: "b", Key: "m", UploadID: meta.NewUploadID(1<<32 | 7), Version: 1<<32 | 7, Initiated: modified}
	var whole []byte
	for n := 1; n <= 2; n++ {
		whole = append(whole, value("m", n, 30<<10)...)
	}
	// The log: command i+1 is commands[i]. Bytes are staged inside the
	// command here; a replica stages them before (or fetches them).
	commands := []func(s *Store, stamp uint64) error{
		func(s *Store, stamp uint64) error {
			return s.ApplyPutBucket(&meta.Bucket{Name: "b", Owner: "o", Created: modified}, true, stamp)
		},
		func(s *Store, stamp uint64) error {
			st, err := s.Stage(ctx, "b", "k", 1<<32|5, bytes.NewReader(body))
			if err != nil {
				return err
			}
			defer st.Release()
			return s.ApplyPutObject(&meta.Object{Bucket: "b", Key: "k", Version: 1<<32 | 5, Modified: modified, ETag: "e", Size: st.Size, Extents: st.Extents}, stamp)
		},
		func(s *Store, stamp uint64) error { return s.ApplyCreateUpload(up, stamp) },
		func(s *Store, stamp uint64) error { return applyPart(ctx, s, up, 1, stamp) },
		func(s *Store, stamp uint64) error { return applyPart(ctx, s, up, 2, stamp) },
		func(s *Store, stamp uint64) error {
			if ok, _ := s.HasParts(up.UploadID, []int{1, 2}); !ok {
				return errors.New("parts missing")
			}
			return s.ApplyCompleteUpload(&meta.Object{Bucket: "b", Key: "m", Modified: modified}, up.UploadID, []int{1, 2}, nil, stamp)
		},
		func(s *Store, stamp uint64) error {
			return s.ApplyUpdateObject(&meta.Object{Bucket: "b", Key: "k", Version: 1<<32 | 5, Modified: modified, Tags: map[string]string{"t": "1"}}, stamp)
		},
		func(s *Store, stamp uint64) error {
			return s.ApplyPutObject(&meta.Object{Bucket: "b", Key: "small", Version: 1<<32 | 9, Modified: modified, Inline: []byte("inline"), Size: 6}, stamp)
		},
		func(s *Store, stamp uint64) error { _, err := s.ApplyDeleteObject("b", "small", stamp); return err },
	}
	check := func(s *Store) {
		t.Helper()
		if n, _ := s.Applied(); n != uint64(len(commands)) {
			t.Fatalf("Applied = %d, want %d", n, len(commands))
		}
		if got := readObject(t, s, "b", "k"); !bytes.Equal(got, body) {
			t.Fatalf("k: %d bytes, not the %d staged", len(got), len(body))
		}
		if head, _ := s.HeadObject("b", "k"); head.Version != 1<<32|5 || !head.Modified.Equal(modified) || head.Tags["t"] != "1" {
			t.Fatalf("k's record %+v: not the caller's version, time and tags", head)
		}
		if got := readObject(t, s, "b", "m"); !bytes.Equal(got, whole) {
			t.Fatalf("completed object: %d bytes, want %d", len(got), len(whole))
		}
		if _, err := s.HeadObject("b", "small"); !errors.Is(err, ErrNoSuchKey) {
			t.Fatalf("deleted small: %v", err)
		}
	}
	for i, cmd := range commands {
		if err := cmd(s, uint64(i+1)); err != nil {
			t.Fatalf("command %d: %v", i+1, err)
		}
	}
	check(s)
	// Crash, then replay the log past the durable stamp.
	crashed := fs.CrashClone(pvfs.CrashCloneCfg{})
	s.Close()
	s = openStore(t, memOptions(crashed))
	defer s.Close()
	applied, err := s.Applied()
	if err != nil {
		t.Fatal(err)
	}
	if applied >= uint64(len(commands)) {
		t.Fatalf("Applied = %d after a crash: stamped batches were synced, or the test crashed too late", applied)
	}
	for i := applied; i < uint64(len(commands)); i++ {
		if err := commands[i](s, i+1); err != nil {
			t.Fatalf("replay of command %d after a crash at %d: %v", i+1, applied, err)
		}
	}
	check(s)
	// Refused commands change nothing.
	if err := s.ApplyPutBucket(&meta.Bucket{Name: "b"}, true, 100); !errors.Is(err, ErrBucketExists) {
		t.Fatalf("create of an existing bucket: %v", err)
	}
	if err := s.ApplyUpdateObject(&meta.Object{Bucket: "b", Key: "k", Version: 99}, 100); !errors.Is(err, ErrNoSuchKey) {
		t.Fatalf("update of another version: %v", err)
	}
	// A staged write that is discarded leaves nothing referenced.
	st, err := s.Stage(ctx, "b", "gone", 1<<32|6, bytes.NewReader(value("gone", 1, 20<<10)))
	if err != nil {
		t.Fatal(err)
	}
	st.Discard()
	if _, err := s.HeadObject("b", "gone"); !errors.Is(err, ErrNoSuchKey) {
		t.Fatalf("discarded stage: %v", err)
	}
}

func applyPart(ctx context.Context, s *Store, up *meta.Upload, n int, stamp uint64) error {
	st, err := s.Stage(ctx, "b", "m", up.Version, bytes.NewReader(value("m", n, 30<<10)))
	if err != nil {
		return err
	}
	defer st.Release()
	return s.ApplyPutPart("b", "m", &meta.Part{UploadID: up.UploadID, Number: n, Size: st.Size, Extents: st.Extents}, stamp)
}

// TestApplyPutObjects: several puts of one bucket in one stamped batch
// install all (replacing what was there) or, refused, none.
func TestApplyPutObjects(t *testing.T) {
	s := openStore(t, memOptions(pvfs.NewMem()))
	modified := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	if err := s.ApplyPutBucket(&meta.Bucket{Name: "b", Owner: "o", Created: modified}, true, 1); err != nil {
		t.Fatal(err)
	}
	put := func(bucket, key string, version uint64, data string) *meta.Object {
		return &meta.Object{Bucket: bucket, Key: key, Version: version, Modified: modified, Inline: []byte(data), Size: int64(len(data))}
	}
	if err := s.ApplyPutObject(put("b", "x", 2, "old"), 2); err != nil {
		t.Fatal(err)
	}
	if err := s.ApplyPutObjects([]*meta.Object{put("b", "x", 3, "new x"), put("b", "y", 4, "y")}, 4); err != nil {
		t.Fatal(err)
	}
	for _, refused := range [][]*meta.Object{
		{put("b", "z", 5, "z"), put("b", "z", 6, "z again")},
		{put("b", "z", 5, "z"), put("other", "z", 6, "z")},
		{put("missing", "z", 5, "z"), put("missing", "w", 6, "w")},
	} {
		if err := s.ApplyPutObjects(refused, 6); err == nil {
			t.Fatalf("ApplyPutObjects(%s/%s, %s/%s) succeeded", refused[0].Bucket, refused[0].Key, refused[1].Bucket, refused[1].Key)
		}
	}
	for key, want := range map[string]string{"x": "new x", "y": "y"} {
		if got := readObject(t, s, "b", key); string(got) != want {
			t.Errorf("b/%s = %q, want %q", key, got, want)
		}
	}
	if _, err := s.HeadObject("b", "z"); !errors.Is(err, ErrNoSuchKey) {
		t.Errorf("b/z of a refused batch: %v, want NoSuchKey", err)
	}
	if n, _ := s.Applied(); n != 4 {
		t.Errorf("Applied = %d, want 4", n)
	}
}
