package bench

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"time"
)

// MixedConfig is the mixed test: uploads and downloads at fixed rates, held
// for Duration at each multiple of the base rates.
type MixedConfig struct {
	UploadRate   float64 // requests/s at multiple 1
	DownloadRate float64
	UploadSize   int64
	DownloadSize int64
	Multipliers  []float64
	Duration     time.Duration
	Drain        time.Duration
	MaxInFlight  int
	Prefix       string
	Verify       bool
	Cleanup      bool
	// DownloadObjects is how many objects the download stream cycles over
	// (uploaded, unmeasured, before the first multiple).
	DownloadObjects int
	Rule            SaturationRule
	// AtHold maps a multiple to a shell command run (sh -c) as its hold
	// starts, alongside the load: the event whose cost the hold measures,
	// e.g. a vacuum pass. The multiple waits for it to exit at its end
	// (it is killed after the hold, the drain and HoldCommandGrace).
	AtHold map[float64]string
}

// HoldCommandGrace is how long past its multiple's hold and drain an
// AtHold command may run before it is killed.
const HoldCommandGrace = 30 * time.Second

// Preset is a named mixed-test scenario from the original validation.
type Preset struct {
	UploadRate, DownloadRate float64
	Size                     int64
}

// Presets: 5 MB objects; baseline 24 uploads/s + 2 downloads/s (120 MB/s up,
// 10 MB/s down), high 30 + 3.
var Presets = map[string]Preset{
	"baseline": {UploadRate: 24, DownloadRate: 2, Size: 5e6},
	"high":     {UploadRate: 30, DownloadRate: 3, Size: 5e6},
}

// SaturationRule decides whether a multiple was sustained. A multiple is
// SUSTAINED when, for every stream, all of these hold, and SATURATED
// otherwise (the report lists which failed):
//
//  1. keeps up: over the second half of the hold window, successful
//     completions are at least MinCompletion (95%) of the requests due in
//     that half — the server finishes work as fast as it arrives;
//  2. no queue: the requests still in flight when the window closes are at
//     most QueueSeconds (2 s) worth of the stream's rate — a server that
//     falls behind accumulates a queue that grows with time;
//  3. few errors: failed requests are at most MaxErrorRate (1%) of those
//     issued;
//  4. on time: the 99th percentile of issue lateness is at most MaxLateness
//     (100 ms). If the generator itself could not issue on schedule the run
//     measured the client, not the server, so it cannot count as sustained.
type SaturationRule struct {
	MinCompletion float64
	QueueSeconds  float64
	MaxErrorRate  float64
	MaxLateness   time.Duration
}

// DefaultRule is the rule described on SaturationRule.
var DefaultRule = SaturationRule{MinCompletion: 0.95, QueueSeconds: 2, MaxErrorRate: 0.01, MaxLateness: 100 * time.Millisecond}

// MixedRun is one multiple of the mixed test.
type MixedRun struct {
	Multiplier float64                  `json:"multiplier"`
	Verdict    string                   `json:"verdict"` // sustained | saturated | interrupted
	Reasons    []string                 `json:"reasons,omitempty"`
	Cells      []Cell                   `json:"cells"` // one per stream
	Series     map[string][]SecondStats `json:"series"`
	InFlight   map[string]int64         `json:"in_flight_at_end"`
	AtHold     *HoldCommand             `json:"at_hold,omitempty"`
}

