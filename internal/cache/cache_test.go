package cache

import (
	"fmt"
	"sync"
	"testing"
)

func TestBoundsAndAdmission(t *testing.T) {
	for _, policy := range []Policy{LRU, S3FIFO} {
		t.Run(string(policy), func(t *testing.T) {
			c := New[int](Options{MaxBytes: 1000, MaxObjectSize: 100, Policy: policy})
			if c.PutIf("big", 1, 101, c.Token("big")) {
				t.Fatal("admitted a value over MaxObjectSize")
			}
			for i := range 100 {
				key := fmt.Sprint(i)
				c.PutIf(key, i, 50, c.Token(key))
				if st := c.Stats(); st.Bytes > 1000 {
					t.Fatalf("after %d inserts: %d bytes > bound", i+1, st.Bytes)
				}
			}
			st := c.Stats()
			if st.Entries != 20 || st.Evictions != 80 || st.Inserts != 100 {
				t.Fatalf("stats %+v", st)
			}
			if v, ok := c.Get("99"); !ok || v != 99 {
				t.Fatalf("newest entry: %v %v", v, ok)
			}
			if _, ok := c.Get("0"); ok {
				t.Fatal("oldest entry survived")
			}
			if st := c.Stats(); st.Hits != 1 || st.Misses != 1 {
				t.Fatalf("hit/miss %+v", st)
			}
		})
	}
}

// TestSetMaxBytes: shrinking evicts to the new bound, 0 empties and
// disables the cache, growing (also from a cache started disabled) admits
// again; Stats reports the bound in force.
func TestSetMaxBytes(t *testing.T) {
	for _, policy := range []Policy{LRU, S3FIFO} {
		t.Run(string(policy), func(t *testing.T) {
			c := New[int](Options{Policy: policy}) // started disabled
			if c.Admits(1) || c.PutIf("a", 1, 1, c.Token("a")) {
				t.Fatal("a cache of 0 bytes admitted a value")
			}
			fill := func(n int) {
				for i := range n {
					k := fmt.Sprint(i)
					c.PutIf(k, i, 10, c.Token(k))
				}
			}
			steps := []struct {
				max, wantBytes int64
			}{
				{1000, 1000}, // grown: holds 100 entries of 10
				{300, 300},   // shrunk: evicts down to the bound
				{0, 0},       // disabled: empty
				{500, 500},
			}
			for _, s := range steps {
				c.SetMaxBytes(s.max)
				fill(100)
				st := c.Stats()
				if st.MaxBytes != s.max || st.Bytes != s.wantBytes || st.Entries != s.wantBytes/10 {
					t.Fatalf("after SetMaxBytes(%d) and 100 fills: %+v", s.max, st)
				}
				c.SetMaxBytes(s.max / 2)
				if st := c.Stats(); st.Bytes > s.max/2 {
					t.Fatalf("after shrinking to %d: %d bytes", s.max/2, st.Bytes)
				}
				if s.max == 0 {
					if _, ok := c.Get("99"); ok {
						t.Fatal("a disabled cache served a value")
					}
				}
				c.SetMaxBytes(s.max)
			}
		})
	}
}

// TestEnableRefusesOlderFills: a change made while the cache was off is
// not invalidated (a disabled cache skips that); a fill that read the old
// version then is still refused once the cache is on again.
func TestEnableRefusesOlderFills(t *testing.T) {
	c := New[string](Options{MaxBytes: 1 << 20})
	c.SetMaxBytes(0)
	tok := c.Token("k") // a filler reads version 1 ...
	c.Invalidate("k")   // ... a writer commits version 2 while the cache is off ...
	c.SetMaxBytes(1 << 20)
	if c.PutIf("k", "v1", 2, tok) {
		t.Fatal("a fill older than the cache's enabling was accepted")
	}
	if !c.PutIf("k", "v2", 2, c.Token("k")) {
		t.Fatal("a fresh fill was refused")
	}
}

func TestLRUKeepsRecentlyRead(t *testing.T) {
	c := New[int](Options{MaxBytes: 300, Policy: LRU})
	for _, k := range []string{"a", "b", "c"} {
		c.PutIf(k, 0, 100, c.Token(k))
	}
	c.Get("a")
	c.PutIf("d", 0, 100, c.Token("d"))
	if _, ok := c.Get("a"); !ok {
		t.Fatal("recently read entry evicted")
	}
	if _, ok := c.Get("b"); ok {
		t.Fatal("least recently used entry kept")
	}
}

