package scrub

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/b3-storage/b3/internal/blob"
	"github.com/b3-storage/b3/internal/objstore"
)

// Engine is the store a Scrubber checks; *objstore.Store is one.
type Engine interface {
	ScrubSegments() []blob.SegmentInfo
	ScrubSegment(ctx context.Context, id uint64) (blob.SegmentCheck, error)
	ScrubRecords(ctx context.Context, pos []byte, verdict blob.PayloadVerdict, fn func(pos []byte, v objstore.ScrubValue) error) (done bool, err error)
	ScrubMetadata(ctx context.Context, pos []byte) (next []byte, keys int, bytes int64, done bool, err error)
}

// StateStore keeps the pass's position over restarts: Save must be
// durable when it returns (write a temporary file, fsync, rename); Load
// returns an error wrapping fs.ErrNotExist when nothing was saved.
type StateStore interface {
	Load() ([]byte, error)
	Save([]byte) error
}

// Config configures a Scrubber.
type Config struct {
	Engine Engine
	State  StateStore
	// Interval is the period of automatic passes (0: only on Start).
	Interval time.Duration
	// Repair, if set, is asked to repair each damaged version (from a
	// replica); it reports whether it did. False with no error means the
	// version no longer references the damaged bytes (replaced, deleted,
	// or repaired by a read meanwhile): nothing to report. Nil: damage is
	// reported only.
	Repair func(ctx context.Context, v objstore.ScrubValue) (bool, error)
	Logger *slog.Logger
	// SaveEvery bounds the work lost by a restart (default 5s).
	SaveEvery time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// ErrRunning is returned by Start while a pass runs.
var ErrRunning = errors.New("scrub: a pass is already running")

// Phases of a pass.
const (
	PhaseSegments = "segments"
	PhaseRecords  = "records"
	PhaseMetadata = "metadata"
)

// Range is one damaged run of an object's bytes.
type Range struct {
	Offset     int64  `json:"offset"`
	Length     int64  `json:"length"`
	Segment    uint64 `json:"segment"`
	FileOffset int64  `json:"file_offset"`
	Reason     string `json:"reason"`
}

// Damaged is one object version whose bytes cannot all be read back.
type Damaged struct {
	Bucket  string  `json:"bucket"`
	Key     string  `json:"key"`
	Version string  `json:"version"` // the engine's version number, 16 hex digits
	Current bool    `json:"current"` // the key's current version (else noncurrent)
	Size    int64   `json:"size"`
	Ranges  []Range `json:"ranges"`
}

// Counts are what one pass did.
type Counts struct {
	SegmentsChecked int64 `json:"segments_checked"`
	RecordsChecked  int64 `json:"records_checked"` // segment records whose CRCs were verified
	BytesChecked    int64 `json:"bytes_checked"`   // segment bytes read by sweep 1
	CorruptRecords  int64 `json:"corrupt_records"` // records sweep 1 found bad, referenced or not
	BrokenSegments  int64 `json:"broken_segments"` // segments sweep 1 could not read to their end
	Checked         int64 `json:"checked"`         // object versions checked by sweep 2
	Repaired        int64 `json:"repaired"`        // damaged versions repaired from a replica
	// Damaged counts the damaged versions found and not repaired; the
	// first MaxListed of them are listed.
	Damaged int64 `json:"damaged_total"`
	// MetadataKeys and MetadataBytes count what sweep 3 read of the
	// metadata index (every key and value: pebble verifies each block).
	MetadataKeys  int64 `json:"metadata_keys_checked"`
	MetadataBytes int64 `json:"metadata_bytes_checked"`
}

// Bounds on what a pass keeps, so that a failing disk with damage
// everywhere cannot make the state (rewritten every SaveEvery) or the
// status grow without end: the damaged versions listed (the rest are
// counted, logged and found again by the next pass), and the bad records
// remembered per segment (past it, sweep 2 verifies that segment's
// payloads itself instead of taking sweep 1's word).
const (
	MaxListed        = 10000
	maxBadPerSegment = 10000
)

// sweptSegment is what sweep 1 found in a segment that is not simply
// clean to its end: records whose payload failed, or an end before the
// data's (a broken header; or the active segment, swept up to what it
// held then).
type sweptSegment struct {
	ID  uint64  `json:"id"`
	End int64   `json:"end"`
	Bad []int64 `json:"bad,omitempty"`
}

// pass is a pass in progress: everything a restart needs to go on.
type pass struct {
	Started     time.Time      `json:"started"`
	Phase       string         `json:"phase"`
	NextSegment uint64         `json:"next_segment"` // sweep 1: the lowest ID not yet swept
	LastSwept   uint64         `json:"last_swept"`   // sweep 1: the highest ID swept
	Swept       []sweptSegment `json:"swept"`
	Pos         []byte         `json:"pos"`      // sweep 2: the last position checked
	MetaPos     []byte         `json:"meta_pos"` // sweep 3: the last metadata key read
	Counts      Counts         `json:"counts"`
	Damaged     []Damaged      `json:"damaged"`
	DamagedPos  [][]byte       `json:"damaged_pos"`
}

// lastPass is a finished pass.
type lastPass struct {
	Started    time.Time `json:"started"`
	Finished   time.Time `json:"finished"`
	Counts     Counts    `json:"counts"`
	Damaged    []Damaged `json:"damaged"`
	DamagedPos [][]byte  `json:"damaged_pos"`
}

// state is what StateStore keeps.
type state struct {
	FirstStart time.Time `json:"first_start"`
	Passes     int64     `json:"passes"`
	Pass       *pass     `json:"pass"`
	Last       *lastPass `json:"last"`
}

// Scrubber runs scrub passes over one store. Safe for concurrent use.
type Scrubber struct {
	cfg   Config
	log   *slog.Logger
	start chan struct{}

	mu       sync.Mutex
	st       state
	running  bool
	lastSave time.Time
	lastErr  string // why the pass in progress last stopped, "" if it did not
	// Totals since this process started, for the Prometheus counters.
	totals Counts
	passes int64
}

// New returns a Scrubber and loads the saved state: a pass that was in
// progress goes on when Run starts.
func New(cfg Config) (*Scrubber, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.SaveEvery <= 0 {
		cfg.SaveEvery = 5 * time.Second
	}
	s := &Scrubber{cfg: cfg, log: cfg.Logger, start: make(chan struct{}, 1)}
	data, err := cfg.State.Load()
	if err == nil {
		err = json.Unmarshal(data, &s.st)
	}
	if err != nil {
		// The state is a convenience (where to resume, what the last pass
		// found): one that cannot be read, on a disk the scrub is there to
		// watch, must not keep the store from starting. Start afresh.
		if !errors.Is(err, fs.ErrNotExist) {
			s.log.Error("scrub: saved state unreadable; starting afresh (the next pass starts one interval from now)", "err", err)
		}
		s.st = state{FirstStart: cfg.Now()}
		if err := s.save(); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// Start asks for a pass now; ErrRunning if one runs.
func (s *Scrubber) Start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.running {
		return ErrRunning
	}
	select {
	case s.start <- struct{}{}:
	default: // asked already
	}
	return nil
}

// Run runs passes until ctx ends: an interrupted one at once, then one
// every Interval after the last ended, and one on each Start.
func (s *Scrubber) Run(ctx context.Context) {
	for {
		s.mu.Lock()
		resume := s.st.Pass != nil
		next, auto := s.nextLocked()
		s.mu.Unlock()
		if !resume {
			var timer <-chan time.Time
			var t *time.Timer
			if auto {
				t = time.NewTimer(max(next.Sub(s.cfg.Now()), 0))
				timer = t.C
			}
			select {
			case <-ctx.Done():
			case <-s.start:
			case <-timer:
			}
			if t != nil {
				t.Stop()
			}
			if ctx.Err() != nil {
				return
			}
		}
		if err := s.runPass(ctx); err != nil {
			if ctx.Err() != nil {
				return
			}
			s.log.Error("scrub: pass failed; it goes on from its last position after a minute", "err", err)
			s.mu.Lock()
			s.lastErr = err.Error()
			s.mu.Unlock()
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Minute):
			}
		}
	}
}

