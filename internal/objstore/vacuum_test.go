package objstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/b3-storage/b3/internal/iolimit"
	"github.com/b3-storage/b3/internal/vfs"
)

// TestVacuumRacingWriters runs vacuum continuously while writers overwrite
// and delete: when all stops, each key holds its last acknowledged state —
// no write lost, no delete undone — and vacuum has really removed segments.
func TestVacuumRacingWriters(t *testing.T) {
	s := openStore(t, memOptions(vfs.NewCrashableMem()))
	defer s.Close()
	ensureBucket(t, s, "b")

	const writers = 4
	final := make([]map[string][]byte, writers)
	ctx, cancel := context.WithCancel(context.Background())
	var vacuumWG, writeWG sync.WaitGroup
	var removed int
	vacuumWG.Add(1)
	go func() {
		defer vacuumWG.Done()
		for ctx.Err() == nil {
			res, err := s.Vacuum(ctx, 0.1)
			removed += res.SegmentsRemoved
			if err != nil && ctx.Err() == nil {
				t.Errorf("vacuum: %v", err)
				return
			}
		}
	}()
	for w := range writers {
		writeWG.Add(1)
		go func() {
			defer writeWG.Done()
			r := rand.New(rand.NewPCG(uint64(w), 99))
			state := map[string][]byte{}
			for seq := range 600 {
				key := fmt.Sprintf("w%d/%02d", w, r.IntN(20))
				if r.IntN(4) == 0 {
					if _, err := s.DeleteObject("b", key); err != nil {
						t.Errorf("delete: %v", err)
						return
					}
					delete(state, key)
					continue
				}
				v := value(key, seq, r.IntN(16<<10))
				if _, err := s.PutObject(ctx, PutInput{Bucket: "b", Key: key, Body: bytes.NewReader(v)}); err != nil {
					t.Errorf("put: %v", err)
					return
				}
				state[key] = v
			}
			final[w] = state
		}()
	}
	writeWG.Wait()
	// One more pass with nothing racing, so the last segments go too.
	cancel()
	vacuumWG.Wait()
	res, err := s.Vacuum(context.Background(), 0.1)
	if err != nil {
		t.Fatal(err)
	}
	removed += res.SegmentsRemoved
	if removed == 0 {
		t.Fatal("vacuum removed no segment: the test exercised nothing")
	}

	for w := range writers {
		for i := range 20 {
			key := fmt.Sprintf("w%d/%02d", w, i)
			got, err := read(s, "b", key)
			want, exists := final[w][key]
			switch {
			case !exists && errors.Is(err, ErrNoSuchKey):
			case !exists:
				t.Fatalf("%s was deleted but reads back (%v): resurrected", key, err)
			case err != nil:
				t.Fatalf("%s: %v", key, err)
			case !bytes.Equal(got, want):
				t.Fatalf("%s: content differs from the last acknowledged write", key)
			}
		}
	}
	st := s.VacuumStatus()
	if st.BytesReclaimed <= 0 || st.SegmentsRemoved != int64(removed) {
		t.Fatalf("status %+v does not match %d removed segments", st, removed)
	}
}

// TestVacuumReclaimsSpace checks the accounting: after deleting most
// objects, vacuum brings the segments' total size down to about the live
// bytes, and every survivor still reads back.
func TestVacuumReclaimsSpace(t *testing.T) {
	s := openStore(t, memOptions(vfs.NewCrashableMem()))
	defer s.Close()
	ensureBucket(t, s, "b")
	var live int64
	for i := range 200 {
		key := fmt.Sprintf("k%03d", i)
		v := value(key, i, 8<<10)
		put(t, s, "b", key, v)
		if i%10 == 0 {
			live += int64(len(v))
		}
	}
	for i := range 200 {
		if i%10 != 0 {
			if _, err := s.DeleteObject("b", fmt.Sprintf("k%03d", i)); err != nil {
				t.Fatal(err)
			}
		}
	}
	before := s.VacuumStatus()
	if _, err := s.Vacuum(context.Background(), 0.5); err != nil {
		t.Fatal(err)
	}
	after := s.VacuumStatus()
	// Sealed segments shrink to the live data plus headers; the active
	// segment (never vacuumed) holds at most one segment's worth.
	limit := live*11/10 + s.opts.SegmentSize
	if after.TotalBytes > limit {
		t.Fatalf("after vacuum segments hold %d bytes (before %d, dead %d); live data is %d", after.TotalBytes, before.TotalBytes, before.DeadBytes, live)
	}
	for i := 0; i < 200; i += 10 {
		key := fmt.Sprintf("k%03d", i)
		got, err := read(s, "b", key)
		if err != nil || !bytes.Equal(got, value(key, i, 8<<10)) {
			t.Fatalf("%s after vacuum: %v", key, err)
		}
	}
}

