package blob

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	pvfs "github.com/cockroachdb/pebble/v2/vfs"

	"github.com/b3-storage/b3/internal/vfs"
)

// TestRecoverFromFullDisk: a store whose disk filled up refuses writes; once
// space is back, Recover makes it accept them again, without a restart, and
// everything acknowledged before, during and after reads back, also after
// a crash.
func TestRecoverFromFullDisk(t *testing.T) {
	for _, policy := range []SyncPolicy{SyncBatch, SyncAlways} {
		for _, syncToo := range []bool{false, true} {
			for _, rollover := range []bool{false, true} {
				t.Run(fmt.Sprintf("%v/fsync-fails=%v/rollover=%v", policy, syncToo, rollover), func(t *testing.T) {
					mem := vfs.NewCrashableMem()
					ffs := &faultFS{FS: vfs.Pebble(mem)}
					ffs.syncToo.Store(syncToo)
					opts := testOptions(ffs)
					opts.Sync = policy
					if rollover {
						opts.SegmentSize = int64(opts.ChunkSize) * 3
					}
					s := mustOpen(t, opts)
					before := mustAppend(t, s, "before", value(1, 2*opts.ChunkSize+5))

					ffs.full.Store(true)
					_, _, err := s.Append(context.Background(), Owner{Key: []byte("full"), Version: 1}, bytes.NewReader(value(2, 3*opts.ChunkSize)))
					if !IsNoSpace(err) {
						t.Fatalf("append on a full disk: %v, want ENOSPC", err)
					}
					// Recover while still full may succeed (cutting needs no
					// space) or not; either way nothing is acknowledged.
					if err := s.Recover(); err != nil && !IsNoSpace(err) {
						t.Fatalf("Recover while the disk is full: %v, want nil or ENOSPC", err)
					}
					if _, _, err := s.Append(context.Background(), Owner{Key: []byte("still"), Version: 1}, bytes.NewReader(value(3, 100))); err == nil {
						t.Fatal("append acknowledged while the disk is full")
					}

					ffs.full.Store(false)
					if err := s.Recover(); err != nil {
						t.Fatalf("Recover once space is back: %v", err)
					}
					after := mustAppend(t, s, "after", value(4, 2*opts.ChunkSize+7))
					checkRead(t, s, before, value(1, 2*opts.ChunkSize+5))
					checkRead(t, s, after, value(4, 2*opts.ChunkSize+7))
					if err := s.Close(); err != nil {
						t.Fatalf("Close after recovery: %v", err)
					}
					clone := mem.CrashClone(pvfs.CrashCloneCfg{UnsyncedDataPercent: 0})
					opts.FS = vfs.Pebble(clone)
					re := s0(t, opts)
					checkRead(t, re, before, value(1, 2*opts.ChunkSize+5))
					checkRead(t, re, after, value(4, 2*opts.ChunkSize+7))
				})
			}
		}
	}
}

// TestRecoverIsNotForOtherFailures: an I/O error is not a full disk; the
// store stays failed.
func TestRecoverIsNotForOtherFailures(t *testing.T) {
	ffs := &faultFS{FS: memFS()}
	s := mustOpen(t, testOptions(ffs))
	defer s.Close()
	ffs.failSync.Store(true)
	if _, _, err := s.Append(context.Background(), Owner{Key: []byte("x")}, bytes.NewReader(value(1, 100))); err == nil {
		t.Fatal("append with a failing fsync acknowledged")
	}
	ffs.failSync.Store(false)
	if err := s.Recover(); !errors.Is(err, errInjected) {
		t.Fatalf("Recover after an fsync failure: %v, want that failure kept", err)
	}
	if _, _, err := s.Append(context.Background(), Owner{Key: []byte("y")}, bytes.NewReader(value(2, 100))); err == nil {
		t.Fatal("append acknowledged after Recover refused")
	}
}

// TestRecoverUnderLoad: writers append all the time while the disk fills
// and empties again and again and a recoverer calls Recover; every append
// acknowledged reads back intact, then and after a crash, and some are
// acknowledged after each recovery. An append spanning a recovery must not
// be acknowledged: its first records may be in the cut tail, its last ones
// after it, over the same offsets.
func TestRecoverUnderLoad(t *testing.T) {
	mem := vfs.NewCrashableMem()
	ffs := &faultFS{FS: vfs.Pebble(mem)}
	opts := testOptions(ffs)
	opts.SegmentSize = 64 << 10
	s := mustOpen(t, opts)

	type acked struct {
		ext  []Extent
		want []byte
		key  string
	}
	var (
		mu      sync.Mutex
		all     []acked
		stop    atomic.Bool
		wg      sync.WaitGroup
		after   atomic.Int64 // acknowledged since the last recovery
		lastErr atomic.Value
	)
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(w), 7))
			for i := 0; !stop.Load(); i++ {
				key := fmt.Sprintf("w%d-%d", w, i)
				data := value(uint64(w<<20|i), 1+r.IntN(3*opts.ChunkSize))
				ext, _, err := s.Append(context.Background(), Owner{Key: []byte(key), Version: 1}, bytes.NewReader(data))
				if err != nil {
					lastErr.Store(err.Error())
					continue
				}
				after.Add(1)
				mu.Lock()
				all = append(all, acked{ext, data, key})
				mu.Unlock()
			}
		}()
	}
	r := rand.New(rand.NewPCG(1, 2))
	for round := range 30 {
		ffs.syncToo.Store(round%2 == 0)
		for deadline := time.Now().Add(10 * time.Second); after.Load() < 3; pause() {
			if time.Now().After(deadline) {
				t.Fatalf("round %d: no append acknowledged after the recovery; the last error: %v", round, lastErr.Load())
			}
		}
		ffs.full.Store(true)
		for s.Failure() == nil {
			pause()
		}
		if r.IntN(2) == 0 {
			pause()
		}
		ffs.full.Store(false)
		if err := s.Recover(); err != nil {
			t.Fatalf("round %d: Recover: %v", round, err)
		}
		after.Store(0)
	}
	stop.Store(true)
	wg.Wait()
	if len(all) < 60 {
		t.Fatalf("only %d appends acknowledged", len(all))
	}
	for _, a := range all {
		checkRead(t, s, a.ext, a.want)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	opts.FS = vfs.Pebble(mem.CrashClone(pvfs.CrashCloneCfg{UnsyncedDataPercent: 0}))
	re := s0(t, opts)
	for _, a := range all {
		checkRead(t, re, a.ext, a.want)
	}
}

func pause() { time.Sleep(200 * time.Microsecond) }
