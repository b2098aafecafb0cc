package bench

import (
	"testing"
	"time"
)

func TestParseBitrate(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int64 // 0: an error
	}{
		{"4Mbit", 4_000_000}, {"4M", 4_000_000}, {"4mbit/s", 4_000_000}, {"2500k", 2_500_000},
		{"800000", 800_000}, {"1.5G", 1_500_000_000}, {"0", 0}, {"-1M", 0}, {"fast", 0}, {"", 0},
	} {
		got, err := ParseBitrate(c.in)
		if (err != nil) != (c.want == 0) || got != c.want {
			t.Errorf("ParseBitrate(%q) = %d, %v; want %d", c.in, got, err, c.want)
		}
	}
}

func TestParseViewers(t *testing.T) {
	for _, c := range []struct {
		in      string
		cameras int
		want    int // -1: an error
	}{
		{"10%", 800, 80}, {"10%", 5, 1}, {"0%", 100, 0}, {"40", 800, 40}, {"0", 10, 0}, {"-1", 10, -1}, {"x%", 10, -1},
	} {
		f, err := parseViewers(c.in)
		if (err != nil) != (c.want < 0) {
			t.Errorf("parseViewers(%q): %v", c.in, err)
			continue
		}
		if err == nil && f(c.cameras) != c.want {
			t.Errorf("parseViewers(%q)(%d) = %d, want %d", c.in, c.cameras, f(c.cameras), c.want)
		}
	}
}

// TestHLSPlaylist: a camera's playlist lists its last segments, and the
// newest listed is what a viewer parses back; camera schedules spread over
// one period.
func TestHLSPlaylist(t *testing.T) {
	s := &hlsState{cfg: HLSConfig{Segment: 2 * time.Second}, cameras: 4, start: time.Unix(100, 0)}
	for _, c := range []struct{ first, last int64 }{{0, 0}, {0, 5}, {1234, 1239}} {
		if got := newestListed(s.playlistBody(c.first, c.last)); got != c.last {
			t.Errorf("playlist %d..%d: newest %d", c.first, c.last, got)
		}
	}
	if got := newestListed([]byte("#EXTM3U\n")); got != -1 {
		t.Errorf("no media sequence: %d", got)
	}
	if got, want := s.due(3, 2).Sub(s.start), 4*time.Second+1500*time.Millisecond; got != want {
		t.Errorf("camera 3 segment 2 due at %s, want %s", got, want)
	}
	if got := (HLSConfig{Bitrate: 4_000_000, Segment: 2 * time.Second}).SegmentBytes(); got != 1_000_000 {
		t.Errorf("4 Mbit/s × 2 s = %d bytes", got)
	}
}
