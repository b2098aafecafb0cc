package meta

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func TestUploadIDs(t *testing.T) {
	a, b := NewUploadID(1), NewUploadID(1)
	if a == b || !ValidUploadID(a) || len(a) != UploadIDLen {
		t.Fatalf("NewUploadID: %q %q", a, b)
	}
	if NewUploadID(2) <= NewUploadID(1) || NewUploadID(256) <= NewUploadID(255) {
		t.Fatal("upload IDs do not sort by version")
	}
	for _, bad := range []string{"", "xyz", strings.Repeat("A", 32), strings.Repeat("0", 31), strings.Repeat("0", 33),
		strings.Repeat("0", 31) + "\x00"} {
		if ValidUploadID(bad) {
			t.Errorf("ValidUploadID(%q) = true", bad)
		}
	}
}

func TestUploadAndParts(t *testing.T) {
	db := openMem(t)
	u := fullUpload()
	other := &Upload{Bucket: u.Bucket, Key: u.Key, UploadID: NewUploadID(43), Version: 43}
	commit(t, db, func(b *Batch) {
		b.PutUpload(u)
		b.PutUpload(other)
		for n := 1; n <= 25; n++ {
			b.PutPart(&Part{UploadID: u.UploadID, Number: n * 400, Size: int64(n), ETag: fmt.Sprint(n),
				Extents: []Extent{{Segment: uint64(n)}}})
		}
		b.PutPart(&Part{UploadID: other.UploadID, Number: 1, Size: 99})
	})
	got, err := db.GetUpload(u.Bucket, u.Key, u.UploadID)
	if err != nil || !reflect.DeepEqual(got, u) {
		t.Fatalf("GetUpload = %+v, %v", got, err)
	}
	if _, err := db.GetUpload(u.Bucket, u.Key+"x", u.UploadID); !errors.Is(err, ErrNotFound) {
		t.Fatalf("upload under another key: err = %v", err)
	}
	if _, err := db.GetUpload(u.Bucket, u.Key, "nonsense"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("malformed ID: err = %v", err)
	}
	p, err := db.GetPart(u.UploadID, 4000)
	if err != nil || p.Size != 10 || p.Number != 4000 || p.Extents[0].Segment != 10 {
		t.Fatalf("GetPart = %+v, %v", p, err)
	}
	for _, n := range []int{0, 1, 10001} {
		if _, err := db.GetPart(u.UploadID, n); !errors.Is(err, ErrNotFound) {
			t.Errorf("GetPart(%d): err = %v", n, err)
		}
	}

	// Page through the parts 7 at a time from several markers.
	for _, marker := range []int{-5, 0, 399, 400, 9999, 10000} {
		var numbers []int
		for page := 0; ; page++ {
			parts, truncated, err := db.ListParts(u.UploadID, marker, 7)
			if err != nil || len(parts) > 7 || (truncated && len(parts) != 7) || page > 5 {
				t.Fatalf("ListParts(%d): %d parts, %v, %v", marker, len(parts), truncated, err)
			}
			for _, p := range parts {
				numbers = append(numbers, p.Number)
				marker = p.Number
			}
			if !truncated {
				break
			}
		}
		for i, n := range numbers {
			if n%400 != 0 || (i > 0 && n <= numbers[i-1]) {
				t.Fatalf("ListParts numbers %v", numbers)
			}
		}
	}
	all, err := db.AllParts(u.UploadID)
	if err != nil || len(all) != 25 || all[24].Number != 10000 {
		t.Fatalf("AllParts: %d parts, %v", len(all), err)
	}

	if empty, err := db.BucketEmpty(u.Bucket); !empty || err != nil {
		t.Fatalf("BucketEmpty with uploads only = %v, %v", empty, err)
	}
	commit(t, db, func(b *Batch) { b.DeleteUpload(u.Bucket, u.Key, u.UploadID) })
	if _, err := db.GetUpload(u.Bucket, u.Key, u.UploadID); !errors.Is(err, ErrNotFound) {
		t.Fatalf("deleted upload: err = %v", err)
	}
	if parts, _, err := db.ListParts(u.UploadID, 0, 1000); len(parts) != 0 || err != nil {
		t.Fatalf("parts of deleted upload: %d, %v", len(parts), err)
	}
	if parts, _ := db.AllParts(other.UploadID); len(parts) != 1 || parts[0].Size != 99 {
		t.Fatalf("the other upload's parts were touched: %+v", parts)
	}
	var scanned []*Part
	if err := db.ScanParts(func(p *Part) error { scanned = append(scanned, p); return nil }); err != nil ||
		len(scanned) != 1 || scanned[0].UploadID != other.UploadID {
		t.Fatalf("ScanParts = %+v, %v", scanned, err)
	}
	commit(t, db, func(b *Batch) { b.DeleteUpload(other.Bucket, other.Key, other.UploadID) })
	if empty, err := db.BucketEmpty(u.Bucket); !empty || err != nil {
		t.Fatalf("BucketEmpty after aborts = %v, %v", empty, err)
	}
	commit(t, db, func(b *Batch) { b.PutObject(sampleObject(u.Bucket, "k")) })
	if empty, err := db.BucketEmpty(u.Bucket); empty || err != nil {
		t.Fatalf("BucketEmpty with an object = %v, %v", empty, err)
	}
}

