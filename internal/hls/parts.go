package hls

import (
	"context"
	"errors"
	"io"
	"math"
	"net/url"
	"path"
	"slices"
	"strings"
	"sync"
	"time"
)

// Parts is what a Low-Latency HLS origin needs to answer a GET of a part
// that a playlist's EXT-X-PRELOAD-HINT names before the encoder has
// written it: the hints of the playlists (SetHints), the uploads in
// flight, whose bodies such a GET reads while they arrive (Begin), and
// the GETs held until one of those begins or a write stores the part
// (Wait). Names are the S3 layer's (bucket + "/" + key). Safe for
// concurrent use.
//
// Memory: an upload's body is kept while it is in flight, up to
// MaxBody bytes each and MaxBuffered for all; one that would go past
// either stops being kept (readers attached to it fail, GETs held for
// it wait for it to be stored). A held GET costs a small struct and a
// channel; nothing polls: Begin, a body's end, Stored and a change of
// hints wake the GETs held for that name, and only those.
type Parts struct {
	// MaxBody and MaxBuffered bound the bodies kept (see above).
	MaxBody, MaxBuffered int64

	mu        sync.Mutex
	hints     map[string]Hint      // hinted name → its hint
	lists     map[string]listHints // playlist name → the names it hints
	live      map[string]*Body     // uploads in flight, by name
	waiters   map[string]map[*PartWaiter]struct{}
	buffered  int64 // bytes kept in live bodies
	lastSweep time.Time
}

// Hint is a part named by a playlist's preload hint.
type Hint struct {
	Playlist string
	// HoldLimit is how long a GET of it is held: three target durations
	// of the playlist.
	HoldLimit time.Duration
}

type listHints struct {
	names   []string
	written time.Time
}

// Default bounds of the bodies kept (NewParts).
const (
	DefaultMaxBody     = 16 << 20
	DefaultMaxBuffered = 256 << 20
)

// NewParts returns an empty registry with the default bounds.
func NewParts() *Parts {
	return &Parts{MaxBody: DefaultMaxBody, MaxBuffered: DefaultMaxBuffered,
		hints: map[string]Hint{}, lists: map[string]listHints{}, live: map[string]*Body{},
		waiters: map[string]map[*PartWaiter]struct{}{}}
}

// SetHints records that playlist now hints exactly names (none: its
// hints are dropped), each held for at most holdLimit. GETs held for a
// name it no longer hints are woken (they find it not hinted, or
// stored).
func (ps *Parts) SetHints(playlist string, names []string, holdLimit time.Duration, now time.Time) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	ps.sweep(now)
	for _, old := range ps.lists[playlist].names {
		if h, ok := ps.hints[old]; ok && h.Playlist == playlist && !slices.Contains(names, old) {
			delete(ps.hints, old)
			ps.wakeLocked(old)
		}
	}
	if len(names) == 0 {
		delete(ps.lists, playlist)
		return
	}
	ps.lists[playlist] = listHints{names: names, written: now}
	for _, n := range names {
		ps.hints[n] = Hint{Playlist: playlist, HoldLimit: holdLimit}
	}
}

// sweep forgets the hints of playlists not written for historyIdle, at
// most once a minute.
func (ps *Parts) sweep(now time.Time) {
	if now.Sub(ps.lastSweep) < time.Minute {
		return
	}
	ps.lastSweep = now
	for name, l := range ps.lists {
		if now.Sub(l.written) > historyIdle {
			for _, n := range l.names {
				if ps.hints[n].Playlist == name {
					delete(ps.hints, n)
				}
			}
			delete(ps.lists, name)
		}
	}
}

// Hinted returns the hint naming name, if any.
func (ps *Parts) Hinted(name string) (Hint, bool) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	h, ok := ps.hints[name]
	return h, ok
}

// PartWaiter is one GET held for a part.
type PartWaiter struct {
	ps    *Parts
	name  string
	woken chan struct{}
}

// Woken is closed when something changed for the name: an upload of it
// began or ended, a write stored it, or its hint changed.
func (w *PartWaiter) Woken() <-chan struct{} { return w.woken }

// Cancel removes the waiter; it does nothing once it was woken.
func (w *PartWaiter) Cancel() {
	w.ps.mu.Lock()
	defer w.ps.mu.Unlock()
	set := w.ps.waiters[w.name]
	delete(set, w)
	if len(set) == 0 {
		delete(w.ps.waiters, w.name)
	}
}

// Wait looks at name: with live true and an upload of it in flight
// whose body is kept, it returns that body and no waiter. Otherwise it
// registers a waiter (register, then look at the store: a write between
// the two still wakes it) and returns it with name's hint, if any.
func (ps *Parts) Wait(name string, live bool) (*Body, *PartWaiter, Hint, bool) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if b := ps.live[name]; live && b != nil {
		return b, nil, Hint{}, false
	}
	w := &PartWaiter{ps: ps, name: name, woken: make(chan struct{})}
	set := ps.waiters[name]
	if set == nil {
		set = map[*PartWaiter]struct{}{}
		ps.waiters[name] = set
	}
	set[w] = struct{}{}
	h, ok := ps.hints[name]
	return nil, w, h, ok
}

// Held is the number of GETs held for parts.
func (ps *Parts) Held() int {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	n := 0
	for _, set := range ps.waiters {
		n += len(set)
	}
	return n
}

// Stored wakes the GETs held for name: a write stored it.
func (ps *Parts) Stored(name string) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	ps.wakeLocked(name)
}

func (ps *Parts) wakeLocked(name string) {
	for w := range ps.waiters[name] {
		close(w.woken)
	}
	delete(ps.waiters, name)
}

