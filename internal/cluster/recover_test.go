package cluster

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	pvfs "github.com/cockroachdb/pebble/v2/vfs"
	"github.com/hashicorp/raft"

	"github.com/b3-storage/b3/internal/meta"
	"github.com/b3-storage/b3/internal/objstore"
	"github.com/b3-storage/b3/internal/vfs"
)

// TestStagedBytesFoundAfterCrash: a node staged bytes (synced, as it
// acknowledges a push) and crashed before it applied the commands that
// install them: a put its log held, a put its log had not received yet (in
// sync mode the leader proposes once a majority holds the bytes), and a
// part of an upload beside another part of the same size. At start it
// scans its segments, and each apply takes its bytes from what the scan
// found, by owner, size and MD5 sum, at once or, when the runs come while
// it waits for a fetch, then: it needs no member to fetch from. Bytes no
// command takes go to the audit after stageTTL.
func TestStagedBytesFoundAfterCrash(t *testing.T) {
	ctx := context.Background()
	bodies := map[string][]byte{
		"a":  bytes.Repeat([]byte("a-bytes."), 100<<10/8), // its put is in the log at the crash
		"b":  bytes.Repeat([]byte("b-bytes."), 30<<10/8),  // its put reaches the log after
		"c":  bytes.Repeat([]byte("c-bytes."), 20<<10/8),  // no command ever takes it
		"p1": bytes.Repeat([]byte("part-1.."), 16<<10/8),  // two parts of upload "u"
		"p2": bytes.Repeat([]byte("part-2.."), 16<<10/8),
	}
	const upload = 1<<32 | 9
	versions := map[string]uint64{"a": 1<<32 | 5, "b": 1<<32 | 6, "c": 1<<32 | 7, "p1": upload, "p2": upload}
	keys := map[string]string{"a": "a", "b": "b", "c": "c", "p1": "u", "p2": "u"}
	s := crashAfterStaging(t, func(s *objstore.Store) {
		for _, k := range []string{"a", "b", "c", "p1", "p2"} {
			if _, err := s.Stage(ctx, "b", keys[k], versions[k], bytes.NewReader(bodies[k])); err != nil {
				t.Fatal(err)
			}
		}
	})

	etag := func(k string) string { sum := md5.Sum(bodies[k]); return hex.EncodeToString(sum[:]) }
	put := func(index uint64, k string) *raft.Log {
		obj := &meta.Object{Bucket: "b", Key: k, Version: versions[k], Size: int64(len(bodies[k])), Modified: t0, ETag: etag(k)}
		return commandLog(index, &command{Op: opPutObject, Object: obj, Stage: 100 + index})
	}
	uploadID := meta.NewUploadID(upload)
	part := func(index uint64, n int) *raft.Log {
		k := fmt.Sprintf("p%d", n)
		p := &meta.Part{UploadID: uploadID, Number: n, Size: int64(len(bodies[k])), ETag: etag(k), Modified: t0}
		return commandLog(index, &command{Op: opPutPart, Name: "b", Key: "u", Version: upload, Part: p, Stage: 100 + index})
	}
	// At the crash the log holds the bucket at 1, the upload at 2 and a's
	// put at 3, committed, not applied (the bucket's apply, not synced, may
	// be lost too). b's put and part 2 come after the restart.
	logs := raft.NewInmemStore()
	up := &meta.Upload{Bucket: "b", Key: "u", UploadID: uploadID, Version: upload, Initiated: t0}
	if err := logs.StoreLogs([]*raft.Log{
		commandLog(1, &command{Op: opCreateBucket, Bucket: &meta.Bucket{Name: "b", Created: t0}}),
		commandLog(2, &command{Op: opCreateUpload, Upload: up}),
		put(3, "a"),
	}); err != nil {
		t.Fatal(err)
	}
	applied, err := s.Applied()
	if err != nil || applied > 1 {
		t.Fatalf("applied %d, %v", applied, err)
	}
	closing, cancel := context.WithCancel(ctx)
	defer cancel()
	n := &Node{stages: newStages(), closing: closing}
	found := scanStaged(ctx, s, slog.Default())
	if found == nil {
		t.Fatal("nothing to scan after the crash")
	}
	if err := found.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if err := logs.StoreLogs([]*raft.Log{put(4, "b"), part(5, 2)}); err != nil {
		t.Fatal(err)
	}
	// The node has no member to fetch from: without what the scan found
	// each apply would wait for its bytes for good. a's apply begins
	// before the node has the scan's runs (a scan still under way), and
	// gets them while it waits for a fetch; b's and part 2's find them at
	// once.
	f := &fsm{node: n, store: s, log: slog.Default(), skipTo: applied}
	apply := func(i uint64) <-chan applyResult {
		var l raft.Log
		if err := logs.GetLog(i, &l); err != nil {
			t.Fatal(err)
		}
		done := make(chan applyResult, 1)
		go func() { done <- f.Apply(&l).(applyResult) }()
		return done
	}
	for i := applied + 1; i <= 5; i++ {
		done := apply(i)
		if i == 3 {
			select {
			case res := <-done:
				t.Fatalf("a's apply ended before the scan's runs were there: %v", res.err)
			case <-time.After(700 * time.Millisecond):
			}
			n.stages.adopt(found)
		}
		select {
		case res := <-done:
			if res.err != nil {
				t.Fatalf("apply of index %d: %v", i, res.err)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("the apply of index %d still waits for bytes after 30 s", i)
		}
	}
	for _, k := range []string{"a", "b"} {
		obj, r, err := s.OpenObject(ctx, "b", k, objstore.WholeObject)
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(r)
		r.Close()
		if err != nil || !bytes.Equal(got, bodies[k]) || obj.Version != versions[k] {
			t.Fatalf("%s after the apply: %v, %d bytes, version %x", k, err, len(got), obj.Version)
		}
	}
	p, err := s.Meta().GetPart(uploadID, 2)
	if err != nil {
		t.Fatal(err)
	}
	r, err := s.ReadExtents(ctx, "b", "u", upload, p.Extents, p.Size)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(r)
	r.Close()
	if err != nil || !bytes.Equal(got, bodies["p2"]) {
		t.Fatalf("part 2 after the apply: %v, %q...", err, got[:min(len(got), 16)])
	}
	// stageTTL after the scan's end the runs go, unless the apply waits
	// for bytes: the next audit counts what no command took (c and part
	// 1) dead, and nothing installed.
	deadBefore := s.VacuumStatus().DeadBytes
	now := time.Now()
	n.stages.expire(now, false) // sees the scan ended
	n.stages.expire(now.Add(stageTTL+time.Minute), true)
	if n.stages.found == nil {
		t.Fatal("the scan's runs went while the apply waits for bytes")
	}
	n.stages.expire(now.Add(stageTTL+time.Minute), false)
	if n.stages.found != nil {
		t.Fatal("the scan's runs outlived stageTTL")
	}
	if _, err := s.Vacuum(ctx, 0.99); err != nil {
		t.Fatal(err)
	}
	untaken := int64(len(bodies["c"]) + len(bodies["p1"]))
	if got := s.VacuumStatus().DeadBytes - deadBefore; got < untaken || got > untaken+untaken/10 {
		t.Fatalf("after stageTTL the audit counted %d bytes dead, want c's and part 1's %d and their headers", got, untaken)
	}
	for _, k := range []string{"a", "b"} {
		if got, err := readObject(ctx, s, k); err != nil || !bytes.Equal(got, bodies[k]) {
			t.Fatalf("%s after the audit: %v", k, err)
		}
	}
}

func readObject(ctx context.Context, s *objstore.Store, key string) ([]byte, error) {
	_, r, err := s.OpenObject(ctx, "b", key, objstore.WholeObject)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return io.ReadAll(r)
}

// TestFoundBytesAreNotLacked: bytes an unclean end left in this node's
// segments, found by its scan, are bytes it may hold until a record holds
// them: asked by a peer, it answers 409 (not 404, "lacks") while they are
// found or taken by an apply that has not installed them, and as the
// leader it refuses to declare them lost; the found runs stay open until
// the install; then the record answers. Other bytes of the same owner
// (another size or MD5) are lacked.
func TestFoundBytesAreNotLacked(t *testing.T) {
	ctx := context.Background()
	body := bytes.Repeat([]byte("found..."), 40<<10/8)
	const version = 1<<32 | 5
	s := crashAfterStaging(t, func(s *objstore.Store) {
		if _, err := s.Stage(ctx, "b", "k", version, bytes.NewReader(body)); err != nil {
			t.Fatal(err)
		}
	})
	n := &Node{cfg: Config{ID: "n1"}, store: s, stages: newStages(), closing: ctx, log: slog.Default(), fsm: &fsm{}}
	found := scanStaged(ctx, s, slog.Default())
	if found == nil {
		t.Fatal("nothing to scan after the crash")
	}
	if err := found.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	n.stages.adopt(found)

	sum := md5.Sum(body)
	ref := bytesRef{Stage: 42, Bucket: "b", Key: "k", Version: version, Index: 7, want: wantBody(int64(len(body)), hex.EncodeToString(sum[:]), false)}
	ask := func() int { return askFor(n, ref) }
	if code := ask(); code != http.StatusConflict {
		t.Fatalf("asked for bytes its scan found: %d, want 409", code)
	}
	n.fsm.waiting.Store(&missing{ref: ref, op: opPutObject, since: time.Now().Add(-time.Hour)})
	_, err := n.proposeLost(lostRequest{Index: ref.Index, Bucket: ref.Bucket, Key: ref.Key, Version: ref.Version})
	var refused errRefused
	if !errors.As(err, &refused) || !strings.Contains(err.Error(), "may hold the bytes itself") {
		t.Fatalf("declare-lost of bytes its own scan found: %v, want refused", err)
	}

	// Other bytes of that owner (another size or sum: a torn prefix, the
	// part of another number) are not those: lacked.
	other := ref
	other.want = wantBody(int64(len(body)), strings.Repeat("0", 32), false)
	if code := askFor(n, other); code != http.StatusNotFound {
		t.Fatalf("asked for other bytes of the owner: %d, want 404", code)
	}

	// Taken by the apply, not installed yet: still may hold them.
	obj := &meta.Object{Bucket: "b", Key: "k", Version: version, Size: int64(len(body)), ETag: hex.EncodeToString(sum[:]), Modified: t0}
	st := n.stages.takeFound(ctx, &command{Op: opPutObject, Object: obj}, ref)
	if st == nil {
		t.Fatal("the apply did not take the found bytes")
	}
	if code := ask(); code != http.StatusConflict {
		t.Fatalf("asked while the apply installs them: %d, want 409", code)
	}
	if n.stages.closeFound(found) {
		t.Fatal("the found runs closed while bytes they handed out were not installed")
	}
	obj.Extents = st.Extents
	// The bucket's apply, unsynced, may be gone with the crash: applied again.
	if err := s.ApplyPutBucket(&meta.Bucket{Name: "b", Created: t0}, true, 1); err != nil && !errors.Is(err, objstore.ErrBucketExists) {
		t.Fatal(err)
	}
	if err := s.ApplyPutObject(obj, ref.Index); err != nil {
		t.Fatal(err)
	}
	n.installedBytes(st)
	if !n.stages.closeFound(found) {
		t.Fatal("the found runs stayed open once installed")
	}
	if code := ask(); code != http.StatusOK {
		t.Fatalf("asked once installed: %d, want 200", code)
	}
}

func askFor(n *Node, ref bytesRef) int {
	rec := httptest.NewRecorder()
	n.handleBytes(rec, httptest.NewRequest(http.MethodHead, "/_b3/v1/bytes?"+refQuery(ref).Encode(), nil))
	return rec.Code
}

// crashAfterStaging opens a store on a crashable in-memory disk, creates
// bucket b in it (applied at log index 1), lets stage write, crashes the
// disk (what was synced stays) and reopens the store on what is left.
func crashAfterStaging(t *testing.T, stage func(*objstore.Store)) *objstore.Store {
	t.Helper()
	mem := vfs.NewCrashableMem()
	options := func(fs pvfs.FS) objstore.Options {
		return objstore.Options{MetaDir: "/meta", DataDir: "/data", FS: vfs.Pebble(fs), MetaFS: fs,
			SegmentSize: 64 << 10, ChunkSize: 4 << 10, Logger: slog.Default()}
	}
	s, err := objstore.Open(options(mem))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.ApplyPutBucket(&meta.Bucket{Name: "b", Created: t0}, true, 1); err != nil {
		t.Fatal(err)
	}
	stage(s)
	crashed := mem.CrashClone(pvfs.CrashCloneCfg{})
	_ = s.Close()
	if s, err = objstore.Open(options(crashed)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}
