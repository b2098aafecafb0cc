package hls

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"
)

// live is an LL-HLS playlist: segments 100..103 complete (1 s each),
// parts 0 and 1 of segment 104, a preload hint for part 2.
const live = `#EXTM3U
#EXT-X-VERSION:9
#EXT-X-TARGETDURATION:1
#EXT-X-SERVER-CONTROL:CAN-BLOCK-RELOAD=YES,PART-HOLD-BACK=0.6,CAN-SKIP-UNTIL=2.0
#EXT-X-PART-INF:PART-TARGET=0.2
#EXT-X-MEDIA-SEQUENCE:100
#EXTINF:1.0,
s100.ts
#EXTINF:1.0,
s101.ts
#EXT-X-PART:DURATION=0.2,URI="p102.0.ts",INDEPENDENT=YES
#EXTINF:1.0,
s102.ts
#EXTINF:1.0,
s103.ts
#EXT-X-PART:DURATION=0.2,URI="p104.0.ts"
#EXT-X-PART:DURATION=0.2,URI="p104.1.ts"
#EXT-X-PRELOAD-HINT:TYPE=PART,URI="p104.2.ts"
`

func TestParse(t *testing.T) {
	p := Parse([]byte(live))
	if !p.Media || p.TargetDuration != time.Second || p.PartTarget != 200*time.Millisecond || p.Ended ||
		p.CanSkipUntil != 2*time.Second || p.CanSkipDateRanges || p.LastMSN != 103 || p.LastPartMSN != 104 || p.LastPart != 1 {
		t.Fatalf("parsed %+v", p)
	}
	for _, c := range []struct {
		name, text string
		media      bool
		lastMSN    int64
	}{
		{"multivariant", "#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=1\nlow.m3u8\n", false, 0},
		{"no media sequence", "#EXTM3U\r\n#EXT-X-TARGETDURATION:2\r\n#EXTINF:2,\r\na.ts\r\n", true, 0},
		{"empty", "", false, -1},
		{"not a playlist", "\x00\xff garbage", false, 0},
	} {
		p := Parse([]byte(c.text))
		if p.Media != c.media || p.LastMSN != c.lastMSN {
			t.Errorf("%s: media %v last %d, want %v %d", c.name, p.Media, p.LastMSN, c.media, c.lastMSN)
		}
	}
}

