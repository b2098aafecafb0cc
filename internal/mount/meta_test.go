package mount

import (
	"fmt"
	"testing"
	"time"
)

func newListing(files ...string) *listing {
	l := &listing{files: map[string]object{}, dirs: map[string]bool{}}
	for _, f := range files {
		l.files[f] = object{size: 1}
	}
	return l
}

// TestDirCache: answers come from fresh listings only, edits through the
// mount show at once, and the number of listings stays bounded.
func TestDirCache(t *testing.T) {
	c := newDirCache(time.Hour, 4)
	c.store("a/", newListing("x"))
	steps := []struct {
		do   func()
		dir  string
		name string
		want kind
	}{
		{nil, "a/", "x", isFile},
		{nil, "a/", "y", absent},
		{nil, "b/", "x", unknown}, // never listed
		{func() { c.setFile("a/", "y", object{}) }, "a/", "y", isFile},
		{func() { c.setDir("a/", "x") }, "a/", "x", isDir},
		{func() { c.remove("a/", "x") }, "a/", "x", absent},
		{func() { c.forget("a/") }, "a/", "y", unknown},
		{func() { c.setFile("b/", "x", object{}) }, "b/", "x", unknown}, // edits need a listing
	}
	for i, s := range steps {
		if s.do != nil {
			s.do()
		}
		if got, _ := c.lookup(s.dir, s.name); got != s.want {
			t.Errorf("step %d: lookup %s%s = %v, want %v", i, s.dir, s.name, got, s.want)
		}
	}
	for i := range 100 {
		c.store(fmt.Sprintf("d%d/", i), newListing())
		if len(c.entries) > 4 {
			t.Fatalf("%d listings kept, bound 4", len(c.entries))
		}
	}

	expired := newDirCache(time.Nanosecond, 4)
	expired.store("a/", newListing("x"))
	time.Sleep(time.Millisecond)
	if got, _ := expired.lookup("a/", "x"); got != unknown {
		t.Errorf("expired listing answered %v", got)
	}
	if !expired.relistable("a/") {
		t.Error("a small expired directory is not listed again")
	}
	off := newDirCache(0, 4)
	off.store("a/", newListing("x"))
	if got, _ := off.lookup("a/", "x"); got != unknown {
		t.Errorf("TTL 0 answered %v from a cache", got)
	}
}

// TestDirCacheFetch: a listing the server answered before a change made
// through the mount (a file committed, one removed) and stored after it
// keeps the change; a listing of a directory forgotten meanwhile is not
// kept, and a failed one leaves nothing behind.
func TestDirCacheFetch(t *testing.T) {
	c := newDirCache(time.Hour, 4)
	f := c.begin("a/")
	c.setFile("a/", "new", object{size: 5})
	c.remove("a/", "gone")
	entries := c.end(f, newListing("old", "gone"))
	var names []string
	for _, e := range entries {
		names = append(names, e.name)
	}
	if fmt.Sprint(names) != "[new old]" {
		t.Errorf("readdir lists %v, want [new old]", names)
	}
	for name, want := range map[string]kind{"new": isFile, "old": isFile, "gone": absent} {
		if got, _ := c.lookup("a/", name); got != want {
			t.Errorf("lookup a/%s = %v, want %v", name, got, want)
		}
	}

	f = c.begin("b/")
	c.forget("b/")
	c.end(f, newListing("x"))
	if got, _ := c.lookup("b/", "x"); got != unknown {
		t.Errorf("a listing of a directory forgotten while it was read answered %v", got)
	}

	f = c.begin("c/")
	c.abandon(f)
	c.end(c.begin("a/"), newListing())
	if len(c.fetches) != 0 {
		t.Errorf("%d directories still have listings in progress", len(c.fetches))
	}
}
