package bench

import (
	"bytes"
	"context"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func newReport(kind string) *Report {
	return &Report{Schema: SchemaVersion, Kind: kind, Started: time.Now().UTC().Truncate(time.Second)}
}

// runTestPeak runs a small count-bound sweep on an in-memory target where
// every 7th upload fails.
func runTestPeak(t *testing.T, target *memTarget) *Report {
	t.Helper()
	rep := newReport("peak")
	cfg := PeakConfig{
		Concurrency: []int{1, 4}, Sizes: []int64{1 << 10, 64 << 10}, Upload: true, Download: true,
		Bound: Bound{Count: 40, Duration: time.Minute}, Prefix: "t", Verify: true,
		PrepareBytes: 256 << 10, Cleanup: true,
	}
	(&PeakRunner{Target: target, Pool: testPool()}).Run(context.Background(), cfg, rep)
	return rep
}

func TestPeakCellsAddUp(t *testing.T) {
	target := newMemTarget()
	target.failEvery = 7
	rep := runTestPeak(t, target)
	if err := rep.Check(); err != nil {
		t.Fatal(err)
	}
	if len(rep.Cells) != 2*2*2 {
		t.Fatalf("%d cells, want 8 (2 sizes × 2 concurrencies × up/down)", len(rep.Cells))
	}
	var uploadErrors int64
	for _, c := range rep.Cells {
		if c.Issued != 40 {
			t.Errorf("%s: issued %d, want the count bound 40", c.Key(), c.Issued)
		}
		if c.Bytes != c.Ops*c.Size {
			t.Errorf("%s: bytes %d != ops %d × size", c.Key(), c.Bytes, c.Ops)
		}
		if c.Op == "download" && (c.Errors != 0 || c.Note != "verified") {
			t.Errorf("%s: %d download errors (%v), note %q", c.Key(), c.Errors, c.ErrorsByType, c.Note)
		}
		if c.Op == "upload" {
			uploadErrors += c.Errors
			if c.ErrorsByType[errOther] != c.Errors {
				t.Errorf("%s: errors by type %v", c.Key(), c.ErrorsByType)
			}
		}
		if c.Ops > 0 && (c.OpsPerSec <= 0 || c.MBPerSec <= 0) {
			t.Errorf("%s: rates %v ops/s %v MB/s", c.Key(), c.OpsPerSec, c.MBPerSec)
		}
	}
	if uploadErrors == 0 {
		t.Error("injected upload failures were not counted")
	}
	if n := target.len(); n != 0 {
		t.Errorf("%d objects left after cleanup", n)
	}
}

func TestReportRoundTrips(t *testing.T) {
	target := newMemTarget()
	target.failEvery = 5
	rep := runTestPeak(t, target)
	rep.Notes = []string{"a note, with \"quotes\""}
	dir := t.TempDir()

	// JSON.
	path := filepath.Join(dir, "r.json")
	if err := writeFile(path, rep.WriteJSON); err != nil {
		t.Fatal(err)
	}
	back, err := ReadReport(path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back.Cells, rep.Cells) || !reflect.DeepEqual(back.Notes, rep.Notes) {
		t.Error("JSON round trip changed the cells")
	}

	// CSV.
	var buf bytes.Buffer
	if err := rep.WriteCSV(&buf); err != nil {
		t.Fatal(err)
	}
	cells, err := ReadCSV(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if len(cells) != len(rep.Cells) {
		t.Fatalf("CSV has %d cells, want %d", len(cells), len(rep.Cells))
	}
	for i := range cells {
		want := rep.Cells[i]
		want.Latency.Count = want.Ops // not a CSV column
		if !reflect.DeepEqual(cells[i], want) {
			t.Errorf("CSV row %d:\n got %+v\nwant %+v", i, cells[i], want)
		}
	}
	if err := (&Report{Cells: cells}).Check(); err != nil {
		t.Errorf("cells read from CSV: %v", err)
	}

	// Table.
	buf.Reset()
	if err := rep.WriteTable(&buf); err != nil {
		t.Fatal(err)
	}
	if lines := strings.Count(buf.String(), "\n"); lines != 1+len(rep.Cells)+len(rep.Notes) {
		t.Errorf("table has %d lines:\n%s", lines, buf.String())
	}
}

func TestCheckCatchesInconsistency(t *testing.T) {
	good := Cell{Op: "upload", Issued: 3, Ops: 2, Errors: 1, ErrorsByType: map[string]int64{"SlowDown": 1},
		Latency: Latency{Count: 2, P50: 1, P90: 2, P99: 3, P995: 3, P999: 3, Max: 3}}
	for name, mutate := range map[string]func(*Cell){
		"issued":    func(c *Cell) { c.Issued = 4 },
		"by type":   func(c *Cell) { c.ErrorsByType["SlowDown"] = 2 },
		"count":     func(c *Cell) { c.Latency.Count = 1 },
		"monotone":  func(c *Cell) { c.Latency.P99 = 0.5 },
		"max below": func(c *Cell) { c.Latency.Max = 2.5 },
	} {
		c := good
		c.ErrorsByType = map[string]int64{"SlowDown": 1}
		mutate(&c)
		if err := (&Report{Cells: []Cell{c}}).Check(); err == nil {
			t.Errorf("%s: inconsistency not caught", name)
		}
	}
	if err := (&Report{Cells: []Cell{good}}).Check(); err != nil {
		t.Errorf("good cell rejected: %v", err)
	}
}

// checkSVG asserts that every chart is a well-formed SVG document.
func checkSVG(t *testing.T, rep *Report, want ...string) {
	t.Helper()
	charts := rep.Charts()
	for _, name := range want {
		if charts[name] == nil {
			t.Errorf("chart %s missing (have %v)", name, sortedKeys(charts))
		}
	}
	for name, write := range charts {
		var buf bytes.Buffer
		if err := write(&buf); err != nil {
			t.Fatal(err)
		}
		if err := wellFormedSVG(&buf); err != nil {
			t.Errorf("chart %s: %v", name, err)
		}
	}
}

func TestPeakCharts(t *testing.T) {
	rep := runTestPeak(t, newMemTarget())
	checkSVG(t, rep, "ops-upload", "ops-download", "latency-upload", "percentiles-download")
}

// TestPeakChartsBySize: small objects are charted by ops/s, large ones by
// MB/s, each size in one chart only (on one MB/s axis 4 KiB lies on zero).
func TestPeakChartsBySize(t *testing.T) {
	rep := newReport("peak")
	for _, size := range []int64{4 << 10, 256 << 10, 4 << 20} {
		for _, conc := range []int{1, 8} {
			rep.Cells = append(rep.Cells, Cell{Op: "upload", Size: size, Concurrency: conc, Ops: 100, Issued: 100,
				OpsPerSec: 1000 * float64(conc), MBPerSec: float64(size) * 1000 * float64(conc) / 1e6})
		}
	}
	charts := rep.Charts()
	for _, tc := range []struct {
		chart      string
		in, notIn  []string
		yAxisLabel string
	}{
		{"ops-upload", []string{FormatSize(4 << 10), FormatSize(256 << 10)}, []string{FormatSize(4 << 20)}, "ops/s"},
		{"throughput-upload", []string{FormatSize(4 << 20)}, []string{FormatSize(4 << 10), FormatSize(256 << 10)}, "MB/s"},
	} {
		write := charts[tc.chart]
		if write == nil {
			t.Errorf("no chart %s (have %v)", tc.chart, sortedKeys(charts))
			continue
		}
		var buf bytes.Buffer
		if err := write(&buf); err != nil {
			t.Fatal(err)
		}
		svg := buf.String()
		for _, name := range tc.in {
			if !strings.Contains(svg, ">"+name+"<") {
				t.Errorf("%s lacks the series %s", tc.chart, name)
			}
		}
		for _, name := range tc.notIn {
			if strings.Contains(svg, ">"+name+"<") {
				t.Errorf("%s has the series %s", tc.chart, name)
			}
		}
		if !strings.Contains(svg, tc.yAxisLabel) {
			t.Errorf("%s: no axis %s", tc.chart, tc.yAxisLabel)
		}
	}
}

// TestChartsOfFailedRun: a run where every operation failed has only zero
// values; its charts (log axes included) are still written, and the writer
// terminates.
func TestChartsOfFailedRun(t *testing.T) {
	target := newMemTarget()
	target.failEvery = 1
	rep := newReport("peak")
	cfg := PeakConfig{Concurrency: []int{1, 2}, Sizes: []int64{1 << 10}, Upload: true,
		Bound: Bound{Count: 3}, Prefix: "t"}
	(&PeakRunner{Target: target, Pool: testPool()}).Run(context.Background(), cfg, rep)
	for _, c := range rep.Cells {
		if c.Ops != 0 || c.Errors != 3 {
			t.Fatalf("%s: %d ok, %d errors; want every operation failed", c.Key(), c.Ops, c.Errors)
		}
	}
	checkSVG(t, rep, "ops-upload", "latency-upload")
}

func TestKV(t *testing.T) {
	target := newMemTarget()
	rep := newReport("kv")
	cfg := KVConfig{Records: 200, ValueSize: 25, ReadPercents: []int{95, 0}, Concurrency: 4,
		Bound: Bound{Count: 300}, Distribution: "zipf", Prefix: "kv", Cleanup: true}
	(&KVRunner{Target: target, Pool: testPool()}).Run(context.Background(), cfg, rep)
	if err := rep.Check(); err != nil {
		t.Fatal(err)
	}
	var load, mixed int64
	for _, c := range rep.Cells {
		if c.Errors != 0 {
			t.Errorf("%s: errors %v", c.Key(), c.ErrorsByType)
		}
		if c.Op == "insert" {
			load += c.Ops
		} else {
			mixed += c.Issued
		}
	}
	if load != 200 || mixed != 2*300 {
		t.Errorf("load %d ops, mixes %d ops; want 200 and 600", load, mixed)
	}
	if rep.Cells[len(rep.Cells)-1].Mode != "r0/u100" || rep.Cells[len(rep.Cells)-1].Op != "update" {
		t.Errorf("last cell %s, want update r0/u100", rep.Cells[len(rep.Cells)-1].Key())
	}
	if target.len() != 0 {
		t.Errorf("%d records left after cleanup", target.len())
	}
	checkSVG(t, rep, "kv-read", "kv-update")
}

func TestMixedRunnerCountsAndSeries(t *testing.T) {
	target := newMemTarget()
	rep := newReport("mixed")
	cfg := MixedConfig{UploadRate: 20, DownloadRate: 5, UploadSize: 1000, DownloadSize: 2000,
		Multipliers: []float64{1, 2}, Duration: 500 * time.Millisecond, Drain: 5 * time.Second,
		Prefix: "m", Verify: true, Cleanup: true, DownloadObjects: 3, Rule: DefaultRule}
	(&MixedRunner{Target: target, Pool: testPool(), Clock: RealClock{}}).Run(context.Background(), cfg, rep)
	if err := rep.Check(); err != nil {
		t.Fatal(err)
	}
	if len(rep.Mixed) != 2 || len(rep.Cells) != 4 {
		t.Fatalf("%d runs, %d cells", len(rep.Mixed), len(rep.Cells))
	}
	for _, run := range rep.Mixed {
		for _, c := range run.Cells {
			// The schedule is computed: rate × hold requests, exactly.
			// Due at 0, 1/rate, ... while before the end of the hold.
			want := int64(math.Ceil(cfg.UploadRate * run.Multiplier / 2))
			if c.Op == "download" {
				want = int64(math.Ceil(cfg.DownloadRate * run.Multiplier / 2))
			}
			if c.Issued != want || c.Ops != want {
				t.Errorf("x%g %s: issued %d ok %d, want %d", run.Multiplier, c.Op, c.Issued, c.Ops, want)
			}
			var seriesOps int64
			for _, s := range run.Series[c.Op] {
				seriesOps += s.Completed
			}
			if seriesOps != c.Ops {
				t.Errorf("x%g %s: series completes %d, cell %d", run.Multiplier, c.Op, seriesOps, c.Ops)
			}
		}
		if run.Verdict != "sustained" && run.Verdict != "saturated" {
			t.Errorf("verdict %q", run.Verdict)
		}
	}
	if target.len() != 0 {
		t.Errorf("%d objects left after cleanup", target.len())
	}
	var buf bytes.Buffer
	if err := rep.WriteSeriesCSV(&buf); err != nil || !strings.HasPrefix(buf.String(), "multiplier,stream,second") {
		t.Errorf("series CSV: %v", err)
	}
	checkSVG(t, rep, "mixed-throughput", "mixed-inflight", "mixed-summary")
}

// TestMixedAtHold: the command given for a multiple runs once, during
// that multiple only, and the run records it.
func TestMixedAtHold(t *testing.T) {
	marks := filepath.Join(t.TempDir(), "marks")
	cfg := MixedConfig{UploadRate: 20, UploadSize: 1000, Multipliers: []float64{1, 2},
		Duration: 300 * time.Millisecond, Drain: 5 * time.Second, Prefix: "h", Rule: DefaultRule,
		AtHold: map[float64]string{2: "echo vacuum >>" + marks + "; echo started; exit 3"}}
	rep := newReport("mixed")
	(&MixedRunner{Target: newMemTarget(), Pool: testPool(), Clock: RealClock{}}).Run(context.Background(), cfg, rep)
	if err := rep.Check(); err != nil {
		t.Fatal(err)
	}
	if len(rep.Mixed) != 2 || rep.Mixed[0].AtHold != nil {
		t.Fatalf("runs %d, x1 command %+v: want 2 runs, none at x1", len(rep.Mixed), rep.Mixed[0].AtHold)
	}
	hc := rep.Mixed[1].AtHold
	if hc == nil || hc.ExitCode != 3 || hc.Output != "started\n" || hc.Error != "" {
		t.Fatalf("x2 command: %+v, want exit 3 and its output", hc)
	}
	if got, err := os.ReadFile(marks); err != nil || string(got) != "vacuum\n" {
		t.Fatalf("command ran: %q, %v; want once", got, err)
	}
}

func TestInterruptKeepsPartialResults(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	target := &cancelingTarget{memTarget: newMemTarget(), cancelAfter: 30, cancel: cancel}
	rep := newReport("peak")
	cfg := PeakConfig{Concurrency: []int{2, 4}, Sizes: []int64{1000}, Upload: true,
		Bound: Bound{Count: 1000}, Prefix: "i", Cleanup: true}
	(&PeakRunner{Target: target, Pool: testPool()}).Run(ctx, cfg, rep)
	if err := rep.Check(); err != nil {
		t.Fatal(err)
	}
	if len(rep.Cells) != 1 {
		t.Fatalf("%d cells, want the interrupted first one only", len(rep.Cells))
	}
	c := rep.Cells[0]
	if c.Ops < 30 || c.Issued >= 1000 || c.Errors != 0 {
		t.Errorf("partial cell: issued %d ok %d errors %d canceled %d", c.Issued, c.Ops, c.Errors, c.Canceled)
	}
}

// cancelingTarget cancels the run (like Ctrl-C) after a number of puts.
type cancelingTarget struct {
	*memTarget
	cancelAfter int
	cancel      func()
}

func (c *cancelingTarget) Put(ctx context.Context, key string, body *Payload) error {
	err := c.memTarget.Put(ctx, key, body)
	c.mu.Lock()
	n := c.puts
	c.mu.Unlock()
	if n >= c.cancelAfter {
		c.cancel()
	}
	return err
}

func TestDiskOnTempDir(t *testing.T) {
	dir := t.TempDir()
	rep := newReport("disk")
	cfg := DiskConfig{Dir: dir, Sizes: []int64{512, 4096, 64 << 10}, Modes: AllDiskModes,
		BytesPerCell: 256 << 10, MaxDuration: time.Minute}
	if err := (&DiskRunner{Pool: testPool()}).Run(context.Background(), cfg, rep); err != nil {
		t.Fatal(err)
	}
	if err := rep.Check(); err != nil {
		t.Fatal(err)
	}
	if len(rep.Cells) != 12 {
		t.Fatalf("%d cells, want 3 sizes × 4 modes", len(rep.Cells))
	}
	for _, c := range rep.Cells {
		wantWrites := cfg.BytesPerCell / c.Size
		switch {
		case c.Errors > 0:
			// Only a direct write below the sector size may be refused.
			if c.Size >= directAlign || !strings.HasPrefix(c.Mode, "direct") || c.Note == "" {
				t.Errorf("%s: %v", c.Key(), c.ErrorsByType)
			}
		case c.Ops != wantWrites || c.Bytes != cfg.BytesPerCell:
			t.Errorf("%s: %d writes, %d bytes; want %d and %d", c.Key(), c.Ops, c.Bytes, wantWrites, cfg.BytesPerCell)
		case c.MBPerSec <= 0 || c.Latency.P50 <= 0:
			t.Errorf("%s: no throughput or latency", c.Key())
		}
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Errorf("files left behind: %v", left)
	}
	checkSVG(t, rep, "disk-throughput", "disk-latency")
}