// Judge applies the rule to one multiple's stream results.
func (r SaturationRule) Judge(results []*StreamResult, hold time.Duration) (string, []string) {
	var reasons []string
	half := int(hold/time.Second) / 2
	for _, res := range results {
		name := res.Stream.Name
		var completed int64
		for _, s := range res.Series {
			if s.Second >= half && s.Second < int(hold/time.Second) {
				completed += s.Completed
			}
		}
		dueInHalf := res.Stream.Rate * (hold.Seconds() - float64(half))
		if dueInHalf >= 1 && float64(completed) < r.MinCompletion*dueInHalf {
			reasons = append(reasons, fmt.Sprintf("%s: completed %d of %.0f due in the second half (< %.0f%%)",
				name, completed, dueInHalf, 100*r.MinCompletion))
		}
		if limit := res.Stream.Rate * r.QueueSeconds; float64(res.InFlightAtEnd) > max(limit, 1) {
			reasons = append(reasons, fmt.Sprintf("%s: %d in flight at the end of the window (> %.0f = %gs of work)",
				name, res.InFlightAtEnd, limit, r.QueueSeconds))
		}
		c := res.Recorder.Cell(hold)
		if c.Issued > 0 && float64(c.Errors) > r.MaxErrorRate*float64(c.Issued) {
			reasons = append(reasons, fmt.Sprintf("%s: %d errors of %d (> %g%%)", name, c.Errors, c.Issued, 100*r.MaxErrorRate))
		}
		if res.P99Lateness > r.MaxLateness {
			reasons = append(reasons, fmt.Sprintf("%s: P99 issue lateness %s (> %s): the client fell behind",
				name, formatDuration(res.P99Lateness), r.MaxLateness))
		}
	}
	if len(reasons) > 0 {
		return "saturated", reasons
	}
	return "sustained", nil
}

// MixedRunner runs the mixed test against a target.
type MixedRunner struct {
	Target   Target
	Pool     *Pool
	Clock    Clock
	Progress *Progress
	Log      io.Writer
}

// Run executes every multiple in order and appends to rep.Mixed (and one cell
// per stream and multiple to rep.Cells). Interrupted multiples are kept,
// marked "interrupted".
func (m *MixedRunner) Run(ctx context.Context, cfg MixedConfig, rep *Report) {
	peak := PeakRunner{Target: m.Target, Pool: m.Pool, Progress: m.Progress, Log: m.Log}
	var downKeys []string
	if cfg.DownloadRate > 0 {
		var err error
		downKeys, err = peak.prepare(ctx, cfg.Prefix, cfg.DownloadSize, max(1, cfg.DownloadObjects))
		if err != nil {
			peak.note(rep, "mixed: prepare downloads: %v", err)
			return
		}
		if cfg.Cleanup {
			defer peak.cleanup(rep, downKeys)
		}
	}
	for _, mult := range cfg.Multipliers {
		if ctx.Err() != nil {
			return
		}
		run := m.runMultiple(ctx, cfg, mult, downKeys, &peak, rep)
		rep.Mixed = append(rep.Mixed, run)
		rep.Cells = append(rep.Cells, run.Cells...)
	}
}

