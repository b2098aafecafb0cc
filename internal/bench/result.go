package bench

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"
)

// SchemaVersion is bumped when a field of Report changes meaning.
const SchemaVersion = 1

// Report is the complete result of one `b3 bench` run, as written to JSON.
// A run stopped early (Ctrl-C) still produces a Report, with Interrupted set
// and the cells finished or partly finished so far.
type Report struct {
	Schema      int               `json:"schema"`
	Kind        string            `json:"kind"` // peak, mixed, hls, disk, kv
	Target      string            `json:"target"`
	Started     time.Time         `json:"started"`
	Finished    time.Time         `json:"finished"`
	Interrupted bool              `json:"interrupted,omitempty"`
	Params      map[string]string `json:"params,omitempty"`
	Notes       []string          `json:"notes,omitempty"`
	Cells       []Cell            `json:"cells"`
	Mixed       []MixedRun        `json:"mixed,omitempty"`
	HLS         []HLSRun          `json:"hls,omitempty"`
	LLHLS       []LLHLSRun        `json:"llhls,omitempty"`
	System      []SystemSample    `json:"system,omitempty"`
}

// Cell is one measured combination: an operation at one size and one
// concurrency (peak), one buffer size and mode (disk), one rate multiple
// (mixed) or one read/update mix (kv).
//
// Invariant: Issued == Ops + Errors + Canceled, and Errors + Canceled is the
// sum of ErrorsByType.
type Cell struct {
	Op           string           `json:"op"`             // upload, download, write, read, update
	Mode         string           `json:"mode,omitempty"` // disk: buffered|direct[+sync]; kv: the mix; mixed: "x1.25"
	Size         int64            `json:"size"`
	Concurrency  int              `json:"concurrency,omitempty"`
	Multiplier   float64          `json:"multiplier,omitempty"`
	Issued       int64            `json:"issued"`
	Ops          int64            `json:"ops"` // successful operations
	Errors       int64            `json:"errors"`
	Canceled     int64            `json:"canceled,omitempty"`
	ErrorsByType map[string]int64 `json:"errors_by_type,omitempty"`
	Bytes        int64            `json:"bytes"`
	Seconds      float64          `json:"seconds"`
	OpsPerSec    float64          `json:"ops_per_sec"`
	MBPerSec     float64          `json:"mb_per_sec"` // 10^6 bytes per second
	Latency      Latency          `json:"latency_ms"`
	Note         string           `json:"note,omitempty"`
	// ClientCPU is the CPU time (user + system) the load generator itself
	// used during the cell, in percent of one core. Compared with the
	// machine's cores it says whether the client, not the server, may have
	// been the bottleneck: on a 2-core machine shared with the server,
	// 100% means the generator took half of it.
	ClientCPU float64 `json:"client_cpu_percent,omitempty"`
}

// Latency holds percentiles of successful operations, in milliseconds.
// Invariant: P50 <= P90 <= P99 <= P995 <= P999 <= Max.
type Latency struct {
	Count int64   `json:"count"`
	Mean  float64 `json:"mean"`
	P50   float64 `json:"p50"`
	P90   float64 `json:"p90"`
	P99   float64 `json:"p99"`
	P995  float64 `json:"p99_5"`
	P999  float64 `json:"p99_9"`
	Max   float64 `json:"max"`
}

// Key identifies a cell across reports (for compare).
func (c Cell) Key() string {
	k := c.Op + " " + FormatSize(c.Size)
	if c.Mode != "" {
		k += " " + c.Mode
	}
	if c.Concurrency > 0 {
		k += " c" + strconv.Itoa(c.Concurrency)
	}
	return k
}

// AddNote records msg once (repeats are dropped) and echoes it to log.
func (r *Report) AddNote(log io.Writer, msg string) {
	for _, n := range r.Notes {
		if n == msg {
			return
		}
	}
	r.Notes = append(r.Notes, msg)
	if log != nil {
		fmt.Fprintln(log, "note:", msg)
	}
}

// WriteJSON writes r as indented JSON.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(r); err != nil {
		return fmt.Errorf("encode report: %w", err)
	}
	return nil
}

// ReadReport reads a JSON report written by WriteJSON.
func ReadReport(path string) (*Report, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read report: %w", err)
	}
	var r Report
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("parse report %s: %w", path, err)
	}
	if r.Schema != SchemaVersion {
		return nil, fmt.Errorf("report %s: schema %d, want %d", path, r.Schema, SchemaVersion)
	}
	return &r, nil
}

// csvHeader is the column order of WriteCSV; ReadCSV relies on it.
var csvHeader = []string{
	"kind", "op", "mode", "size", "concurrency", "multiplier",
	"issued", "ops", "errors", "canceled", "bytes", "seconds", "ops_per_sec", "mb_per_sec",
	"p50_ms", "p90_ms", "p99_ms", "p99_5_ms", "p99_9_ms", "max_ms", "mean_ms",
	"errors_by_type", "note", "client_cpu_percent",
}

