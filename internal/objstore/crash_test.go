package objstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
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
// crashable filesystem) at random instants while writers, deleters and
// vacuum run, then reopens the crashed image and checks that every key
// holds either the result of its last acknowledged operation or of one
// that was still in flight: nothing acknowledged lost, nothing half there.
func TestCrash(t *testing.T) {
	rounds := 25
	if testing.Short() {
		rounds = 8
	}
	rng := rand.New(rand.NewPCG(42, 42))
	mem := vfs.NewCrashableMem()
	keys := make([]string, 32)
	for i := range keys {
		keys[i] = fmt.Sprintf("obj/%02d", i)
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
					if del {
						_, err = s.DeleteObject("b", key)
					} else {
						_, err = s.PutObject(ctx, PutInput{Bucket: "b", Key: key, Body: bytes.NewReader(next)})
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
				t.Fatalf("round %d: %s: %v", round, k, err)
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
				t.Fatalf("round %d: %s holds %d bytes, not the result of any operation %d..%d", round, k, len(got), lo[k], hi[k])
			}
			current[k] = got
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
