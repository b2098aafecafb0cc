package bench

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"syscall"
	"time"
)

const usage = `usage: b3 bench <peak|mixed|hls|disk|kv|compare> [flags]

  peak     sweep concurrency x object size; upload and download throughput and latency
  mixed    uploads and downloads at fixed rates (open loop) at multiples of a baseline
  hls      live cameras: a segment every --segment seconds, playlist rewrites, retention
           deletes and viewers; segment upload latency, missed deadlines, staleness
  disk     raw write() latency and throughput of a directory by buffer size
  kv       YCSB-style tiny records: load, then read/update mixes
  compare  two or more JSON results side by side with ratios

Run "b3 bench <mode> -h" for the flags of a mode.
`

// Main runs `b3 bench` with args (everything after "bench") and returns the
// process exit code: 0 success, 1 failure, 2 usage error, 130 interrupted
// (partial results were still written).
func Main(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(stderr, usage)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	switch args[0] {
	case "peak", "mixed", "hls", "disk", "kv":
		err = runMode(ctx, args[0], args[1:], stdout, stderr)
	case "compare":
		err = runCompare(args[1:], stdout, stderr)
	default:
		fmt.Fprintf(stderr, "b3 bench: unknown mode %q\n\n%s", args[0], usage)
		return 2
	}
	switch {
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, new(usageError)):
		fmt.Fprintln(stderr, "b3 bench:", err)
		return 2
	case err != nil:
		fmt.Fprintln(stderr, "b3 bench:", err)
		return 1
	case ctx.Err() != nil:
		return 130
	}
	return 0
}

type usageError struct{ error }

func usagef(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }

// runMode parses the mode's flags, runs it with a progress line, and writes
// the table, JSON, CSV and charts — also after Ctrl-C, with what was
// measured so far.
func runMode(ctx context.Context, mode string, args []string, stdout, stderr io.Writer) error {
	opts, err := parseFlags(mode, args, stderr)
	if err != nil {
		return err
	}
	if opts.cpuProfile != "" {
		f, err := os.Create(opts.cpuProfile)
		if err != nil {
			return fmt.Errorf("cpu profile: %w", err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return fmt.Errorf("cpu profile: %w", err)
		}
		defer pprof.StopCPUProfile()
	}
	rep := &Report{Schema: SchemaVersion, Kind: mode, Started: time.Now().UTC(), Params: opts.params}
	pool := NewPool(opts.seed)
	progress := NewProgress(stderr)

	var sampler *SystemSampler
	if opts.local {
		sampler = StartSystemSampler(opts.pid, opts.diskDevice)
	}
	runErr := opts.run(ctx, rep, pool, progress, stderr)
	progress.Close()
	if sampler != nil {
		rep.System = sampler.Stop()
	}
	rep.Finished = time.Now().UTC()
	rep.Interrupted = ctx.Err() != nil
	if runErr != nil && len(rep.Cells) == 0 {
		return runErr
	}
	if err := rep.Check(); err != nil {
		rep.AddNote(stderr, "inconsistent report: "+err.Error())
	}
	if err := rep.WriteTable(stdout); err != nil {
		return err
	}
	if err := writeOutputs(rep, opts.out, opts.charts, stderr); err != nil {
		return err
	}
	return runErr
}

// writeOutputs writes <out>/<kind>-<time>.json, .csv, the mixed series CSV
// and the SVG charts, and lists them on log.
func writeOutputs(rep *Report, dir string, charts bool, log io.Writer) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("output directory: %w", err)
	}
	base := filepath.Join(dir, rep.Kind+"-"+rep.Started.Format("20060102-150405"))
	files := map[string]func(io.Writer) error{
		base + ".json": rep.WriteJSON,
		base + ".csv":  rep.WriteCSV,
	}
	if len(rep.Mixed) > 0 {
		files[base+"-series.csv"] = rep.WriteSeriesCSV
	}
	if len(rep.HLS) > 0 {
		files[base+"-series.csv"] = rep.writeHLSSeriesCSV
	}
	if charts {
		for name, chart := range rep.Charts() {
			files[base+"-"+name+".svg"] = chart
		}
	}
	var written []string
	for path, write := range files {
		if err := writeFile(path, write); err != nil {
			return err
		}
		written = append(written, path)
	}
	sortStrings(written)
	fmt.Fprintln(log, "wrote", strings.Join(written, " "))
	return nil
}

func writeFile(path string, write func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := write(f); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