// nextLocked is when the next automatic pass starts.
func (s *Scrubber) nextLocked() (time.Time, bool) {
	if s.cfg.Interval <= 0 {
		return time.Time{}, false
	}
	from := s.st.FirstStart
	if s.st.Last != nil {
		from = s.st.Last.Finished
	}
	return from.Add(s.cfg.Interval), true
}

// runPass runs (or resumes) one pass to its end.
func (s *Scrubber) runPass(ctx context.Context) error {
	s.mu.Lock()
	if s.st.Pass == nil {
		s.st.Pass = &pass{Started: s.cfg.Now(), Phase: PhaseSegments, NextSegment: 1}
		s.log.Info("scrub: pass started")
	} else {
		s.log.Info("scrub: resuming the pass in progress", "started", s.st.Pass.Started, "phase", s.st.Pass.Phase)
	}
	s.running = true
	err := s.save()
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.running = false
		s.mu.Unlock()
	}()
	if err != nil {
		return err
	}
	err = s.sweepSegments(ctx)
	if err == nil {
		err = s.sweepRecords(ctx)
	}
	if err == nil {
		err = s.sweepMetadata(ctx)
	}
	if err != nil {
		// Stopped (or failed): keep what was done, for the resumption.
		s.mu.Lock()
		if serr := s.save(); serr != nil {
			s.log.Error("scrub: could not save the position", "err", serr)
		}
		s.mu.Unlock()
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lastErr = ""
	p := s.st.Pass
	s.st.Last = &lastPass{Started: p.Started, Finished: s.cfg.Now(), Counts: p.Counts, Damaged: p.Damaged, DamagedPos: p.DamagedPos}
	s.st.Pass = nil
	s.st.Passes++
	s.passes++
	s.log.Info("scrub: pass done", "took", s.st.Last.Finished.Sub(p.Started).Round(time.Second),
		"segments", p.Counts.SegmentsChecked, "records", p.Counts.RecordsChecked, "bytes", p.Counts.BytesChecked,
		"corrupt_records", p.Counts.CorruptRecords, "checked", p.Counts.Checked,
		"damaged", len(p.Damaged), "repaired", p.Counts.Repaired)
	return s.save()
}

