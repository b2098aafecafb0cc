package objstore

import (
	"bytes"
	"context"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/b3-storage/b3/internal/blob"
)

// scrubAll runs ScrubRecords to the end and returns what it reported by
// key.
func scrubAll(t *testing.T, s *Store, verdict blob.PayloadVerdict) map[string]ScrubValue {
	t.Helper()
	out := map[string]ScrubValue{}
	var pos []byte
	for {
		done, err := s.ScrubRecords(context.Background(), pos, verdict, func(p []byte, v ScrubValue) error {
			pos = p
			out[v.Key] = v
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if done {
			return out
		}
	}
}

// TestScrubRecords: every current and noncurrent version is reported
// once (past a batch's worth); damage is reported on the version still in
// place, and not for a version a write replaced between the scan and the
// check; a repair puts fetched bytes in place of the damaged ones and the
// object reads back.
func TestScrubRecords(t *testing.T) {
	s := openStore(t, memOptions(vfs.NewMem()))
	defer s.Close()
	ensureBucket(t, s, "b")
	const n = scrubBatch + 10
	for i := range n {
		put(t, s, "b", string(rune('A'+i%26))+string(rune('a'+i/26)), value("k", i, 5000))
	}
	clean := scrubAll(t, s, nil)
	if len(clean) != n {
		t.Fatalf("%d versions reported, want %d", len(clean), n)
	}
	for k, v := range clean {
		if len(v.Damage) != 0 || v.Inline || !v.Current {
			t.Fatalf("%s: %+v", k, v)
		}
	}

	// Every payload "bad" per the sweep: each version damaged (its two
	// adjacent bad records one range), except the one overwritten while
	// its check ran (its new record is the next pass's to check).
	raced := false
	damaged := scrubAll(t, s, func(uint64, int64) (bool, bool) {
		if !raced {
			raced = true
			put(t, s, "b", "Aa", value("k", 999, 5000))
		}
		return true, true
	})
	for k, v := range damaged {
		switch {
		case k == "Aa" && len(v.Damage) != 0:
			t.Errorf("the version overwritten meanwhile reported damaged: %+v", v)
		case k != "Aa" && (len(v.Damage) == 0 || v.Damage[0].Offset != 0 || v.Damage[0].Length != 5000):
			t.Errorf("%s: damage %+v", k, v.Damage)
		}
	}

	// Repair Ba with the same bytes fetched "from a replica".
	obj, err := s.HeadObject("b", "Ba")
	if err != nil {
		t.Fatal(err)
	}
	body, err := read(s, "b", "Ba")
	if err != nil {
		t.Fatal(err)
	}
	st, err := s.Stage(context.Background(), "b", "Ba", obj.Version, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := s.RepairExtents("b", "Ba", obj.Version, obj.Extents, st); err != nil || !ok {
		t.Fatalf("repair: %v %v", ok, err)
	}
	st.Release()
	after, _ := s.HeadObject("b", "Ba")
	if got, err := read(s, "b", "Ba"); err != nil || !bytes.Equal(got, body) || after.Extents[0] == obj.Extents[0] {
		t.Fatalf("after repair: %v, extents %v -> %v", err, obj.Extents, after.Extents)
	}
	// A second repair of the old extents finds nothing to replace.
	st2, err := s.Stage(context.Background(), "b", "Ba", obj.Version, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := s.RepairExtents("b", "Ba", obj.Version, obj.Extents, st2); err != nil || ok {
		t.Fatalf("repair of extents no longer referenced: %v %v", ok, err)
	}
	st2.Discard()
}
