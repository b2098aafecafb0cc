package objstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	pvfs "github.com/cockroachdb/pebble/v2/vfs"

	"github.com/b3-storage/b3/internal/blob"
	"github.com/b3-storage/b3/internal/meta"
	"github.com/b3-storage/b3/internal/vfs"
)

// Regression tests for defects that lost or misread data: vacuum deciding
// "no owner" on an inconsistent view, vacuum's upload lookup stopping at a
// Go string comparison, readers trusting records they did not check, and
// vacuum's copies left unsynced under --fsync none.

func createUpload(t testing.TB, s *Store, key string) *meta.Upload {
	t.Helper()
	up, err := s.CreateUpload(&meta.Upload{Bucket: "b", Key: key})
	if err != nil {
		t.Fatalf("create upload %q: %v", key, err)
	}
	return up
}

func putPart(t testing.TB, s *Store, key, uploadID string, n int, data []byte) {
	t.Helper()
	if _, err := s.PutPart(context.Background(), "b", key, uploadID, n, bytes.NewReader(data), nil); err != nil {
		t.Fatalf("put part %d of %q: %v", n, key, err)
	}
}

func completeUpload(s *Store, key, uploadID string, numbers ...int) error {
	_, err := s.CompleteUpload("b", key, uploadID, numbers, func(*meta.Upload, []*meta.Part) (*meta.Object, error) {
		return &meta.Object{ETag: "multipart"}, nil
	}, nil)
	return err
}

// fillDead appends a large object next to what was written last, deletes
// it and starts a new segment, so that the segment holding the last
// writes passes memOptions' vacuum threshold and is sealed.
func fillDead(t testing.TB, s *Store) {
	t.Helper()
	put(t, s, "b", "filler", value("filler", 0, 40<<10))
	if _, err := s.DeleteObject("b", "filler"); err != nil {
		t.Fatal(err)
	}
	put(t, s, "b", "tail", value("tail", 0, 30<<10))
}

// TestVacuumSeesUploadCompletedDuringLookup completes a multipart upload
// right after vacuum read the key's object record while looking for the
// owner of the part's records: the part must move, or stay, but the
// segment must not be removed from under the new object.
func TestVacuumSeesUploadCompletedDuringLookup(t *testing.T) {
	s := openStore(t, memOptions(vfs.NewCrashableMem()))
	defer s.Close()
	ensureBucket(t, s, "b")
	up := createUpload(t, s, "k")
	part := value("k", 1, 8<<10)
	putPart(t, s, "k", up.UploadID, 1, part)
	fillDead(t, s)

	var once sync.Once
	testHookReferences = func(bucket, key string) {
		if key == "k" {
			once.Do(func() {
				if err := completeUpload(s, "k", up.UploadID, 1); err != nil {
					t.Errorf("complete during vacuum: %v", err)
				}
			})
		}
	}
	defer func() { testHookReferences = nil }()
	res, err := s.Vacuum(context.Background(), 0.3)
	if err != nil || res.SegmentsRemoved == 0 {
		t.Fatalf("vacuum: %+v, %v", res, err)
	}
	got, err := read(s, "b", "k")
	if err != nil || !bytes.Equal(got, part) {
		t.Fatalf("object completed during vacuum: %v", err)
	}
}

// TestVacuumFindsPartsBesideNULKeys: pebble orders the uploads of key
// K+0x00+c (c < '0') before those of K, while K+0x00+c > K as strings.
// More than a page of them must not hide K's parts from vacuum.
func TestVacuumFindsPartsBesideNULKeys(t *testing.T) {
	for _, c := range []struct{ crowd, key string }{
		{"a\x00\x01", "a"},
		{"\xff\x00/", "\xff"},
		{"\x00\x00", "\x00"},
	} {
		t.Run(fmt.Sprintf("%q", c.key), func(t *testing.T) {
			s := openStore(t, memOptions(vfs.NewCrashableMem()))
			defer s.Close()
			ensureBucket(t, s, "b")
			for range 1001 {
				createUpload(t, s, c.crowd)
			}
			up := createUpload(t, s, c.key)
			part := value(c.key, 1, 8<<10)
			putPart(t, s, c.key, up.UploadID, 1, part)
			fillDead(t, s)
			res, err := s.Vacuum(context.Background(), 0.3)
			if err != nil || res.SegmentsRemoved == 0 {
				t.Fatalf("vacuum: %+v, %v", res, err)
			}
			if err := completeUpload(s, c.key, up.UploadID, 1); err != nil {
				t.Fatal(err)
			}
			got, err := read(s, "b", c.key)
			if err != nil || !bytes.Equal(got, part) {
				t.Fatalf("object completed after vacuum: %v", err)
			}
		})
	}
}