// TestStopVacuumMidPass stops a pass while it runs: every object still
// reads back, and a later pass finishes the work.
func TestStopVacuumMidPass(t *testing.T) {
	opts := memOptions(vfs.NewCrashableMem())
	// Slow the copy down so the pass is surely under way when stopped.
	opts.Limiter = iolimit.New(iolimit.Limits{BackgroundReadBytesPerSec: 256 << 10, BackgroundWriteBytesPerSec: 256 << 10})
	s := openStore(t, opts)
	defer s.Close()
	ensureBucket(t, s, "b")
	for i := range 120 {
		put(t, s, "b", fmt.Sprintf("k%03d", i), value(fmt.Sprintf("k%03d", i), i, 8<<10))
	}
	for i := 0; i < 120; i += 2 {
		if _, err := s.DeleteObject("b", fmt.Sprintf("k%03d", i)); err != nil {
			t.Fatal(err)
		}
	}
	done := make(chan error, 1)
	go func() { _, err := s.Vacuum(context.Background(), 0.3); done <- err }()
	for s.VacuumStatus().CurrentSegment == 0 {
		select {
		case err := <-done:
			t.Fatalf("the pass ended (%v) before it could be stopped", err)
		case <-time.After(time.Millisecond):
		}
	}
	s.StopVacuum()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("stopped pass returned %v, want context.Canceled", err)
	}
	if s.VacuumStatus().Running {
		t.Fatal("vacuum still running after StopVacuum")
	}
	check := func() {
		for i := 1; i < 120; i += 2 {
			key := fmt.Sprintf("k%03d", i)
			got, err := read(s, "b", key)
			if err != nil || !bytes.Equal(got, value(key, i, 8<<10)) {
				t.Fatalf("%s: %v", key, err)
			}
		}
	}
	check()
	opts.Limiter.SetLimits(iolimit.Limits{})
	res, err := s.Vacuum(context.Background(), 0.3)
	if err != nil || res.SegmentsRemoved == 0 {
		t.Fatalf("pass after stop: %+v %v", res, err)
	}
	check()
}

// TestVacuumKeepsObjectsContiguous moves many multi-record objects at once
// (vacuum runs several moves concurrently): each object's copy must stay
// one run of records, not interleave with the others' into one extent per
// record.
func TestVacuumKeepsObjectsContiguous(t *testing.T) {
	opts := memOptions(vfs.NewCrashableMem())
	opts.SegmentSize = 256 << 10
	// A background limit makes the movers wait between records, as on a
	// real disk, so that unserialised copies would interleave.
	opts.Limiter = iolimit.New(iolimit.Limits{BackgroundWriteBytesPerSec: 256 << 10})
	s := openStore(t, opts)
	defer s.Close()
	ensureBucket(t, s, "b")
	const objects, size = 40, 10*4<<10 + 100 // 11 records each
	for i := range objects {
		put(t, s, "b", fmt.Sprint(i), value("c", i, size))
	}
	for i := 0; i < objects; i += 2 {
		if _, err := s.DeleteObject("b", fmt.Sprint(i)); err != nil {
			t.Fatal(err)
		}
	}
	before := map[int]int{}
	for i := 1; i < objects; i += 2 {
		obj, err := s.HeadObject("b", fmt.Sprint(i))
		if err != nil {
			t.Fatal(err)
		}
		before[i] = len(obj.Extents)
	}
	res, err := s.Vacuum(context.Background(), 0.3)
	if err != nil || res.SegmentsRemoved == 0 {
		t.Fatalf("vacuum: %+v %v", res, err)
	}
	for i := 1; i < objects; i += 2 {
		obj, err := s.HeadObject("b", fmt.Sprint(i))
		if err != nil {
			t.Fatal(err)
		}
		// As many extents as before (one per segment the object touched),
		// plus one where a copy crossed into a new segment.
		if len(obj.Extents) > before[i]+1 {
			t.Fatalf("object %d: %d extents after vacuum, %d before", i, len(obj.Extents), before[i])
		}
		if got, err := read(s, "b", fmt.Sprint(i)); err != nil || !bytes.Equal(got, value("c", i, size)) {
			t.Fatalf("object %d after vacuum: %v", i, err)
		}
	}
}

