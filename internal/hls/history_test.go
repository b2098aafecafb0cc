package hls

import (
	"slices"
	"testing"
	"time"
)

// drPlaylist is a live playlist that can skip date ranges (boundary 6 s)
// with date ranges of the given ids; canSkip false leaves
// CAN-SKIP-DATERANGES out.
func drPlaylist(canSkip bool, ids ...string) *Playlist {
	control := "#EXT-X-SERVER-CONTROL:CAN-SKIP-UNTIL=6"
	if canSkip {
		control += ",CAN-SKIP-DATERANGES=YES"
	}
	text := "#EXTM3U\n#EXT-X-TARGETDURATION:1\n" + control + "\n"
	for _, id := range ids {
		text += `#EXT-X-DATERANGE:ID="` + id + `",START-DATE="2026-11-28T18:00:00Z"` + "\n"
	}
	return Parse([]byte(text + "#EXTINF:1,\na.ts\n"))
}

func TestHistory(t *testing.T) {
	t0 := time.Date(2026, 11, 28, 18, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	type write struct {
		at int
		p  *Playlist
	}
	for _, c := range []struct {
		name    string
		writes  []write
		now     int
		ok      bool
		old     []string
		removed []string
	}{
		{"not followed long enough", []write{{0, drPlaylist(true, "a")}}, 5, false, nil, nil},
		{"present from the start counts as added then", []write{{0, drPlaylist(true, "a")}}, 7, true, []string{"a"}, nil},
		{"recent addition kept, removal listed", []write{{0, drPlaylist(true, "a", "b")}, {5, drPlaylist(true, "a", "c")}}, 7, true, []string{"a"}, []string{"b"}},
		{"removal past the boundary not listed", []write{{0, drPlaylist(true, "a", "b")}, {1, drPlaylist(true, "a")}, {8, drPlaylist(true, "a")}}, 8, true, []string{"a"}, nil},
		{"removed then back: added anew", []write{{0, drPlaylist(true, "a")}, {2, drPlaylist(true)}, {3, drPlaylist(true, "a")}}, 7, true, nil, nil},
		{"a playlist that cannot skip date ranges is forgotten", []write{{0, drPlaylist(true, "a")}, {1, drPlaylist(false, "a")}}, 9, false, nil, nil},
		{"a playlist not written for an hour is forgotten", []write{{0, drPlaylist(true, "a")}, {3700, drPlaylist(true, "x")}}, 3700, false, nil, nil},
	} {
		h := NewHistory()
		for _, w := range c.writes {
			name := "b/p.m3u8"
			if w.at == 3700 {
				name = "b/other.m3u8" // a write elsewhere sweeps
			}
			h.Record(name, w.p, at(w.at))
		}
		old, removed, ok := h.DateRanges("b/p.m3u8", 6*time.Second, at(c.now))
		var oldIDs []string
		for id := range old {
			oldIDs = append(oldIDs, id)
		}
		slices.Sort(oldIDs)
		slices.Sort(removed)
		if ok != c.ok || !slices.Equal(oldIDs, c.old) || !slices.Equal(removed, c.removed) {
			t.Errorf("%s: ok %v old %v removed %v, want %v %v %v", c.name, ok, oldIDs, removed, c.ok, c.old, c.removed)
		}
	}
}
