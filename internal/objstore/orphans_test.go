package objstore

import (
	"bytes"
	"context"
	"log/slog"
	"slices"
	"strings"
	"testing"

	pvfs "github.com/cockroachdb/pebble/v2/vfs"

	"github.com/b3-storage/b3/internal/blob"
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