// WriteCSV writes one row per cell. errors_by_type is "type=n;type=n",
// sorted by type.
func (r *Report) WriteCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(csvHeader); err != nil {
		return err
	}
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	i := func(v int64) string { return strconv.FormatInt(v, 10) }
	for _, c := range r.Cells {
		row := []string{
			r.Kind, c.Op, c.Mode, i(c.Size), strconv.Itoa(c.Concurrency), f(c.Multiplier),
			i(c.Issued), i(c.Ops), i(c.Errors), i(c.Canceled), i(c.Bytes), f(c.Seconds), f(c.OpsPerSec), f(c.MBPerSec),
			f(c.Latency.P50), f(c.Latency.P90), f(c.Latency.P99), f(c.Latency.P995), f(c.Latency.P999), f(c.Latency.Max), f(c.Latency.Mean),
			formatErrorTypes(c.ErrorsByType), c.Note, f(c.ClientCPU),
		}
		if err := cw.Write(row); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// ReadCSV parses rows written by WriteCSV back into cells (Latency.Count is
// not in the CSV and comes back as Ops).
func ReadCSV(rd io.Reader) ([]Cell, error) {
	rows, err := csv.NewReader(rd).ReadAll()
	if err != nil {
		return nil, fmt.Errorf("parse csv: %w", err)
	}
	if len(rows) == 0 || strings.Join(rows[0], ",") != strings.Join(csvHeader, ",") {
		return nil, fmt.Errorf("parse csv: unexpected header")
	}
	var cells []Cell
	for n, row := range rows[1:] {
		p := csvParser{row: row}
		c := Cell{Op: row[1], Mode: row[2]}
		c.Size = p.int(3)
		c.Concurrency = int(p.int(4))
		c.Multiplier = p.float(5)
		c.Issued, c.Ops, c.Errors, c.Canceled, c.Bytes = p.int(6), p.int(7), p.int(8), p.int(9), p.int(10)
		c.Seconds, c.OpsPerSec, c.MBPerSec = p.float(11), p.float(12), p.float(13)
		c.Latency = Latency{Count: c.Ops, P50: p.float(14), P90: p.float(15), P99: p.float(16),
			P995: p.float(17), P999: p.float(18), Max: p.float(19), Mean: p.float(20)}
		c.ErrorsByType = p.errorTypes(21)
		c.Note = row[22]
		c.ClientCPU = p.float(23)
		if p.err != nil {
			return nil, fmt.Errorf("parse csv row %d: %w", n+2, p.err)
		}
		cells = append(cells, c)
	}
	return cells, nil
}

type csvParser struct {
	row []string
	err error
}

func (p *csvParser) int(i int) int64 {
	v, err := strconv.ParseInt(p.row[i], 10, 64)
	if err != nil && p.err == nil {
		p.err = fmt.Errorf("column %s: %w", csvHeader[i], err)
	}
	return v
}

func (p *csvParser) float(i int) float64 {
	v, err := strconv.ParseFloat(p.row[i], 64)
	if err != nil && p.err == nil {
		p.err = fmt.Errorf("column %s: %w", csvHeader[i], err)
	}
	return v
}

func (p *csvParser) errorTypes(i int) map[string]int64 {
	if p.row[i] == "" {
		return nil
	}
	out := make(map[string]int64)
	for _, kv := range strings.Split(p.row[i], ";") {
		k, v, ok := strings.Cut(kv, "=")
		n, err := strconv.ParseInt(v, 10, 64)
		if (!ok || err != nil) && p.err == nil {
			p.err = fmt.Errorf("column errors_by_type: bad entry %q", kv)
		}
		out[k] = n
	}
	return out
}

func formatErrorTypes(m map[string]int64) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + strconv.FormatInt(m[k], 10)
	}
	return strings.Join(parts, ";")
}

// Check verifies the report's internal consistency: counts add up and
// percentiles are monotone in every cell. Tests call it; `b3 bench` calls it
// before writing so that an inconsistent report is never published silently.
func (r *Report) Check() error {
	for _, c := range r.Cells {
		if err := c.check(); err != nil {
			return fmt.Errorf("cell %s: %w", c.Key(), err)
		}
	}
	for _, m := range r.Mixed {
		for _, c := range m.Cells {
			if err := c.check(); err != nil {
				return fmt.Errorf("mixed x%g cell %s: %w", m.Multiplier, c.Key(), err)
			}
		}
	}
	return nil
}

func (c Cell) check() error {
	if c.Issued != c.Ops+c.Errors+c.Canceled {
		return fmt.Errorf("issued %d != ops %d + errors %d + canceled %d", c.Issued, c.Ops, c.Errors, c.Canceled)
	}
	var byType int64
	for _, n := range c.ErrorsByType {
		byType += n
	}
	if byType != c.Errors+c.Canceled {
		return fmt.Errorf("errors by type sum to %d, want %d", byType, c.Errors+c.Canceled)
	}
	if c.Latency.Count != c.Ops {
		return fmt.Errorf("latency count %d != ops %d", c.Latency.Count, c.Ops)
	}
	l := c.Latency
	ps := []float64{l.P50, l.P90, l.P99, l.P995, l.P999, l.Max}
	for i := 1; i < len(ps); i++ {
		if ps[i] < ps[i-1] {
			return fmt.Errorf("percentiles not monotone: %v", ps)
		}
	}
	return nil
}
