package meta

import (
	"fmt"
	"slices"
	"testing"
)

// TestScanRecordsAfter: current records, then the version table, in key
// order (keys with NUL bytes included); a scan resumed after any record's
// position yields exactly the records after it, and one after the last
// yields none.
func TestScanRecordsAfter(t *testing.T) {
	db := openMem(t)
	commit(t, db, func(b *Batch) {
		for _, k := range []string{"a", "a\x00b", "b"} {
			b.PutObject(&Object{Bucket: "bk", Key: k, Version: 10})
		}
		b.PutObject(&Object{Bucket: "bk2", Key: "z", Version: 11})
		for v := uint64(1); v <= 3; v++ {
			b.PutVersion(&Object{Bucket: "bk", Key: "a", Version: v, Versioned: true})
		}
		b.PutVersion(&Object{Bucket: "bk", Key: "a\x00", Version: 4, Versioned: true})
	})
	scan := func(after []byte) (names []string, positions [][]byte) {
		t.Helper()
		view := db.NewView()
		defer view.Close()
		err := view.ScanRecordsAfter(after, func(pos []byte, o *Object) error {
			names = append(names, fmt.Sprintf("%s/%q@%d", o.Bucket, o.Key, o.Version))
			positions = append(positions, pos)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return names, positions
	}
	all, positions := scan(nil)
	want := []string{`bk/"a"@10`, `bk/"a\x00b"@10`, `bk/"b"@10`, `bk2/"z"@11`,
		`bk/"a"@3`, `bk/"a"@2`, `bk/"a"@1`, `bk/"a\x00"@4`}
	if !slices.Equal(all, want) {
		t.Fatalf("scan: %q\nwant %q", all, want)
	}
	for i, pos := range positions {
		if rest, _ := scan(pos); !slices.Equal(rest, all[i+1:]) {
			t.Errorf("after %s: %q, want %q", all[i], rest, all[i+1:])
		}
	}
}

// TestReadAfter: reading the whole index in small steps, each resumed
// after the last key read, reads every key once.
func TestReadAfter(t *testing.T) {
	db := openMem(t)
	commit(t, db, func(b *Batch) {
		for i := range 25 {
			b.PutObject(&Object{Bucket: "bk", Key: fmt.Sprintf("k%02d\x00", i), Version: 1})
		}
	})
	all, _, _, err := db.ReadAfter(nil, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	_, total, _, _ := db.ReadAfter(nil, 1<<20)
	var after []byte
	seen := 0
	for {
		last, n, _, err := db.ReadAfter(after, 4)
		if err != nil {
			t.Fatal(err)
		}
		seen += n
		if n < 4 {
			break
		}
		after = last
	}
	if seen != total || total < 25 || all == nil {
		t.Fatalf("read %d keys in steps, %d at once", seen, total)
	}
}
