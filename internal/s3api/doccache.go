package s3api

import (
	"bytes"
	"sync"
)

// docCache holds documents parsed from bucket records (policies, CORS
// configurations) by bucket: parsing on every request would cost more than
// using them (a CORS check runs on every request carrying Origin, before
// authorization). An entry is used only while the bucket record holds the
// same document, byte for byte, so a change by any path (a PUT on this
// node, a record replicated from another) is seen by the next request. A
// document that does not parse is cached with its error. The cache is
// bounded by the number of documents and by their bytes (CORS documents
// stored before the 64 KB cap may be up to 4 MiB): past either it starts
// again empty.
type docCache[T any] struct {
	mu      sync.Mutex
	entries map[string]cachedDoc[T]
	size    int // sum of len(raw) over entries
}

type cachedDoc[T any] struct {
	raw    []byte
	parsed T
	err    error
}

const (
	maxCachedDocs     = 4096
	maxCachedDocBytes = 64 << 20
)

// get returns bucket's document raw parsed, from the cache if it holds
// the same bytes, else by parse. The value returned is shared: callers
// must not modify it.
func (c *docCache[T]) get(bucket string, raw []byte, parse func([]byte) (T, error)) (T, error) {
	c.mu.Lock()
	e, ok := c.entries[bucket]
	c.mu.Unlock()
	if ok && bytes.Equal(e.raw, raw) {
		return e.parsed, e.err
	}
	parsed, err := parse(raw)
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.entries[bucket]; ok {
		c.size -= len(old.raw)
		delete(c.entries, bucket)
	}
	if c.entries == nil || len(c.entries) >= maxCachedDocs || c.size+len(raw) > maxCachedDocBytes {
		c.entries, c.size = map[string]cachedDoc[T]{}, 0
	}
	c.entries[bucket] = cachedDoc[T]{raw: raw, parsed: parsed, err: err}
	c.size += len(raw)
	return parsed, err
}
