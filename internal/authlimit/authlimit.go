// Package authlimit backs off clients that fail to authenticate: wrong
// S3 signatures and unknown access keys (package s3api), wrong console
// logins (package console).
//
// Failures are counted in token buckets (golang.org/x/time/rate): one per
// client address, the primary key, and one per access key tried. Each
// failure takes a token; while an address's bucket is empty, requests
// carrying credentials from that address are refused before their
// signature is checked (so a guess made then teaches nothing), with the
// time until a token is back (Retry-After). Successful requests take no
// token, and refused ones take none either, so a client that stops
// failing is served again as the bucket refills.
//
// An access key's bucket is larger: it catches guessing spread over many
// addresses. An empty one refuses that key only from addresses that have
// failed themselves lately, never from one that has not, so nobody can
// lock a user out by failing with the user's key from elsewhere.
//
// IPv6 addresses count by their /64 (one host or network usually holds
// the whole prefix). Clients behind one NAT or proxy share an address:
// a client there that keeps failing slows the others at that address.
//
// Memory is bounded: each table holds at most Config.MaxEntries buckets,
// the least recently touched dropped first (a dropped bucket is a full
// one again).
package authlimit

import (
	"container/list"
	"math"
	"net"
	"net/netip"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Config sets the buckets. Zero values pick the defaults.
type Config struct {
	// AddrBurst failures from one address in a row are let through;
	// then one more each AddrEvery (default 10, and 1s).
	AddrBurst int
	AddrEvery time.Duration
	// KeyBurst and KeyEvery are the same for one access key (default
	// 100, and 1s).
	KeyBurst int
	KeyEvery time.Duration
	// MaxEntries bounds each table (default 10000).
	MaxEntries int
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Off makes a Limiter that limits nothing (as a nil one).
	Off bool
}

// Limiter counts failed authentications. Safe for concurrent use; a nil
// *Limiter limits nothing.
type Limiter struct {
	cfg Config

	mu          sync.Mutex
	addrs, keys table
}

// New returns a Limiter.
func New(cfg Config) *Limiter {
	if cfg.AddrBurst <= 0 {
		cfg.AddrBurst = 10
	}
	if cfg.AddrEvery <= 0 {
		cfg.AddrEvery = time.Second
	}
	if cfg.KeyBurst <= 0 {
		cfg.KeyBurst = 100
	}
	if cfg.KeyEvery <= 0 {
		cfg.KeyEvery = time.Second
	}
	if cfg.MaxEntries <= 0 {
		cfg.MaxEntries = 10000
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	l := &Limiter{cfg: cfg}
	l.addrs = table{max: cfg.MaxEntries, every: cfg.AddrEvery, burst: cfg.AddrBurst}
	l.keys = table{max: cfg.MaxEntries, every: cfg.KeyEvery, burst: cfg.KeyBurst}
	return l
}

// Blocked returns how long a request with credentials for accessKey
// ("" if unknown) from remoteAddr (http.Request.RemoteAddr form) must
// wait; 0: go ahead and check it.
func (l *Limiter) Blocked(remoteAddr, accessKey string) time.Duration {
	if l == nil || l.cfg.Off {
		return 0
	}
	now := l.cfg.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	a := l.addrs.peek(addrKey(remoteAddr))
	if a == nil || a.TokensAt(now) >= float64(l.addrs.burst) {
		return 0 // no failure from here lately: never held back
	}
	if wait := a.wait(now, l.addrs.every); wait > 0 {
		return wait
	}
	if k := l.keys.peek(accessKey); k != nil && accessKey != "" {
		return k.wait(now, l.keys.every)
	}
	return 0
}

// Failed counts a failed authentication with accessKey from remoteAddr.
func (l *Limiter) Failed(remoteAddr, accessKey string) {
	if l == nil || l.cfg.Off {
		return
	}
	now := l.cfg.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.addrs.get(addrKey(remoteAddr)).AllowN(now, 1)
	if accessKey != "" {
		l.keys.get(accessKey).AllowN(now, 1)
	}
}

// RetryAfter renders a wait as the seconds of a Retry-After header (at
// least 1).
func RetryAfter(wait time.Duration) int {
	return max(1, int(math.Ceil(wait.Seconds())))
}

// addrKey is the client part of an address: the IP, or an IPv6 /64.
func addrKey(remoteAddr string) string {
	host, _, err := net.SplitHostPort(remoteAddr)
	if err != nil {
		host = remoteAddr
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return host
	}
	ip = ip.Unmap()
	if ip.Is6() {
		p, _ := ip.Prefix(64)
		return p.String()
	}
	return ip.String()
}

// bucket is one token bucket of failures.
type bucket struct {
	*rate.Limiter
	key string
}

// wait is how long until the bucket has a token again.
func (b bucket) wait(now time.Time, every time.Duration) time.Duration {
	tokens := b.TokensAt(now)
	if tokens >= 1 {
		return 0
	}
	return time.Duration((1 - tokens) * float64(every))
}

// table is a bounded map of buckets, least recently touched dropped
// first.
type table struct {
	max, burst int
	every      time.Duration
	byKey      map[string]*list.Element
	order      list.List // front: most recently touched
}

func (t *table) peek(key string) *bucket {
	if e, ok := t.byKey[key]; ok {
		b := e.Value.(bucket)
		return &b
	}
	return nil
}

func (t *table) get(key string) bucket {
	if t.byKey == nil {
		t.byKey = map[string]*list.Element{}
	}
	if e, ok := t.byKey[key]; ok {
		t.order.MoveToFront(e)
		return e.Value.(bucket)
	}
	for len(t.byKey) >= t.max {
		last := t.order.Back()
		delete(t.byKey, last.Value.(bucket).key)
		t.order.Remove(last)
	}
	b := bucket{Limiter: rate.NewLimiter(rate.Every(t.every), t.burst), key: key}
	t.byKey[key] = t.order.PushFront(b)
	return b
}
