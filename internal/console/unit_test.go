package console

import (
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

func TestSessionExpires(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ss := newSessions(time.Hour, func() time.Time { return now })
	s := ss.create("AK", "SK")
	for _, tc := range []struct {
		after time.Duration
		live  bool
	}{{0, true}, {59 * time.Minute, true}, {time.Hour, false}, {2 * time.Hour, false}} {
		now = s.created.Add(tc.after)
		if got := ss.get(s.id) != nil; got != tc.live {
			t.Errorf("%v after login: live %v, want %v", tc.after, got, tc.live)
		}
	}
}

func TestSessionsBounded(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ss := newSessions(time.Hour, func() time.Time { now = now.Add(time.Millisecond); return now })
	first := ss.create("AK", "SK")
	for i := range maxSessions {
		ss.create(fmt.Sprintf("AK%d", i%(maxSessions/maxSessionsPerKey)), "SK")
	}
	if len(ss.byID) != maxSessions || ss.get(first.id) != nil {
		t.Errorf("%d sessions, first still there: %v; want %d and the oldest gone", len(ss.byID), ss.get(first.id) != nil, maxSessions)
	}
}

// TestSessionsPerKey: one user logging in over and over drops its own
// oldest sessions, never another user's (it used to fill the table and
// evict everyone's).
func TestSessionsPerKey(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ss := newSessions(time.Hour, func() time.Time { now = now.Add(time.Millisecond); return now })
	victim := ss.create("VICTIM", "SK")
	var mine []*session
	for range maxSessions + 1 {
		mine = append(mine, ss.create("LOUD", "SK"))
	}
	if ss.get(victim.id) == nil {
		t.Fatal("another user's logins logged the victim out")
	}
	if n := ss.byKey["LOUD"]; n != maxSessionsPerKey || len(ss.byID) != maxSessionsPerKey+1 {
		t.Errorf("LOUD holds %d sessions (table %d), want %d", n, len(ss.byID), maxSessionsPerKey)
	}
	if ss.get(mine[len(mine)-maxSessionsPerKey-1].id) != nil || ss.get(mine[len(mine)-1].id) == nil {
		t.Error("not the key's oldest session dropped")
	}
	ss.remove(victim.id)
	if _, ok := ss.byKey["VICTIM"]; ok || ss.get(victim.id) != nil {
		t.Errorf("logout left the session counted: %v", ss.byKey)
	}
	// Expired sessions of the key make room before a live one goes.
	now = now.Add(2 * time.Hour)
	fresh := ss.create("LOUD", "SK")
	if ss.get(fresh.id) == nil || ss.byKey["LOUD"] != 1 {
		t.Errorf("after expiry: %d sessions of LOUD", ss.byKey["LOUD"])
	}
}

func TestSameOrigin(t *testing.T) {
	for _, tc := range []struct {
		origin string
		ok     bool
	}{{"", true}, {"http://console.example:9002", true}, {"https://console.example:9002", false},
		{"http://evil.example", false}, {"http://console.example", false}, {"null", false}} {
		r := httptest.NewRequest("POST", "http://console.example:9002/api/logout", nil)
		if tc.origin != "" {
			r.Header.Set("Origin", tc.origin)
		}
		if got := sameOrigin(r); got != tc.ok {
			t.Errorf("Origin %q: %v, want %v", tc.origin, got, tc.ok)
		}
	}
}

func TestEscapePath(t *testing.T) {
	for in, want := range map[string]string{
		"/b/k":                     "/b/k",
		"/b/a b/<img src=x>":       "/b/a%20b/%3Cimg%20src%3Dx%3E",
		"/b/dir/../x":              "/b/dir/../x",
		"/b/ü~_-.":                 "/b/%C3%BC~_-.",
		"/b/q?x=1&y#z":             "/b/q%3Fx%3D1%26y%23z",
		"/b/percent%2Fslash+plus/": "/b/percent%252Fslash%2Bplus/",
	} {
		if got := escapePath(in); got != want {
			t.Errorf("escapePath(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestForwardedHeaders(t *testing.T) {
	for _, tc := range []struct {
		name, method string
		want         bool
	}{
		{"Authorization", "GET", false}, {"X-Amz-Date", "PUT", false}, {"X-Amz-Content-Sha256", "PUT", false},
		{"Cookie", "GET", false}, {"X-CSRF-Token", "PUT", false}, {"Origin", "PUT", false},
		{"Range", "GET", true}, {"X-Amz-Meta-Color", "PUT", true}, {"X-Amz-Copy-Source", "PUT", true},
		{"Cache-Control", "GET", false}, {"Cache-Control", "PUT", true}, {"Content-Type", "PUT", true},
	} {
		if got := forwardedHeader(tc.name, tc.method); got != tc.want {
			t.Errorf("forwardedHeader(%s, %s) = %v, want %v", tc.name, tc.method, got, tc.want)
		}
	}
}

// TestHistoryQuantiles: rates and percentiles come from the difference of
// consecutive samples of the server's counters and histogram.
func TestHistoryQuantiles(t *testing.T) {
	reg := prometheus.NewRegistry()
	requests := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "b3_s3_requests_total"}, []string{"op"})
	latency := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "b3_s3_request_duration_seconds",
		Buckets: []float64{0.001, 0.01, 0.1, 1}}, []string{"op"})
	dead := prometheus.NewGauge(prometheus.GaugeOpts{Name: "b3_segment_dead_bytes"})
	size := prometheus.NewGauge(prometheus.GaugeOpts{Name: "b3_segment_bytes"})
	reg.MustRegister(requests, latency, dead, size)
	h := NewHistory(3)
	at := time.Unix(1000, 0)
	h.Sample(reg, at)
	// 10 s: 100 requests, 90 under 1 ms (0.0005 s), 10 at 0.05 s.
	for i := range 100 {
		op := "GetObject"
		if i%2 == 1 {
			op = "PutObject" // summed over operations
		}
		requests.WithLabelValues(op).Inc()
		if i < 90 {
			latency.WithLabelValues(op).Observe(0.0005)
		} else {
			latency.WithLabelValues(op).Observe(0.05)
		}
	}
	size.Set(1000)
	dead.Set(300)
	h.Sample(reg, at.Add(10*time.Second))
	h.Sample(reg, at.Add(20*time.Second)) // idle
	s := h.Series()
	if len(s.Time) != 2 {
		t.Fatalf("%d points, want 2", len(s.Time))
	}
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-9 }
	if !near(s.RequestsPerS[0], 10) || !near(s.RequestsPerS[1], 0) {
		t.Errorf("requests/s %v, want [10 0]", s.RequestsPerS)
	}
	// p50: rank 50 of 90 in (0, 0.001]; p99: rank 99, 9th of 10 in (0.01, 0.1].
	if !near(s.Latency.P50[0], 0.001*50/90) || !near(s.Latency.P99[0], 0.01+0.09*9/10) || s.Latency.P50[1] != -1 {
		t.Errorf("p50 %v p99 %v, want [%v -1] [%v -1]", s.Latency.P50, s.Latency.P99, 0.001*50/90, 0.01+0.09*9/10)
	}
	if s.LiveBytes[0] != 700 || s.DeadBytes[0] != 300 {
		t.Errorf("live %v dead %v, want 700 and 300", s.LiveBytes, s.DeadBytes)
	}
	// The ring keeps the last 3 samples.
	h.Sample(reg, at.Add(30*time.Second))
	if got := len(h.Series().Time); got != 2 {
		t.Errorf("after a 4th sample: %d points, want 2 (3 samples kept)", got)
	}
}

