package scrub

import (
	"bytes"
	"time"
)

// Status is what `b3 admin scrub status --json` shows. Times that never
// happened are null.
type Status struct {
	// Running: a pass runs now. Phase is its sweep ("segments" or
	// "records"), "" when none runs.
	Running bool   `json:"running"`
	Phase   string `json:"phase"`
	// IntervalSeconds is the period of automatic passes (0: only on
	// demand); NextPass when the next one starts (null: none planned, or
	// one runs).
	IntervalSeconds float64    `json:"interval_seconds"`
	NextPass        *time.Time `json:"next_pass"`
	// Started and Finished are the current pass's start (Finished null),
	// or the last pass's, or null when there was none.
	Started  *time.Time `json:"started"`
	Finished *time.Time `json:"finished"`
	// Counts of the current pass, or of the last one when none runs.
	Counts
	// Passes is how many passes ended on this store.
	Passes int64 `json:"passes"`
	// LastError is why the pass in progress stopped last (it goes on
	// from there a minute later): pebble's error for a damaged metadata
	// block, say. "" when it did not.
	LastError string `json:"last_error"`
	// Damaged lists the object versions found damaged and not repaired:
	// while a pass runs, what it found so far and what the last pass
	// found at positions it has not reached; else the last pass's.
	Damaged []Damaged `json:"damaged"`
}

// Status reports the scrub.
func (s *Scrubber) Status() Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := Status{Running: s.running, IntervalSeconds: s.cfg.Interval.Seconds(), Passes: s.st.Passes, LastError: s.lastErr, Damaged: []Damaged{}}
	if next, auto := s.nextLocked(); auto && s.st.Pass == nil {
		st.NextPass = &next
	}
	last := s.st.Last
	if p := s.st.Pass; p != nil {
		started := p.Started
		st.Started, st.Counts = &started, p.Counts
		if s.running {
			st.Phase = p.Phase
		}
		st.Damaged = append(st.Damaged, p.Damaged...)
		if last != nil {
			for i, d := range last.Damaged {
				if p.Phase == PhaseSegments || i < len(last.DamagedPos) && bytes.Compare(last.DamagedPos[i], p.Pos) > 0 {
					st.Damaged = append(st.Damaged, d)
				}
			}
		}
		return st
	}
	if last != nil {
		started, finished := last.Started, last.Finished
		st.Started, st.Finished, st.Counts = &started, &finished, last.Counts
		st.Damaged = append(st.Damaged, last.Damaged...)
	}
	return st
}

// LastPassEnd is when the last finished pass ended (zero: none), whether
// or not another runs now.
func (s *Scrubber) LastPassEnd() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.st.Last == nil {
		return time.Time{}
	}
	return s.st.Last.Finished
}

// Totals are the counts of every pass this process ran (Prometheus
// counters), and the number of passes it finished.
func (s *Scrubber) Totals() (Counts, int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.totals, s.passes
}
