package cluster

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/hashicorp/raft"

	"github.com/b3-storage/b3/internal/meta"
	"github.com/b3-storage/b3/internal/objstore"
)

// putLog is the log entry of an inline put of bucket/key.
func putLog(index uint64, bucket, key, data string) *raft.Log {
	obj := &meta.Object{Bucket: bucket, Key: key, Version: index, Size: int64(len(data)), Modified: t0, Inline: []byte(data)}
	return &raft.Log{Index: index, Type: raft.LogCommand, Data: (&command{Op: opPutObject, Object: obj}).encode()}
}

func commandLog(index uint64, c *command) *raft.Log {
	return &raft.Log{Index: index, Type: raft.LogCommand, Data: c.encode()}
}

// TestApplyBatch: a batch of commands applies as the same commands one at
// a time would, whichever of its puts commit together: a key put twice
// keeps the later bytes, a delete in between counts, a put to a missing
// bucket fails alone (and a group of them each), a configuration entry
// changes nothing, and the store's stamp ends at the last index.
func TestApplyBatch(t *testing.T) {
	r := newReplica(t)
	f := &fsm{store: r.store, users: r.users, log: slog.Default()}
	if res := f.Apply(commandLog(1, &command{Op: opCreateBucket, Bucket: &meta.Bucket{Name: "a", Created: t0}})).(applyResult); res.err != nil {
		t.Fatal(res.err)
	}
	logs := []*raft.Log{
		putLog(2, "a", "k1", "one"),
		putLog(3, "a", "k2", "two"),
		putLog(4, "a", "k1", "one again"),
		{Index: 5, Type: raft.LogConfiguration},
		putLog(6, "a", "k3", "three"),
		putLog(7, "missing", "x", "lost"),
		putLog(8, "a", "k4", "four"),
		commandLog(9, &command{Op: opDeleteObject, Name: "a", Key: "k2"}),
		putLog(10, "missing", "y", "lost"),
		putLog(11, "missing", "z", "lost"),
		putLog(12, "a", "k5", "five"),
		putLog(13, "a", "k6", "six"),
	}
	out := f.ApplyBatch(logs)
	if len(out) != len(logs) {
		t.Fatalf("%d responses for %d entries", len(out), len(logs))
	}
	for i, l := range logs {
		if l.Type != raft.LogCommand {
			if out[i] != nil {
				t.Errorf("entry %d (configuration): response %v, want none", l.Index, out[i])
			}
			continue
		}
		res := out[i].(applyResult)
		c, _ := decodeCommand(l.Data)
		switch {
		case c.Op == opPutObject && c.Object.Bucket == "missing":
			if !errors.Is(res.err, objstore.ErrNoSuchBucket) {
				t.Errorf("entry %d: %v, want NoSuchBucket", l.Index, res.err)
			}
		case res.err != nil:
			t.Errorf("entry %d: %v", l.Index, res.err)
		case c.Op == opPutObject && (res.obj == nil || res.obj.Key != c.Object.Key || res.obj.Version != l.Index):
			t.Errorf("entry %d: response %+v, want the object put", l.Index, res.obj)
		}
	}
	for key, want := range map[string]string{"k1": "one again", "k2": "", "k3": "three", "k4": "four", "k5": "five", "k6": "six"} {
		if got := r.read("a", key); got != want {
			t.Errorf("a/%s = %q, want %q", key, got, want)
		}
	}
	if got, err := r.store.Applied(); err != nil || got != 13 {
		t.Errorf("store applied %d, %v; want 13", got, err)
	}
	if got := f.applied.Load(); got != 13 {
		t.Errorf("fsm applied %d, want 13", got)
	}
	if got := f.handled.Load(); got != 12 {
		t.Errorf("fsm handled %d commands, want 12", got)
	}

	// After a restart, what the store holds is skipped, the rest applied.
	f = &fsm{store: r.store, users: r.users, log: slog.Default(), skipTo: 13}
	f.ApplyBatch([]*raft.Log{putLog(12, "a", "k5", "stale"), putLog(13, "a", "k6", "stale"), putLog(14, "a", "k7", "seven"), putLog(15, "a", "k8", "eight")})
	for key, want := range map[string]string{"k5": "five", "k6": "six", "k7": "seven", "k8": "eight"} {
		if got := r.read("a", key); got != want {
			t.Errorf("after the restart a/%s = %q, want %q", key, got, want)
		}
	}
	if got, _ := r.store.Applied(); got != 15 {
		t.Errorf("store applied %d, want 15", got)
	}
}

// BenchmarkApply: a replica applying 64 small PUTs (4 KiB inline), as raft
// hands them over after one round of replication: in one ApplyBatch
// (their meta changes commit together) or one Apply each. Per command.
func BenchmarkApply(b *testing.B) {
	data := strings.Repeat("x", 4096)
	for _, mode := range []string{"batch", "one-by-one"} {
		b.Run(mode, func(b *testing.B) {
			r := newReplica(b)
			f := &fsm{store: r.store, users: r.users, log: slog.Default()}
			f.Apply(commandLog(1, &command{Op: opCreateBucket, Bucket: &meta.Bucket{Name: "a", Created: t0}}))
			index := uint64(1)
			logs := make([]*raft.Log, 64)
			for b.Loop() {
				for i := range logs {
					index++
					logs[i] = putLog(index, "a", fmt.Sprintf("key-%09d", index), data)
				}
				if mode == "batch" {
					f.ApplyBatch(logs)
					continue
				}
				for _, l := range logs {
					f.Apply(l)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(index-1), "ns/command")
		})
	}
}
