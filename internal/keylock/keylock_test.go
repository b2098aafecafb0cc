package keylock

import (
	"fmt"
	"slices"
	"sync"
	"testing"
)

// TestLockSerialises: the holders of one key's lock never overlap, and
// LockStripes excludes every single-key holder of those stripes.
func TestLockSerialises(t *testing.T) {
	l := New()
	keys := []string{"a", "b", "c", "d"}
	inside := map[int]int{} // stripe -> holders now
	var mu sync.Mutex
	enter := func(stripes ...int) {
		mu.Lock()
		defer mu.Unlock()
		for _, s := range stripes {
			if inside[s]++; inside[s] > 1 {
				t.Errorf("stripe %d held twice", s)
			}
		}
	}
	leave := func(stripes ...int) {
		mu.Lock()
		defer mu.Unlock()
		for _, s := range stripes {
			inside[s]--
		}
	}
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := range 200 {
				k := keys[(w+i)%len(keys)]
				if i%5 == 0 { // several keys at once, one stripe twice
					stripes := []int{l.Stripe("b", k), l.Stripe("b", keys[0]), l.Stripe("b", k)}
					unlock := l.LockStripes(slices.Clone(stripes))
					slices.Sort(stripes)
					stripes = slices.Compact(stripes)
					enter(stripes...)
					leave(stripes...)
					unlock()
					continue
				}
				unlock := l.Lock("b", k)
				s := l.Stripe("b", k)
				enter(s)
				leave(s)
				unlock()
			}
		})
	}
	wg.Wait()
}

// TestStripe: a key always maps to the same stripe within a Locks, the
// bucket/key split counts, and keys spread over the stripes.
func TestStripe(t *testing.T) {
	l := New()
	first := l.Stripe("b", "k")
	for range 10 {
		if l.Stripe("b", "k") != first {
			t.Fatal("one key, two stripes")
		}
	}
	seen := map[int]bool{}
	same := 0
	for i := range 1000 {
		k := fmt.Sprintf("key-%d", i)
		seen[l.Stripe("bucket", k)] = true
		if l.Stripe("ab", k) == l.Stripe("a", "b"+k) {
			same++
		}
	}
	if len(seen) < Stripes/2 {
		t.Fatalf("1000 keys on %d stripes", len(seen))
	}
	if same > 50 {
		t.Fatalf("bucket/key split ignored: %d of 1000 collide", same)
	}
}
