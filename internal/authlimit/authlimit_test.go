package authlimit

import (
	"fmt"
	"testing"
	"time"
)

func TestBackOff(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	l := New(Config{AddrBurst: 3, AddrEvery: time.Second, KeyBurst: 5, KeyEvery: 10 * time.Second, Now: func() time.Time { return now }})
	const attacker, other = "192.0.2.1:40000", "198.51.100.7:5000"
	for i := range 3 {
		if w := l.Blocked(attacker, "VICTIM"); w != 0 {
			t.Fatalf("failure %d held back %v", i, w)
		}
		l.Failed(attacker, "VICTIM")
	}
	if w := l.Blocked("192.0.2.1:40001", "ANY"); w != time.Second {
		t.Errorf("after the burst, the address (another port) waits %v, want 1s", w)
	}
	if w := l.Blocked(other, "VICTIM"); w != 0 {
		t.Errorf("another address with the same key waits %v", w)
	}
	now = now.Add(time.Second)
	if w := l.Blocked(attacker, "VICTIM"); w != 0 {
		t.Errorf("a token back after 1s, still waits %v", w)
	}

	// Guessing one key from many addresses empties the key's bucket:
	// that key is refused from addresses that failed, never from one
	// that did not (the legitimate user elsewhere).
	for i := range 5 {
		l.Failed(fmt.Sprintf("203.0.113.%d:1", i), "VICTIM")
	}
	if w := l.Blocked("203.0.113.9:1", "VICTIM"); w != 0 {
		t.Errorf("an address without failures waits %v for the key", w)
	}
	l.Failed("203.0.113.9:1", "OTHERKEY")
	if w := l.Blocked("203.0.113.9:1", "VICTIM"); w <= 0 {
		t.Error("a failing address may go on guessing an exhausted key")
	}
	if w := l.Blocked(other, "VICTIM"); w != 0 {
		t.Errorf("the user's own address waits %v", w)
	}
	if w := l.Blocked("203.0.113.9:1", "OTHERKEY"); w != 0 {
		t.Errorf("another key from that address waits %v", w)
	}
}

func TestIPv6Prefix(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	l := New(Config{AddrBurst: 2, Now: func() time.Time { return now }})
	l.Failed("[2001:db8:1:2::1]:443", "")
	l.Failed("[2001:db8:1:2::ffff]:443", "")
	if l.Blocked("[2001:db8:1:2:aaaa::3]:1", "") == 0 {
		t.Error("another address of the same /64 is not held back")
	}
	if l.Blocked("[2001:db8:1:3::1]:1", "") != 0 {
		t.Error("another /64 is held back")
	}
	if addrKey("[::ffff:192.0.2.1]:1") != "192.0.2.1" {
		t.Errorf("v4-mapped: %s", addrKey("[::ffff:192.0.2.1]:1"))
	}
}

func TestBounded(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	l := New(Config{AddrBurst: 1, MaxEntries: 100, Now: func() time.Time { return now }})
	l.Failed("192.0.2.1:1", "K")
	for i := range 1000 {
		l.Failed(fmt.Sprintf("10.0.%d.%d:1", i/256, i%256), fmt.Sprint("K", i))
		l.Blocked("192.0.2.1:1", "K") // a look does not keep an entry
	}
	if len(l.addrs.byKey) != 100 || len(l.keys.byKey) != 100 || l.addrs.order.Len() != 100 {
		t.Errorf("tables hold %d addresses, %d keys; want 100", len(l.addrs.byKey), len(l.keys.byKey))
	}
	var nilL *Limiter
	nilL.Failed("x", "y")
	if nilL.Blocked("x", "y") != 0 {
		t.Error("a nil limiter limits")
	}
	if RetryAfter(1500*time.Millisecond) != 2 || RetryAfter(0) != 1 {
		t.Error("RetryAfter")
	}
}
