package s3api

import (
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/b3-storage/b3/internal/authlimit"
	"github.com/b3-storage/b3/internal/s3auth"
)

// errAuthBackOff answers a request with credentials from an address (or
// for an access key) that failed to authenticate too often lately.
var errAuthBackOff = &APIError{Code: "SlowDown", Status: http.StatusServiceUnavailable,
	Message: "Too many failed authentications from this address; retry after the time in Retry-After."}

// authenticateLimited is authenticate behind Config.AuthLimiter: a
// request carrying credentials from an address held back is refused
// before its signature is checked, and a wrong signature or an unknown
// access key counts against its address and key (package authlimit).
// Anonymous requests are neither held back nor counted.
func (s *Server) authenticateLimited(rq *request) error {
	l := s.cfg.AuthLimiter
	key, signed := credentialKey(rq.Request)
	if l == nil || !signed {
		return s.authenticate(rq)
	}
	if wait := l.Blocked(rq.RemoteAddr, key); wait > 0 {
		rq.w.Header().Set("Retry-After", strconv.Itoa(authlimit.RetryAfter(wait)))
		return errAuthBackOff
	}
	err := s.authenticate(rq)
	var ae *s3auth.Error
	if errors.As(err, &ae) && (ae.Code == "SignatureDoesNotMatch" || ae.Code == "InvalidAccessKeyId") {
		l.Failed(rq.RemoteAddr, key)
		s.log.Info("authentication failed", "access_key", key, "code", ae.Code, "remote", rq.RemoteAddr)
	}
	return err
}

// credentialKey returns the access key a request claims, and whether it
// carries credentials at all (SigV4 or SigV2, header or query).
func credentialKey(r *http.Request) (string, bool) {
	if h := r.Header.Get("Authorization"); h != "" {
		if _, rest, ok := strings.Cut(h, "Credential="); ok {
			key, _, _ := strings.Cut(rest, "/")
			return key, true
		}
		if rest, ok := strings.CutPrefix(h, "AWS "); ok {
			key, _, _ := strings.Cut(rest, ":")
			return key, true
		}
		return "", true
	}
	q := r.URL.Query()
	if c := q.Get("X-Amz-Credential"); c != "" || q.Has("X-Amz-Signature") {
		key, _, _ := strings.Cut(c, "/")
		return key, true
	}
	if q.Has("Signature") || q.Has("AWSAccessKeyId") {
		return q.Get("AWSAccessKeyId"), true
	}
	return "", false
}
