package blob

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/b3-storage/b3/internal/vfs"
)

// sweepVerdict runs CheckSegment over every segment and answers for
// CheckValue from what it found, as package scrub does.
func sweepVerdict(t *testing.T, s *Store) (PayloadVerdict, []SegmentCheck) {
	t.Helper()
	found := map[uint64]SegmentCheck{}
	var all []SegmentCheck
	for _, seg := range s.Segments() {
		res, err := s.CheckSegment(context.Background(), seg.ID)
		if err != nil {
			t.Fatalf("CheckSegment %d: %v", seg.ID, err)
		}
		found[seg.ID] = res
		all = append(all, res)
	}
	return func(segment uint64, off int64) (bool, bool) {
		res, ok := found[segment]
		if !ok || off >= res.End {
			return false, false
		}
		return true, slices.Contains(res.BadPayloads, off)
	}, all
}

// TestCheckFindsDamage: each way a segment goes bad is found by the
// sweeps, and reported for exactly the values and bytes it hit, whether
// the payload verdict comes from the segment sweep or from CheckValue's
// own reading.
func TestCheckFindsDamage(t *testing.T) {
	const chunk = 8 << 10
	values := []struct {
		key  string
		size int
	}{{"a", 3 * chunk}, {"b", chunk}, {"c", 2*chunk + 100}}
	recordLen := func(key string, payload int) int64 { return int64(headerSize + len(key) + payload) }

	type damaged map[string][][2]int64 // key -> [offset, length] runs
	cases := []struct {
		name string
		// damage changes the segment file; exts are the values' extents.
		damage func(t *testing.T, f vfs.File, exts map[string][]Extent)
		want   damaged
	}{
		{"intact", func(*testing.T, vfs.File, map[string][]Extent) {}, damaged{}},
		{"payload bit of b", func(t *testing.T, f vfs.File, exts map[string][]Extent) {
			flipAt(t, f, exts["b"][0].Offset+headerSize+1+100)
		}, damaged{"b": {{0, chunk}}}},
		{"payload bit of a's second record", func(t *testing.T, f vfs.File, exts map[string][]Extent) {
			flipAt(t, f, exts["a"][0].Offset+recordLen("a", chunk)+headerSize+1+5)
		}, damaged{"a": {{chunk, chunk}}}},
		{"header bit of a's second record", func(t *testing.T, f vfs.File, exts map[string][]Extent) {
			flipAt(t, f, exts["a"][0].Offset+recordLen("a", chunk)+17)
		}, damaged{"a": {{chunk, 2 * chunk}}}},
		{"truncated inside c", func(t *testing.T, f vfs.File, exts map[string][]Extent) {
			if err := f.Truncate(exts["c"][0].Offset + recordLen("c", chunk) + 10); err != nil {
				t.Fatal(err)
			}
		}, damaged{"c": {{chunk, chunk + 100}}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fsys := memFS()
			opts := testOptions(fsys)
			s := mustOpen(t, opts)
			exts := map[string][]Extent{}
			for i, v := range values {
				exts[v.key] = mustAppend(t, s, v.key, value(uint64(i), v.size))
			}
			// A later segment, so that the damaged one is sealed.
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			f, err := fsys.OpenReadWrite(s.segmentPath(1))
			if err != nil {
				t.Fatal(err)
			}
			tc.damage(t, f, exts)
			if err := f.Sync(); err != nil {
				t.Fatal(err)
			}
			f.Close()

			s = mustOpen(t, opts)
			defer s.Close()
			verdict, _ := sweepVerdict(t, s)
			for name, v := range map[string]PayloadVerdict{"from the sweep": verdict, "read by CheckValue": nil} {
				got := damaged{}
				for _, val := range values {
					ds, err := s.CheckValue(context.Background(), Owner{Key: []byte(val.key), Version: 1}, exts[val.key], v)
					if err != nil {
						t.Fatal(err)
					}
					for _, d := range ds {
						got[val.key] = append(got[val.key], [2]int64{d.Offset, d.Length})
					}
				}
				if fmt.Sprint(got) != fmt.Sprint(tc.want) {
					t.Errorf("payload verdict %s: damaged %v, want %v", name, got, tc.want)
				}
			}
		})
	}
}

// TestCheckSegmentReportsBadRecords: the sweep names the records whose
// payload failed and where a header stopped it.
func TestCheckSegmentReportsBadRecords(t *testing.T) {
	fsys := memFS()
	opts := testOptions(fsys)
	s := mustOpen(t, opts)
	a := mustAppend(t, s, "a", value(1, 3<<10))
	b := mustAppend(t, s, "b", value(2, 3<<10))
	c := mustAppend(t, s, "c", value(3, 3<<10))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	f, err := fsys.OpenReadWrite(s.segmentPath(1))
	if err != nil {
		t.Fatal(err)
	}
	flipAt(t, f, a[0].Offset+headerSize+1+7) // a's payload
	flipAt(t, f, c[0].Offset+12)             // c's payload length
	f.Close()
	s = mustOpen(t, opts)
	defer s.Close()
	res, err := s.CheckSegment(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.BadPayloads, []int64{a[0].Offset}) || res.Records != 1 || res.Broken == nil || res.End != c[0].Offset {
		t.Fatalf("check: %+v (b at %d, c at %d)", res, b[0].Offset, c[0].Offset)
	}
}

func flipAt(t *testing.T, f vfs.File, off int64) {
	t.Helper()
	b := make([]byte, 1)
	if _, err := f.ReadAt(b, off); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0x10
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
}
