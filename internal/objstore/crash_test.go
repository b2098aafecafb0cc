package objstore

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	pvfs "github.com/cockroachdb/pebble/v2/vfs"

	"github.com/b3-storage/b3/internal/vfs"
)

// keyHistory is the sequence of states one key went through, written by a
// single goroutine: states[0] is the state at the start of the round, each
// later entry the result of one operation (nil = deleted).
type keyHistory struct {
	mu      sync.Mutex
	states  [][]byte
	started int // operations begun
	acked   int // operations acknowledged
}

// TestCrash crashes the whole store (metadata and segments on one
// crashable filesystem) at random instants while writers (single PUTs and
// multipart uploads), deleters and vacuum run, then reopens the crashed
// image and checks that every key holds either the result of its last
// acknowledged operation or of one that was still in flight: nothing
// acknowledged lost, nothing half there. Keys hold 0x00 and 0xFF bytes
// (see killKey), and idle uploads keep parts that must survive too.
func TestCrash(t *testing.T) {
	rounds := 25
	if testing.Short() {
		rounds = 8
	}
	rng := rand.New(rand.NewPCG(42, 42))
	mem := vfs.NewCrashableMem()
	keys := make([]string, 32)
	for i := range keys {
		keys[i] = killKey(0, i)
	}
	current := map[string][]byte{} // state verified after the last crash

	for round := range rounds {
		opts := memOptions(mem)
		s := openStore(t, opts)
		ensureBucket(t, s, "b")
		hist := map[string]*keyHistory{}
		for _, k := range keys {
			hist[k] = &keyHistory{states: [][]byte{current[k]}}
		}

		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		const writers = 4
		for w := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				wr := rand.New(rand.NewPCG(uint64(round), uint64(w)))
				for seq := 0; ctx.Err() == nil; seq++ {
					key := keys[w+writers*wr.IntN(len(keys)/writers)] // each key has one writer
					h := hist[key]
					var next []byte
					del := wr.IntN(5) == 0
					if !del {
						next = value(key, round*100000+seq, wr.IntN(12<<10))
					}
					h.mu.Lock()
					h.states = append(h.states, next)
					h.started++
					h.mu.Unlock()
					var err error
					switch {
					case del:
						_, err = s.DeleteObject("b", key)
					case wr.IntN(3) == 0:
						err = multipartValue(s, key, next, 1+wr.IntN(max(1, len(next))))
					default:
						_, err = s.PutObject(ctx, PutInput{Bucket: "b", Key: key, Body: bytes.NewReader(next)})
					}
					if err == nil && wr.IntN(10) == 0 {
						err = idleUploadErr(s, key, seq)
					}
					if err != nil {
						return // the store is being abandoned
					}
					h.mu.Lock()
					h.acked++
					h.mu.Unlock()
				}
			}()
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				if _, err := s.Vacuum(ctx, 0.2); err != nil && !errors.Is(err, context.Canceled) && ctx.Err() == nil {
					t.Errorf("vacuum: %v", err)
					return
				}
			}
		}()

		// Let the load run for a random number of acknowledged writes.
		target := 20 + rng.IntN(200)
		for total := 0; total < target; time.Sleep(time.Millisecond) {
			total = 0
			for _, h := range hist {
				h.mu.Lock()
				total += h.acked
				h.mu.Unlock()
			}
		}

		// Crash: A = acked before the snapshot, B = started after it; the
		// crashed image must hold the result of one of operations A..B.
		lo := map[string]int{}
		for k, h := range hist {
			h.mu.Lock()
			lo[k] = h.acked
			h.mu.Unlock()
		}
		cfg := pvfs.CrashCloneCfg{}
		if round%2 == 1 {
			cfg = pvfs.CrashCloneCfg{UnsyncedDataPercent: 50, RNG: rand.New(rand.NewPCG(uint64(round), 7))}
		}
		crashed := mem.CrashClone(cfg)
		hi := map[string]int{}
		for k, h := range hist {
			h.mu.Lock()
			hi[k] = h.started
			h.mu.Unlock()
		}
		cancel()
		wg.Wait()
		_ = s.Close() // the pre-crash process is gone; its errors do not matter

		mem = crashed
		s = openStore(t, memOptions(mem))
		for _, k := range keys {
			got, err := read(s, "b", k)
			if errors.Is(err, ErrNoSuchKey) {
				got, err = nil, nil
			}
			if err != nil {
				t.Fatalf("round %d: %q: %v", round, k, err)
			}
			h := hist[k]
			ok := false
			for i := lo[k]; i <= hi[k]; i++ {
				if bytes.Equal(got, h.states[i]) && (got == nil) == (h.states[i] == nil) {
					ok = true
					break
				}
			}
			if !ok {
				t.Fatalf("round %d: %q holds %d bytes, not the result of any operation %d..%d", round, k, len(got), lo[k], hi[k])
			}
			current[k] = got
		}
		checkUploadParts(t, s)
		// The first pass after a crash audits for records of interrupted
		// writes: the books must not count more than a segment holds.
		if _, err := s.Vacuum(context.Background(), 0.99); err != nil {
			t.Fatalf("round %d: vacuum after the crash: %v", round, err)
		}
		for _, seg := range s.Segments() {
			if seg.DeadBytes < 0 || seg.DeadBytes > seg.Size {
				t.Fatalf("round %d: segment %d of %d bytes counts %d dead", round, seg.ID, seg.Size, seg.DeadBytes)
			}
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
