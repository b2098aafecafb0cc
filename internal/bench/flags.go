package bench

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// modeOptions is a parsed command line: what to run and where to write.
type modeOptions struct {
	params     map[string]string // every flag's value, recorded in the report
	out        string
	charts     bool
	seed       uint64
	local      bool
	pid        int
	diskDevice string
	cpuProfile string
	run        func(ctx context.Context, rep *Report, pool *Pool, progress *Progress, log io.Writer) error
}

// s3Flags are the connection flags shared by peak, mixed and kv.
type s3Flags struct {
	opts         S3Options
	threshold    string
	partSize     string
	createBucket bool
	prefix       string
	created      bool // the run made the bucket: with cleanup it removes it
}

func (s *s3Flags) register(fs *flag.FlagSet) {
	s.opts.RegisterConnFlags(fs)
	fs.StringVar(&s.opts.Bucket, "bucket", "b3-bench", "bucket (created unless --create-bucket=false)")
	fs.StringVar(&s.threshold, "multipart-threshold", "64MiB", "objects at least this large use the transfer manager (multipart, ranged GETs)")
	fs.StringVar(&s.partSize, "part-size", "16MiB", "transfer manager part size")
	fs.IntVar(&s.opts.PartConcurrency, "part-concurrency", 4, "transfer manager parts in flight per object")
	fs.IntVar(&s.opts.Retries, "retries", 0, "SDK retries per request (0: every failure is reported)")
	fs.BoolVar(&s.createBucket, "create-bucket", true, "create the bucket if missing")
	fs.StringVar(&s.prefix, "prefix", "", "key prefix (default: b3-bench/<start time>)")
}

