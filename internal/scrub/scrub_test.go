package scrub

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/b3-storage/b3/internal/blob"
	"github.com/b3-storage/b3/internal/objstore"
)

// memState is a StateStore in memory.
type memState struct {
	mu   sync.Mutex
	data []byte
}

func (m *memState) Load() ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.data == nil {
		return nil, fs.ErrNotExist
	}
	return slices.Clone(m.data), nil
}

func (m *memState) Save(b []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.data = slices.Clone(b)
	return nil
}

// fakeEngine has segments 1..segments and records r00..r(n-1), one per
// position, of which those in damaged are damaged; stopAfter, when
// positive, ends the context (a stop) after that many records checked.
type fakeEngine struct {
	segments int
	records  int
	damaged  map[string]bool

	mu       sync.Mutex
	metaErr  error // ScrubMetadata's answer, when set
	swept    []uint64
	checked  []string
	verdicts map[string][2]bool // record -> what verdict said about (1, 100)
	onRecord func(key string)
}

func (e *fakeEngine) ScrubSegments() []blob.SegmentInfo {
	var out []blob.SegmentInfo
	for id := 1; id <= e.segments; id++ {
		out = append(out, blob.SegmentInfo{ID: uint64(id), Active: id == e.segments})
	}
	return out
}

func (e *fakeEngine) ScrubSegment(_ context.Context, id uint64) (blob.SegmentCheck, error) {
	e.mu.Lock()
	e.swept = append(e.swept, id)
	e.mu.Unlock()
	res := blob.SegmentCheck{Segment: id, Records: 10, Bytes: 1000, End: 1000}
	if id == 1 {
		res.BadPayloads = []int64{100}
	}
	return res, nil
}

func (e *fakeEngine) ScrubRecords(ctx context.Context, pos []byte, verdict blob.PayloadVerdict, fn func([]byte, objstore.ScrubValue) error) (bool, error) {
	for i := range e.records {
		key := fmt.Sprintf("r%02d", i)
		if string(pos) >= key {
			continue
		}
		if err := ctx.Err(); err != nil {
			return false, err
		}
		checked, bad := verdict(1, 100)
		v := objstore.ScrubValue{Bucket: "b", Key: key, Version: uint64(i), Current: true, Size: 10}
		if e.damaged[key] {
			v.Damage = []blob.Damage{{Offset: 0, Length: 10, Segment: 1, FileOffset: 100, Reason: "payload checksum mismatch"}}
		}
		e.mu.Lock()
		e.checked = append(e.checked, key)
		e.verdicts[key] = [2]bool{checked, bad}
		e.mu.Unlock()
		if err := fn([]byte(key), v); err != nil {
			return false, err
		}
		if e.onRecord != nil {
			e.onRecord(key)
		}
	}
	return true, nil
}

func (e *fakeEngine) ScrubMetadata(_ context.Context, pos []byte) ([]byte, int, int64, bool, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.metaErr != nil {
		return pos, 0, 0, false, e.metaErr
	}
	// Three steps of 10 keys: positions "m1", "m2", "m3".
	next := []byte{'m', '1'}
	if pos != nil {
		next = []byte{'m', pos[1] + 1}
	}
	return next, 10, 100, next[1] == '3', nil
}

