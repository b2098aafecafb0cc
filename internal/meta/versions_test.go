package meta

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// Version keys order keys by their bytes (NULs included) and one key's
// versions newest first, and parse back.
func TestVersionKeyOrder(t *testing.T) {
	keys := []string{"", "\x00", "\x00\x00", "\x00\x01", "a", "a\x00", "a\x00\x00", "a\x00\xff", "a\x01", "a/b", "ab", "\xff"}
	var enc [][]byte
	for _, k := range keys {
		for _, v := range []uint64{^uint64(0), 1 << 40, 7, 1} {
			full := noncurrentKey("b", k, v)
			enc = append(enc, full)
			key, version, ok := parseVersionSuffix(full[len(versionPrefix("b")):])
			if !ok || key != k || version != v {
				t.Fatalf("parse %q v%d: %q %d %v", k, v, key, version, ok)
			}
		}
	}
	if !slices.IsSortedFunc(enc, bytes.Compare) {
		t.Fatal("version keys do not sort by (key bytes, newest first)")
	}
	for _, bad := range []string{"", "a", "a\x00\x01", "a\x00\x02xxxxxxxx", "a\x00b\x00\x01xxxxxxxx"} {
		if _, _, ok := parseVersionSuffix([]byte(bad)); ok {
			t.Errorf("parsed malformed suffix %q", bad)
		}
	}
}

// listModel is every version of a bucket as ListVersions must return it.
type listModel struct {
	key     string
	version uint64
	current bool // in "o"
	latest  bool
}

