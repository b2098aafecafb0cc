package meta

import (
	"errors"
	"testing"
)

// TestViewUploadOf finds each upload by its version among uploads of keys
// that pebble interleaves with it: keys extending it with 0x00, even one
// whose next bytes spell the version's hex digits.
func TestViewUploadOf(t *testing.T) {
	db := openMem(t)
	keys := []string{"a", "a\x00", "a\x00\x01", "a\x000000000000000005", "\x00", "\xff", "\xff\x00\xff", ""}
	var ups []*Upload
	commit(t, db, func(b *Batch) {
		for i, k := range keys {
			for j := range 3 {
				v := uint64(i*3+j) + 1
				u := &Upload{Bucket: "b", Key: k, UploadID: NewUploadID(v), Version: v}
				b.PutUpload(u)
				ups = append(ups, u)
				b.PutPart(&Part{UploadID: u.UploadID, Number: 1, Size: int64(v)})
			}
		}
	})
	v := db.NewView()
	// Committed after the view: not seen by it.
	late := &Upload{Bucket: "b", Key: "a", UploadID: NewUploadID(100), Version: 100}
	commit(t, db, func(b *Batch) { b.PutUpload(late); b.DeleteUpload("b", ups[0].Key, ups[0].UploadID) })
	for _, u := range ups {
		got, err := v.UploadOf("b", u.Key, u.Version)
		if err != nil || got.UploadID != u.UploadID || got.Key != u.Key {
			t.Fatalf("UploadOf(%q, %d) = %+v, %v", u.Key, u.Version, got, err)
		}
		parts, err := v.AllParts(u.UploadID)
		if err != nil || len(parts) != 1 || parts[0].Size != int64(u.Version) {
			t.Fatalf("AllParts(%s) = %v, %v", u.UploadID, parts, err)
		}
		for _, other := range keys {
			if other == u.Key {
				continue
			}
			if got, err := v.UploadOf("b", other, u.Version); !errors.Is(err, ErrNotFound) {
				t.Fatalf("UploadOf(%q, %d) found %+v (%v): the upload is %q's", other, u.Version, got, err, u.Key)
			}
		}
	}
	if _, err := v.UploadOf("b", "a", 100); !errors.Is(err, ErrNotFound) {
		t.Fatalf("the view sees an upload committed after it: %v", err)
	}
	if err := v.Close(); err != nil {
		t.Fatal(err)
	}
	v = db.NewView()
	defer v.Close()
	if _, err := v.UploadOf("b", ups[0].Key, ups[0].Version); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a new view still sees a deleted upload: %v", err)
	}
}
