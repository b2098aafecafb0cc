package objstore

import (
	"bytes"
	"context"
	"crypto/md5"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	pvfs "github.com/cockroachdb/pebble/v2/vfs"

	"github.com/b3-storage/b3/internal/blob"
	"github.com/b3-storage/b3/internal/meta"
	"github.com/b3-storage/b3/internal/vfs"
)

// TestCrashedWritesCountedDead: a write cut short by a crash leaves synced
// records that nothing references. After the restart vacuum must count
// exactly those bytes dead (and nothing live), so that their segment
// reaches the threshold and goes.
func TestCrashedWritesCountedDead(t *testing.T) {
	mem := vfs.NewCrashableMem()
	s := openStore(t, memOptions(mem))
	ensureBucket(t, s, "b")
	keep := value("keep", 0, 8<<10)
	put(t, s, "b", "keep", keep)
	put(t, s, "b", "gone", value("gone", 0, 4<<10))
	if _, err := s.DeleteObject("b", "gone"); err != nil {
		t.Fatal(err)
	}
	// An upload in flight at the crash: its records are synced, its
	// metadata never committed.
	s.inflight.register(s.activeSegment)
	version, err := s.meta.NextVersion()
	if err != nil {
		t.Fatal(err)
	}
	ghost, _, err := s.blob.Append(context.Background(), blob.Owner{Key: ownerKey("b", "ghost"), Version: version},
		bytes.NewReader(value("ghost", 0, 40<<10)))
	if err != nil || len(ghost) != 1 {
		t.Fatalf("append: %v, %d extents", err, len(ghost))
	}
	seg := ghost[0].Segment
	crashed := mem.CrashClone(pvfs.CrashCloneCfg{})
	_ = s.Close()

	s = openStore(t, memOptions(crashed))
	deadOf := func() int64 {
		for _, st := range s.Segments() {
			if st.ID == seg {
				return st.DeadBytes
			}
		}
		return -1
	}
	counted := deadOf()
	if _, err := s.Vacuum(context.Background(), 0.99); err != nil { // audits, removes nothing
		t.Fatal(err)
	}
	if got, want := deadOf()-counted, ghost[0].Length; got != want {
		t.Fatalf("the audit counted %d bytes dead, want the %d of the interrupted write", got, want)
	}
	if _, err := s.Vacuum(context.Background(), 0.3); err != nil {
		t.Fatal(err)
	}
	if deadOf() != -1 {
		t.Fatalf("segment %d, mostly records of an interrupted write, is still there", seg)
	}
	if got, err := read(s, "b", "keep"); err != nil || !bytes.Equal(got, keep) {
		t.Fatalf("keep: %v", err)
	}
	// Audited once: a clean close and reopen count nothing more.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openStore(t, memOptions(crashed))
	defer s.Close()
	if len(s.orphans.pending) != 0 {
		t.Fatalf("segments %v to audit after a clean close", s.orphans.pending)
	}
}

// TestCleanCloseKeepsAudits: a store reopened after a crash, and closed
// cleanly before vacuum audited the crash's segments, records a clean
// end (its next start does not report an unclean one) and still audits
// those segments at the next start.
func TestCleanCloseKeepsAudits(t *testing.T) {
	mem := vfs.NewCrashableMem()
	s := openStore(t, memOptions(mem))
	ensureBucket(t, s, "b")
	put(t, s, "b", "keep", value("keep", 0, 8<<10))
	crashed := mem.CrashClone(pvfs.CrashCloneCfg{})
	_ = s.Close()

	var logs bytes.Buffer
	opts := memOptions(crashed)
	opts.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	s = openStore(t, opts)
	if !strings.Contains(logs.String(), "did not close cleanly") || len(s.orphans.pending) == 0 {
		t.Fatalf("after a crash: pending %v, logs:\n%s", s.orphans.pending, logs.String())
	}
	pending := slices.Clone(s.orphans.pending)
	if err := s.Close(); err != nil { // no vacuum ran
		t.Fatal(err)
	}
	logs.Reset()
	s = openStore(t, opts)
	defer s.Close()
	if strings.Contains(logs.String(), "did not close cleanly") {
		t.Fatalf("a clean close is reported unclean:\n%s", logs.String())
	}
	if !slices.Equal(s.orphans.pending, pending) {
		t.Fatalf("segments to audit after a clean close: %v, want %v still", s.orphans.pending, pending)
	}
}