func TestParseDirectives(t *testing.T) {
	for _, c := range []struct {
		query string
		want  Directives
		bad   bool
	}{
		{"", Directives{Target: Target{Part: -1}}, false},
		{"_HLS_msn=104", Directives{Block: true, Target: Target{MSN: 104, Part: -1}}, false},
		{"_HLS_msn=104&_HLS_part=2", Directives{Block: true, Target: Target{MSN: 104, Part: 2}}, false},
		{"_HLS_skip=YES", Directives{Target: Target{Part: -1}, Skip: SkipSegments}, false},
		{"_HLS_msn=1&_HLS_skip=v2", Directives{Block: true, Target: Target{MSN: 1, Part: -1}, Skip: SkipDateRanges}, false},
		{"_HLS_part=2", Directives{}, true},
		{"_HLS_msn=-1", Directives{}, true},
		{"_HLS_msn=x", Directives{}, true},
		{"_HLS_msn=1&_HLS_msn=2", Directives{}, true},
		{"_HLS_msn=1&_HLS_part=99999999999", Directives{}, true},
		{"_HLS_skip=yes", Directives{}, true},
	} {
		q, _ := url.ParseQuery(c.query)
		got, err := ParseDirectives(q)
		if c.bad {
			if !errors.Is(err, ErrDirective) {
				t.Errorf("%q: err %v, want ErrDirective", c.query, err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%q: %+v %v, want %+v", c.query, got, err, c.want)
		}
	}
}

func TestDecide(t *testing.T) {
	p := Parse([]byte(live))
	ended := Parse([]byte(live + "#EXT-X-ENDLIST\n"))
	noParts := Parse([]byte("#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXT-X-MEDIA-SEQUENCE:5\n#EXTINF:2,\na.ts\n"))
	block := func(msn int64, part int) Directives {
		return Directives{Block: true, Target: Target{MSN: msn, Part: part}}
	}
	for _, c := range []struct {
		name string
		p    *Playlist
		d    Directives
		want Verdict
	}{
		{"no directive", p, Directives{Target: Target{Part: -1}}, Answer},
		{"segment present", p, block(103, -1), Answer},
		{"old segment", p, block(50, -1), Answer},
		{"segment in progress", p, block(104, -1), Hold},
		{"two ahead", p, block(105, -1), Hold},
		{"three ahead", p, block(106, -1), TooFar},
		{"part present", p, block(104, 1), Answer},
		{"next part", p, block(104, 2), Hold},
		{"part of a complete segment", p, block(102, 0), Answer},
		{"part past a complete segment's last is the next segment's first", p, block(103, 5), Answer},
		{"parts within the advance limit", p, block(104, 16), Hold},
		{"parts beyond the advance limit", p, block(104, 17), TooFar},
		{"next segment's part within the limit", p, block(105, 14), Hold},
		{"next segment's part beyond the limit", p, block(105, 15), TooFar},
		{"ended: directives ignored", ended, block(200, 3), Answer},
		{"no parts: part asks for the segment", noParts, block(5, 3), Answer},
		{"no parts: next segment", noParts, block(6, 0), Hold},
		{"not a media playlist", Parse([]byte("#EXTM3U\n")), block(9, -1), Answer},
	} {
		if got := c.p.Decide(c.d); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
	if p.HoldLimit() != 3*time.Second {
		t.Errorf("hold limit %v", p.HoldLimit())
	}
}

func TestRegistryWakesExactlyTheReached(t *testing.T) {
	r := NewRegistry()
	early := r.Wait("b/live.m3u8", Target{MSN: 104, Part: 1})
	later := r.Wait("b/live.m3u8", Target{MSN: 105, Part: -1})
	other := r.Wait("b/other.m3u8", Target{MSN: 1, Part: -1})
	cancelled := r.Wait("b/live.m3u8", Target{MSN: 104, Part: 0})
	cancelled.Cancel()
	if n := r.Wake("b/live.m3u8", Parse([]byte(live))); n != 1 {
		t.Fatalf("woke %d, want 1", n)
	}
	select {
	case <-early.Woken():
	default:
		t.Fatal("waiter for 104.1 not woken by a playlist holding it")
	}
	for _, w := range []*Waiter{later, other, cancelled} {
		select {
		case <-w.Woken():
			t.Fatalf("waiter for %+v woken", w.target)
		default:
		}
	}
	if r.Held() != 2 || !r.Waiting("b/live.m3u8") {
		t.Fatalf("held %d", r.Held())
	}
	early.Cancel() // after waking: nothing
	later.Cancel()
	other.Cancel()
	if r.Held() != 0 || r.Waiting("b/live.m3u8") {
		t.Fatalf("held %d after cancelling all", r.Held())
	}
}

func TestDelta(t *testing.T) {
	// kept are the segments the delta update keeps, as stored.
	var kept strings.Builder
	for i := 12; i <= 18; i++ {
		fmt.Fprintf(&kept, "#EXTINF:2.0,\ns%d.m4s\n", i)
	}
	kept.WriteString("#EXT-X-PART:DURATION=0.5,URI=\"p19.0.m4s\"\n")
	playlist := `#EXTM3U
#EXT-X-VERSION:6
#EXT-X-TARGETDURATION:2
#EXT-X-SERVER-CONTROL:CAN-BLOCK-RELOAD=YES,CAN-SKIP-UNTIL=12
#EXT-X-MEDIA-SEQUENCE:10
#EXT-X-MAP:URI="init0.mp4"
#EXT-X-KEY:METHOD=AES-128,URI="k0"
#EXT-X-PROGRAM-DATE-TIME:2026-11-28T18:00:00Z
#EXTINF:2.0,
s10.m4s
#EXT-X-DATERANGE:ID="ad",START-DATE="2026-11-28T18:00:02Z"
#EXTINF:2.0,
s11.m4s
#EXT-X-DISCONTINUITY
#EXT-X-MAP:URI="init1.mp4"
` + kept.String()
	// 9 complete segments, 18 s; the boundary is 12 s: s10 and s11 end
	// more than 12 s before the end, s12 exactly 12 s: kept.
	want := `#EXTM3U
#EXT-X-VERSION:9
#EXT-X-TARGETDURATION:2
#EXT-X-SERVER-CONTROL:CAN-BLOCK-RELOAD=YES,CAN-SKIP-UNTIL=12
#EXT-X-MEDIA-SEQUENCE:10
#EXT-X-SKIP:SKIPPED-SEGMENTS=2
#EXT-X-DATERANGE:ID="ad",START-DATE="2026-11-28T18:00:02Z"
#EXT-X-MAP:URI="init0.mp4"
#EXT-X-KEY:METHOD=AES-128,URI="k0"
#EXT-X-DISCONTINUITY
#EXT-X-MAP:URI="init1.mp4"
` + kept.String()
	got, ok := Parse([]byte(playlist)).Delta()
	if !ok {
		t.Fatal("no delta for a playlist with CAN-SKIP-UNTIL")
	}
	gotLines, wantLines := strings.Split(string(got), "\n"), strings.Split(want, "\n")
	for i := range max(len(gotLines), len(wantLines)) {
		var g, w string
		if i < len(gotLines) {
			g = gotLines[i]
		}
		if i < len(wantLines) {
			w = wantLines[i]
		}
		if g != w {
			t.Errorf("line %d: %q, want %q", i+1, g, w)
		}
	}
	for _, c := range []struct {
		name, text string
		ok         bool
	}{
		{"no CAN-SKIP-UNTIL", "#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXTINF:2,\na.ts\n", false},
		{"ended", playlist + "#EXT-X-ENDLIST\n", false},
		{"nothing old enough", "#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXT-X-SERVER-CONTROL:CAN-SKIP-UNTIL=12\n#EXTINF:2,\na.ts\n", true},
	} {
		out, ok := Parse([]byte(c.text)).Delta()
		if ok != c.ok || (ok && string(out) != c.text) {
			t.Errorf("%s: delta %v %q", c.name, ok, out)
		}
	}
}
