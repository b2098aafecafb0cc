package hls

import (
	"strings"
	"sync"
	"time"
)

// History remembers, per playlist, when each EXT-X-DATERANGE ID appeared
// in it and when it left: what a delta update that skips date ranges
// (_HLS_skip=v2) is made of. Safe for concurrent use.
//
// It knows only the writes it was told of (Record), since it was made:
// a date range present at a playlist's first Record counts as added
// then (it was added then or earlier). DateRanges answers only once a
// playlist has been followed for at least its Skip Boundary; before
// that, removals it never saw may be ones a client must be told of.
type History struct {
	mu        sync.Mutex
	playlists map[string]*dateRanges
	lastSweep time.Time
}

// dateRanges is one playlist's date ranges.
type dateRanges struct {
	since     time.Time            // first Record
	written   time.Time            // last Record
	added     map[string]time.Time // IDs present, and when they appeared
	removed   map[string]time.Time // IDs that left, and when
	skipUntil time.Duration        // the last Record's Skip Boundary
}

// historyIdle is how long a playlist not written is remembered.
const historyIdle = time.Hour

// NewHistory returns an empty history.
func NewHistory() *History { return &History{playlists: map[string]*dateRanges{}} }

// Record notes the playlist name's version p, written at now. A playlist
// that cannot skip date ranges is forgotten.
func (h *History) Record(name string, p *Playlist, now time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.sweep(now)
	if !p.CanSkipDateRanges || p.CanSkipUntil <= 0 || p.Ended {
		delete(h.playlists, name)
		return
	}
	d := h.playlists[name]
	if d == nil {
		d = &dateRanges{since: now, added: map[string]time.Time{}, removed: map[string]time.Time{}}
		h.playlists[name] = d
	}
	d.written, d.skipUntil = now, p.CanSkipUntil
	present := map[string]bool{}
	for _, id := range p.dateRangeIDs() {
		present[id] = true
		if _, ok := d.added[id]; !ok {
			d.added[id] = now
			delete(d.removed, id)
		}
	}
	for id := range d.added {
		if !present[id] {
			delete(d.added, id)
			d.removed[id] = now
		}
	}
	for id, at := range d.removed {
		if now.Sub(at) > d.skipUntil {
			delete(d.removed, id)
		}
	}
}

// sweep forgets playlists not written for historyIdle, at most once a
// minute.
func (h *History) sweep(now time.Time) {
	if now.Sub(h.lastSweep) < time.Minute {
		return
	}
	h.lastSweep = now
	for name, d := range h.playlists {
		if now.Sub(d.written) > historyIdle {
			delete(h.playlists, name)
		}
	}
}

// DateRanges returns, for a v2 delta update of playlist name at now, the
// IDs of date ranges added more than the Skip Boundary ago (to leave
// out) and of those removed within it (RECENTLY-REMOVED-DATERANGES);
// ok is false when the history does not cover the Skip Boundary.
func (h *History) DateRanges(name string, skipUntil time.Duration, now time.Time) (old map[string]bool, removed []string, ok bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	d := h.playlists[name]
	if d == nil || now.Sub(d.since) < skipUntil {
		return nil, nil, false
	}
	old = map[string]bool{}
	for id, at := range d.added {
		if now.Sub(at) > skipUntil {
			old[id] = true
		}
	}
	for id, at := range d.removed {
		if now.Sub(at) <= skipUntil {
			removed = append(removed, id)
		}
	}
	return old, removed, true
}

// dateRangeIDs are the IDs of the playlist's EXT-X-DATERANGE tags.
func (p *Playlist) dateRangeIDs() []string {
	var ids []string
	for _, raw := range p.lines {
		if value, ok := strings.CutPrefix(strings.TrimSpace(raw), "#EXT-X-DATERANGE:"); ok {
			if id := attribute(value, "ID"); id != "" {
				ids = append(ids, id)
			}
		}
	}
	return ids
}
