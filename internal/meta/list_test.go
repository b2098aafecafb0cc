package meta

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2"
)

// refList is the brute-force reference for ListObjects: S3's rules applied
// to a sorted slice of every key in the bucket.
func refList(keys []string, o ListOptions) (objects, prefixes []string, truncated bool, next string) {
	limit := clampMax(o.MaxKeys)
	if limit == 0 {
		return nil, nil, false, ""
	}
	count := 0
	seen := map[string]bool{}
	for _, k := range keys { // sorted
		if !strings.HasPrefix(k, o.Prefix) || k <= o.StartAfter {
			continue
		}
		item, isPrefix := k, false
		if o.Delimiter != "" {
			if i := strings.Index(k[len(o.Prefix):], o.Delimiter); i >= 0 {
				item, isPrefix = k[:len(o.Prefix)+i+len(o.Delimiter)], true
				if item <= o.StartAfter || seen[item] {
					continue
				}
				seen[item] = true
			}
		}
		if count == limit {
			return objects, prefixes, true, next
		}
		count++
		next = item
		if isPrefix {
			prefixes = append(prefixes, item)
		} else {
			objects = append(objects, item)
		}
	}
	return objects, prefixes, false, ""
}

func objectKeys(res *ListResult) []string {
	var keys []string
	for _, o := range res.Objects {
		keys = append(keys, o.Key)
	}
	return keys
}

// TestListObjectsExamples pins S3's documented behaviour on a small bucket.
func TestListObjectsExamples(t *testing.T) {
	db := openMem(t)
	keys := []string{"a", "photos/2006/January/sample.jpg", "photos/2006/February/sample2.jpg",
		"photos/2006/February/sample3.jpg", "photos/2006/February/sample4.jpg", "photos/x", "sample.jpg", "z/"}
	commit(t, db, func(b *Batch) {
		for _, k := range keys {
			b.PutObject(sampleObject("bk", k))
		}
		b.PutObject(sampleObject("bk0", "other bucket")) // must never show up
	})
	type want struct {
		objects, prefixes []string
		truncated         bool
		next              string
	}
	for _, tc := range []struct {
		opts ListOptions
		want want
	}{
		{ListOptions{Delimiter: "/", MaxKeys: -1}, want{objects: []string{"a", "sample.jpg"}, prefixes: []string{"photos/", "z/"}}},
		{ListOptions{Prefix: "photos/2006/", Delimiter: "/", MaxKeys: -1},
			want{prefixes: []string{"photos/2006/February/", "photos/2006/January/"}}},
		{ListOptions{Prefix: "photos/2006/", Delimiter: "/", MaxKeys: 1},
			want{prefixes: []string{"photos/2006/February/"}, truncated: true, next: "photos/2006/February/"}},
		{ListOptions{Prefix: "photos/2006/", Delimiter: "/", StartAfter: "photos/2006/February/", MaxKeys: 1},
			want{prefixes: []string{"photos/2006/January/"}}},
		{ListOptions{Prefix: "photos", Delimiter: "/", StartAfter: "photos/2006/February/sample3.jpg"},
			want{}}, // MaxKeys 0
		{ListOptions{Prefix: "photos", Delimiter: "/", StartAfter: "photos/2006/February/sample3.jpg", MaxKeys: 5},
			want{}}, // the only prefix, "photos/", sorts before StartAfter
		{ListOptions{Prefix: "photos/", StartAfter: "photos/2006/February/sample3.jpg", MaxKeys: 2},
			want{objects: []string{"photos/2006/February/sample4.jpg", "photos/2006/January/sample.jpg"}, truncated: true,
				next: "photos/2006/January/sample.jpg"}},
		{ListOptions{Delimiter: "2006/", MaxKeys: 10}, want{objects: []string{"a", "photos/x", "sample.jpg", "z/"},
			prefixes: []string{"photos/2006/"}}},
		{ListOptions{Prefix: "nothing", MaxKeys: 10}, want{}},
		{ListOptions{StartAfter: "z/", MaxKeys: 10}, want{}},
	} {
		res, err := db.ListObjects("bk", tc.opts)
		if err != nil {
			t.Fatalf("%+v: %v", tc.opts, err)
		}
		got := want{objectKeys(res), res.CommonPrefixes, res.IsTruncated, res.NextMarker}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%+v:\n got %+v\nwant %+v", tc.opts, got, tc.want)
		}
	}
}