func newTestScrubber(t *testing.T, e *fakeEngine, state *memState, repair func(context.Context, objstore.ScrubValue) (bool, error)) *Scrubber {
	t.Helper()
	s, err := New(Config{Engine: e, State: state, Logger: slog.New(slog.DiscardHandler), SaveEvery: time.Nanosecond, Repair: repair})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func keysOf(ds []Damaged) []string {
	var out []string
	for _, d := range ds {
		out = append(out, d.Key)
	}
	return out
}

// TestScrubPass: one pass sweeps every segment, then every record with
// the sweep's verdicts, and reports exactly the damaged ones; with a
// repairer, what it repairs is counted and not listed.
func TestScrubPass(t *testing.T) {
	cases := []struct {
		name         string
		repair       func(context.Context, objstore.ScrubValue) (bool, error)
		wantDamaged  []string
		wantRepaired int64
	}{
		{"report only", nil, []string{"r02", "r05"}, 0},
		{"repair all", func(context.Context, objstore.ScrubValue) (bool, error) { return true, nil }, nil, 2},
		{"repair fails", func(context.Context, objstore.ScrubValue) (bool, error) { return false, errors.New("no peer") }, []string{"r02", "r05"}, 0},
		{"repair r05", func(_ context.Context, v objstore.ScrubValue) (bool, error) {
			if v.Key == "r05" {
				return true, nil
			}
			return false, errors.New("no peer")
		}, []string{"r02"}, 1},
		{"changed meanwhile", func(context.Context, objstore.ScrubValue) (bool, error) { return false, nil }, nil, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := &fakeEngine{segments: 3, records: 8, damaged: map[string]bool{"r02": true, "r05": true}, verdicts: map[string][2]bool{}}
			s := newTestScrubber(t, e, &memState{}, tc.repair)
			if err := s.runPass(context.Background()); err != nil {
				t.Fatal(err)
			}
			st := s.Status()
			if st.Running || st.Passes != 1 || st.Finished == nil || st.Checked != 8 || st.SegmentsChecked != 3 ||
				st.RecordsChecked != 30 || st.CorruptRecords != 1 || st.Repaired != tc.wantRepaired {
				t.Errorf("status %+v", st)
			}
			if got := keysOf(st.Damaged); !slices.Equal(got, tc.wantDamaged) {
				t.Errorf("damaged %v, want %v", got, tc.wantDamaged)
			}
			if v := e.verdicts["r00"]; v != [2]bool{true, true} {
				t.Errorf("verdict of the record the sweep found bad: %v", v)
			}
		})
	}
}

// TestScrubResumes: a pass stopped in either sweep goes on, after a
// "restart" (a new Scrubber on the saved state), from where it was: no
// segment swept twice, no record checked twice, damage found before the
// stop still reported; while the next pass runs, the last pass's findings
// it has not reached yet stay listed.
func TestScrubResumes(t *testing.T) {
	state := &memState{}
	e := &fakeEngine{segments: 4, records: 10, damaged: map[string]bool{"r01": true, "r08": true}, verdicts: map[string][2]bool{}}
	ctx, stop := context.WithCancel(context.Background())
	e.onRecord = func(key string) {
		if key == "r04" {
			stop()
		}
	}
	s := newTestScrubber(t, e, state, nil)
	if err := s.runPass(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("stopped pass: %v", err)
	}
	if st := s.Status(); st.Checked != 5 || !slices.Equal(keysOf(st.Damaged), []string{"r01"}) {
		t.Fatalf("status of the stopped pass: %+v", st)
	}

	e.onRecord = nil
	s = newTestScrubber(t, e, state, nil)
	if err := s.runPass(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(e.swept, []uint64{1, 2, 3, 4}) {
		t.Errorf("segments swept %v", e.swept)
	}
	want := []string{"r00", "r01", "r02", "r03", "r04", "r05", "r06", "r07", "r08", "r09"}
	if !slices.Equal(e.checked, want) {
		t.Errorf("records checked %v", e.checked)
	}
	st := s.Status()
	if st.Passes != 1 || st.Checked != 10 || !slices.Equal(keysOf(st.Damaged), []string{"r01", "r08"}) {
		t.Fatalf("status after the resumed pass: %+v", st)
	}

	// The next pass, stopped after r04: r01 was checked again (and is
	// still damaged), r08 not yet: both listed, once each.
	ctx, stop = context.WithCancel(context.Background())
	e.onRecord = func(key string) {
		if key == "r04" {
			stop()
		}
	}
	s = newTestScrubber(t, e, state, nil)
	if err := s.runPass(ctx); !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
	if got := keysOf(s.Status().Damaged); !slices.Equal(got, []string{"r01", "r08"}) {
		t.Errorf("damaged while the next pass runs: %v", got)
	}
}

// TestScrubSchedule: Run resumes a pass left unfinished at once, starts
// one on Start, and refuses a Start while one runs.
func TestScrubSchedule(t *testing.T) {
	state := &memState{}
	e := &fakeEngine{segments: 2, records: 3, damaged: map[string]bool{}, verdicts: map[string][2]bool{}}
	block := make(chan struct{})
	e.onRecord = func(string) { <-block }
	s := newTestScrubber(t, e, state, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.Run(ctx)
	}()
	defer func() {
		cancel()
		<-done
	}()
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, func() bool { return s.Status().Running })
	if err := s.Start(); !errors.Is(err, ErrRunning) {
		t.Errorf("Start while running: %v", err)
	}
	close(block)
	waitUntil(t, func() bool { st := s.Status(); return !st.Running && st.Passes == 1 })
	if st := s.Status(); st.NextPass != nil || st.Phase != "" {
		t.Errorf("no interval, yet %+v", st)
	}
}

