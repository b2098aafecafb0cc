package console

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/b3-storage/b3/internal/authlimit"
)

// CookieName is the session cookie.
const CookieName = "b3_console"

// CSRFHeader carries the session's CSRF token on every changing request.
const CSRFHeader = "X-CSRF-Token"

// maxSessions bounds the memory logins can take; the oldest goes first.
// maxSessionsPerKey bounds one access key's share of it: logging in again
// and again drops that key's own oldest session, never another user's
// (a single user could otherwise fill the table and log everyone out).
const (
	maxSessions       = 10000
	maxSessionsPerKey = 100
)

// session is one logged-in browser. secretKey stays in this process: the
// console signs S3 requests with it and never sends it back. Whether the
// user is an admin is asked at each request (Config.IsAdmin), not kept:
// on b3 node a follower may learn of the root user after its first login.
type session struct {
	id, csrf             string
	accessKey, secretKey string
	created, expires     time.Time
}

type sessions struct {
	ttl time.Duration
	now func() time.Time

	mu    sync.Mutex
	byID  map[string]*session
	byKey map[string]int // sessions per access key
}

func newSessions(ttl time.Duration, now func() time.Time) *sessions {
	return &sessions{ttl: ttl, now: now, byID: map[string]*session{}, byKey: map[string]int{}}
}

func randomToken() string {
	var b [32]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

func (ss *sessions) create(accessKey, secretKey string) *session {
	now := ss.now()
	s := &session{id: randomToken(), csrf: randomToken(), accessKey: accessKey, secretKey: secretKey,
		created: now, expires: now.Add(ss.ttl)}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.byKey[accessKey] >= maxSessionsPerKey {
		ss.evict(now, func(o *session) bool { return o.accessKey == accessKey })
	}
	if len(ss.byID) >= maxSessions {
		ss.evict(now, func(*session) bool { return true })
	}
	ss.byID[s.id] = s
	ss.byKey[accessKey]++
	return s
}

// evict drops every expired session, and if none of those was one of
// which, the oldest of which; ss.mu is held.
func (ss *sessions) evict(now time.Time, which func(*session) bool) {
	var oldest *session
	freed := false
	for _, o := range ss.byID {
		if !now.Before(o.expires) {
			freed = freed || which(o)
			ss.drop(o)
		} else if which(o) && (oldest == nil || o.created.Before(oldest.created)) {
			oldest = o
		}
	}
	if !freed && oldest != nil {
		ss.drop(oldest)
	}
}

// drop removes s; ss.mu is held.
func (ss *sessions) drop(s *session) {
	if _, ok := ss.byID[s.id]; !ok {
		return
	}
	delete(ss.byID, s.id)
	if ss.byKey[s.accessKey]--; ss.byKey[s.accessKey] <= 0 {
		delete(ss.byKey, s.accessKey)
	}
}

// get returns the live session of id, or nil.
func (ss *sessions) get(id string) *session {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	s := ss.byID[id]
	if s != nil && !ss.now().Before(s.expires) {
		ss.drop(s)
		return nil
	}
	return s
}

func (ss *sessions) remove(id string) {
	ss.mu.Lock()
	if s := ss.byID[id]; s != nil {
		ss.drop(s)
	}
	ss.mu.Unlock()
}

// changes reports whether a request method may change state: all but
// GET and HEAD need the CSRF token.
func changes(method string) bool { return method != http.MethodGet && method != http.MethodHead }

// withSession runs h with the request's session, or answers 401; a
// changing request also needs the session's CSRF token (403 otherwise).
func (c *Console) withSession(h func(http.ResponseWriter, *http.Request, *session)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var s *session
		if ck, err := r.Cookie(CookieName); err == nil {
			s = c.sessions.get(ck.Value)
		}
		if s == nil {
			writeError(w, http.StatusUnauthorized, "not logged in")
			return
		}
		if changes(r.Method) && subtle.ConstantTimeCompare([]byte(r.Header.Get(CSRFHeader)), []byte(s.csrf)) != 1 {
			writeError(w, http.StatusForbidden, "missing or wrong CSRF token")
			return
		}
		h(w, r, s)
	}
}