type uploadRef struct{ key, id string }

// refUploads is the reference for ListUploads over uploads sorted in
// (key, uploadID) order, valid for keys without 0x00.
func refUploads(all []uploadRef, o UploadListOptions) (ups []uploadRef, prefixes []string, truncated bool) {
	limit := o.MaxUploads
	if limit <= 0 || limit > 1000 {
		limit = 1000
	}
	seen := map[string]bool{}
	for _, u := range all {
		if !strings.HasPrefix(u.key, o.Prefix) {
			continue
		}
		if o.KeyMarker != "" && (u.key < o.KeyMarker || (u.key == o.KeyMarker && (o.UploadIDMarker == "" || u.id <= o.UploadIDMarker))) {
			continue
		}
		if o.Delimiter != "" {
			if i := strings.Index(u.key[len(o.Prefix):], o.Delimiter); i >= 0 {
				cp := u.key[:len(o.Prefix)+i+len(o.Delimiter)]
				if cp <= o.KeyMarker || seen[cp] {
					continue
				}
				seen[cp] = true
				if len(ups)+len(prefixes) == limit {
					return ups, prefixes, true
				}
				prefixes = append(prefixes, cp)
				continue
			}
		}
		if len(ups)+len(prefixes) == limit {
			return ups, prefixes, true
		}
		ups = append(ups, u)
	}
	return ups, prefixes, false
}

func TestListUploadsModel(t *testing.T) {
	db := openMem(t)
	rng := rand.New(rand.NewPCG(5, 6))
	atoms := []string{"a", "b", "/", "日", "\xff", "-"}
	var all []uploadRef
	commit(t, db, func(b *Batch) {
		for v := range 300 {
			var sb strings.Builder
			for n := rng.IntN(4); n >= 0; n-- {
				sb.WriteString(atoms[rng.IntN(len(atoms))])
			}
			u := &Upload{Bucket: "bk", Key: sb.String(), UploadID: NewUploadID(uint64(v + 1)), Version: uint64(v + 1)}
			b.PutUpload(u)
			all = append(all, uploadRef{u.Key, u.UploadID})
		}
		b.PutUpload(&Upload{Bucket: "bk0", Key: "a", UploadID: NewUploadID(1)})
	})
	slices.SortFunc(all, func(x, y uploadRef) int {
		return strings.Compare(x.key+"\x00"+x.id, y.key+"\x00"+y.id)
	})
	for q := range 200 {
		o := UploadListOptions{Delimiter: []string{"", "/", "日", "a/"}[rng.IntN(4)], MaxUploads: []int{0, 1, 3, 10}[rng.IntN(4)]}
		if rng.IntN(2) == 0 {
			o.Prefix = all[rng.IntN(len(all))].key[:1]
		}
		if rng.IntN(2) == 0 {
			m := all[rng.IntN(len(all))]
			o.KeyMarker = m.key
			if rng.IntN(2) == 0 {
				o.UploadIDMarker = m.id
			}
		}
		// Page through and compare with the reference, page by page.
		for page := 0; ; page++ {
			res, err := db.ListUploads("bk", o)
			if err != nil {
				t.Fatal(err)
			}
			wantUps, wantPre, wantTrunc := refUploads(all, o)
			var gotUps []uploadRef
			for _, u := range res.Uploads {
				if u.Bucket != "bk" || u.Version == 0 {
					t.Fatalf("upload record %+v", u)
				}
				gotUps = append(gotUps, uploadRef{u.Key, u.UploadID})
			}
			if !reflect.DeepEqual(gotUps, wantUps) || !slices.Equal(res.CommonPrefixes, wantPre) || res.IsTruncated != wantTrunc {
				t.Fatalf("query %d page %d %#v:\n got %q %q %v\nwant %q %q %v", q, page, o,
					gotUps, res.CommonPrefixes, res.IsTruncated, wantUps, wantPre, wantTrunc)
			}
			if !res.IsTruncated {
				break
			}
			o.KeyMarker, o.UploadIDMarker = res.NextKeyMarker, res.NextUploadIDMarker
		}
	}
	var n int
	if err := db.ScanUploads("bk", func(*Upload) error { n++; return nil }); err != nil || n != len(all) {
		t.Fatalf("ScanUploads: %d of %d, %v", n, len(all), err)
	}
	if err := db.ScanUploads("", func(*Upload) error { n++; return nil }); err != nil || n != 2*len(all)+1 {
		t.Fatalf("ScanUploads all buckets: %d, %v", n-len(all), err)
	}
	stop := errors.New("stop")
	if err := db.ScanUploads("bk", func(*Upload) error { return stop }); err != stop {
		t.Fatalf("ScanUploads callback error returned as %v", err)
	}
}

