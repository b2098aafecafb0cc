package hls

import "sync"

// Registry holds the requests waiting for playlists, by playlist name
// (the S3 layer uses bucket + "/" + key). Safe for concurrent use.
//
// Invariant: a Waiter is in the registry until it is woken (its channel
// closed, by Wake) or cancelled, never both; Wake and Cancel remove it
// under the lock, so its channel is closed at most once.
type Registry struct {
	mu    sync.Mutex
	names map[string]map[*Waiter]struct{}
}

// Waiter is one held request.
type Waiter struct {
	reg    *Registry
	name   string
	target Target
	woken  chan struct{}
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{names: map[string]map[*Waiter]struct{}{}}
}

// Wait registers a request for name waiting for target. Register before
// reading the playlist: a write between the read and the registration
// would otherwise wake nobody.
func (r *Registry) Wait(name string, target Target) *Waiter {
	w := &Waiter{reg: r, name: name, target: target, woken: make(chan struct{})}
	r.mu.Lock()
	defer r.mu.Unlock()
	set := r.names[name]
	if set == nil {
		set = map[*Waiter]struct{}{}
		r.names[name] = set
	}
	set[w] = struct{}{}
	return w
}

// Woken is closed when a write reached the waiter's target.
func (w *Waiter) Woken() <-chan struct{} { return w.woken }

// Cancel removes the waiter (the request was answered or gave up); it
// does nothing once the waiter was woken.
func (w *Waiter) Cancel() {
	w.reg.mu.Lock()
	defer w.reg.mu.Unlock()
	w.reg.remove(w)
}

func (r *Registry) remove(w *Waiter) {
	set := r.names[w.name]
	delete(set, w)
	if len(set) == 0 {
		delete(r.names, w.name)
	}
}

// Waiting reports whether any request waits for name: a writer parses
// the playlist it stored only then.
func (r *Registry) Waiting(name string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.names[name]) > 0
}

// Held is the number of requests waiting, for every name.
func (r *Registry) Held() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, set := range r.names {
		n += len(set)
	}
	return n
}

// Wake wakes, and removes, the waiters for name whose target p has
// reached; it returns how many. The others keep waiting.
func (r *Registry) Wake(name string, p *Playlist) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for w := range r.names[name] {
		if p.Reached(w.target) {
			r.remove(w)
			close(w.woken)
			n++
		}
	}
	return n
}
