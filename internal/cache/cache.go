package cache

import (
	"container/list"
	"fmt"
	"hash/maphash"
	"sync"
	"sync/atomic"
)

// Policy names an eviction policy.
type Policy string

// Policies.
const (
	LRU    Policy = "lru"
	S3FIFO Policy = "s3fifo"
)

// ParsePolicy accepts "lru" or "s3fifo".
func ParsePolicy(s string) (Policy, error) {
	switch p := Policy(s); p {
	case LRU, S3FIFO:
		return p, nil
	}
	return "", fmt.Errorf("cache policy %q: want lru or s3fifo", s)
}

// Options configure a Cache.
type Options struct {
	MaxBytes      int64  // total bytes held (values' sizes); <= 0: admits nothing (until SetMaxBytes)
	MaxObjectSize int64  // larger values are not admitted; default 1 MiB
	Policy        Policy // default S3FIFO
}

// Stats are cumulative counters and current occupancy.
type Stats struct {
	Hits, Misses, Inserts, Evictions, Invalidations, Refused int64
	Bytes, Entries                                           int64
	MaxBytes, MaxObjectSize                                  int64
	Policy                                                   Policy
}

// Cache maps keys to values of known size. It is safe for concurrent use;
// a nil *Cache is a valid, empty, disabled cache. Its bound may change at
// run time (SetMaxBytes); one of 0 disables it.
type Cache[V any] struct {
	opts Options // MaxBytes is the bound at New; maxBytes is the one in force
	seed maphash.Seed
	gens [256]atomic.Uint64
	// maxBytes is written under mu and read without it by Admits and Get
	// (a disabled cache answers without taking mu): bytes <= maxBytes
	// holds whenever mu is free.
	maxBytes atomic.Int64

	mu      sync.Mutex
	entries map[string]*entry[V]
	bytes   int64
	evictor evictor[V]

	hits, misses, inserts, evictions, invalidations, refused atomic.Int64
}

type entry[V any] struct {
	key   string
	value V
	size  int64
	freq  uint8 // S3-FIFO: accesses since insertion, capped at 3
	main  bool  // S3-FIFO: in the main queue (else small)
	el    *list.Element
}

// evictor is a policy's bookkeeping; the Cache holds mu when calling it.
type evictor[V any] interface {
	insert(e *entry[V]) // sets e.el
	hit(e *entry[V])
	remove(e *entry[V])
	// victim removes and returns the next entry to evict.
	victim() *entry[V]
	// resize follows a change of the cache's bound.
	resize(maxBytes int64)
}

// New returns a cache bounded to opts.MaxBytes; with opts.MaxBytes <= 0
// it is disabled (it admits nothing) until SetMaxBytes enlarges it.
func New[V any](opts Options) *Cache[V] {
	opts.MaxBytes = max(opts.MaxBytes, 0)
	if opts.MaxObjectSize <= 0 {
		opts.MaxObjectSize = 1 << 20
	}
	if opts.Policy == "" {
		opts.Policy = S3FIFO
	}
	c := &Cache[V]{opts: opts, seed: maphash.MakeSeed(), entries: map[string]*entry[V]{}}
	c.maxBytes.Store(opts.MaxBytes)
	if opts.Policy == LRU {
		c.evictor = &lru[V]{}
	} else {
		c.evictor = newS3FIFO[V](opts.MaxBytes)
	}
	return c
}

// Admits reports whether a value of size bytes may be cached.
func (c *Cache[V]) Admits(size int64) bool {
	return c != nil && size <= c.opts.MaxObjectSize && size <= c.maxBytes.Load()
}

// SetMaxBytes changes the bound: a smaller one evicts (by the policy's
// order) until the cache fits, 0 empties and disables the cache, a
// larger one takes effect for the next inserts.
func (c *Cache[V]) SetMaxBytes(n int64) {
	if c == nil {
		return
	}
	n = max(n, 0)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.maxBytes.Load() == 0 && n > 0 {
		// Invalidate skips a disabled cache: a token taken before now
		// may predate a change nobody invalidated. Refuse them all.
		for i := range c.gens {
			c.gens[i].Add(1)
		}
	}
	c.maxBytes.Store(n)
	c.evictor.resize(n)
	c.evictLocked()
}

// evictLocked evicts until bytes <= maxBytes.
func (c *Cache[V]) evictLocked() {
	for c.bytes > c.maxBytes.Load() {
		v := c.evictor.victim()
		if v == nil {
			break
		}
		delete(c.entries, v.key)
		c.bytes -= v.size
		c.evictions.Add(1)
	}
}

// Get returns the value cached under key.
func (c *Cache[V]) Get(key string) (V, bool) {
	var zero V
	if c == nil || c.maxBytes.Load() == 0 {
		return zero, false
	}
	c.mu.Lock()
	e, ok := c.entries[key]
	if ok {
		c.evictor.hit(e)
		v := e.value
		c.mu.Unlock()
		c.hits.Add(1)
		return v, true
	}
	c.mu.Unlock()
	c.misses.Add(1)
	return zero, false
}

func (c *Cache[V]) gen(key string) *atomic.Uint64 {
	return &c.gens[maphash.String(c.seed, key)%uint64(len(c.gens))]
}

// Token returns the generation a filler must present to PutIf; take it
// before reading the value to insert.
func (c *Cache[V]) Token(key string) uint64 {
	if c == nil {
		return 0
	}
	return c.gen(key).Load()
}

