package bench

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"strconv"
	"time"
)

// KVConfig is the YCSB-style tiny-record test: load Records records of
// ValueSize bytes, then run each read/update mix for Bound.
type KVConfig struct {
	Records      int64
	ValueSize    int64
	ReadPercents []int // one mix per entry: 95 means 95% reads, 5% updates
	Concurrency  int
	Bound        Bound
	Distribution string // "uniform" or "zipf" (scrambled, s=1.01: a few hot keys)
	Prefix       string
	Cleanup      bool
}

// KVRunner runs the kv test.
type KVRunner struct {
	Target   Target
	Pool     *Pool
	Progress *Progress
	Log      io.Writer
}

// Run appends an "insert" cell for the load phase and, per mix, a "read" and
// an "update" cell (Mode "r95/u5"). Reads verify the value they get back.
func (k *KVRunner) Run(ctx context.Context, cfg KVConfig, rep *Report) {
	peak := PeakRunner{Target: k.Target, Pool: k.Pool, Progress: k.Progress, Log: k.Log}
	key := func(i int64) string { return cfg.Prefix + "/kv/user" + strconv.FormatInt(i, 10) }
	put := func(ctx context.Context, i int64) (int64, error) {
		name := key(i)
		if err := k.Target.Put(ctx, name, k.Pool.Payload(name, cfg.ValueSize)); err != nil {
			return 0, err
		}
		return cfg.ValueSize, nil
	}

	// Load phase: every record once, in order.
	load := NewRecorder()
	peak.track(fmt.Sprintf("kv load %d records", cfg.Records), load, Bound{})
	cpu := startCPUMeter()
	elapsed := ClosedLoop(ctx, cfg.Concurrency, Bound{Count: cfg.Records}, load,
		func(ctx context.Context, _ int, seq int64) (int64, error) { return put(ctx, seq) })
	cell := load.Cell(elapsed)
	cell.Op, cell.Mode, cell.Size, cell.Concurrency = "insert", "load", cfg.ValueSize, cfg.Concurrency
	cell.ClientCPU = cpu.percent(elapsed)
	rep.Cells = append(rep.Cells, cell)
	if cfg.Cleanup {
		defer func() {
			keys := make([]string, load.Issued())
			for i := range keys {
				keys[i] = key(int64(i))
			}
			peak.cleanup(rep, keys)
		}()
	}
	if cell.Ops == 0 {
		peak.note(rep, "kv: load phase stored nothing; mixes skipped")
		return
	}

	for _, readPct := range cfg.ReadPercents {
		if ctx.Err() != nil {
			return
		}
		mode := fmt.Sprintf("r%d/u%d", readPct, 100-readPct)
		reads, updates, total := NewRecorder(), NewRecorder(), NewRecorder()
		pickers := make([]func() int64, cfg.Concurrency)
		for w := range pickers {
			pickers[w] = keyPicker(cfg.Distribution, cfg.Records, uint64(w), uint64(readPct))
		}
		coins := make([]*rand.Rand, cfg.Concurrency)
		for w := range coins {
			coins[w] = rand.New(rand.NewPCG(uint64(w), 7))
		}
		peak.track("kv "+mode, total, cfg.Bound)
		cpu := startCPUMeter()
		elapsed := ClosedLoop(ctx, cfg.Concurrency, cfg.Bound, total,
			func(ctx context.Context, worker int, _ int64) (int64, error) {
				i := pickers[worker]()
				rec := updates
				isRead := coins[worker].IntN(100) < readPct
				if isRead {
					rec = reads
				}
				rec.Issue()
				t0 := time.Now()
				var n int64
				var err error
				if isRead {
					name := key(i)
					n, err = k.Target.Get(ctx, name, cfg.ValueSize, NewSink(k.Pool.Payload(name, cfg.ValueSize)))
				} else {
					n, err = put(ctx, i)
				}
				rec.Done(time.Since(t0), n, err)
				return n, err
			})
		mixCPU := cpu.percent(elapsed)
		for _, part := range []struct {
			op  string
			rec *Recorder
		}{{"read", reads}, {"update", updates}} {
			if part.rec.Issued() == 0 {
				continue
			}
			c := part.rec.Cell(elapsed)
			c.Op, c.Mode, c.Size, c.Concurrency = part.op, mode, cfg.ValueSize, cfg.Concurrency
			c.ClientCPU = mixCPU // of the whole mix: reads and updates share the workers
			rep.Cells = append(rep.Cells, c)
		}
	}
}

// keyPicker returns a per-worker generator of record numbers in [0, n).
func keyPicker(dist string, n int64, worker, salt uint64) func() int64 {
	rng := rand.New(rand.NewPCG(worker, salt))
	if dist != "zipf" || n < 2 {
		return func() int64 { return rng.Int64N(n) }
	}
	z := rand.NewZipf(rng, 1.01, 1, uint64(n-1))
	// Scramble ranks so the hot records are spread over the key space (as
	// YCSB's scrambled zipfian does), not clustered at the first keys.
	return func() int64 { return int64((z.Uint64() * 0x9E3779B97F4A7C15) % uint64(n)) }
}
