package hls

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"
)

func TestPreloadHints(t *testing.T) {
	p := Parse([]byte(live + "#EXT-X-PRELOAD-HINT:TYPE=MAP,URI=\"init1.mp4\"\n" +
		"#EXT-X-PRELOAD-HINT:TYPE=PART,URI=\"s105.mp4\",BYTERANGE-START=300,BYTERANGE-LENGTH=50\n" +
		"#EXT-X-PRELOAD-HINT:TYPE=OTHER,URI=\"x\"\n#EXT-X-PRELOAD-HINT:TYPE=PART,URI=\"y\",BYTERANGE-START=-1\n"))
	want := []PreloadHint{{"PART", "p104.2.ts", 0, -1}, {"MAP", "init1.mp4", 0, -1}, {"PART", "s105.mp4", 300, 50}}
	if len(p.Hints) != len(want) {
		t.Fatalf("hints %+v", p.Hints)
	}
	for i := range want {
		if p.Hints[i] != want[i] {
			t.Errorf("hint %d: %+v, want %+v", i, p.Hints[i], want[i])
		}
	}
	for _, c := range []struct{ key, uri, want string }{
		{"cam/index.m3u8", "p1.m4s", "cam/p1.m4s"},
		{"index.m3u8", "p1.m4s?x=1", "p1.m4s"},
		{"cam/a/index.m3u8", "../p1.m4s", "cam/p1.m4s"},
		{"cam/index.m3u8", "/live/other/p1.m4s", "other/p1.m4s"},
		{"cam/index.m3u8", "http://b3.example/live/x/p.m4s", "x/p.m4s"},
		{"cam/index.m3u8", "/elsewhere/p.m4s", ""},
		{"index.m3u8", "../p.m4s", ""},
		{"index.m3u8", "%zz", ""},
	} {
		got, ok := ResolveKey("live", c.key, c.uri)
		if got != c.want || ok != (c.want != "") {
			t.Errorf("ResolveKey(%q, %q) = %q %v, want %q", c.key, c.uri, got, ok, c.want)
		}
	}
}

// TestPartsWakeAndBodies: a waiter is woken by its name's upload, not by
// another's; readers see the bytes as they are written and the end; an
// aborted body fails its readers; hints replaced wake their waiters; the
// memory bounds hold.
func TestPartsWakeAndBodies(t *testing.T) {
	ps := NewParts()
	now := time.Now()
	ps.SetHints("b/i.m3u8", []string{"b/p1"}, 3*time.Second, now)
	_, w, h, hinted := ps.Wait("b/p1", true)
	_, other, _, otherHinted := ps.Wait("b/p2", true)
	if !hinted || h.HoldLimit != 3*time.Second || otherHinted {
		t.Fatalf("hinted %v %+v, other %v", hinted, h, otherHinted)
	}
	b := ps.Begin("b/p2", -1, nil)
	select {
	case <-w.Woken():
		t.Fatal("woken by another name's upload")
	case <-other.Woken():
	}
	b.Write([]byte("abc"))
	buf := make([]byte, 10)
	if n, err := b.ReadAt(context.Background(), buf, 1); n != 2 || err != nil || string(buf[:n]) != "bc" {
		t.Fatalf("read %d %v", n, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	if _, err := b.ReadAt(ctx, buf, 3); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("read past the bytes so far: %v", err)
	}
	cancel()
	b.Finish()
	if _, err := b.ReadAt(context.Background(), buf, 3); err != io.EOF {
		t.Fatalf("read at the end: %v", err)
	}
	a := ps.Begin("b/p1", -1, nil)
	<-w.Woken()
	a.Write([]byte("x"))
	a.Abort()
	if _, err := a.ReadAt(context.Background(), buf, 0); !errors.Is(err, ErrUploadFailed) {
		t.Fatalf("read of an aborted body: %v", err)
	}
	_, w2, _, _ := ps.Wait("b/p1", true)
	ps.SetHints("b/i.m3u8", []string{"b/p9"}, time.Second, now)
	<-w2.Woken()
	if _, ok := ps.Hinted("b/p1"); ok {
		t.Fatal("a hint the playlist dropped is still known")
	}
	ps.MaxBuffered = 5
	c := ps.Begin("b/p9", -1, nil)
	c.Write([]byte("1234"))
	c.Write([]byte("56"))
	if _, err := c.ReadAt(context.Background(), buf, 0); !errors.Is(err, ErrBodyTooLarge) {
		t.Fatalf("a body past the bound: %v", err)
	}
	if body, w3, _, _ := ps.Wait("b/p9", true); body != nil || ps.buffered != 0 {
		t.Fatalf("a body no longer kept is still live (%v), %d bytes counted", body, ps.buffered)
	} else {
		w3.Cancel()
	}
	if ps.Held() != 0 {
		t.Fatalf("%d held", ps.Held())
	}
}