// PutIf caches value under key unless key was invalidated since token was
// taken or the value is too large. It reports whether it inserted.
func (c *Cache[V]) PutIf(key string, value V, size int64, token uint64) bool {
	if !c.Admits(size) {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if size > c.maxBytes.Load() { // shrunk since Admits
		return false
	}
	// Invalidate bumps the generation under mu, so this check and the
	// insert are atomic with respect to it.
	if c.gen(key).Load() != token {
		c.refused.Add(1)
		return false
	}
	if old, ok := c.entries[key]; ok {
		c.removeLocked(old)
	}
	e := &entry[V]{key: key, value: value, size: size}
	c.evictor.insert(e)
	c.entries[key] = e
	c.bytes += size
	c.inserts.Add(1)
	c.evictLocked()
	return true
}

// Invalidate drops key and refuses fills that started before. A
// disabled cache holds nothing and admits nothing: it returns at once
// (SetMaxBytes refuses older fills when it enables the cache).
func (c *Cache[V]) Invalidate(key string) {
	if c == nil || c.maxBytes.Load() == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen(key).Add(1)
	if e, ok := c.entries[key]; ok {
		c.removeLocked(e)
		c.invalidations.Add(1)
	}
}

func (c *Cache[V]) removeLocked(e *entry[V]) {
	c.evictor.remove(e)
	delete(c.entries, e.key)
	c.bytes -= e.size
}

// Stats returns the counters.
func (c *Cache[V]) Stats() Stats {
	if c == nil {
		return Stats{}
	}
	c.mu.Lock()
	bytes, n := c.bytes, int64(len(c.entries))
	c.mu.Unlock()
	return Stats{
		Hits: c.hits.Load(), Misses: c.misses.Load(), Inserts: c.inserts.Load(),
		Evictions: c.evictions.Load(), Invalidations: c.invalidations.Load(), Refused: c.refused.Load(),
		Bytes: bytes, Entries: n, MaxBytes: c.maxBytes.Load(), MaxObjectSize: c.opts.MaxObjectSize, Policy: c.opts.Policy,
	}
}

// lru evicts the least recently used entry.
type lru[V any] struct{ l list.List }

func (p *lru[V]) insert(e *entry[V]) { e.el = p.l.PushFront(e) }
func (p *lru[V]) hit(e *entry[V])    { p.l.MoveToFront(e.el) }
func (p *lru[V]) remove(e *entry[V]) { p.l.Remove(e.el) }
func (p *lru[V]) resize(int64)       {}
func (p *lru[V]) victim() *entry[V] {
	el := p.l.Back()
	if el == nil {
		return nil
	}
	return p.l.Remove(el).(*entry[V])
}

// s3fifo: new entries enter the small queue (10% of the bytes); an entry
// leaving it that was read again moves to main, else its key goes to the
// ghost queue. Entries leaving main that were read since they entered are
// reinserted with one less credit. A key found in the ghost queue on
// insertion goes straight to main.
type s3fifo[V any] struct {
	small, main          list.List
	smallBytes, maxSmall int64
	ghost                list.List // of string keys, newest at front
	ghostIndex           map[string]*list.Element
}

func newS3FIFO[V any](maxBytes int64) *s3fifo[V] {
	p := &s3fifo[V]{ghostIndex: map[string]*list.Element{}}
	p.resize(maxBytes)
	return p
}

func (p *s3fifo[V]) resize(maxBytes int64) { p.maxSmall = max(maxBytes/10, 1) }

func (p *s3fifo[V]) insert(e *entry[V]) {
	if g, ok := p.ghostIndex[e.key]; ok {
		p.ghost.Remove(g)
		delete(p.ghostIndex, e.key)
		e.main = true
		e.el = p.main.PushFront(e)
		return
	}
	p.smallBytes += e.size
	e.el = p.small.PushFront(e)
}

func (p *s3fifo[V]) hit(e *entry[V]) {
	if e.freq < 3 {
		e.freq++
	}
}

func (p *s3fifo[V]) remove(e *entry[V]) {
	if e.main {
		p.main.Remove(e.el)
		return
	}
	p.small.Remove(e.el)
	p.smallBytes -= e.size
}

func (p *s3fifo[V]) victim() *entry[V] {
	for {
		if p.smallBytes > p.maxSmall || p.main.Len() == 0 {
			el := p.small.Back()
			if el == nil {
				return nil
			}
			e := p.small.Remove(el).(*entry[V])
			p.smallBytes -= e.size
			if e.freq > 0 {
				// Read again while on probation: promote, and look on.
				e.main, e.freq = true, 0
				p.promoted(e)
				continue
			}
			p.remember(e.key)
			return e
		}
		el := p.main.Back()
		e := p.main.Remove(el).(*entry[V])
		if e.freq > 0 {
			e.freq--
			p.promoted(e)
			continue
		}
		return e
	}
}

// promoted re-queues e at the head of main.
func (p *s3fifo[V]) promoted(e *entry[V]) { e.el = p.main.PushFront(e) }

func (p *s3fifo[V]) remember(key string) {
	p.ghostIndex[key] = p.ghost.PushFront(key)
	// The ghost queue holds as many keys as main holds entries (at least
	// a few): enough to recognise a key evicted from small shortly before.
	for p.ghost.Len() > max(p.main.Len(), 64) {
		old := p.ghost.Remove(p.ghost.Back()).(string)
		delete(p.ghostIndex, old)
	}
}