// TestListObjectsModel compares ListObjects with refList over random key
// sets drawn from awkward bytes, and checks that paging with NextMarker
// reassembles exactly the unpaged listing.
func TestListObjectsModel(t *testing.T) {
	atoms := []string{"a", "b", "/", "//", "\x00", "\xff", "é", "日", "ab", "-", "z"}
	delimiters := []string{"", "/", "ab", "日", "\x00", "\xff", "/a", "a/b"}
	rng := rand.New(rand.NewPCG(1, 2))
	randKey := func() string {
		var sb strings.Builder
		for n := rng.IntN(6); n >= 0; n-- {
			sb.WriteString(atoms[rng.IntN(len(atoms))])
		}
		return sb.String()
	}
	for round := range 12 {
		db := openMem(t)
		set := map[string]bool{}
		commit(t, db, func(b *Batch) {
			for range 50 + rng.IntN(300) {
				k := randKey()
				set[k] = true
				b.PutObject(sampleObject("bk", k))
			}
			b.PutObject(sampleObject("bj", "a")) // neighbouring buckets
			b.PutObject(sampleObject("bk\xff", "a"))
		})
		keys := make([]string, 0, len(set))
		for k := range set {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		pick := func() string { // an existing key, a prefix of one, or random
			switch rng.IntN(4) {
			case 0:
				return ""
			case 1:
				k := keys[rng.IntN(len(keys))]
				return k[:rng.IntN(len(k)+1)]
			case 2:
				return keys[rng.IntN(len(keys))]
			default:
				return randKey()
			}
		}
		for q := range 150 {
			o := ListOptions{Prefix: pick(), Delimiter: delimiters[rng.IntN(len(delimiters))],
				MaxKeys: []int{0, 1, 2, 3, 7, 1000, -1}[rng.IntN(7)]}
			if rng.IntN(3) == 0 {
				o.Prefix = ""
			}
			if o.Delimiter != "" && rng.IntN(3) == 0 {
				o.Prefix += o.Delimiter // prefix ending in the delimiter
			}
			if rng.IntN(2) == 0 {
				o.StartAfter = pick()
				if o.Delimiter != "" && rng.IntN(3) == 0 {
					o.StartAfter = o.Prefix + randKey() + o.Delimiter // possibly a common prefix
				}
			}
			name := fmt.Sprintf("round %d query %d %#v", round, q, o)
			res, err := db.ListObjects("bk", o)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			wantObj, wantPre, wantTrunc, wantNext := refList(keys, o)
			if !slices.Equal(objectKeys(res), wantObj) || !slices.Equal(res.CommonPrefixes, wantPre) ||
				res.IsTruncated != wantTrunc || res.NextMarker != wantNext {
				t.Fatalf("%s:\n got %q %q %v %q\nwant %q %q %v %q", name, objectKeys(res), res.CommonPrefixes,
					res.IsTruncated, res.NextMarker, wantObj, wantPre, wantTrunc, wantNext)
			}
			for _, obj := range res.Objects {
				if obj.Bucket != "bk" || obj.Version != 7 || obj.Size != 1<<20 {
					t.Fatalf("%s: object record %+v", name, obj)
				}
			}
			if o.MaxKeys > 0 && o.MaxKeys < 10 {
				checkPaging(t, db, keys, o, name)
			}
		}
	}
}

// checkPaging pages through a listing with NextMarker and compares the
// concatenation with one unpaged reference listing.
func checkPaging(t *testing.T, db *DB, keys []string, o ListOptions, name string) {
	t.Helper()
	wantObj, wantPre, _, _ := refList(keys, ListOptions{Prefix: o.Prefix, Delimiter: o.Delimiter, StartAfter: o.StartAfter, MaxKeys: -1})
	var gotObj, gotPre []string
	for page := 0; ; page++ {
		if page > len(keys)+2 {
			t.Fatalf("%s: paging does not terminate", name)
		}
		res, err := db.ListObjects("bk", o)
		if err != nil {
			t.Fatal(err)
		}
		if n := len(res.Objects) + len(res.CommonPrefixes); n > o.MaxKeys || (res.IsTruncated && n != o.MaxKeys) {
			t.Fatalf("%s: page of %d entries", name, n)
		}
		gotObj = append(gotObj, objectKeys(res)...)
		gotPre = append(gotPre, res.CommonPrefixes...)
		if !res.IsTruncated {
			break
		}
		o.StartAfter = res.NextMarker
	}
	if len(wantObj) > DefaultMaxKeys {
		return // the reference was cut at 1000 entries
	}
	if !slices.Equal(gotObj, wantObj) || !slices.Equal(gotPre, wantPre) {
		t.Fatalf("%s: paged listing\n got %q %q\nwant %q %q", name, gotObj, gotPre, wantObj, wantPre)
	}
}

// TestListObjectsCostIsPage proves the O(page) claim with pebble's own
// counters: a listing that rolls 20,000 keys up into common prefixes makes
// a number of internal iterator steps bounded by the page, not the bucket.
func TestListObjectsCostIsPage(t *testing.T) {
	db := openMem(t)
	for dir := range 4 {
		commit(t, db, func(b *Batch) {
			for i := range 5000 {
				b.PutObject(sampleObject("bk", fmt.Sprintf("dir%d/%05d", dir, i)))
			}
		})
	}
	commit(t, db, func(b *Batch) { b.PutObject(sampleObject("bk", "top")) })
	if err := db.pdb.Compact(t.Context(), []byte("a"), []byte("z"), false); err != nil {
		t.Fatal(err)
	}
	var stats pebble.IteratorStats
	testHookListStats = func(s pebble.IteratorStats) { stats = s }
	defer func() { testHookListStats = nil }()

	for _, tc := range []struct {
		opts     ListOptions
		entries  int
		maxSteps int
	}{
		{ListOptions{Delimiter: "/", MaxKeys: 1000}, 5, 50},
		{ListOptions{Prefix: "dir2/", StartAfter: "dir2/01000", MaxKeys: 100}, 100, 150},
		{ListOptions{Delimiter: "0", MaxKeys: 1000}, 5, 50},
	} {
		res, err := db.ListObjects("bk", tc.opts)
		if err != nil {
			t.Fatal(err)
		}
		if n := len(res.Objects) + len(res.CommonPrefixes); n != tc.entries {
			t.Fatalf("%+v: %d entries, want %d", tc.opts, n, tc.entries)
		}
		steps := stats.ForwardStepCount[pebble.InternalIterCall] + stats.ForwardSeekCount[pebble.InternalIterCall]
		if steps > tc.maxSteps {
			t.Errorf("%+v: %d internal iterator steps for a page of %d entries", tc.opts, steps, tc.entries)
		}
	}
}