func (c *Console) adminOnly(h func(http.ResponseWriter, *http.Request, *session)) func(http.ResponseWriter, *http.Request, *session) {
	return func(w http.ResponseWriter, r *http.Request, s *session) {
		if c.cfg.Admin == nil || !c.cfg.IsAdmin(s.accessKey) {
			writeError(w, http.StatusForbidden, "operations are for admin users")
			return
		}
		h(w, r, s)
	}
}

// sameOrigin refuses a request whose Origin header (browsers send it on
// every cross-origin request and on same-origin changing ones) names
// another origin than the console's own.
func sameOrigin(r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return true
	}
	u, err := url.Parse(origin)
	return err == nil && u.Host == r.Host && (u.Scheme == "https") == (r.TLS != nil)
}

type loginRequest struct {
	AccessKey string `json:"accessKey"`
	SecretKey string `json:"secretKey"`
}

// sessionInfo is what the page learns of its session.
type sessionInfo struct {
	AccessKey string `json:"accessKey"`
	Admin     bool   `json:"admin"`
	Cluster   bool   `json:"cluster"`
	CSRF      string `json:"csrf"`
	Expires   string `json:"expires"`
}

func (c *Console) info(s *session) sessionInfo {
	return sessionInfo{AccessKey: s.accessKey, Admin: c.cfg.Admin != nil && c.cfg.IsAdmin(s.accessKey), Cluster: c.cfg.Cluster,
		CSRF: s.csrf, Expires: s.expires.UTC().Format(time.RFC3339)}
}

// login checks the credentials by a ListBuckets through the S3 API as that
// user. A login form on another site cannot post here: the request must
// be JSON with the console's own header, which needs a CORS preflight
// the console never grants.
func (c *Console) login(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("X-B3-Console") != "1" || r.Header.Get("Content-Type") != "application/json" {
		writeError(w, http.StatusForbidden, "login must come from the console page")
		return
	}
	var req loginRequest
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 4096)).Decode(&req); err != nil || req.AccessKey == "" || req.SecretKey == "" {
		writeError(w, http.StatusBadRequest, "give an access key and a secret key")
		return
	}
	// Back off an address that failed too often lately, before the
	// credentials are checked: a right guess then is no different.
	if wait := c.cfg.Logins.Blocked(r.RemoteAddr, req.AccessKey); wait > 0 {
		secs := authlimit.RetryAfter(wait)
		w.Header().Set("Retry-After", strconv.Itoa(secs))
		writeError(w, http.StatusTooManyRequests, fmt.Sprintf("too many failed logins from this address: try again in %d seconds", secs))
		return
	}
	probe := &session{accessKey: req.AccessKey, secretKey: req.SecretKey}
	status, code := c.s3Status(r, probe, http.MethodGet, "/", "")
	if status != http.StatusOK {
		c.cfg.Logger.Info("console login refused", "access_key", req.AccessKey, "status", status, "code", code, "remote", r.RemoteAddr)
		if status < 500 {
			c.cfg.Logins.Failed(r.RemoteAddr, req.AccessKey)
		}
		if status >= 500 {
			// The credentials were not judged: a replica group without
			// a leader for the moment, or a server error.
			w.Header().Set("Retry-After", "1")
			writeError(w, http.StatusServiceUnavailable, fmt.Sprintf("the credentials could not be checked now (%d %s); try again", status, code))
			return
		}
		writeError(w, http.StatusUnauthorized, "access key or secret key not accepted")
		return
	}
	s := c.sessions.create(req.AccessKey, req.SecretKey)
	http.SetCookie(w, &http.Cookie{Name: CookieName, Value: s.id, Path: "/", Expires: s.expires,
		MaxAge: int(c.cfg.SessionTTL.Seconds()), HttpOnly: true, Secure: r.TLS != nil, SameSite: http.SameSiteStrictMode})
	writeJSON(w, http.StatusOK, c.info(s))
}

func (c *Console) logout(w http.ResponseWriter, _ *http.Request, s *session) {
	c.sessions.remove(s.id)
	http.SetCookie(w, &http.Cookie{Name: CookieName, Value: "", Path: "/", MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteStrictMode})
	writeJSON(w, http.StatusOK, map[string]string{"status": "logged out"})
}

func (c *Console) session(w http.ResponseWriter, _ *http.Request, s *session) {
	writeJSON(w, http.StatusOK, c.info(s))
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]string{"error": msg})
}