// ListVersions pages through random histories (keys with NUL bytes and
// slashes, current records and versions) exactly as a model sorted in
// memory: every page size, with and without delimiter and prefix.
func TestListVersionsMatchesModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := []string{"a", "b", "/", "\x00", "\xff"}
	for round := range 20 {
		db := openMem(t)
		var model []listModel
		seen := map[string]bool{}
		version := uint64(1)
		commit(t, db, func(b *Batch) {
			for range 30 {
				var sb strings.Builder
				for range 1 + rng.IntN(4) {
					sb.WriteString(alphabet[rng.IntN(len(alphabet))])
				}
				key := sb.String()
				if seen[key] {
					continue
				}
				seen[key] = true
				n := 1 + rng.IntN(4)
				hasCurrent := rng.IntN(3) > 0
				var vs []listModel
				for i := range n {
					version += uint64(1 + rng.IntN(3))
					vs = append(vs, listModel{key: key, version: version, current: hasCurrent && i == n-1})
				}
				slices.Reverse(vs) // newest first
				vs[0].latest = true
				for _, v := range vs {
					o := &Object{Bucket: "bk", Key: key, Version: v.version, Versioned: true, DeleteMarker: !v.current && v.latest}
					if v.current {
						b.PutObject(o)
					} else {
						b.PutVersion(o)
					}
				}
				model = append(model, vs...)
			}
		})
		slices.SortStableFunc(model, func(a, b listModel) int { return strings.Compare(a.key, b.key) })
		for _, delim := range []string{"", "/", "\x00"} {
			for _, prefix := range []string{"", "a", "\x00"} {
				for _, pageSize := range []int{1, 2, 3, 7, 1000} {
					want := modelPage(model, prefix, delim)
					got := pageAll(t, db, VersionListOptions{Prefix: prefix, Delimiter: delim, MaxKeys: pageSize})
					if !reflect.DeepEqual(got, want) {
						t.Fatalf("round %d prefix %q delim %q page %d:\n got %q\nwant %q", round, prefix, delim, pageSize, got, want)
					}
				}
			}
		}
		// Delete markers in the version table decode as such.
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

func modelPage(model []listModel, prefix, delim string) []string {
	var out []string
	lastCP := ""
	for _, v := range model {
		if !strings.HasPrefix(v.key, prefix) {
			continue
		}
		if delim != "" {
			if i := strings.Index(v.key[len(prefix):], delim); i >= 0 {
				cp := v.key[:len(prefix)+i+len(delim)]
				if cp != lastCP {
					out = append(out, "CP "+cp)
					lastCP = cp
				}
				continue
			}
		}
		out = append(out, fmt.Sprintf("%q %d %v", v.key, v.version, v.latest))
	}
	return out
}

func pageAll(t *testing.T, db *DB, o VersionListOptions) []string {
	t.Helper()
	var out []string
	for pages := 0; ; pages++ {
		if pages > 1000 {
			t.Fatal("listing does not end")
		}
		res, err := db.ListVersions("bk", o)
		if err != nil {
			t.Fatal(err)
		}
		// Versions and prefixes interleave by key; rebuild that order.
		type entry struct {
			key string
			s   string
		}
		var es []entry
		for _, v := range res.Versions {
			es = append(es, entry{v.Key, fmt.Sprintf("%q %d %v", v.Key, v.Version, v.IsLatest)})
		}
		for _, cp := range res.CommonPrefixes {
			es = append(es, entry{cp, "CP " + cp})
		}
		slices.SortStableFunc(es, func(a, b entry) int { return strings.Compare(a.key, b.key) })
		for _, e := range es {
			out = append(out, e.s)
		}
		if len(es) > max(o.MaxKeys, 0) {
			t.Fatalf("page of %d entries for max %d", len(es), o.MaxKeys)
		}
		if !res.IsTruncated {
			return out
		}
		o.KeyMarker, o.VersionMarker = res.NextKeyMarker, res.NextVersionMarker
	}
}

// The version table's records come back with their versions, and KeyVersions
// reads one key's newest first, stopping when asked.
func TestGetAndKeyVersions(t *testing.T) {
	db := openMem(t)
	commit(t, db, func(b *Batch) {
		for v := uint64(1); v <= 5; v++ {
			b.PutVersion(&Object{Bucket: "bk", Key: "k", Version: v, Versioned: v != 3, DeleteMarker: v == 5})
		}
		b.PutVersion(&Object{Bucket: "bk", Key: "k\x00", Version: 9})
	})
	got, err := db.GetVersion("bk", "k", 3)
	if err != nil || got.Version != 3 || got.Versioned {
		t.Fatalf("get version 3: %+v %v", got, err)
	}
	if _, err := db.GetVersion("bk", "k", 6); !errors.Is(err, ErrNotFound) {
		t.Fatalf("missing version: %v", err)
	}
	var order []uint64
	err = db.KeyVersions("bk", "k", func(o *Object) (bool, error) {
		order = append(order, o.Version)
		return o.Version != 2, nil
	})
	if err != nil || !slices.Equal(order, []uint64{5, 4, 3, 2}) {
		t.Fatalf("key versions: %v %v", order, err)
	}
	if empty, err := db.BucketEmpty("bk"); err != nil || empty {
		t.Fatalf("a bucket holding only versions is empty: %v %v", empty, err)
	}
}

// TestListVersionsCurrentNumberedLow: the current record may carry a
// smaller version number than a noncurrent one (two writes of one key
// overlapping in time, or a multipart upload completed after a later
// put). Paging one version at a time lists every version exactly once,
// the current first, with IsLatest on it alone.
func TestListVersionsCurrentNumberedLow(t *testing.T) {
	db := openMem(t)
	commit(t, db, func(b *Batch) {
		b.PutObject(&Object{Bucket: "bk", Key: "k", Version: 5, Versioned: true})
		for _, v := range []uint64{4, 6, 7} {
			b.PutVersion(&Object{Bucket: "bk", Key: "k", Version: v, Versioned: true})
		}
		b.PutObject(&Object{Bucket: "bk", Key: "l", Version: 1, Versioned: true})
	})
	var got []string
	opts := VersionListOptions{MaxKeys: 1}
	for page := 0; page < 10; page++ {
		res, err := db.ListVersions("bk", opts)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range res.Versions {
			got = append(got, fmt.Sprintf("%s/%d/%v", v.Key, v.Version, v.IsLatest))
		}
		if !res.IsTruncated {
			break
		}
		opts.KeyMarker, opts.VersionMarker = res.NextKeyMarker, res.NextVersionMarker
	}
	want := []string{"k/5/true", "k/7/false", "k/6/false", "k/4/false", "l/1/true"}
	if !slices.Equal(got, want) {
		t.Fatalf("paged versions %v, want %v", got, want)
	}
}