// TestVacuumDuringRollover: a rollover seals the active segment before it
// creates the next one (a file create and a directory sync, slow on a
// busy disk). Neither a pass that picks its candidates in that window nor
// one that runs while a write that started in it is still in flight may
// take the missing active segment for segment 0 and so hold every
// segment back.
func TestVacuumDuringRollover(t *testing.T) {
	opts := memOptions(vfs.NewCrashableMem())
	gate := &createGate{FS: opts.FS}
	opts.FS = gate
	s := openStore(t, opts)
	defer s.Close()
	ensureBucket(t, s, "b")
	ctx := context.Background()
	for i := range 24 {
		put(t, s, "b", fmt.Sprint(i), value("r", i, 10<<10))
	}
	for i := range 24 {
		if i%3 != 0 {
			if _, err := s.DeleteObject("b", fmt.Sprint(i)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if len(s.vacuumCandidates(0.3)) == 0 {
		t.Fatal("no candidate before the rollover: the test exercises nothing")
	}

	// A write that fills the active segment stops in the next one's create.
	entered, release := gate.holdNext()
	rolled := make(chan error, 1)
	go func() {
		_, err := s.PutObject(ctx, PutInput{Bucket: "b", Key: "roll", Body: bytes.NewReader(value("roll", 0, 64<<10))})
		rolled <- err
	}()
	<-entered
	if got := s.vacuumCandidates(0.3); len(got) == 0 {
		t.Error("mid-rollover: vacuum finds no candidate segment")
	}

	// Another write starts in the window and stays in flight, reading its
	// body: the second Write returns once the body is read past the part
	// the inline check takes, that is once the write is registered.
	body, feed := io.Pipe()
	slow := make(chan error, 1)
	go func() {
		_, err := s.PutObject(ctx, PutInput{Bucket: "b", Key: "slow", Body: body})
		slow <- err
	}()
	if _, err := feed.Write(make([]byte, opts.InlineMax+1)); err != nil {
		t.Fatal(err)
	}
	if _, err := feed.Write([]byte{1}); err != nil {
		t.Fatal(err)
	}
	close(release)
	if err := <-rolled; err != nil {
		t.Fatal(err)
	}
	if got := s.vacuumCandidates(0.3); len(got) == 0 {
		t.Error("a write started mid-rollover holds every segment back from vacuum")
	}
	res, err := s.Vacuum(ctx, 0.3)
	if err != nil || res.SegmentsRemoved == 0 {
		t.Errorf("pass with that write in flight: %+v %v, want segments removed", res, err)
	}
	feed.Close()
	if err := <-slow; err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 24; i += 3 {
		if got, err := read(s, "b", fmt.Sprint(i)); err != nil || !bytes.Equal(got, value("r", i, 10<<10)) {
			t.Fatalf("object %d after vacuum: %v", i, err)
		}
	}
}

// createGate holds the next segment file's creation until released.
type createGate struct {
	vfs.FS
	mu               sync.Mutex
	entered, release chan struct{}
}

func (g *createGate) holdNext() (entered, release chan struct{}) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.entered, g.release = make(chan struct{}), make(chan struct{})
	return g.entered, g.release
}

func (g *createGate) Create(name string, direct bool) (vfs.File, bool, error) {
	if strings.HasSuffix(name, ".seg") {
		g.mu.Lock()
		entered, release := g.entered, g.release
		g.entered, g.release = nil, nil
		g.mu.Unlock()
		if entered != nil {
			close(entered)
			<-release
		}
	}
	return g.FS.Create(name, direct)
}

// TestVacuumInBackgroundRunsOnReturn: a pass started in the background is
// Running as soon as the call returns, and until it has ended; a second
// start meanwhile is refused.
func TestVacuumInBackgroundRunsOnReturn(t *testing.T) {
	s := openStore(t, memOptions(vfs.NewCrashableMem()))
	defer s.Close()
	release := make(chan struct{})
	ended := make(chan error, 1)
	if err := s.VacuumInBackground(context.Background(), 0.5, func(_ VacuumResult, err error) {
		<-release
		ended <- err
	}); err != nil {
		t.Fatal(err)
	}
	if !s.VacuumStatus().Running {
		t.Fatal("a pass started in the background is not running when the start returns")
	}
	if err := s.VacuumInBackground(context.Background(), 0.5, func(VacuumResult, error) {}); !errors.Is(err, ErrVacuumInProgress) {
		t.Fatalf("a second start: %v, want ErrVacuumInProgress", err)
	}
	close(release)
	if err := <-ended; err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); s.VacuumStatus().Running; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the pass still runs after its result was given")
		}
	}
	if _, err := s.Vacuum(context.Background(), 0.5); err != nil {
		t.Fatalf("a pass after the background one: %v", err)
	}
}