func waitUntil(t *testing.T, cond func() bool) {
	t.Helper()
	for range 500 {
		if cond() {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("timed out")
}

// TestScrubStateUnreadable: a saved state that does not decode (bit rot
// in the state file itself) does not keep the store from starting: the
// scrubber starts afresh and saves a good one.
func TestScrubStateUnreadable(t *testing.T) {
	state := &memState{data: []byte(`{"first_start": "2026-12-0`)}
	e := &fakeEngine{segments: 1, records: 1, damaged: map[string]bool{}, verdicts: map[string][2]bool{}}
	s := newTestScrubber(t, e, state, nil)
	if st := s.Status(); st.Passes != 0 || st.Started != nil {
		t.Fatalf("status %+v", st)
	}
	if _, err := New(Config{Engine: e, State: state, Logger: slog.New(slog.DiscardHandler)}); err != nil {
		t.Fatalf("the state saved afresh does not load: %v", err)
	}
}

// TestScrubInterval: with an interval, passes start by themselves, one
// interval after the first start and then after each pass's end.
func TestScrubInterval(t *testing.T) {
	e := &fakeEngine{segments: 1, records: 2, damaged: map[string]bool{}, verdicts: map[string][2]bool{}}
	s, err := New(Config{Engine: e, State: &memState{}, Interval: 50 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if st := s.Status(); st.NextPass == nil || st.IntervalSeconds != 0.05 {
		t.Fatalf("before the first pass: %+v", st)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.Run(ctx)
	}()
	waitUntil(t, func() bool { return s.Status().Passes >= 2 })
	cancel()
	<-done
}

// TestScrubMetadataSweep: sweep 3 reads the metadata to its end; a read
// error (pebble's, for a damaged block) stops the pass, shows as
// last_error, and the pass goes on from where it stopped once the error
// is gone.
func TestScrubMetadataSweep(t *testing.T) {
	state := &memState{}
	e := &fakeEngine{segments: 1, records: 2, damaged: map[string]bool{}, verdicts: map[string][2]bool{}}
	e.metaErr = errors.New("pebble: corruption in block")
	s := newTestScrubber(t, e, state, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.Run(ctx)
	}()
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, func() bool { return s.Status().LastError != "" })
	cancel()
	<-done
	if st := s.Status(); st.Passes != 0 || st.Checked != 2 || st.LastError != "pebble: corruption in block" {
		t.Fatalf("stopped on the metadata: %+v", st)
	}
	e.metaErr = nil
	s = newTestScrubber(t, e, state, nil)
	if err := s.runPass(context.Background()); err != nil {
		t.Fatal(err)
	}
	if st := s.Status(); st.Passes != 1 || st.MetadataKeys != 30 || st.MetadataBytes != 300 || st.Checked != 2 || st.LastError != "" {
		t.Fatalf("after: %+v", st)
	}
}