// TestScanStagedAfterCrash: bytes staged and synced before a crash, which
// no record references, are found again after it by (bucket/key,
// version), size and MD5 sum: a complete run of records only, not a torn
// one, and of two parts of one upload (one owner) the one with the sum.
// While the Found is open the audit waits; after Close it counts what no
// one took, and leaves alone the bytes taken and not yet installed. Once a
// record references them they read back whole.
func TestScanStagedAfterCrash(t *testing.T) {
	ctx := context.Background()
	mem := vfs.NewCrashableMem()
	s := openStore(t, memOptions(mem))
	ensureBucket(t, s, "b")
	version := func() uint64 {
		t.Helper()
		v, err := s.meta.NextVersion()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	stage := func(key string, v uint64, body []byte) {
		t.Helper()
		if _, err := s.Stage(ctx, "b", key, v, bytes.NewReader(body)); err != nil {
			t.Fatal(err)
		}
	}
	whole := value("whole", 0, 100<<10) // several records (chunk size below)
	other := value("other", 0, 30<<10)
	part1, part2 := value("part1", 0, 24<<10), value("part2", 0, 24<<10)
	vWhole, vOther, vUpload, vTorn := version(), version(), version(), version()
	stage("whole", vWhole, whole)
	stage("other", vOther, other)
	stage("up", vUpload, part1) // two parts of one upload: one owner, one size
	stage("up", vUpload, part2)
	// A stage cut short: its first half only.
	torn, _, err := s.blob.Append(ctx, blob.Owner{Key: ownerKey("b", "torn"), Version: vTorn}, bytes.NewReader(value("torn", 0, 20<<10)))
	if err != nil {
		t.Fatal(err)
	}
	crashed := mem.CrashClone(pvfs.CrashCloneCfg{})
	_ = s.Close()

	s = openStore(t, memOptions(crashed))
	defer func() { _ = s.Close() }()
	found := s.ScanStaged(ctx)
	if found == nil {
		t.Fatal("no segments to audit after a crash: nothing to scan")
	}
	if err := found.Wait(ctx); err != nil {
		t.Fatalf("scan: %v", err)
	}
	if got := found.Runs(); got != 5 {
		t.Fatalf("%d runs found, want 5 (whole, other, two parts, the torn stage's start)", got)
	}
	sum := func(b []byte) []byte { h := md5.Sum(b); return h[:] }
	for _, miss := range []struct {
		name string
		id   StagedID
		size int64
		sum  []byte
	}{
		{"a torn stage", StagedID{"b", "torn", vTorn}, 40 << 10, sum(value("torn", 0, 40<<10))},
		{"another version", StagedID{"b", "whole", vWhole + 100}, int64(len(whole)), sum(whole)},
		{"another size", StagedID{"b", "whole", vWhole}, int64(len(whole)) - 1, sum(whole[1:])},
		{"another sum", StagedID{"b", "whole", vWhole}, int64(len(whole)), sum(other)},
		{"no sum", StagedID{"b", "whole", vWhole}, int64(len(whole)), nil},
		{"an absent key", StagedID{"b", "absent", vWhole}, 10, sum(whole[:10])},
	} {
		if st := found.Take(ctx, miss.id, miss.size, miss.sum); st != nil {
			t.Fatalf("%s: found %v", miss.name, st.Extents)
		}
	}
	readAll := func(key string, v uint64, st *Staged) []byte {
		t.Helper()
		r, err := s.ReadExtents(ctx, "b", key, v, st.Extents, st.Size)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		got, err := io.ReadAll(r)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	st := found.Take(ctx, StagedID{"b", "whole", vWhole}, int64(len(whole)), sum(whole))
	if st == nil || !bytes.Equal(readAll("whole", vWhole, st), whole) {
		t.Fatal("whole: not found, or other bytes")
	}
	if again := found.Take(ctx, StagedID{"b", "whole", vWhole}, int64(len(whole)), sum(whole)); again != nil {
		t.Fatal("whole's run handed out twice")
	}
	p2 := found.Take(ctx, StagedID{"b", "up", vUpload}, int64(len(part2)), sum(part2))
	if p2 == nil || !bytes.Equal(readAll("up", vUpload, p2), part2) {
		t.Fatal("part 2: not found by its sum, or other bytes")
	}

	// While the Found is open, a vacuum pass audits nothing.
	dead := func() int64 { return s.VacuumStatus().DeadBytes }
	before := dead()
	if _, err := s.Vacuum(ctx, 0.99); err != nil {
		t.Fatal(err)
	}
	if got := dead(); got != before || len(s.orphans.pending) == 0 {
		t.Fatalf("an audit ran while the Found was open: %d bytes dead, %d before", got, before)
	}
	// After Close it counts dead what nobody took (other, part 1, the torn
	// stage), not the bytes taken and not yet installed.
	found.Close()
	if st := found.Take(ctx, StagedID{"b", "other", vOther}, int64(len(other)), sum(other)); st != nil {
		t.Fatal("Take after Close handed out bytes")
	}
	if _, err := s.Vacuum(ctx, 0.99); err != nil {
		t.Fatal(err)
	}
	var want int64 // the records' bytes: header, owner key, payload
	for _, e := range torn {
		want += e.Length
	}
	for key, b := range map[string][]byte{"other": other, "up": part1} {
		chunks := (len(b) + 4<<10 - 1) / (4 << 10)
		want += int64(len(b) + chunks*(32+len(ownerKey("b", key))))
	}
	if got := dead() - before; got != want {
		t.Fatalf("the audit counted %d bytes dead, want other's, part 1's and the torn stage's %d", got, want)
	}

	// Referenced, whole reads back; part 2, discarded, is counted dead.
	if err := s.ApplyPutObject(&meta.Object{Bucket: "b", Key: "whole", Version: vWhole, Modified: time.Now(), ETag: "e", Size: st.Size, Extents: st.Extents}, 1); err != nil {
		t.Fatal(err)
	}
	st.Release()
	if got, err := read(s, "b", "whole"); err != nil || !bytes.Equal(got, whole) {
		t.Fatalf("whole after install: %v", err)
	}
	before = dead()
	p2.Discard()
	var p2Len int64
	for _, e := range p2.Extents {
		p2Len += e.Length
	}
	if got := dead() - before; got != p2Len {
		t.Fatalf("discarding a found part counted %d bytes dead, want %d", got, p2Len)
	}
	if len(s.orphans.claimed) != 0 {
		t.Fatalf("claims left after release and discard: %v", s.orphans.claimed)
	}
}

// TestChaining: the records of stages written at once interleave in the
// segments. With each stage's records tagged, every stage's run is kept
// whole, however they interleave; untagged (records written before tags),
// the three ways of chaining keep it whole in the usual orders.
func TestChaining(t *testing.T) {
	// A record is its stage's name and its chunk's index: "a1" is stage
	// a's second chunk. Every chunk is 4 bytes; stages share one owner.
	for _, tc := range []struct {
		name       string
		records    []string
		want       []string // runs that must be among those kept
		none       []string // runs that must not
		taggedOnly bool     // no chaining of untagged records keeps want
	}{
		{"one stage", []string{"a0", "a1", "a2"}, []string{"a0 a1 a2"}, nil, false},
		{"two stages taking turns", []string{"a0", "b0", "a1", "b1", "a2", "b2"}, []string{"a0 a1 a2", "b0 b1 b2"}, nil, false},
		{"three stages taking turns", []string{"a0", "b0", "c0", "a1", "b1", "c1", "a2", "b2", "c2"}, []string{"a0 a1 a2", "b0 b1 b2", "c0 c1 c2"}, nil, false},
		{"a shorter stage, then a longer one", []string{"s0", "s1", "l0", "l1", "l2", "l3"}, []string{"s0 s1", "l0 l1 l2 l3"}, nil, false},
		{"a torn stage, then its retry", []string{"t0", "t1", "r0", "r1", "r2"}, []string{"r0 r1 r2"}, nil, false},
		{"two stages taking turns in pairs", []string{"a0", "a1", "b0", "b1", "a2", "a3", "b2", "b3"}, []string{"a0 a1 a2 a3", "b0 b1 b2 b3"}, nil, false},
		{"two stages taking turns in threes", []string{"a0", "a1", "a2", "b0", "b1", "b2", "a3", "a4", "a5", "b3", "b4", "b5"}, []string{"a0 a1 a2 a3 a4 a5", "b0 b1 b2 b3 b4 b5"}, nil, false},
		{"a torn stage, then two taking turns", []string{"t0", "t1", "a0", "b0", "a1", "b1", "a2", "b2", "a3", "b3"}, []string{"a0 a1 a2 a3", "b0 b1 b2 b3"}, nil, false},
		{"a shorter stage, then three taking turns", []string{"s0", "s1", "a0", "b0", "c0", "a1", "b1", "c1", "a2", "b2", "c2"}, []string{"s0 s1", "a0 a1 a2", "b0 b1 b2", "c0 c1 c2"}, nil, false},
		{"a fragment", []string{"x1", "x2"}, nil, []string{"x1", "x1 x2"}, false},
		{"turns whose order changes", []string{"a0", "b0", "b1", "a1", "b2", "a2", "a3", "b3"}, []string{"a0 a1 a2 a3", "b0 b1 b2 b3"}, nil, true},
		{"a stage torn among stages taking turns", []string{"a0", "t0", "b0", "a1", "b1", "a2", "b2"}, []string{"a0 a1 a2", "b0 b1 b2"}, nil, true},
	} {
		for _, tagged := range []bool{true, false} {
			if tc.taggedOnly && !tagged {
				continue
			}
			t.Run(fmt.Sprintf("%s/tagged=%v", tc.name, tagged), func(t *testing.T) {
				checkChaining(t, tc.records, tagged, tc.want, tc.none)
			})
		}
	}
}

func checkChaining(t *testing.T, records []string, tagged bool, want, none []string) {
	t.Helper()
	id := ownerID{"b\x00k", 7}
	at := map[int64]string{}
	ways := chainings()
	var runs []*foundRun
	for i, name := range records {
		chunk := int64(name[1] - '0')
		pos := int64(i) * 100
		at[pos] = name
		r := blob.Record{ChunkOffset: chunk * 4, Extent: blob.Extent{Segment: 1, Offset: pos, Length: 40, Size: 4}}
		if tagged {
			r.Tag = uint16(name[0])
		}
		for _, ch := range ways {
			if rn := ch.add(stageKey{id, r.Tag}, r); rn != nil {
				runs = append(runs, rn)
			}
		}
	}
	kept := map[string]bool{}
	for _, rn := range runs {
		var names []string
		for r := rn; r != nil; r = r.parent {
			names = append([]string{at[r.rec.Offset]}, names...)
		}
		kept[strings.Join(names, " ")] = true
	}
	for _, w := range want {
		if !kept[w] {
			t.Errorf("run %q not kept; kept %v", w, kept)
		}
	}
	for _, n := range none {
		if kept[n] {
			t.Errorf("run %q kept", n)
		}
	}
}

// TestScanStagedAfterCrashParts: the parts of one upload, staged one after
// the other, a shorter one first, are both found; a part a record already
// references is not handed out again (a retried command with the same
// bytes gets its own), so nothing live is counted dead.
func TestScanStagedAfterCrashParts(t *testing.T) {
	ctx := context.Background()
	mem, s, v := stagingStore(t)
	up := &meta.Upload{Bucket: "b", Key: "up", UploadID: meta.NewUploadID(v), Version: v, Initiated: time.Now()}
	if err := s.ApplyCreateUpload(up, 10); err != nil {
		t.Fatal(err)
	}
	installed, p3, p1 := value("p2", 0, 16<<10), value("p3", 0, 8<<10), value("p1", 0, 16<<10)
	st, err := s.Stage(ctx, "b", "up", v, bytes.NewReader(installed))
	if err != nil {
		t.Fatal(err)
	}
	part := &meta.Part{UploadID: up.UploadID, Number: 2, Size: st.Size, ETag: "e", Modified: time.Now(), Extents: st.Extents}
	if err := s.ApplyPutPart("b", "up", part, 11); err != nil {
		t.Fatal(err)
	}
	st.Release()
	for _, b := range [][]byte{p3, p1} {
		if _, err := s.Stage(ctx, "b", "up", v, bytes.NewReader(b)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.StampApplied(11); err != nil {
		t.Fatal(err)
	}
	crashed := mem.CrashClone(pvfs.CrashCloneCfg{})
	_ = s.Close()

	_, found := scanAfterCrash(t, crashed)
	sum := func(b []byte) []byte { h := md5.Sum(b); return h[:] }
	id := StagedID{"b", "up", v}
	if got := found.Take(ctx, id, int64(len(installed)), sum(installed)); got != nil {
		t.Fatalf("part 2's installed bytes handed out again: %v", got.Extents)
	}
	for _, b := range [][]byte{p3, p1} {
		got := found.Take(ctx, id, int64(len(b)), sum(b))
		if got == nil {
			t.Fatalf("a part of %d bytes not found", len(b))
		}
		got.Discard()
	}
}

// TestScanStagedAfterCrashInterleaved: parts of one upload staged at the
// same moment, their records interleaved in an order no chaining of
// untagged records undoes (turns whose order changes, and a stage torn
// after its first record among them), are each found whole after a
// crash: each stage's records carry its own tag.
func TestScanStagedAfterCrashInterleaved(t *testing.T) {
	ctx := context.Background()
	mem, s, v := stagingStore(t)
	const chunk = 4 << 10 // memOptions' chunk size
	bodies := map[byte][]byte{'a': value("a", 0, 4*chunk), 'b': value("b", 0, 4*chunk), 't': value("t", 0, 3*chunk)}
	gates := map[byte]*gatedBody{}
	results := make(chan error, len(bodies))
	for name, body := range bodies {
		g := &gatedBody{data: body, chunk: chunk, turn: make(chan bool), appended: make(chan struct{})}
		gates[name] = g
		go func() {
			st, err := s.Stage(ctx, "b", "up", v, g)
			if err == nil {
				st.Release()
			}
			results <- err
		}()
	}
	// One record at a time, in this order; t never gets its second turn.
	// a and b end with their fourth: the Read after it says io.EOF.
	for _, name := range []byte("atbbabaab") {
		gates[name].turn <- true
		<-gates[name].appended
	}
	for range 2 {
		if err := <-results; err != nil {
			t.Fatal(err)
		}
	}
	crashed := mem.CrashClone(pvfs.CrashCloneCfg{})
	gates['t'].turn <- false // the torn stage's body fails: its Stage ends
	if err := <-results; err == nil {
		t.Fatal("the torn stage succeeded")
	}
	_ = s.Close()

	s, found := scanAfterCrash(t, crashed)
	id := StagedID{"b", "up", v}
	for _, name := range []byte("ab") {
		b := bodies[name]
		sum := md5.Sum(b)
		st := found.Take(ctx, id, int64(len(b)), sum[:])
		if st == nil {
			t.Fatalf("part %c not found", name)
		}
		r, err := s.ReadExtents(ctx, "b", "up", v, st.Extents, st.Size)
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(r)
		r.Close()
		if err != nil || !bytes.Equal(got, b) {
			t.Fatalf("part %c read back: %v", name, err)
		}
		st.Discard()
	}
	tsum := md5.Sum(bodies['t'])
	if st := found.Take(ctx, id, int64(len(bodies['t'])), tsum[:]); st != nil {
		t.Fatalf("the torn stage found whole: %v", st.Extents)
	}
}

// stagingStore opens a store on memory a test can crash, with bucket b,
// and returns a new version for the test's stages.
func stagingStore(t *testing.T) (*pvfs.MemFS, *Store, uint64) {
	t.Helper()
	mem := vfs.NewCrashableMem()
	s := openStore(t, memOptions(mem))
	ensureBucket(t, s, "b")
	v, err := s.meta.NextVersion()
	if err != nil {
		t.Fatal(err)
	}
	return mem, s, v
}

// scanAfterCrash opens the store a crash left and waits for its
// ScanStaged; both close when the test ends.
func scanAfterCrash(t *testing.T, crashed pvfs.FS) (*Store, *Found) {
	t.Helper()
	s := openStore(t, memOptions(crashed))
	t.Cleanup(func() { _ = s.Close() })
	found := s.ScanStaged(context.Background())
	if found == nil {
		t.Fatal("nothing to scan after a crash")
	}
	t.Cleanup(found.Close)
	if err := found.Wait(context.Background()); err != nil {
		t.Fatalf("scan: %v", err)
	}
	return s, found
}

// gatedBody hands out its data a chunk per turn the test gives it (false:
// fail instead). Append reads the next chunk only after appending the
// last, so each Read after the first reports (appended) that the record of
// the chunk before is in the segment.
type gatedBody struct {
	data     []byte
	chunk    int
	turn     chan bool
	appended chan struct{}
	started  bool
}

func (g *gatedBody) Read(p []byte) (int, error) {
	if g.started {
		g.appended <- struct{}{}
	}
	g.started = true
	if len(g.data) == 0 {
		return 0, io.EOF
	}
	if !<-g.turn {
		return 0, errors.New("cut short")
	}
	n := copy(p[:min(len(p), g.chunk)], g.data)
	g.data = g.data[n:]
	return n, nil
}

// TestExtentIndex: a record is covered when an extent holds it, whatever
// the order the extents come in, and where extents overlap or touch.
func TestExtentIndex(t *testing.T) {
	x := newExtentIndex([]meta.Extent{
		{Segment: 3, Offset: 20, Length: 10}, {Segment: 1, Offset: 300, Length: 50}, {Segment: 1, Offset: 0, Length: 100},
		{Segment: 5, Offset: 0, Length: 100}, {Segment: 5, Offset: 10, Length: 20}, // one inside another
		{Segment: 6, Offset: 0, Length: 10}, {Segment: 6, Offset: 10, Length: 10}, // touching
		{Segment: 7, Offset: 40, Length: 0}, // empty
	})
	for _, tc := range []struct {
		segment uint64
		offset  int64
		want    bool
	}{
		{1, 0, true}, {1, 99, true}, {1, 100, false}, {1, 299, false}, {1, 300, true}, {1, 349, true}, {1, 350, false},
		{2, 0, false}, {3, 19, false}, {3, 20, true}, {3, 29, true}, {3, 30, false}, {0, 0, false}, {4, 0, false},
		{5, 50, true}, {5, 99, true}, {5, 100, false}, {6, 15, true}, {6, 20, false}, {7, 40, false},
	} {
		if got := x.covers(tc.segment, tc.offset); got != tc.want {
			t.Errorf("record at %d:%d: covered %v, want %v", tc.segment, tc.offset, got, tc.want)
		}
	}
}
