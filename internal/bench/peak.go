package bench

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// PeakConfig is a peak sweep: every size × every concurrency, uploads and/or
// downloads, each cell bounded.
type PeakConfig struct {
	Concurrency []int
	Sizes       []int64
	Upload      bool
	Download    bool
	Bound       Bound
	Prefix      string // key prefix unique to this run
	Verify      bool   // compare downloaded bytes with the uploaded payload
	DropCache   bool   // drop the page cache before each download cell (local target, root)
	// PrepareBytes bounds how much is uploaded, unmeasured, per size for the
	// download cells: max(1, PrepareBytes/size) objects, at most twice the
	// highest concurrency. Downloads cycle over them.
	PrepareBytes int64
	Cleanup      bool // delete what the run uploaded
}

// PeakRunner runs a peak sweep against a target.
type PeakRunner struct {
	Target   Target
	Pool     *Pool
	Progress *Progress // may be nil
	Log      io.Writer // notes as they happen
}

// Run executes the sweep and appends one cell per (op, size, concurrency) to
// rep. It stops early when ctx is canceled, keeping what was measured.
func (p *PeakRunner) Run(ctx context.Context, cfg PeakConfig, rep *Report) {
	maxConc := 1
	for _, c := range cfg.Concurrency {
		maxConc = max(maxConc, c)
	}
	for _, size := range cfg.Sizes {
		var prepared []string
		if cfg.Download {
			n := max(1, min(cfg.PrepareBytes/size, int64(2*maxConc)))
			var err error
			prepared, err = p.prepare(ctx, cfg.Prefix, size, int(n))
			if err != nil && ctx.Err() == nil {
				p.note(rep, "size %s: prepare failed, download cells skipped: %v", FormatSize(size), err)
			}
		}
		for _, conc := range cfg.Concurrency {
			if ctx.Err() != nil {
				break
			}
			if cfg.Upload {
				rep.Cells = append(rep.Cells, p.uploadCell(ctx, cfg, size, conc, rep))
			}
			if cfg.Download && len(prepared) > 0 && ctx.Err() == nil {
				if cfg.DropCache {
					if err := dropPageCache(); err != nil {
						p.note(rep, "drop cache: %v (results may come from the page cache)", err)
						cfg.DropCache = false
					}
				}
				rep.Cells = append(rep.Cells, p.downloadCell(ctx, cfg, size, conc, prepared))
			}
		}
		if cfg.Cleanup && len(prepared) > 0 {
			p.cleanup(rep, prepared)
		}
		if ctx.Err() != nil {
			return
		}
	}
}

func (p *PeakRunner) uploadCell(ctx context.Context, cfg PeakConfig, size int64, conc int, rep *Report) Cell {
	prefix := fmt.Sprintf("%s/up/%d/c%d/", cfg.Prefix, size, conc)
	rec := NewRecorder()
	p.track(fmt.Sprintf("upload %s c=%d", FormatSize(size), conc), rec, cfg.Bound)
	cpu := startCPUMeter()
	elapsed := ClosedLoop(ctx, conc, cfg.Bound, rec, func(ctx context.Context, _ int, seq int64) (int64, error) {
		key := prefix + strconv.FormatInt(seq, 10)
		if err := p.Target.Put(ctx, key, p.Pool.Payload(key, size)); err != nil {
			return 0, err
		}
		return size, nil
	})
	cell := rec.Cell(elapsed)
	cell.Op, cell.Size, cell.Concurrency = "upload", size, conc
	cell.ClientCPU = cpu.percent(elapsed)
	if cfg.Cleanup {
		keys := make([]string, rec.Issued())
		for i := range keys {
			keys[i] = prefix + strconv.Itoa(i)
		}
		p.cleanup(rep, keys)
	}
	return cell
}

func (p *PeakRunner) downloadCell(ctx context.Context, cfg PeakConfig, size int64, conc int, keys []string) Cell {
	rec := NewRecorder()
	p.track(fmt.Sprintf("download %s c=%d", FormatSize(size), conc), rec, cfg.Bound)
	cpu := startCPUMeter()
	elapsed := ClosedLoop(ctx, conc, cfg.Bound, rec, func(ctx context.Context, _ int, seq int64) (int64, error) {
		key := keys[seq%int64(len(keys))]
		var expect *Payload
		if cfg.Verify {
			expect = p.Pool.Payload(key, size)
		}
		return p.Target.Get(ctx, key, size, NewSink(expect))
	})
	cell := rec.Cell(elapsed)
	cell.Op, cell.Size, cell.Concurrency = "download", size, conc
	cell.ClientCPU = cpu.percent(elapsed)
	if cfg.Verify {
		cell.Note = "verified"
	}
	return cell
}

// prepare uploads n objects of size for the download cells, unmeasured.
func (p *PeakRunner) prepare(ctx context.Context, prefix string, size int64, n int) ([]string, error) {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("%s/down/%d/%d", prefix, size, i)
	}
	rec := NewRecorder()
	p.track(fmt.Sprintf("prepare %d × %s", n, FormatSize(size)), rec, Bound{})
	var mu sync.Mutex
	var firstErr error
	ClosedLoop(ctx, min(n, 16), Bound{Count: int64(n)}, rec, func(ctx context.Context, _ int, seq int64) (int64, error) {
		err := p.Target.Put(ctx, keys[seq], p.Pool.Payload(keys[seq], size))
		if err != nil {
			mu.Lock()
			firstErr = cmpOr(firstErr, err)
			mu.Unlock()
		}
		return size, err
	})
	if firstErr != nil {
		return nil, firstErr
	}
	return keys, ctx.Err()
}

// cleanup deletes keys with a fresh context: it must run even after Ctrl-C,
// but is bounded so an unreachable server cannot hold the exit.
func (p *PeakRunner) cleanup(rep *Report, keys []string) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := p.Target.Delete(ctx, keys); err != nil {
		p.note(rep, "cleanup: %v", err)
	}
}

func (p *PeakRunner) track(label string, rec *Recorder, b Bound) {
	if p.Progress == nil {
		return
	}
	var deadline time.Time
	if b.Duration > 0 {
		deadline = time.Now().Add(b.Duration)
	}
	p.Progress.Track(label, rec, deadline)
}

func (p *PeakRunner) note(rep *Report, format string, args ...any) {
	rep.AddNote(p.Log, fmt.Sprintf(format, args...))
}

func cmpOr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// dropPageCache writes dirty pages back and drops the clean page cache, so
// that a download cell reads from the disk rather than from memory. Needs
// root; only meaningful when the server runs on this machine.
func dropPageCache() error {
	unix.Sync()
	if err := os.WriteFile("/proc/sys/vm/drop_caches", []byte("3\n"), 0); err != nil {
		return fmt.Errorf("drop page cache: %w", err)
	}
	return nil
}