func (m *MixedRunner) runMultiple(ctx context.Context, cfg MixedConfig, mult float64, downKeys []string, peak *PeakRunner, rep *Report) MixedRun {
	upPrefix := fmt.Sprintf("%s/mixed/x%g/", cfg.Prefix, mult)
	var streams []Stream
	if cfg.UploadRate > 0 {
		streams = append(streams, Stream{Name: "upload", Rate: cfg.UploadRate * mult, Size: cfg.UploadSize,
			Op: func(ctx context.Context, seq int64) (int64, error) {
				key := upPrefix + strconv.FormatInt(seq, 10)
				if err := m.Target.Put(ctx, key, m.Pool.Payload(key, cfg.UploadSize)); err != nil {
					return 0, err
				}
				return cfg.UploadSize, nil
			}})
	}
	if cfg.DownloadRate > 0 {
		streams = append(streams, Stream{Name: "download", Rate: cfg.DownloadRate * mult, Size: cfg.DownloadSize,
			Op: func(ctx context.Context, seq int64) (int64, error) {
				key := downKeys[seq%int64(len(downKeys))]
				var expect *Payload
				if cfg.Verify {
					expect = m.Pool.Payload(key, cfg.DownloadSize)
				}
				return m.Target.Get(ctx, key, cfg.DownloadSize, NewSink(expect))
			}})
	}
	loop := OpenLoop{Clock: m.Clock, Duration: cfg.Duration, Drain: cfg.Drain, MaxInFlight: cfg.MaxInFlight}
	if m.Progress != nil && len(streams) > 0 {
		m.Progress.Track(fmt.Sprintf("mixed x%g", mult), nil, time.Time{})
	}
	cpu, began := startCPUMeter(), time.Now()
	var hook <-chan HoldCommand
	if command := cfg.AtHold[mult]; command != "" {
		hookCtx, cancel := context.WithTimeout(ctx, cfg.Duration+cfg.Drain+HoldCommandGrace)
		defer cancel()
		hook = startHoldCommand(hookCtx, command, began)
	}
	results := loop.RunWith(ctx, streams, func(rs []*StreamResult) {
		if m.Progress != nil && len(rs) > 0 {
			m.Progress.Track(fmt.Sprintf("mixed x%g %s", mult, rs[0].Stream.Name), rs[0].Recorder, m.Clock.Now().Add(cfg.Duration))
		}
	})
	// Wall time, not m.Clock: CPU seconds are real whatever the clock.
	clientCPU := cpu.percent(time.Since(began))
	run := MixedRun{Multiplier: mult, Series: map[string][]SecondStats{}, InFlight: map[string]int64{}}
	if hook != nil {
		hc := <-hook
		run.AtHold = &hc
		if m.Log != nil {
			fmt.Fprintf(m.Log, "mixed x%g: %q ran %.1fs from %.1fs into the hold, exit %d %s\n",
				mult, hc.Command, hc.Duration, hc.Started, hc.ExitCode, hc.Error)
		}
	}
	for _, res := range results {
		cell := res.Recorder.Cell(cfg.Duration)
		cell.Op, cell.Size, cell.Multiplier = res.Stream.Name, res.Stream.Size, mult
		cell.Mode = fmt.Sprintf("x%g", mult)
		drained := holdRates(&cell, res.Series, cfg.Duration)
		cell.Note = fmt.Sprintf("target %.2f req/s; rates count the hold only, %d more finished in the drain", res.Stream.Rate, drained)
		cell.ClientCPU = clientCPU // of the multiple: the streams share the process
		run.Cells = append(run.Cells, cell)
		run.Series[res.Stream.Name] = res.Series
		run.InFlight[res.Stream.Name] = res.InFlightAtEnd
	}
	if ctx.Err() != nil {
		run.Verdict = "interrupted"
	} else {
		run.Verdict, run.Reasons = cfg.Rule.Judge(results, cfg.Duration)
	}
	if cfg.Cleanup && cfg.UploadRate > 0 {
		var keys []string
		for _, res := range results {
			if res.Stream.Name == "upload" {
				for i := int64(0); i < res.Scheduled; i++ {
					keys = append(keys, upPrefix+strconv.FormatInt(i, 10))
				}
			}
		}
		peak.cleanup(rep, keys)
	}
	return run
}

// holdRates sets the cell's rates from what completed within the hold: a
// saturated server that finishes its backlog during the drain must not
// show the offered rate (every request done, divided by the hold). Ops,
// bytes and latency still count every request. It returns the requests
// that completed after the hold.
func holdRates(c *Cell, series []SecondStats, hold time.Duration) (drained int64) {
	var ops, bytes int64
	for _, s := range series {
		if s.Second < max(1, int(hold/time.Second)) { // whole seconds, as SaturationRule.Judge counts them
			ops += s.Completed
			bytes += s.Bytes
		} else {
			drained += s.Completed
		}
	}
	if hold > 0 {
		c.OpsPerSec = float64(ops) / hold.Seconds()
		c.MBPerSec = float64(bytes) / 1e6 / hold.Seconds()
	}
	return drained
}
