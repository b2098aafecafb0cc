package cluster

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	pvfs "github.com/cockroachdb/pebble/v2/vfs"
	"github.com/hashicorp/raft"

	"github.com/b3-storage/b3/internal/meta"
	"github.com/b3-storage/b3/internal/objstore"
	"github.com/b3-storage/b3/internal/vfs"
)

// TestStagedBytesFoundAfterCrash: a node that staged the bytes of two puts
// (synced, as it acknowledges a push), received the puts in its log, and
// crashed before applying them finds the bytes on its own disk at start and
// puts them back in its staging table under the puts' stage ids: the apply
// needs no member to fetch from, and what no command takes is counted dead
// after stageTTL, as any pushed bytes.
func TestStagedBytesFoundAfterCrash(t *testing.T) {
	ctx := context.Background()
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
	bodies := map[string][]byte{"a": bytes.Repeat([]byte("a-bytes."), 100<<10/8), "b": bytes.Repeat([]byte("b-bytes."), 30<<10/8)}
	versions := map[string]uint64{"a": 1<<32 | 5, "b": 1<<32 | 6}
	for _, k := range []string{"a", "b"} {
		if _, err := s.Stage(ctx, "b", k, versions[k], bytes.NewReader(bodies[k])); err != nil {
			t.Fatal(err)
		}
	}
	crashed := mem.CrashClone(pvfs.CrashCloneCfg{})
	_ = s.Close()

	// The log holds the bucket at 1 and both puts, committed, not applied:
	// a at 2, b at 3. (The bucket's apply, not synced, may be lost too.)
	logs := raft.NewInmemStore()
	put := func(index uint64, key string) *raft.Log {
		obj := &meta.Object{Bucket: "b", Key: key, Version: versions[key], Size: int64(len(bodies[key])), Modified: t0, ETag: "e"}
		return commandLog(index, &command{Op: opPutObject, Object: obj, Stage: 100 + index})
	}
	bucket := commandLog(1, &command{Op: opCreateBucket, Bucket: &meta.Bucket{Name: "b", Created: t0}})
	if err := logs.StoreLogs([]*raft.Log{bucket, put(2, "a"), put(3, "b")}); err != nil {
		t.Fatal(err)
	}
	s, err = objstore.Open(options(crashed))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	applied, err := s.Applied()
	if err != nil || applied > 1 {
		t.Fatalf("applied %d, %v", applied, err)
	}
	found := recoverStaged(ctx, s, logs, applied, slog.Default())
	if len(found) != 2 || found[102] == nil || found[103] == nil {
		t.Fatalf("found %v, want the bytes of both puts under their stage ids 102 and 103", found)
	}
	// The node's staging table gets them back, as after its restart; it has
	// no member to fetch from: without them the apply would wait for the
	// bytes for good.
	closing, cancel := context.WithCancel(ctx)
	defer cancel()
	n := &Node{stages: newStages(), closing: closing}
	n.stages.restore(found)
	f := &fsm{node: n, store: s, log: slog.Default(), skipTo: applied}
	var l raft.Log
	for i := applied + 1; i <= 2; i++ {
		if err := logs.GetLog(i, &l); err != nil {
			t.Fatal(err)
		}
		done := make(chan applyResult, 1)
		go func() { done <- f.Apply(&l).(applyResult) }()
		select {
		case res := <-done:
			if res.err != nil {
				t.Fatalf("apply of index %d: %v", i, res.err)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("the apply of index %d still waits for bytes after 30 s", i)
		}
	}
	obj, r, err := s.OpenObject(ctx, "b", "a", objstore.WholeObject)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(r)
	r.Close()
	if err != nil || !bytes.Equal(got, bodies["a"]) || obj.Version != versions["a"] {
		t.Fatalf("a after the apply: %v, %d bytes, version %x", err, len(got), obj.Version)
	}
	if n.stages.has(102) || !n.stages.has(103) {
		t.Fatal("after the apply of a, the table should hold b's bytes only")
	}
	// b's put never applies here (say a snapshot covered it): its bytes go
	// as unclaimed pushed bytes do, counted dead after stageTTL.
	deadBefore := deadBytes(s)
	n.stages.expire(time.Now().Add(stageTTL + time.Minute))
	if n.stages.has(103) {
		t.Fatal("b's bytes outlived stageTTL")
	}
	if got := deadBytes(s) - deadBefore; got < int64(len(bodies["b"])) {
		t.Fatalf("b's unclaimed bytes: %d counted dead, want its %d at least", got, len(bodies["b"]))
	}
}

func deadBytes(s *objstore.Store) int64 {
	var n int64
	for _, sg := range s.Segments() {
		n += sg.DeadBytes
	}
	return n
}