// sweepSegments is sweep 1, from where it stopped.
func (s *Scrubber) sweepSegments(ctx context.Context) error {
	s.mu.Lock()
	phase := s.st.Pass.Phase
	s.mu.Unlock()
	if phase != PhaseSegments {
		return nil
	}
	for _, seg := range s.cfg.Engine.ScrubSegments() {
		s.mu.Lock()
		next := s.st.Pass.NextSegment
		s.mu.Unlock()
		if seg.ID < next {
			continue
		}
		res, err := s.cfg.Engine.ScrubSegment(ctx, seg.ID)
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case errors.Is(err, fs.ErrNotExist):
			continue // vacuum removed it meanwhile
		case err != nil:
			// Unreadable (an I/O error): nothing in it counts as checked.
			s.log.Error("scrub: segment unreadable", "segment", seg.ID, "err", err)
			res = blob.SegmentCheck{Segment: seg.ID, Broken: &blob.CorruptError{Segment: seg.ID, Reason: err.Error()}}
		}
		for _, off := range res.BadPayloads {
			s.log.Error("scrub: record payload checksum mismatch", "segment", seg.ID, "offset", off)
		}
		if res.Broken != nil {
			s.log.Error("scrub: segment cannot be read to its end", "segment", seg.ID, "offset", res.Broken.Offset, "reason", res.Broken.Reason)
		}
		s.mu.Lock()
		p := s.st.Pass
		switch {
		case len(res.BadPayloads) > maxBadPerSegment:
			p.Swept = append(p.Swept, sweptSegment{ID: seg.ID}) // End 0: no verdict, sweep 2 reads
		case len(res.BadPayloads) > 0 || res.Broken != nil || seg.Active:
			p.Swept = append(p.Swept, sweptSegment{ID: seg.ID, End: res.End, Bad: res.BadPayloads})
		}
		p.NextSegment, p.LastSwept = seg.ID+1, seg.ID
		p.Counts.SegmentsChecked++
		p.Counts.RecordsChecked += res.Records
		p.Counts.BytesChecked += res.Bytes
		p.Counts.CorruptRecords += int64(len(res.BadPayloads))
		s.totals.SegmentsChecked++
		s.totals.RecordsChecked += res.Records
		s.totals.BytesChecked += res.Bytes
		s.totals.CorruptRecords += int64(len(res.BadPayloads))
		if res.Broken != nil {
			p.Counts.BrokenSegments++
			p.Counts.CorruptRecords++
			s.totals.BrokenSegments++
			s.totals.CorruptRecords++
		}
		err = s.save()
		s.mu.Unlock()
		if err != nil {
			return err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.st.Pass.Phase = PhaseRecords
	return s.save()
}

// verdict answers blob.CheckValue from sweep 1's findings.
func (p *pass) verdict() blob.PayloadVerdict {
	swept := map[uint64]sweptSegment{}
	for _, seg := range p.Swept {
		swept[seg.ID] = seg
	}
	last := p.LastSwept
	return func(segment uint64, off int64) (checked, bad bool) {
		if segment > last {
			return false, false // written since sweep 1 passed it
		}
		seg, ok := swept[segment]
		if !ok {
			return true, false
		}
		if off >= seg.End {
			return false, false
		}
		_, found := slices.BinarySearch(seg.Bad, off)
		return true, found
	}
}

// sweepRecords is sweep 2, from where it stopped.
func (s *Scrubber) sweepRecords(ctx context.Context) error {
	s.mu.Lock()
	phase := s.st.Pass.Phase
	verdict := s.st.Pass.verdict()
	s.mu.Unlock()
	if phase != PhaseRecords {
		return nil
	}
	for {
		s.mu.Lock()
		pos := s.st.Pass.Pos
		s.mu.Unlock()
		done, err := s.cfg.Engine.ScrubRecords(ctx, pos, verdict, func(pos []byte, v objstore.ScrubValue) error {
			return s.checked(ctx, pos, v)
		})
		if err != nil {
			return err
		}
		if done {
			break
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.st.Pass.Phase = PhaseMetadata
	return s.save()
}

// sweepMetadata is sweep 3, from where it stopped: every key and value
// of the metadata index read, so that pebble verifies every block (sweep
// 2 read the object records' blocks; this reads the rest: buckets,
// uploads, parts, counters). A damaged block stops the pass with
// pebble's error; the pass tries again from there (Run).
func (s *Scrubber) sweepMetadata(ctx context.Context) error {
	s.mu.Lock()
	phase := s.st.Pass.Phase
	s.mu.Unlock()
	if phase != PhaseMetadata {
		return nil
	}
	for {
		s.mu.Lock()
		pos := s.st.Pass.MetaPos
		s.mu.Unlock()
		next, keys, n, done, err := s.cfg.Engine.ScrubMetadata(ctx, pos)
		if err != nil {
			return err
		}
		s.mu.Lock()
		p := s.st.Pass
		p.MetaPos = next
		p.Counts.MetadataKeys += int64(keys)
		p.Counts.MetadataBytes += int64(n)
		s.totals.MetadataKeys += int64(keys)
		s.totals.MetadataBytes += int64(n)
		var serr error
		if s.cfg.Now().Sub(s.lastSave) >= s.cfg.SaveEvery {
			serr = s.save()
		}
		s.mu.Unlock()
		if serr != nil {
			return serr
		}
		if done {
			return nil
		}
	}
}

// checked takes one version's result: counted, and when damaged,
// repaired or listed.
func (s *Scrubber) checked(ctx context.Context, pos []byte, v objstore.ScrubValue) error {
	repaired, resolved := false, false
	if len(v.Damage) > 0 {
		d := damagedOf(v)
		if s.cfg.Repair != nil {
			ok, err := s.cfg.Repair(ctx, v)
			switch {
			case ctx.Err() != nil:
				return ctx.Err()
			case err != nil:
				s.log.Error("scrub: repair failed", "bucket", v.Bucket, "key", v.Key, "version", d.Version, "err", err)
			case ok:
				repaired = true
				s.log.Warn("scrub: damaged object repaired from a replica", "bucket", v.Bucket, "key", v.Key, "version", d.Version, "ranges", rangesText(d.Ranges))
			default:
				// The version no longer references the damaged bytes:
				// replaced, deleted, or repaired by a read meanwhile.
				resolved = true
				s.log.Info("scrub: damaged bytes no longer referenced (the version changed meanwhile)", "bucket", v.Bucket, "key", v.Key, "version", d.Version)
			}
		}
		if resolved {
			return s.advance(pos)
		}
		if !repaired {
			what := "reads of it fail until it is written again or deleted"
			if s.cfg.Repair != nil {
				what = "not repaired: no replica gave its bytes; reads ask them again, the next pass too"
			}
			s.log.Error("scrub: damaged object", "bucket", v.Bucket, "key", v.Key, "version", d.Version,
				"current", v.Current, "ranges", rangesText(d.Ranges), "consequence", what)
		}
		s.mu.Lock()
		p := s.st.Pass
		switch {
		case repaired:
			p.Counts.Repaired++
			s.totals.Repaired++
		case len(p.Damaged) < MaxListed:
			p.Damaged = append(p.Damaged, d)
			p.DamagedPos = append(p.DamagedPos, pos)
			fallthrough
		default:
			p.Counts.Damaged++
		}
		s.mu.Unlock()
	}
	return s.advance(pos)
}

// advance records that the version at pos was checked.
func (s *Scrubber) advance(pos []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.st.Pass
	p.Pos = pos
	p.Counts.Checked++
	s.totals.Checked++
	// Findings are saved with the position they were found at, so a
	// restart that loses the last SaveEvery of work finds them again.
	if s.cfg.Now().Sub(s.lastSave) >= s.cfg.SaveEvery {
		return s.save()
	}
	return nil
}

func damagedOf(v objstore.ScrubValue) Damaged {
	d := Damaged{Bucket: v.Bucket, Key: v.Key, Version: fmt.Sprintf("%016x", v.Version), Current: v.Current, Size: v.Size}
	for _, r := range v.Damage {
		d.Ranges = append(d.Ranges, Range{Offset: r.Offset, Length: r.Length, Segment: r.Segment, FileOffset: r.FileOffset, Reason: r.Reason})
	}
	return d
}

func rangesText(rs []Range) string {
	var b bytes.Buffer
	for i, r := range rs {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "bytes %d-%d (segment %016x offset %d: %s)", r.Offset, r.Offset+r.Length-1, r.Segment, r.FileOffset, r.Reason)
	}
	return b.String()
}

// save writes the state. Called with s.mu held.
func (s *Scrubber) save() error {
	data, err := json.Marshal(&s.st)
	if err != nil {
		return err
	}
	if err := s.cfg.State.Save(data); err != nil {
		return fmt.Errorf("scrub: save state: %w", err)
	}
	s.lastSave = s.cfg.Now()
	return nil
}