// Begin starts keeping the body of an upload of name (size is its
// declared length, -1 when unknown; meta is what the S3 layer will
// store, for the readers' headers and authorization) and wakes the GETs
// held for it. The upload's bytes go through Body.Write; it ends with
// Finish, once stored, or Abort.
func (ps *Parts) Begin(name string, size int64, meta any) *Body {
	b := &Body{ps: ps, name: name, Size: size, Meta: meta}
	if size > 0 && size <= min(ps.MaxBody, 1<<20) {
		b.buf = make([]byte, 0, size) // a part: one allocation, no copies as it grows
	}
	ps.mu.Lock()
	defer ps.mu.Unlock()
	ps.live[name] = b
	ps.wakeLocked(name)
	return b
}

// Errors a reader of a body gets.
var (
	// ErrUploadFailed: the upload failed or was abandoned; what was read
	// of it is not the object.
	ErrUploadFailed = errors.New("the upload being read failed")
	// ErrBodyTooLarge: the body grew past what is kept in memory.
	ErrBodyTooLarge = errors.New("the upload being read is larger than what is kept in memory")
)

// Body is the body of an upload in flight, kept for the GETs reading it.
type Body struct {
	ps   *Parts
	name string
	// Size is the upload's declared length, -1 when unknown; Meta is the
	// S3 layer's (Begin).
	Size int64
	Meta any

	mu   sync.Mutex
	buf  []byte
	done bool  // stored: readers get io.EOF after the last byte
	err  error // failed or dropped: readers get it
	more chan struct{}
}

// Write keeps p, read from the upload; it never fails (the upload goes
// on whether or not its body can be kept).
func (b *Body) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.err != nil || b.done || len(p) == 0 {
		return len(p), nil
	}
	if !b.reserve(int64(len(p))) {
		b.endLocked(ErrBodyTooLarge)
		return len(p), nil
	}
	b.buf = append(b.buf, p...)
	b.signalLocked()
	return len(p), nil
}

// reserve counts n more bytes kept, within the bounds.
func (b *Body) reserve(n int64) bool {
	b.ps.mu.Lock()
	defer b.ps.mu.Unlock()
	if int64(len(b.buf))+n > b.ps.MaxBody || b.ps.buffered+n > b.ps.MaxBuffered {
		return false
	}
	b.ps.buffered += n
	return true
}

// Finish ends the body: the upload is stored. Readers get io.EOF after
// its last byte; new GETs find the stored object.
func (b *Body) Finish() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.endLocked(nil)
}

// Abort ends the body: the upload failed. Readers get ErrUploadFailed.
func (b *Body) Abort() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.endLocked(ErrUploadFailed)
}

// endLocked ends the body (err nil: stored), once; it stops counting
// its bytes, leaves the live uploads and wakes the GETs held for name.
func (b *Body) endLocked(err error) {
	if b.done || b.err != nil {
		return
	}
	if err == nil {
		b.done = true
	} else {
		b.err = err
	}
	b.signalLocked()
	b.ps.mu.Lock()
	defer b.ps.mu.Unlock()
	b.ps.buffered -= int64(len(b.buf))
	if err != nil {
		b.buf = nil
	}
	if b.ps.live[b.name] == b {
		delete(b.ps.live, b.name)
	}
	b.ps.wakeLocked(b.name)
}

func (b *Body) signalLocked() {
	if b.more != nil {
		close(b.more)
		b.more = nil
	}
}

// ReadAt copies bytes of the body from off into p, waiting until there
// are some: io.EOF once the body is stored and off is its end,
// ErrUploadFailed or ErrBodyTooLarge when it ended otherwise, ctx's
// error when ctx ends first.
func (b *Body) ReadAt(ctx context.Context, p []byte, off int64) (int, error) {
	for {
		b.mu.Lock()
		switch {
		case b.err != nil:
			err := b.err
			b.mu.Unlock()
			return 0, err
		case off < int64(len(b.buf)):
			n := copy(p, b.buf[off:])
			b.mu.Unlock()
			return n, nil
		case b.done:
			b.mu.Unlock()
			return 0, io.EOF
		}
		more := b.moreLocked()
		b.mu.Unlock()
		select {
		case <-more:
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
}

// ResolveKey returns the key a URI of a playlist stored at playlistKey
// in bucket names in that bucket: a relative reference resolved against
// the playlist's key, or a path-style path (/bucket/key, alone or in an
// absolute URL). ok is false for a URI naming nothing in bucket.
func ResolveKey(bucket, playlistKey, uri string) (string, bool) {
	u, err := url.Parse(uri)
	if err != nil || u.Path == "" {
		return "", false
	}
	if u.Scheme != "" || u.Host != "" || strings.HasPrefix(u.Path, "/") {
		key, ok := strings.CutPrefix(u.Path, "/"+bucket+"/")
		if !ok || key == "" {
			return "", false
		}
		return key, true
	}
	key := path.Join(path.Dir(playlistKey), u.Path)
	if key == "." || key == ".." || strings.HasPrefix(key, "../") {
		return "", false
	}
	return key, true
}

// Wait waits for the body's end: nil once the upload is stored, the
// reader's error otherwise (see ReadAt).
func (b *Body) Wait(ctx context.Context) error {
	if _, err := b.ReadAt(ctx, nil, math.MaxInt64); err != io.EOF {
		return err
	}
	return nil
}

// moreLocked is closed when bytes are added or the body ends.
func (b *Body) moreLocked() chan struct{} {
	if b.more == nil {
		b.more = make(chan struct{})
	}
	return b.more
}
