package iolimit

import (
	"testing"
	"testing/synctest"
	"time"
)

// load is a group of identical looping workers.
type load struct {
	dir     Direction
	size    int
	workers int
	pause   time.Duration // between calls, on the simulated clock
}

// span is an inclusive range of bytes.
type span struct{ lo, hi int64 }

func TestForegroundBeforeBackground(t *testing.T) {
	const (
		rateBps = 1000
		burst   = 100
		window  = 10 * time.Second
		ideal   = 10 * rateBps // bytes in the window at the total rate
	)
	saturate := func(dir Direction, size, workers int) load { return load{dir, size, workers, 0} }
	// halfRate asks for 50 bytes every 100ms: 500 B/s, 101 calls in [0s, 10s].
	halfRate := load{Write, 50, 1, 100 * time.Millisecond}
	const halfBytes = 101 * 50

	tests := []struct {
		name       string
		limits     Limits
		fg, bg     []load
		fgDir      Direction // direction the assertions look at
		bgDir      Direction
		wantFG     span
		wantBG     span
		fgNoWaits  bool // foreground must never have waited
		wantBGCalm bool // background must not have got bytes after foreground arrived
	}{{
		name:   "both saturate: foreground gets the rate",
		limits: Limits{WriteBytesPerSec: rateBps},
		fg:     []load{saturate(Write, 150, 2)},
		bg:     []load{saturate(Write, 300, 2)},
		fgDir:  Write, bgDir: Write,
		wantFG: span{ideal - 2*burst, ideal + burst},
		wantBG: span{0, burst},
	}, {
		name:   "large foreground requests, both saturate",
		limits: Limits{ReadBytesPerSec: rateBps},
		fg:     []load{saturate(Read, 10*burst, 1)},
		bg:     []load{saturate(Read, 10*burst, 3)},
		fgDir:  Read, bgDir: Read,
		wantFG: span{ideal - 2*burst, ideal + burst},
		wantBG: span{0, burst},
	}, {
		name:   "both saturate, background capped",
		limits: Limits{WriteBytesPerSec: rateBps, BackgroundWriteBytesPerSec: rateBps / 4},
		fg:     []load{saturate(Write, 150, 2)},
		bg:     []load{saturate(Write, 300, 2)},
		fgDir:  Write, bgDir: Write,
		wantFG: span{ideal - 2*burst, ideal + burst},
		wantBG: span{0, burst},
	}, {
		name:   "foreground at half rate: background gets the rest",
		limits: Limits{WriteBytesPerSec: rateBps},
		fg:     []load{halfRate},
		bg:     []load{saturate(Write, 300, 2)},
		fgDir:  Write, bgDir: Write,
		wantFG:    span{halfBytes, halfBytes},
		wantBG:    span{ideal - halfBytes - burst, ideal - halfBytes + burst},
		fgNoWaits: true,
	}, {
		name:   "foreground at half rate, background cap below the rest",
		limits: Limits{WriteBytesPerSec: rateBps, BackgroundWriteBytesPerSec: rateBps / 4},
		fg:     []load{halfRate},
		bg:     []load{saturate(Write, 300, 2)},
		fgDir:  Write, bgDir: Write,
		wantFG:    span{halfBytes, halfBytes},
		wantBG:    span{ideal/4 - burst, ideal/4 + burst},
		fgNoWaits: true,
	}, {
		name:   "foreground at half rate, background cap above the rest",
		limits: Limits{WriteBytesPerSec: rateBps, BackgroundWriteBytesPerSec: rateBps * 8 / 10},
		fg:     []load{halfRate},
		bg:     []load{saturate(Write, 300, 2)},
		fgDir:  Write, bgDir: Write,
		wantFG:    span{halfBytes, halfBytes},
		wantBG:    span{ideal - halfBytes - burst, ideal - halfBytes + burst},
		fgNoWaits: true,
	}, {
		name:   "background alone, capped",
		limits: Limits{ReadBytesPerSec: rateBps, BackgroundReadBytesPerSec: rateBps / 4},
		bg:     []load{saturate(Read, 300, 2)},
		fgDir:  Read, bgDir: Read,
		wantFG: span{0, 0},
		wantBG: span{ideal/4 - burst, ideal/4 + burst},
	}, {
		// An unlimited foreground loop never blocks, so it cannot run in the
		// bubble; paced foreground stands in for it.
		name:   "background capped, total unlimited",
		limits: Limits{BackgroundReadBytesPerSec: rateBps},
		fg:     []load{{Read, 1 << 20, 1, time.Millisecond}},
		bg:     []load{saturate(Read, 300, 2)},
		fgDir:  Read, bgDir: Read,
		wantFG:    span{10001 << 20, 10001 << 20},
		wantBG:    span{ideal - burst, ideal + burst},
		fgNoWaits: true,
	}, {
		name:   "priority is per direction: foreground writes do not hold back background reads",
		limits: Limits{ReadBytesPerSec: rateBps, WriteBytesPerSec: rateBps},
		fg:     []load{saturate(Write, 150, 2)},
		bg:     []load{saturate(Read, 300, 2)},
		fgDir:  Write, bgDir: Read,
		wantFG: span{ideal - 2*burst, ideal + burst},
		wantBG: span{ideal - 2*burst, ideal + burst},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := newSim(t, tt.limits, burst)
				// Background starts first and may take the idle bucket's
				// share; then foreground arrives.
				for _, l := range tt.bg {
					for range l.workers {
						s.loop(l.dir, Background, l.size, l.pause)
					}
				}
				synctest.Wait()
				for _, l := range tt.fg {
					for range l.workers {
						s.loop(l.dir, Foreground, l.size, l.pause)
					}
				}
				s.runFor(window)
				st := s.lim.Stats()
				assertBetween(t, "foreground bytes", st.Get(tt.fgDir, Foreground).Bytes, tt.wantFG.lo, tt.wantFG.hi)
				assertBetween(t, "background bytes", st.Get(tt.bgDir, Background).Bytes, tt.wantBG.lo, tt.wantBG.hi)
				if w := st.Get(tt.fgDir, Foreground).Waits; tt.fgNoWaits && w != 0 {
					t.Errorf("foreground waited %d times, want never", w)
				}
			})
		})
	}
}

// TestForegroundNotSlowed compares foreground alone with foreground beside
// saturating background: the bytes it gets must be the same to one piece.
func TestForegroundNotSlowed(t *testing.T) {
	run := func(withBackground bool) int64 {
		var got int64
		synctest.Test(t, func(t *testing.T) {
			s := newSim(t, Limits{WriteBytesPerSec: 1 << 20}, 64<<10)
			if withBackground {
				for range 4 {
					s.loop(Write, Background, 1<<20, 0)
				}
			}
			for range 4 {
				s.loop(Write, Foreground, 300<<10, 0)
			}
			s.runFor(30 * time.Second)
			got = s.bytes(Write, Foreground)
		})
		return got
	}
	alone, beside := run(false), run(true)
	if beside < alone-64<<10 {
		t.Errorf("foreground got %d bytes beside background, %d alone: slowed by more than one burst", beside, alone)
	}
	if alone < 30<<20 {
		t.Errorf("foreground alone got %d bytes in 30s at 1 MiB/s", alone)
	}
}
