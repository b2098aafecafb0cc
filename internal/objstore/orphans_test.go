package objstore

import (
	"bytes"
	"context"
	"crypto/md5"
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
	if !s.Unclean() {
		t.Fatal("no segments to audit after a crash")
	}
	found, err := s.ScanStaged(ctx)
	if err != nil || found == nil {
		t.Fatalf("scan: %v, %v", found, err)
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
		{"a torn stage", StagedID{"b", "torn", vTorn}, 40 << 10, nil},
		{"another version", StagedID{"b", "whole", vWhole + 100}, int64(len(whole)), nil},
		{"another size", StagedID{"b", "whole", vWhole}, int64(len(whole)) - 1, nil},
		{"another sum", StagedID{"b", "whole", vWhole}, int64(len(whole)), sum(other)},
		{"an absent key", StagedID{"b", "absent", vWhole}, 10, nil},
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
	if again := found.Take(ctx, StagedID{"b", "whole", vWhole}, int64(len(whole)), nil); again != nil {
		t.Fatal("whole's run handed out twice")
	}
	p2 := found.Take(ctx, StagedID{"b", "up", vUpload}, int64(len(part2)), sum(part2))
	if p2 == nil || !bytes.Equal(readAll("up", vUpload, p2), part2) {
		t.Fatal("part 2: not found by its sum, or other bytes")
	}

	// While the Found is open, a vacuum pass audits nothing.
	dead := func() int64 {
		var n int64
		for _, sg := range s.Segments() {
			n += sg.DeadBytes
		}
		return n
	}
	before := dead()
	if _, err := s.Vacuum(ctx, 0.99); err != nil {
		t.Fatal(err)
	}
	if got := dead(); got != before || !s.Unclean() {
		t.Fatalf("an audit ran while the Found was open: %d bytes dead, %d before", got, before)
	}
	// After Close it counts dead what nobody took (other, part 1, the torn
	// stage), not the bytes taken and not yet installed.
	found.Close()
	if st := found.Take(ctx, StagedID{"b", "other", vOther}, int64(len(other)), nil); st != nil {
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
