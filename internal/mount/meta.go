package mount

import (
	"sort"
	"sync"
	"time"
)

// dirCache keeps recent directory listings, keyed by the directory's key
// prefix ("" for the mount root, else "a/b/"), each valid for ttl and at
// most max of them. Mutations through this mount edit the cached listing
// of their directory, so the mount reads its own writes; changes by other
// clients appear once the listing expires.
type dirCache struct {
	ttl time.Duration
	max int

	mu      sync.Mutex
	entries map[string]*cachedDir
	// fetches are the listings being read from the server, by directory.
	fetches map[string][]*fetch
}

// fetch is one listing of a directory being read from the server. The
// server may answer with its state before a change this mount makes
// meanwhile (a file committed while the listing is read): such changes are
// kept and applied to the answer, so that it does not undo them.
type fetch struct {
	dir     string
	changes []func(l *listing)
	void    bool // the directory was forgotten meanwhile: do not keep
}

type cachedDir struct {
	at time.Time
	l  *listing
}

func newDirCache(ttl time.Duration, max int) *dirCache {
	return &dirCache{ttl: ttl, max: max, entries: map[string]*cachedDir{}, fetches: map[string][]*fetch{}}
}

// kind of a name in a cached listing.
type kind int

const (
	unknown kind = iota // no fresh listing: ask the server
	absent
	isFile
	isDir
)

// lookup answers from a fresh listing of dir.
func (c *dirCache) lookup(dir, name string) (kind, object) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.fresh(dir)
	switch {
	case e == nil:
		return unknown, object{}
	case e.l.dirs[name]:
		return isDir, object{}
	}
	if o, ok := e.l.files[name]; ok {
		return isFile, o
	}
	return absent, object{}
}

func (c *dirCache) fresh(dir string) *cachedDir {
	e := c.entries[dir]
	if e == nil || c.ttl <= 0 || time.Since(e.at) > c.ttl {
		return nil
	}
	return e
}

// smallDir is the most names a directory may have had at its last listing
// for a lookup to list it again rather than ask for the one name: one
// page of ListObjectsV2 answers every lookup in it for a TTL.
const smallDir = 5000

// relistable reports whether dir was listed before (its listing now
// expired) with at most smallDir names.
func (c *dirCache) relistable(dir string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.entries[dir]
	return e != nil && len(e.l.files)+len(e.l.dirs) <= smallDir
}

// begin registers a listing of dir about to be read from the server; end
// or abandon it.
func (c *dirCache) begin(dir string) *fetch {
	c.mu.Lock()
	defer c.mu.Unlock()
	f := &fetch{dir: dir}
	c.fetches[dir] = append(c.fetches[dir], f)
	return f
}

// abandon unregisters a fetch that failed.
func (c *dirCache) abandon(f *fetch) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.unregister(f)
}

func (c *dirCache) unregister(f *fetch) {
	fs := c.fetches[f.dir]
	for i, g := range fs {
		if g == f {
			fs = append(fs[:i], fs[i+1:]...)
			break
		}
	}
	if len(fs) == 0 {
		delete(c.fetches, f.dir)
	} else {
		c.fetches[f.dir] = fs
	}
}

// end applies to l, the server's answer to f, the changes made through the
// mount since begin, keeps it (unless the directory was forgotten) and
// returns its entries in name order.
func (c *dirCache) end(f *fetch, l *listing) []dirEntry {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.unregister(f)
	for _, change := range f.changes {
		change(l)
	}
	// Sorted before the listing is shared: edits change it under mu.
	entries := l.sorted()
	if !f.void {
		c.storeLocked(f.dir, l)
	}
	return entries
}

// store records a listing known to be current.
func (c *dirCache) store(dir string, l *listing) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.storeLocked(dir, l)
}

func (c *dirCache) storeLocked(dir string, l *listing) {
	if c.ttl <= 0 {
		return
	}
	if len(c.entries) >= c.max {
		// Drop the expired listings, or, if none, an arbitrary half.
		for k, e := range c.entries {
			if time.Since(e.at) > c.ttl || len(c.entries) >= c.max/2+1 {
				delete(c.entries, k)
			}
		}
	}
	c.entries[dir] = &cachedDir{at: time.Now(), l: l}
}

// edit applies a change made through the mount to the listing of dir, if
// one is cached (a listing not cached is read afresh when needed), and to
// the listings of dir being read.
func (c *dirCache) edit(dir string, change func(l *listing)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.entries[dir]; e != nil {
		change(e.l)
	}
	for _, f := range c.fetches[dir] {
		f.changes = append(f.changes, change)
	}
}

func (c *dirCache) setFile(dir, name string, o object) {
	c.edit(dir, func(l *listing) { l.files[name] = o })
}

func (c *dirCache) setDir(dir, name string) {
	c.edit(dir, func(l *listing) { l.dirs[name] = true; delete(l.files, name) })
}

func (c *dirCache) remove(dir, name string) {
	c.edit(dir, func(l *listing) { delete(l.files, name); delete(l.dirs, name) })
}

// forget drops the listing of dir (its content changed in ways the cache
// cannot follow, such as a directory removed below it).
func (c *dirCache) forget(dir string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.entries, dir)
	for _, f := range c.fetches[dir] {
		f.void = true
	}
}

// dirEntry is one name of a directory as readdir returns it.
type dirEntry struct {
	name string
	dir  bool
	obj  object
}

// sorted lists l in name order.
func (l *listing) sorted() []dirEntry {
	out := make([]dirEntry, 0, len(l.files)+len(l.dirs))
	for name := range l.dirs {
		out = append(out, dirEntry{name: name, dir: true})
	}
	for name, o := range l.files {
		out = append(out, dirEntry{name: name, obj: o})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}
