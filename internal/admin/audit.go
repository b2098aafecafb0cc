package admin

import (
	"log/slog"
	"net/http"
	"strings"
)

// ActorHeader names the person or tool behind an admin request; `b3
// admin` sends user@host. The admin token is the only credential, so the
// actor is what the caller declares, logged beside the remote address.
const ActorHeader = "X-B3-Actor"

// audit logs one admin change: a structured line with msg "audit", the
// action (user.add, bucket.chown, limits.set, ...), who made it and from
// where, and the change's own attributes. Every handler that changes
// state calls it once the change is made.
func (s *Server) audit(r *http.Request, action string, attrs ...any) {
	Audit(s.cfg.Logger, r, action, attrs...)
}

// Audit logs one admin change to log as Server's handlers do, for admin
// handlers of other packages (b3 node's cluster commands).
func Audit(log *slog.Logger, r *http.Request, action string, attrs ...any) {
	log.Info("audit", append([]any{"action", action, "actor", Actor(r), "remote", r.RemoteAddr}, attrs...)...)
}

// Actor is who the request says is behind it (ActorHeader), sanitized.
func Actor(r *http.Request) string { return actor(r) }

func actor(r *http.Request) string {
	a := strings.TrimSpace(r.Header.Get(ActorHeader))
	if a == "" {
		return "unknown"
	}
	if len(a) > 128 {
		a = a[:128]
	}
	return strings.Map(func(c rune) rune {
		if c < 0x20 || c == 0x7f {
			return '?'
		}
		return c
	}, a)
}
