package admin

import (
	"context"
	"errors"
	"net/http"

	"github.com/b3-storage/b3/internal/scrub"
)

// The scrub's endpoints (package scrub): GET /admin/v1/scrub reports it,
// POST /admin/v1/scrub/start starts a pass now (409 while one runs). A
// server without a scrubber answers 404.

func (s *Server) scrubber() (*scrub.Scrubber, error) {
	if s.cfg.Scrub == nil {
		return nil, &httpError{http.StatusNotFound, "this server runs no scrub"}
	}
	return s.cfg.Scrub, nil
}

func (s *Server) scrubStatus(w http.ResponseWriter, _ *http.Request) error {
	sc, err := s.scrubber()
	if err != nil {
		return err
	}
	WriteJSON(w, http.StatusOK, sc.Status())
	return nil
}

func (s *Server) scrubStart(w http.ResponseWriter, r *http.Request) error {
	sc, err := s.scrubber()
	if err != nil {
		return err
	}
	if err := sc.Start(); errors.Is(err, scrub.ErrRunning) {
		return &httpError{http.StatusConflict, err.Error()}
	} else if err != nil {
		return err
	}
	s.audit(r, "scrub.start")
	WriteJSON(w, http.StatusAccepted, map[string]string{"status": "started"})
	return nil
}

// ScrubStatus reports the scrub.
func (c *Client) ScrubStatus(ctx context.Context) (scrub.Status, error) {
	var st scrub.Status
	return st, c.do(ctx, "GET", "/admin/v1/scrub", nil, &st)
}

// ScrubStart starts a scrub pass now.
func (c *Client) ScrubStart(ctx context.Context) error {
	return c.do(ctx, "POST", "/admin/v1/scrub/start", nil, nil)
}