func (s *s3Flags) target(ctx context.Context, maxConc int) (*S3Target, error) {
	var err error
	if s.opts.MultipartThreshold, err = ParseSize(s.threshold); err != nil {
		return nil, usagef("--multipart-threshold: %v", err)
	}
	if s.opts.PartSize, err = ParseSize(s.partSize); err != nil {
		return nil, usagef("--part-size: %v", err)
	}
	s.opts.MaxConns = max(256, 2*maxConc*s.opts.PartConcurrency)
	t, err := NewS3Target(ctx, s.opts)
	if err != nil {
		return nil, err
	}
	if s.createBucket {
		if s.created, err = t.EnsureBucket(ctx); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// removeBucket deletes the bucket when this run created it and cleaned
// up after itself; a bucket that existed before is kept. It runs after
// Ctrl-C too, bounded so that an unreachable server cannot hold the exit.
func (s *s3Flags) removeBucket(t *S3Target, rep *Report, log io.Writer, cleanup bool) {
	if !s.created || !cleanup {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := t.DeleteBucket(ctx); err != nil {
		rep.AddNote(log, fmt.Sprintf("cleanup: the bucket this run created is kept: %v", err))
	}
}

// start builds the target, records it in rep and sets *prefix to the
// run's key prefix.
func (s *s3Flags) start(ctx context.Context, rep *Report, maxConc int, prefix *string) (*S3Target, error) {
	t, err := s.target(ctx, maxConc)
	if err != nil {
		return nil, err
	}
	rep.Target = s.opts.Endpoint + "/" + s.opts.Bucket
	*prefix = s.keyPrefix()
	return t, nil
}

func (s *s3Flags) keyPrefix() string {
	if s.prefix != "" {
		return strings.TrimSuffix(s.prefix, "/")
	}
	return "b3-bench/" + time.Now().UTC().Format("20060102T150405.000")
}

// RegisterConnFlags registers the flags that say where an S3 endpoint is
// and how to talk to it; b3 bench and b3 mount take the same ones.
func (o *S3Options) RegisterConnFlags(fs *flag.FlagSet) {
	fs.StringVar(&o.Endpoint, "endpoint", os.Getenv("AWS_ENDPOINT_URL"), "S3 endpoint URL (default: $AWS_ENDPOINT_URL, else AWS)")
	fs.StringVar(&o.Region, "region", envOr("AWS_REGION", "us-east-1"), "region")
	fs.StringVar(&o.AccessKey, "access-key", "", "access key (default: AWS_ACCESS_KEY_ID / shared config)")
	fs.StringVar(&o.SecretKey, "secret-key", "", "secret key (default: AWS_SECRET_ACCESS_KEY / shared config)")
	fs.BoolVar(&o.PathStyle, "path-style", true, "path-style addressing (endpoint/bucket/key)")
	fs.BoolVar(&o.ChecksumWhenRequired, "checksum-when-required", false, "send request checksums only where required (SDK default: CRC32 on every PUT)")
	fs.BoolVar(&o.SignPayload, "sign-payload", false, "SHA-256 every upload body for SigV4, as SDKs do over plain HTTP (default: UNSIGNED-PAYLOAD, as over HTTPS; saves client and server CPU)")
	fs.DurationVar(&o.RequestTimeout, "request-timeout", 0, "per-request timeout (0: none)")
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// parseFlags builds the flag set of mode, parses args and returns what to run.
func parseFlags(mode string, args []string, stderr io.Writer) (*modeOptions, error) {
	fs := flag.NewFlagSet("b3 bench "+mode, flag.ContinueOnError)
	fs.SetOutput(stderr)
	o := &modeOptions{}
	var seed uint64
	fs.StringVar(&o.out, "out", "bench-out", "directory for JSON, CSV and SVG results")
	fs.BoolVar(&o.charts, "charts", true, "write SVG charts")
	fs.Uint64Var(&seed, "seed", 1, "payload seed (same seed, same object content)")
	fs.BoolVar(&o.local, "local", false, "the target runs on this machine: sample CPU, disk and --pid RSS each second")
	fs.IntVar(&o.pid, "pid", 0, "with --local: server process whose RSS to sample")
	fs.StringVar(&o.diskDevice, "disk-device", "", "with --local: block device to sample (e.g. sda; default: busiest)")
	fs.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile of the load generator to this file (is the client the bottleneck?)")

	var build func() error
	switch mode {
	case "peak":
		build = peakFlags(fs, o)
	case "mixed":
		build = mixedFlags(fs, o)
	case "hls":
		build = hlsFlags(fs, o)
	case "disk":
		build = diskFlags(fs, o)
	case "kv":
		build = kvFlags(fs, o)
	default:
		return nil, usagef("unknown mode %q", mode)
	}
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return nil, err
		}
		return nil, usageError{err}
	}
	if fs.NArg() > 0 {
		return nil, usagef("unexpected arguments: %v", fs.Args())
	}
	o.seed = seed
	o.params = map[string]string{}
	fs.VisitAll(func(f *flag.Flag) {
		if f.Name != "secret-key" && f.Name != "access-key" {
			o.params[f.Name] = f.Value.String()
		}
	})
	if err := build(); err != nil {
		return nil, err
	}
	return o, nil
}

func peakFlags(fs *flag.FlagSet, o *modeOptions) func() error {
	var s3f s3Flags
	s3f.register(fs)
	// The defaults take about a minute (3 sizes × 3 levels × 2 operations
	// × 3 s, and the prepared objects) and store at most a few GiB at a
	// time, deleted as the run goes: a first look. A full sweep names its
	// sizes and levels, e.g. --sizes 1KiB,64KiB,1MiB,64MiB,1GiB
	// --concurrency 1,4,16,64,128 --duration 10s.
	conc := fs.String("concurrency", "1,8,32", "concurrency levels")
	sizes := fs.String("sizes", "4KiB,256KiB,4MiB", "object sizes (KiB/MiB/GiB binary, KB/MB/GB decimal; up to 10GiB)")
	ops := fs.String("ops", "upload,download", "operations: upload, download or both")
	duration := fs.Duration("duration", 3*time.Second, "time per cell")
	count := fs.Int64("count", 0, "operations per cell (stops at --duration or --count, whichever first; --duration 0 for count only)")
	verify := fs.Bool("verify", false, "verify downloaded content")
	dropCache := fs.Bool("drop-cache", false, "drop the page cache before each download cell (local target, root)")
	prepare := fs.String("prepare-bytes", "256MiB", "bytes uploaded per size before the download cells")
	cleanup := fs.Bool("cleanup", true, "delete the objects the run uploaded")
	return func() error {
		var cfg PeakConfig
		var err error
		if cfg.Concurrency, err = ParseIntList(*conc); err != nil {
			return usagef("--concurrency: %v", err)
		}
		if cfg.Sizes, err = ParseSizeList(*sizes, MaxObjectSize); err != nil {
			return usagef("--sizes: %v", err)
		}
		for _, op := range splitList(*ops) {
			switch op {
			case "upload", "up", "put":
				cfg.Upload = true
			case "download", "down", "get":
				cfg.Download = true
			default:
				return usagef("--ops: unknown operation %q", op)
			}
		}
		if cfg.Bound, err = bound(*duration, *count); err != nil {
			return err
		}
		if cfg.PrepareBytes, err = ParseSize(*prepare); err != nil {
			return usagef("--prepare-bytes: %v", err)
		}
		cfg.Verify, cfg.DropCache, cfg.Cleanup = *verify, *dropCache, *cleanup
		o.run = func(ctx context.Context, rep *Report, pool *Pool, progress *Progress, log io.Writer) error {
			t, err := s3f.start(ctx, rep, maxInt(cfg.Concurrency), &cfg.Prefix)
			if err != nil {
				return err
			}
			(&PeakRunner{Target: t, Pool: pool, Progress: progress, Log: log}).Run(ctx, cfg, rep)
			s3f.removeBucket(t, rep, log, cfg.Cleanup)
			return nil
		}
		return nil
	}
}

func mixedFlags(fs *flag.FlagSet, o *modeOptions) func() error {
	var s3f s3Flags
	s3f.register(fs)
	preset := fs.String("preset", "baseline", "scenario: baseline (5MB, 24 up/s + 2 down/s) or high (5MB, 30 + 3)")
	upRate := fs.Float64("upload-rate", -1, "uploads per second at x1 (default: the preset's)")
	downRate := fs.Float64("download-rate", -1, "downloads per second at x1 (default: the preset's)")
	size := fs.String("size", "", "object size (default: the preset's)")
	mults := fs.String("multipliers", "1,1.25,2,4,6,8", "rate multiples, each held for --duration")
	duration := fs.Duration("duration", 60*time.Second, "hold time per multiple")
	drain := fs.Duration("drain", 30*time.Second, "after each hold, wait at most this long for requests in flight")
	maxInFlight := fs.Int("max-inflight", DefaultMaxInFlight, "safety cap on requests in flight")
	downObjects := fs.Int("download-objects", 32, "objects the download stream cycles over")
	verify := fs.Bool("verify", false, "verify downloaded content")
	cleanup := fs.Bool("cleanup", true, "delete uploaded objects after each multiple")
	atHold := holdCommands{}
	fs.Var(atHold, "at-hold", "MULTIPLE=COMMAND: run COMMAND (sh -c) as that multiple's hold starts, alongside the load, e.g. --at-hold '2=b3 admin vacuum start 0.3' (repeatable)")
	queueSeconds := fs.Float64("queue-seconds", DefaultRule.QueueSeconds, "saturated when more than this many seconds of requests are in flight at the end of a hold")
	return func() error {
		p, ok := Presets[*preset]
		if !ok {
			return usagef("--preset: unknown %q (baseline, high)", *preset)
		}
		cfg := MixedConfig{UploadRate: p.UploadRate, DownloadRate: p.DownloadRate, UploadSize: p.Size, DownloadSize: p.Size,
			Duration: *duration, Drain: *drain, MaxInFlight: *maxInFlight, DownloadObjects: *downObjects,
			Verify: *verify, Cleanup: *cleanup, Rule: DefaultRule, AtHold: atHold}
		cfg.Rule.QueueSeconds = *queueSeconds
		if *upRate >= 0 {
			cfg.UploadRate = *upRate
		}
		if *downRate >= 0 {
			cfg.DownloadRate = *downRate
		}
		if cfg.UploadRate+cfg.DownloadRate <= 0 {
			return usagef("both rates are zero")
		}
		if *size != "" {
			n, err := ParseSize(*size)
			if err != nil || n > MaxObjectSize {
				return usagef("--size: %v", cmpOr(err, fmt.Errorf("larger than %s", FormatSize(MaxObjectSize))))
			}
			cfg.UploadSize, cfg.DownloadSize = n, n
		}
		var err error
		if cfg.Multipliers, err = ParseFloatList(*mults); err != nil {
			return usagef("--multipliers: %v", err)
		}
		for m := range atHold {
			if !slices.Contains(cfg.Multipliers, m) {
				return usagef("--at-hold %g: not one of --multipliers %s", m, *mults)
			}
		}
		if *duration <= 0 {
			return usagef("--duration must be positive")
		}
		o.run = func(ctx context.Context, rep *Report, pool *Pool, progress *Progress, log io.Writer) error {
			top := 0.0
			for _, m := range cfg.Multipliers {
				top = max(top, m)
			}
			// Connections: the top rate times a generous latency allowance.
			t, err := s3f.start(ctx, rep, int((cfg.UploadRate+cfg.DownloadRate)*top)+16, &cfg.Prefix)
			if err != nil {
				return err
			}
			(&MixedRunner{Target: t, Pool: pool, Clock: RealClock{}, Progress: progress, Log: log}).Run(ctx, cfg, rep)
			s3f.removeBucket(t, rep, log, cfg.Cleanup)
			return nil
		}
		return nil
	}
}

func hlsFlags(fs *flag.FlagSet, o *modeOptions) func() error {
	var s3f s3Flags
	s3f.register(fs)
	cameras := fs.String("cameras", "100,200,400,800", "camera counts, each held for --duration")
	segment := fs.Duration("segment", 2*time.Second, "segment duration: each camera uploads one segment per period")
	bitrate := fs.String("bitrate", "4Mbit", "camera bitrate (bit/s; k, M, G suffixes, optional \"bit\"): a segment is bitrate × segment / 8 bytes")
	retention := fs.Duration("retention", time.Minute, "segments older than this are deleted by their camera")
	listSize := fs.Int("list-size", 6, "segments listed in a playlist")
	viewers := fs.String("viewers", "10%", "players reading playlists and newest segments: a count, or a percentage of the cameras")
	duration := fs.Duration("duration", 60*time.Second, "hold time per camera count")
	drain := fs.Duration("drain", 30*time.Second, "after each hold, wait at most this long for uploads in flight")
	maxP99 := fs.Duration("max-p99", time.Second, "a camera count is held only if the P99 segment upload latency is at most this")
	cleanup := fs.Bool("cleanup", true, "delete the segments and playlists left after each camera count")
	client := fs.String("client", "http", "http: plain requests signed with SigV4 (UNSIGNED-PAYLOAD), no checksum header, as encoders send; sdk: the AWS SDK (adds a CRC32 of every upload); the generator's own CPU is taken from the server")
	chunked := fs.Bool("chunked", false, "with --client http: upload with Transfer-Encoding: chunked and no length, as encoders do (S3 and MinIO refuse it)")
	part := fs.Duration("part", 0, "Low-Latency HLS: each camera is a stream publishing a part every --part (segments of --segment), "+
		"and --players players per stream ask for each part before it exists (preload hint) and block on playlist reloads; "+
		"needs a bucket with LL-HLS on (--bucket B --create-bucket=false) and --client http; --max-p99 defaults to 100ms")
	players := fs.Int("players", 1, "with --part: players per stream")
	return func() error {
		if *part != 0 {
			return llhlsFlags(fs, o, &s3f, *part, *players, *cameras, *segment, *bitrate, *listSize, *duration, *maxP99, *client)
		}
		cfg := HLSConfig{Segment: *segment, Retention: *retention, ListSize: *listSize, Duration: *duration,
			Drain: *drain, MaxP99: *maxP99, Cleanup: *cleanup}
		var err error
		if cfg.Cameras, err = ParseIntList(*cameras); err != nil {
			return usagef("--cameras: %v", err)
		}
		if cfg.Bitrate, err = ParseBitrate(*bitrate); err != nil {
			return usagef("--bitrate: %v", err)
		}
		if cfg.Viewers, err = parseViewers(*viewers); err != nil {
			return usagef("--viewers: %v", err)
		}
		if *segment <= 0 || *duration <= 0 || *listSize <= 0 {
			return usagef("--segment, --duration and --list-size must be positive")
		}
		if n := cfg.SegmentBytes(); n <= 0 || n > MaxObjectSize {
			return usagef("--bitrate × --segment: %d-byte segments", n)
		}
		if *client != "http" && *client != "sdk" {
			return usagef("--client: %q is neither http nor sdk", *client)
		}
		if *chunked && *client != "http" {
			return usagef("--chunked needs --client http")
		}
		if s3f.opts.SignPayload && *client != "sdk" {
			return usagef("--sign-payload needs --client sdk (the http client sends UNSIGNED-PAYLOAD)")
		}
		o.run = func(ctx context.Context, rep *Report, pool *Pool, progress *Progress, log io.Writer) error {
			top := maxInt(cfg.Cameras)
			conns := top + cfg.Viewers(top) + 16
			st, err := s3f.start(ctx, rep, conns, &cfg.Prefix)
			if err != nil {
				return err
			}
			var t HLSTarget = st
			if *client == "http" {
				ht, err := NewHTTPTarget(st, s3f.opts, conns, *chunked)
				if err != nil {
					return err
				}
				defer ht.Close()
				if err := ht.SendFromFile(pool, cfg.SegmentBytes()); err != nil {
					fmt.Fprintf(log, "hls: segments sent from memory (no sendfile): %v\n", err)
				}
				t = ht
			}
			(&HLSRunner{Target: t, Pool: pool, Clock: RealClock{}, Progress: progress, Log: log}).Run(ctx, cfg, rep)
			s3f.removeBucket(st, rep, log, cfg.Cleanup)
			return nil
		}
		return nil
	}
}

// ParseBitrate parses "4Mbit", "4M", "2500k", "800000" as bits per second
// (decimal multiples, as bitrates are quoted).
func ParseBitrate(s string) (int64, error) {
	t := strings.TrimSuffix(strings.TrimSuffix(strings.ToLower(strings.TrimSpace(s)), "/s"), "bit")
	mult := 1.0
	switch {
	case strings.HasSuffix(t, "k"):
		mult, t = 1e3, strings.TrimSuffix(t, "k")
	case strings.HasSuffix(t, "m"):
		mult, t = 1e6, strings.TrimSuffix(t, "m")
	case strings.HasSuffix(t, "g"):
		mult, t = 1e9, strings.TrimSuffix(t, "g")
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil || f <= 0 {
		return 0, fmt.Errorf("%q: want a positive bitrate such as 4Mbit", s)
	}
	return int64(f * mult), nil
}

// parseViewers parses a viewer count ("40") or a share of the cameras
// ("10%", rounded up).
func parseViewers(s string) (func(int) int, error) {
	if pct, ok := strings.CutSuffix(strings.TrimSpace(s), "%"); ok {
		f, err := strconv.ParseFloat(pct, 64)
		if err != nil || f < 0 {
			return nil, fmt.Errorf("%q: want a count or a percentage", s)
		}
		return func(cameras int) int { return int(math.Ceil(float64(cameras) * f / 100)) }, nil
	}
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || n < 0 {
		return nil, fmt.Errorf("%q: want a count or a percentage", s)
	}
	return func(int) int { return n }, nil
}

func diskFlags(fs *flag.FlagSet, o *modeOptions) func() error {
	dir := fs.String("dir", ".", "directory on the filesystem to test")
	sizes := fs.String("sizes", "512,4KiB,16KiB,64KiB,256KiB,1MiB,4MiB,16MiB,64MiB,128MiB", "write buffer sizes")
	modes := fs.String("modes", "buffered,buffered+sync,direct,direct+sync", "write modes")
	bytes := fs.String("bytes", "256MiB", "bytes written per cell (at most)")
	duration := fs.Duration("duration", 5*time.Second, "time per cell (at most)")
	return func() error {
		cfg := DiskConfig{Dir: *dir, MaxDuration: *duration}
		var err error
		if cfg.Sizes, err = ParseSizeList(*sizes, 1<<30); err != nil {
			return usagef("--sizes: %v", err)
		}
		if cfg.Modes, err = ParseDiskModes(*modes); err != nil {
			return usagef("--modes: %v", err)
		}
		if cfg.BytesPerCell, err = ParseSize(*bytes); err != nil {
			return usagef("--bytes: %v", err)
		}
		if *duration <= 0 {
			return usagef("--duration must be positive")
		}
		o.run = func(ctx context.Context, rep *Report, pool *Pool, progress *Progress, log io.Writer) error {
			rep.Target = cfg.Dir
			return (&DiskRunner{Pool: pool, Progress: progress, Log: log}).Run(ctx, cfg, rep)
		}
		return nil
	}
}

// ParseDiskModes parses "buffered,direct+sync".
func ParseDiskModes(s string) ([]DiskMode, error) {
	var out []DiskMode
	for _, f := range splitList(s) {
		var m DiskMode
		base, sync := strings.CutSuffix(f, "+sync")
		m.Sync = sync
		switch base {
		case "buffered":
		case "direct":
			m.Direct = true
		default:
			return nil, fmt.Errorf("unknown mode %q", f)
		}
		out = append(out, m)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("empty mode list")
	}
	return out, nil
}

func kvFlags(fs *flag.FlagSet, o *modeOptions) func() error {
	var s3f s3Flags
	s3f.register(fs)
	records := fs.Int64("records", 100000, "records in the load phase")
	valueSize := fs.String("value-size", "25", "value size")
	reads := fs.String("read-percent", "95,50,0", "read/update mixes to run, as the percentage of reads")
	conc := fs.Int("concurrency", 32, "concurrent clients")
	duration := fs.Duration("duration", 30*time.Second, "time per mix")
	count := fs.Int64("count", 0, "operations per mix (0: --duration only)")
	dist := fs.String("distribution", "zipf", "key choice: uniform or zipf")
	cleanup := fs.Bool("cleanup", true, "delete the records afterwards")
	return func() error {
		cfg := KVConfig{Records: *records, Concurrency: *conc, Distribution: *dist, Cleanup: *cleanup}
		var err error
		if cfg.ValueSize, err = ParseSize(*valueSize); err != nil {
			return usagef("--value-size: %v", err)
		}
		if cfg.ReadPercents, err = parsePercents(*reads); err != nil {
			return usagef("--read-percent: %v", err)
		}
		if cfg.Bound, err = bound(*duration, *count); err != nil {
			return err
		}
		if *records <= 0 || *conc <= 0 {
			return usagef("--records and --concurrency must be positive")
		}
		if *dist != "uniform" && *dist != "zipf" {
			return usagef("--distribution: want uniform or zipf")
		}
		o.run = func(ctx context.Context, rep *Report, pool *Pool, progress *Progress, log io.Writer) error {
			t, err := s3f.start(ctx, rep, cfg.Concurrency, &cfg.Prefix)
			if err != nil {
				return err
			}
			(&KVRunner{Target: t, Pool: pool, Progress: progress, Log: log}).Run(ctx, cfg, rep)
			s3f.removeBucket(t, rep, log, cfg.Cleanup)
			return nil
		}
		return nil
	}
}

func parsePercents(s string) ([]int, error) {
	var out []int
	for _, f := range splitList(s) {
		var n int
		if _, err := fmt.Sscanf(f, "%d", &n); err != nil || n < 0 || n > 100 || fmt.Sprint(n) != f {
			return nil, fmt.Errorf("%q: want 0..100", f)
		}
		out = append(out, n)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("empty list")
	}
	return out, nil
}

func bound(d time.Duration, count int64) (Bound, error) {
	if d < 0 || count < 0 {
		return Bound{}, usagef("--duration and --count must not be negative")
	}
	if d == 0 && count == 0 {
		return Bound{}, usagef("every run is bounded: set --duration or --count")
	}
	return Bound{Duration: d, Count: count}, nil
}

func maxInt(xs []int) int {
	m := 0
	for _, x := range xs {
		m = max(m, x)
	}
	return m
}

func sortStrings(s []string) { sort.Strings(s) }

// llhlsFlags sets up the hls test with --part (llhls.go).
func llhlsFlags(fs *flag.FlagSet, o *modeOptions, s3f *s3Flags, part time.Duration, players int, cameras string,
	segment time.Duration, bitrate string, listSize int, duration, maxP99 time.Duration, client string) error {
	cfg := LLHLSConfig{Part: part, Players: players, ListSize: listSize, Duration: duration, MaxP99: 100 * time.Millisecond}
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "max-p99" {
			cfg.MaxP99 = maxP99
		}
	})
	var err error
	if cfg.Streams, err = ParseIntList(cameras); err != nil {
		return usagef("--cameras: %v", err)
	}
	if cfg.Bitrate, err = ParseBitrate(bitrate); err != nil {
		return usagef("--bitrate: %v", err)
	}
	if part < 0 || segment%part != 0 || players < 1 || duration <= 0 || listSize <= 0 {
		return usagef("--part must divide --segment; --players, --duration and --list-size must be positive")
	}
	if client != "http" {
		return usagef("--part needs --client http")
	}
	cfg.PartsPerSegment = int(segment / part)
	if n := cfg.PartBytes(); n <= 0 || n > MaxObjectSize {
		return usagef("--bitrate × --part: %d-byte parts", n)
	}
	o.run = func(ctx context.Context, rep *Report, pool *Pool, progress *Progress, log io.Writer) error {
		top := maxInt(cfg.Streams)
		conns := top*(players+1) + 16
		st, err := s3f.start(ctx, rep, conns, &cfg.Prefix)
		if err != nil {
			return err
		}
		ht, err := NewHTTPTarget(st, s3f.opts, conns, false)
		if err != nil {
			return err
		}
		defer ht.Close()
		return (&LLHLSRunner{Target: ht, Log: log}).Run(ctx, cfg, rep)
	}
	return nil
}
