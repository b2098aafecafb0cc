package bench

import (
	"testing"
	"time"

	"github.com/b3-storage/b3/internal/hls"
)

// TestLLPlaylist: the bench's LL-HLS playlist after each part is a media
// playlist whose last part is that part and whose preload hint (read
// back by hintOf, as the players do) is the next one; parts are listed
// for the last three segments only.
func TestLLPlaylist(t *testing.T) {
	cfg := LLHLSConfig{Part: 200 * time.Millisecond, PartsPerSegment: 5, ListSize: 6}
	for k := int64(0); k < 60; k++ {
		text := llPlaylist(cfg, k)
		p := hls.Parse(text)
		seg, i := k/5, int(k%5)
		wantMSN, wantPart := seg, i
		if !p.Media || p.LastPartMSN != wantMSN || p.LastPart != wantPart || p.LastMSN != (k+1)/5-1 || p.PartTarget != cfg.Part {
			t.Fatalf("after part %d: %+v\n%s", k, p, text)
		}
		if next, ok := hintOf(text, 5); !ok || next != k+1 {
			t.Fatalf("after part %d: hint %d %v", k, next, ok)
		}
		if len(p.Hints) != 1 || p.Hints[0].URI != llPart((k+1)/5, int((k+1)%5)) {
			t.Fatalf("after part %d: hints %+v", k, p.Hints)
		}
	}
}