// TestPageHeaders: the page runs under a CSP without inline script, is
// not framed, and login refuses anything but the page's own JSON post.
func TestPageHeaders(t *testing.T) {
	c := New(Config{S3: http.NotFoundHandler()})
	rec := httptest.NewRecorder()
	c.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
	csp := rec.Header().Get("Content-Security-Policy")
	if rec.Code != 200 || !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe-inline") ||
		rec.Header().Get("X-Frame-Options") != "DENY" || !strings.Contains(rec.Body.String(), "/assets/core.js") {
		t.Errorf("index: %d, CSP %q, X-Frame-Options %q", rec.Code, csp, rec.Header().Get("X-Frame-Options"))
	}
	for _, asset := range []string{"/assets/core.js", "/assets/style.css", "/assets/hls.light.min.js"} {
		rec := httptest.NewRecorder()
		c.ServeHTTP(rec, httptest.NewRequest("GET", asset, nil))
		if rec.Code != 200 || rec.Body.Len() == 0 {
			t.Errorf("%s: %d, %d bytes", asset, rec.Code, rec.Body.Len())
		}
	}
}

// TestLoginWhenS3CannotJudge: login answers 401 only when the S3 API
// refused the credentials; when it could not judge them (503 from a
// replica group electing a leader, a 500), 503 with Retry-After.
func TestLoginWhenS3CannotJudge(t *testing.T) {
	for _, tc := range []struct {
		s3Status int
		code     string
		want     int
	}{
		{http.StatusOK, "", http.StatusOK},
		{http.StatusForbidden, "InvalidAccessKeyId", http.StatusUnauthorized},
		{http.StatusForbidden, "SignatureDoesNotMatch", http.StatusUnauthorized},
		{http.StatusServiceUnavailable, "SlowDown", http.StatusServiceUnavailable},
		{http.StatusInternalServerError, "InternalError", http.StatusServiceUnavailable},
	} {
		s3 := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(tc.s3Status)
			if tc.code != "" {
				fmt.Fprintf(w, "<Error><Code>%s</Code></Error>", tc.code)
			}
		})
		c := New(Config{S3: s3})
		req := httptest.NewRequest("POST", "/api/login", strings.NewReader(`{"accessKey":"AK","secretKey":"SK"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-B3-Console", "1")
		rec := httptest.NewRecorder()
		c.ServeHTTP(rec, req)
		if rec.Code != tc.want {
			t.Errorf("S3 %d %s: login %d, want %d (%s)", tc.s3Status, tc.code, rec.Code, tc.want, rec.Body)
		}
		if retry := rec.Header().Get("Retry-After"); (tc.want == http.StatusServiceUnavailable) != (retry != "") {
			t.Errorf("S3 %d %s: Retry-After %q", tc.s3Status, tc.code, retry)
		}
	}
}
