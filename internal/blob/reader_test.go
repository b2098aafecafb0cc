package blob

import (
	"bytes"
	"context"
	"errors"
	"io"
	"testing"
)

// TestReaderChecksPlace: a Reader returns bytes only from records of its
// owner (key and version) at the chunk offsets their place implies; any
// other record is refused as corrupt and counted as misdirected, even
// when its CRCs are intact.
func TestReaderChecksPlace(t *testing.T) {
	opts := testOptions(memFS())
	s := mustOpen(t, opts)
	defer s.Close()
	chunk := int64(opts.ChunkSize)
	a := Owner{Key: []byte("a"), Version: 1}
	size := 3*chunk + 100 // four records
	appendAs := func(o Owner, data []byte) []Extent {
		ext, _, err := s.Append(context.Background(), o, bytes.NewReader(data))
		if err != nil || len(ext) != 1 {
			t.Fatalf("append: %v, %d extents", err, len(ext))
		}
		return ext
	}
	dataA := value(1, int(size))
	extA := appendAs(a, dataA)[0]
	extB := appendAs(Owner{Key: []byte("b"), Version: 1}, value(2, int(size)))[0]
	extA2 := appendAs(Owner{Key: []byte("a"), Version: 2}, value(3, int(size)))[0]
	part2 := value(4, int(chunk)) // a second "part" of a's value: one record
	extP := appendAs(a, part2)[0]
	rec := headerSize + 1 + chunk // one full record of key "a" or "b"
	head := Extent{Segment: extA.Segment, Offset: extA.Offset, Length: rec, Size: chunk}
	rest := Extent{Segment: extA.Segment, Offset: extA.Offset + rec, Length: extA.Length - rec, Size: extA.Size - chunk}

	cases := []struct {
		name    string
		owner   Owner
		extents []Extent
		off, n  int64
		want    []byte // nil: refused
	}{
		{"own records", a, []Extent{extA}, 0, size, dataA},
		{"own records, split in two extents", a, []Extent{head, rest}, 0, size, dataA},
		{"parts each starting at offset 0", a, []Extent{extA, extP}, 0, size + chunk, append(bytes.Clone(dataA), part2...)},
		{"range in the second part", a, []Extent{extA, extP}, size + 10, 20, part2[10:30]},
		{"another key's records", a, []Extent{extB}, 0, size, nil},
		{"another version's records", a, []Extent{extA2}, 0, size, nil},
		{"another key's, range inside", a, []Extent{extB}, chunk + 5, 10, nil},
		{"starts at the second record", a, []Extent{rest}, 0, size - chunk, nil},
		{"own records out of order", a, []Extent{rest, head}, 0, size, nil},
		{"a gap between extents", a, []Extent{head, {Segment: rest.Segment, Offset: rest.Offset + rec, Length: rest.Length - rec, Size: rest.Size - chunk}}, 0, size - chunk, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := s.Stats()
			r, err := s.NewReader(context.Background(), c.owner, c.extents, c.off, c.n)
			if err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(r)
			r.Close()
			after := s.Stats()
			if c.want != nil {
				if err != nil || !bytes.Equal(got, c.want) {
					t.Fatalf("read: %d bytes, %v", len(got), err)
				}
				return
			}
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("read %d bytes, err %v; want ErrCorrupt", len(got), err)
			}
			if after.MisdirectedRecords == before.MisdirectedRecords || after.CorruptRecords == before.CorruptRecords {
				t.Fatalf("refusal not counted: %+v -> %+v", before, after)
			}
		})
	}
}
