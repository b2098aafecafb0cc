package admin

import (
	"net/http"
	"strconv"
	"time"

	"github.com/b3-storage/b3/internal/iolimit"
)

// Overrides are the settings changed at run time through the admin API
// (limits set, vacuum stop/auto, cache set). The server keeps them in its data
// directory, so they outlive a restart, and applies them over the
// configured values (flags, environment, file) when it starts. A nil
// field is not overridden.
type Overrides struct {
	Limits *LimitsDoc `json:"limits,omitempty"`
	// VacuumInterval is the automatic vacuum period; "0s": stopped.
	VacuumInterval *string `json:"vacuum_interval,omitempty"`
	// CacheBytes is the object cache's bound; 0: off.
	CacheBytes *int64 `json:"cache_size_bytes,omitempty"`
}

// LimitsDoc is iolimit.Limits as JSON: bytes per second, 0 = unlimited.
type LimitsDoc struct {
	Read            int64 `json:"read_bytes_per_second"`
	Write           int64 `json:"write_bytes_per_second"`
	BackgroundRead  int64 `json:"background_read_bytes_per_second"`
	BackgroundWrite int64 `json:"background_write_bytes_per_second"`
}

// ToLimits converts to iolimit's type.
func (d LimitsDoc) ToLimits() iolimit.Limits {
	return iolimit.Limits{ReadBytesPerSec: d.Read, WriteBytesPerSec: d.Write,
		BackgroundReadBytesPerSec: d.BackgroundRead, BackgroundWriteBytesPerSec: d.BackgroundWrite}
}

// LimitsDocOf converts from iolimit's type.
func LimitsDocOf(l iolimit.Limits) LimitsDoc {
	return LimitsDoc{Read: l.ReadBytesPerSec, Write: l.WriteBytesPerSec,
		BackgroundRead: l.BackgroundReadBytesPerSec, BackgroundWrite: l.BackgroundWriteBytesPerSec}
}

// OverrideStore keeps the Overrides durably.
type OverrideStore interface {
	Overrides() Overrides
	// SaveOverrides persists o (replacing what was kept) before it
	// returns.
	SaveOverrides(o Overrides) error
}

// Configured are a server's settings as configured at start, before
// overrides: what `settings reset` goes back to.
type Configured struct {
	Limits         iolimit.Limits
	VacuumInterval time.Duration
	CacheBytes     int64
}

// Setting is one row of GET /admin/v1/settings.
type Setting struct {
	Name       string `json:"name"`       // the server flag's name
	Value      string `json:"value"`      // in force now
	Configured string `json:"configured"` // from flags, environment, file or default
	Overridden bool   `json:"overridden"` // changed at run time, kept over restarts
}

func (s *Server) settingsRows() []Setting {
	o := Overrides{}
	if s.cfg.Overrides != nil {
		o = s.cfg.Overrides.Overrides()
	}
	now, conf := LimitsDocOf(s.cfg.Limiter.Limits()), LimitsDocOf(s.cfg.Configured.Limits)
	num := func(n int64) string { return strconv.FormatInt(n, 10) }
	rows := []Setting{
		{"read-limit", num(now.Read), num(conf.Read), o.Limits != nil},
		{"write-limit", num(now.Write), num(conf.Write), o.Limits != nil},
		{"background-read-limit", num(now.BackgroundRead), num(conf.BackgroundRead), o.Limits != nil},
		{"background-write-limit", num(now.BackgroundWrite), num(conf.BackgroundWrite), o.Limits != nil},
	}
	interval := s.cfg.Configured.VacuumInterval.String()
	if o.VacuumInterval != nil {
		interval = *o.VacuumInterval
	}
	rows = append(rows, Setting{"vacuum-interval", interval, s.cfg.Configured.VacuumInterval.String(), o.VacuumInterval != nil})
	if cs := s.cfg.Store.CacheStats(); cs.Policy != "" { // a store with a cache
		rows = append(rows, Setting{"cache-size", num(cs.MaxBytes), num(s.cfg.Configured.CacheBytes), o.CacheBytes != nil})
	}
	return rows
}

func (s *Server) getSettings(w http.ResponseWriter, _ *http.Request) error {
	WriteJSON(w, http.StatusOK, s.settingsRows())
	return nil
}

// saveOverride changes the kept overrides with fn and saves them.
func (s *Server) saveOverride(fn func(*Overrides)) error {
	if s.cfg.Overrides == nil {
		return nil
	}
	s.overridesMu.Lock()
	defer s.overridesMu.Unlock()
	o := s.cfg.Overrides.Overrides()
	fn(&o)
	return s.cfg.Overrides.SaveOverrides(o)
}

// resetSettings drops every override: the configured values are back in
// force at once and after restarts.
func (s *Server) resetSettings(w http.ResponseWriter, r *http.Request) error {
	if err := s.saveOverride(func(o *Overrides) { *o = Overrides{} }); err != nil {
		return err
	}
	if s.cfg.Limiter != nil {
		s.cfg.Limiter.SetLimits(s.cfg.Configured.Limits)
	}
	s.cfg.Store.StopVacuum()
	if s.cfg.Configured.VacuumInterval > 0 {
		s.cfg.Store.StartVacuum(s.cfg.Configured.VacuumInterval)
	}
	s.cfg.Store.SetCacheSize(s.cfg.Configured.CacheBytes)
	s.audit(r, "settings.reset")
	WriteJSON(w, http.StatusOK, s.settingsRows())
	return nil
}
