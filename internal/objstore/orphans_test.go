package objstore

import (
	"bytes"
	"context"
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

// TestFindStagedAfterCrash: bytes staged and synced before a crash, which
// no record references, are found again after it by (bucket/key,
// version) and size: a complete run of records only, not a torn one; the
// audit leaves the found bytes alone while they are claimed; once a record
// references them they read back whole; a found object discarded is counted
// dead.
func TestFindStagedAfterCrash(t *testing.T) {
	ctx := context.Background()
	mem := vfs.NewCrashableMem()
	s := openStore(t, memOptions(mem))
	ensureBucket(t, s, "b")
	stage := func(key string, body []byte) (uint64, *Staged) {
		t.Helper()
		version, err := s.meta.NextVersion()
		if err != nil {
			t.Fatal(err)
		}
		st, err := s.Stage(ctx, "b", key, version, bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		return version, st
	}
	whole := value("whole", 0, 100<<10) // several records (chunk size below)
	other := value("other", 0, 30<<10)
	vWhole, _ := stage("whole", whole)
	vOther, _ := stage("other", other)
	// A stage cut short: its first half only.
	vTorn, err := s.meta.NextVersion()
	if err != nil {
		t.Fatal(err)
	}
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
	want := map[StagedID]int64{
		{"b", "whole", vWhole}:     int64(len(whole)),
		{"b", "other", vOther}:     int64(len(other)),
		{"b", "torn", vTorn}:       40 << 10, // the stage's size; half was written
		{"b", "absent", vTorn}:     10,
		{"b", "whole", vWhole + 1}: int64(len(whole)), // another version
	}
	found, err := s.FindStaged(ctx, want)
	if err != nil {
		t.Fatal(err)
	}
	if len(found) != 2 || found[StagedID{"b", "whole", vWhole}] == nil || found[StagedID{"b", "other", vOther}] == nil {
		t.Fatalf("found %v, want whole and other only", found)
	}
	st := found[StagedID{"b", "whole", vWhole}]
	r, err := s.ReadExtents(ctx, "b", "whole", vWhole, st.Extents, st.Size)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(r)
	r.Close()
	if err != nil || !bytes.Equal(got, whole) {
		t.Fatalf("found bytes differ: %v (%d bytes)", err, len(got))
	}

	// The audit (the first vacuum pass) counts the torn stage dead, not the
	// claimed bytes.
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
	var tornLen int64
	for _, e := range torn {
		tornLen += e.Length
	}
	if got := dead() - before; got != tornLen {
		t.Fatalf("the audit counted %d bytes dead, want the torn stage's %d", got, tornLen)
	}

	// Referenced, whole reads back; other, discarded, is counted dead.
	if err := s.ApplyPutObject(&meta.Object{Bucket: "b", Key: "whole", Version: vWhole, Modified: time.Now(), ETag: "e", Size: st.Size, Extents: st.Extents}, 1); err != nil {
		t.Fatal(err)
	}
	st.Release()
	if got, err := read(s, "b", "whole"); err != nil || !bytes.Equal(got, whole) {
		t.Fatalf("whole after install: %v", err)
	}
	o := found[StagedID{"b", "other", vOther}]
	before = dead()
	o.Discard()
	var otherLen int64
	for _, e := range o.Extents {
		otherLen += e.Length
	}
	if got := dead() - before; got != otherLen {
		t.Fatalf("discarding a found object counted %d bytes dead, want %d", got, otherLen)
	}
	if len(s.orphans.claimed) != 0 {
		t.Fatalf("claims left after release and discard: %v", s.orphans.claimed)
	}
}