// TestS3FIFOResistsScans: a hot set read repeatedly survives a long scan
// of keys read once, which flushes an LRU of the same size.
func TestS3FIFOResistsScans(t *testing.T) {
	hotSurvivors := func(policy Policy) int {
		c := New[int](Options{MaxBytes: 100 * 10, Policy: policy})
		hot := 50
		for round := range 3 {
			for i := range hot {
				k := fmt.Sprint("hot", i)
				if _, ok := c.Get(k); !ok {
					c.PutIf(k, round, 10, c.Token(k))
				}
			}
		}
		for i := range 1000 {
			k := fmt.Sprint("scan", i)
			c.PutIf(k, 0, 10, c.Token(k))
		}
		n := 0
		for i := range hot {
			if _, ok := c.Get(fmt.Sprint("hot", i)); ok {
				n++
			}
		}
		return n
	}
	lru, fifo := hotSurvivors(LRU), hotSurvivors(S3FIFO)
	if lru != 0 || fifo < 45 {
		t.Fatalf("hot keys surviving a scan: lru %d, s3fifo %d (want 0 and >= 45)", lru, fifo)
	}
}

func TestInvalidateRefusesOlderFills(t *testing.T) {
	c := New[string](Options{MaxBytes: 1 << 20})
	tok := c.Token("k") // a filler read version 1 ...
	c.Invalidate("k")   // ... a writer committed version 2 ...
	if c.PutIf("k", "v1", 2, tok) {
		t.Fatal("stale fill accepted after invalidation")
	}
	if _, ok := c.Get("k"); ok {
		t.Fatal("stale value cached")
	}
	tok = c.Token("k")
	if !c.PutIf("k", "v2", 2, tok) {
		t.Fatal("fresh fill refused")
	}
	c.Invalidate("k")
	if _, ok := c.Get("k"); ok {
		t.Fatal("invalidated value still served")
	}
	if st := c.Stats(); st.Refused != 1 || st.Invalidations != 1 || st.Bytes != 0 {
		t.Fatalf("stats %+v", st)
	}
}

// TestConcurrentFreshness: writers bump a version and invalidate; fillers
// follow the token protocol. A reader that saw version v acknowledged never
// gets an older value from the cache afterwards.
func TestConcurrentFreshness(t *testing.T) {
	for _, policy := range []Policy{LRU, S3FIFO} {
		c := New[int](Options{MaxBytes: 64, Policy: policy})
		var mu sync.Mutex
		current := map[string]int{} // committed
		acked := map[string]int{}   // committed, invalidated, acknowledged
		var wg sync.WaitGroup
		for w := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range 3000 {
					key := fmt.Sprint("k", (i+w)%8)
					switch i % 3 {
					case 0: // write
						mu.Lock()
						current[key]++
						v := current[key]
						mu.Unlock()
						c.Invalidate(key)
						mu.Lock()
						acked[key] = max(acked[key], v)
						mu.Unlock()
					default: // read, filling on a miss
						mu.Lock()
						floor := acked[key]
						mu.Unlock()
						if v, ok := c.Get(key); ok {
							if v < floor {
								t.Errorf("%s: cached version %d older than committed %d", key, v, floor)
								return
							}
							continue
						}
						tok := c.Token(key)
						mu.Lock()
						v := current[key]
						mu.Unlock()
						c.PutIf(key, v, 1, tok)
					}
				}
			}()
		}
		wg.Wait()
	}
}

func TestDisabled(t *testing.T) {
	for _, c := range []*Cache[int]{nil, New[int](Options{})} {
		if c.PutIf("k", 1, 1, c.Token("k")) || c.Stats().Bytes != 0 || c.Stats().MaxBytes != 0 {
			t.Fatal("a zero-byte cache is not disabled")
		}
		if _, ok := c.Get("k"); ok {
			t.Fatal("disabled cache hit")
		}
		if st := c.Stats(); st.Hits+st.Misses != 0 {
			t.Fatalf("a disabled cache counted lookups: %+v", st)
		}
		c.Invalidate("k")
		c.SetMaxBytes(0)
	}
	if _, err := ParsePolicy("arc"); err == nil {
		t.Fatal("unknown policy accepted")
	}
}

func BenchmarkGetHit(b *testing.B) {
	for _, policy := range []Policy{LRU, S3FIFO} {
		b.Run(string(policy), func(b *testing.B) {
			c := New[[]byte](Options{MaxBytes: 64 << 20, Policy: policy})
			for i := range 1000 {
				k := fmt.Sprint(i)
				c.PutIf(k, make([]byte, 1024), 1024, c.Token(k))
			}
			b.RunParallel(func(pb *testing.PB) {
				i := 0
				for pb.Next() {
					c.Get(fmt.Sprint(i % 1000))
					i++
				}
			})
		})
	}
}