// TestReaderChecksOwnerAndOffset points an object's record at records
// that are not its value's: another key's of the same size, or its own
// in the wrong order. A read must fail as corrupt and be counted, never
// return the bytes.
func TestReaderChecksOwnerAndOffset(t *testing.T) {
	const size = 3*4<<10 + 100 // four records
	for _, c := range []struct {
		name    string
		extents func(x, y *meta.Object) []meta.Extent
	}{
		{"another key's records", func(x, y *meta.Object) []meta.Extent { return y.Extents }},
		{"own records, second one first", func(x, y *meta.Object) []meta.Extent {
			e := x.Extents[0]
			first := int64(32 + len(ownerKey("b", "x")) + 4<<10) // one record
			return []meta.Extent{
				{Segment: e.Segment, Offset: e.Offset + first, Length: e.Length - first, Size: e.Size - 4<<10},
				{Segment: e.Segment, Offset: e.Offset, Length: first, Size: 4 << 10},
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := openStore(t, memOptions(vfs.NewCrashableMem()))
			defer s.Close()
			ensureBucket(t, s, "b")
			put(t, s, "b", "x", value("x", 1, size))
			put(t, s, "b", "y", value("y", 1, size))
			x, err := s.HeadObject("b", "x")
			if err != nil {
				t.Fatal(err)
			}
			y, err := s.HeadObject("b", "y")
			if err != nil {
				t.Fatal(err)
			}
			if len(x.Extents) != 1 {
				t.Fatalf("x has %d extents, the test wants one", len(x.Extents))
			}
			x.Extents = c.extents(x, y)
			b := s.meta.NewBatch()
			b.PutObject(x)
			if err := b.Commit(); err != nil {
				t.Fatal(err)
			}
			b.Close()
			before := s.blob.Stats().CorruptRecords
			got, err := read(s, "b", "x")
			if !errors.Is(err, blob.ErrCorrupt) {
				t.Fatalf("read of misdirected records: %d bytes, err %v; want ErrCorrupt", len(got), err)
			}
			if s.blob.Stats().CorruptRecords == before {
				t.Fatal("the mismatch was not counted")
			}
			// A range read starting inside the value checks too.
			_, r, err := s.OpenObject(context.Background(), "b", "x", func(*meta.Object) (int64, int64, error) { return 5000, 100, nil })
			if err == nil {
				_, err = r.Read(make([]byte, 100))
				r.Close()
			}
			if !errors.Is(err, blob.ErrCorrupt) {
				t.Fatalf("range read of misdirected records: %v; want ErrCorrupt", err)
			}
		})
	}
}

// TestVacuumUnderSyncNoneKeepsOldObjects: "none" may lose recent writes,
// never old ones. Vacuum moves durable objects; a crash right after the
// pass must find each of them, at its copy or at the original.
func TestVacuumUnderSyncNoneKeepsOldObjects(t *testing.T) {
	mem := vfs.NewCrashableMem()
	opts := memOptions(mem)
	opts.Sync = blob.SyncNone
	s := openStore(t, opts)
	ensureBucket(t, s, "b")
	const n = 40
	for i := range n {
		put(t, s, "b", fmt.Sprint(i), value("old", i, 8<<10))
	}
	for i := 0; i < n; i += 2 {
		if _, err := s.DeleteObject("b", fmt.Sprint(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil { // everything is durable from here on
		t.Fatal(err)
	}
	s = openStore(t, opts)
	res, err := s.Vacuum(context.Background(), 0.3)
	if err != nil || res.SegmentsRemoved == 0 {
		t.Fatalf("vacuum: %+v, %v", res, err)
	}
	crashed := mem.CrashClone(pvfs.CrashCloneCfg{})
	_ = s.Close()
	opts = memOptions(crashed)
	opts.Sync = blob.SyncNone
	s = openStore(t, opts)
	defer s.Close()
	for i := 1; i < n; i += 2 {
		got, err := read(s, "b", fmt.Sprint(i))
		if err != nil || !bytes.Equal(got, value("old", i, 8<<10)) {
			t.Fatalf("old object %d after vacuum and crash: %v", i, err)
		}
	}
}

// TestVacuumRacesMultipartCompletion runs vacuum passes and multipart
// completions of the same key at the same time, over and over, with idle
// uploads of the key and of a key pebble orders among them: whichever
// wins, the completed object reads back whole.
func TestVacuumRacesMultipartCompletion(t *testing.T) {
	s := openStore(t, memOptions(vfs.NewCrashableMem()))
	defer s.Close()
	ensureBucket(t, s, "b")
	for i := range 300 {
		createUpload(t, s, [...]string{"k", "k\x00\x01"}[i%2])
	}
	removed := 0
	for i := range 60 {
		up := createUpload(t, s, "k")
		part := value("k", i, 8<<10)
		putPart(t, s, "k", up.UploadID, 1, part)
		fillDead(t, s)
		var wg sync.WaitGroup
		wg.Go(func() {
			res, err := s.Vacuum(context.Background(), 0.3)
			if err != nil {
				t.Errorf("vacuum: %v", err)
			}
			removed += res.SegmentsRemoved
		})
		if err := completeUpload(s, "k", up.UploadID, 1); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
		got, err := read(s, "b", "k")
		if err != nil || !bytes.Equal(got, part) {
			t.Fatalf("round %d: object completed during vacuum: %v", i, err)
		}
	}
	if removed == 0 {
		t.Fatal("vacuum removed no segment: the test exercised nothing")
	}
}