func TestScanObjects(t *testing.T) {
	db := openMem(t)
	commit(t, db, func(b *Batch) {
		for _, k := range []string{"a/1", "a/2", "b/1"} {
			b.PutObject(sampleObject("x", k))
			b.PutObject(sampleObject("y", k))
		}
	})
	collect := func(bucket, prefix string) []string {
		var got []string
		if err := db.ScanObjects(bucket, prefix, func(o *Object) error {
			got = append(got, o.Bucket+":"+o.Key)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return got
	}
	if got := collect("x", "a/"); !slices.Equal(got, []string{"x:a/1", "x:a/2"}) {
		t.Errorf("ScanObjects(x, a/) = %q", got)
	}
	if got := collect("", "b"); !slices.Equal(got, []string{"x:b/1", "y:b/1"}) {
		t.Errorf("ScanObjects(all, b) = %q", got)
	}
	stop := errors.New("stop")
	calls := 0
	err := db.ScanObjects("x", "", func(*Object) error { calls++; return stop })
	if err != stop || calls != 1 {
		t.Fatalf("callback error: %v after %d calls", err, calls)
	}
}

// TestListUploadsPagesNULKeys: with keys holding 0x00 (whose uploads
// pebble orders before those of shorter keys they extend), paging with
// the Next markers still returns every upload and every common prefix
// exactly once, whatever the page size and delimiter.
func TestListUploadsPagesNULKeys(t *testing.T) {
	for seed := range uint64(4) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { listUploadsNUL(t, seed) })
	}
}

func listUploadsNUL(t *testing.T, seed uint64) {
	db := openMem(t)
	rng := rand.New(rand.NewPCG(seed, 9))
	// "00000000000000" after a 0x00 spells the start of the upload IDs of
	// the shorter key (versions in hex): their uploads interleave.
	atoms := []string{"a", "\x00", "\x00\x01", "/", "\xff", "0", "\x0000000000000000"}
	uploads := map[uploadRef]bool{}
	commit(t, db, func(b *Batch) {
		for v := range 300 {
			var sb strings.Builder
			for n := rng.IntN(4); n >= 0; n-- {
				sb.WriteString(atoms[rng.IntN(len(atoms))])
			}
			u := &Upload{Bucket: "bk", Key: sb.String(), UploadID: NewUploadID(uint64(v + 1)), Version: uint64(v + 1)}
			b.PutUpload(u)
			uploads[uploadRef{u.Key, u.UploadID}] = true
		}
	})
	for _, delim := range []string{"", "/", "\x00", "a\x00", "\x000"} {
		for _, prefix := range []string{"", "a", "\x00", "a\x00", "a\x000"} {
			for _, size := range []int{1, 2, 7, 1000} {
				wantUps, wantPre := map[uploadRef]bool{}, map[string]bool{}
				for u := range uploads {
					if !strings.HasPrefix(u.key, prefix) {
						continue
					}
					if i := strings.Index(u.key[len(prefix):], delim); delim != "" && i >= 0 {
						wantPre[u.key[:len(prefix)+i+len(delim)]] = true
					} else {
						wantUps[u] = true
					}
				}
				gotUps, gotPre := map[uploadRef]bool{}, map[string]bool{}
				o := UploadListOptions{Prefix: prefix, Delimiter: delim, MaxUploads: size}
				for {
					res, err := db.ListUploads("bk", o)
					if err != nil {
						t.Fatal(err)
					}
					for _, u := range res.Uploads {
						r := uploadRef{u.Key, u.UploadID}
						if gotUps[r] {
							t.Fatalf("%q/%q/%d: upload %q listed twice", prefix, delim, size, r)
						}
						gotUps[r] = true
					}
					for _, cp := range res.CommonPrefixes {
						if gotPre[cp] {
							t.Fatalf("%q/%q/%d: prefix %q listed twice", prefix, delim, size, cp)
						}
						gotPre[cp] = true
					}
					if !res.IsTruncated {
						break
					}
					o.KeyMarker, o.UploadIDMarker = res.NextKeyMarker, res.NextUploadIDMarker
				}
				if !reflect.DeepEqual(gotUps, wantUps) || !reflect.DeepEqual(gotPre, wantPre) {
					t.Fatalf("prefix %q delimiter %q page %d: got %d uploads %d prefixes, want %d and %d",
						prefix, delim, size, len(gotUps), len(gotPre), len(wantUps), len(wantPre))
				}
			}
		}
	}
}
