package server

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/b3-storage/b3/internal/blob"
	"github.com/b3-storage/b3/internal/cache"
	"github.com/b3-storage/b3/internal/meta"
	"github.com/b3-storage/b3/internal/sse"
)

// Setting is one configuration item. Each has three spellings, highest
// precedence first: the flag --Name, the environment variable B3_NAME
// (upper case, '-' as '_'), and the key Name in the YAML config file.
// Defaults apply when none is given.
type Setting struct {
	Name, Default, Help string
	apply               func(c *Config, o *Output, v string) error
}

// Output is what the settings decide beyond Config: how to log, and
// what to warn of once logging is set up.
type Output struct {
	LogLevel  slog.Level
	LogFormat string // "text" or "json"
	// Warnings are said at start: secrets given as flags, which any
	// local user reads in the process list (/proc/PID/cmdline), and
	// defaults of new buckets weaker than AWS's (legacy-compatible mode).
	Warnings []string
}

// secretFlags are the settings that carry a secret, with the spelling
// to use instead of the flag.
var secretFlags = map[string]string{
	"secret-key":    "B3_SECRET_KEY or --secret-key-file",
	"admin-token":   "B3_ADMIN_TOKEN or the generated <data>/admin-token",
	"users":         "B3_USERS or the config file",
	"metrics-token": "B3_METRICS_TOKEN",
	// Not a secret, but its errors are not to show the value either.
	"secret-key-file": "",
}

// Env is the environment variable of a setting.
func (s Setting) Env() string { return "B3_" + strings.ToUpper(strings.ReplaceAll(s.Name, "-", "_")) }

// Settings lists every setting of `b3 server`, in --help order.
func Settings() []Setting {
	str := func(dst func(*Config) *string) func(*Config, *Output, string) error {
		return func(c *Config, _ *Output, v string) error { *dst(c) = v; return nil }
	}
	size := func(dst func(*Config) *int64) func(*Config, *Output, string) error {
		return func(c *Config, _ *Output, v string) error {
			n, err := ParseBytes(v)
			*dst(c) = n
			return err
		}
	}
	dur := func(dst func(*Config) *time.Duration) func(*Config, *Output, string) error {
		return func(c *Config, _ *Output, v string) error {
			d, err := time.ParseDuration(v)
			if err == nil && d < 0 {
				err = fmt.Errorf("negative duration")
			}
			*dst(c) = d
			return err
		}
	}
	num := func(dst func(*Config) *float64) func(*Config, *Output, string) error {
		return func(c *Config, _ *Output, v string) error {
			f, err := strconv.ParseFloat(v, 64)
			if err == nil && f < 0 {
				err = fmt.Errorf("negative")
			}
			*dst(c) = f
			return err
		}
	}
	boolean := func(dst func(*Config) *bool) func(*Config, *Output, string) error {
		return func(c *Config, _ *Output, v string) error {
			b, err := strconv.ParseBool(v)
			*dst(c) = b
			return err
		}
	}
	// list parses a comma-separated list (a YAML sequence arrives joined
	// with commas), optionally lower-cased.
	list := func(dst func(*Config) *[]string, lower bool) func(*Config, *Output, string) error {
		return func(c *Config, _ *Output, v string) error {
			*dst(c) = nil
			for item := range strings.SplitSeq(v, ",") {
				if item = strings.TrimSpace(item); item != "" {
					if lower {
						item = strings.ToLower(item)
					}
					*dst(c) = append(*dst(c), item)
				}
			}
			return nil
		}
	}
	return []Setting{
		{"address", "127.0.0.1:9000", "S3 listen address", str(func(c *Config) *string { return &c.Address })},
		{"data", "data", "data root: meta/, segments/, credentials.json, users.json, admin-token", str(func(c *Config) *string { return &c.Root })},
		{"meta-dir", "", "metadata directory, put it on SSD (default <data>/meta)", str(func(c *Config) *string { return &c.MetaDir })},
		{"data-dir", "", "segment directory, HDD is fine (default <data>/segments)", str(func(c *Config) *string { return &c.DataDir })},
		{"access-key", "", "root access key (default: generated on first start)", str(func(c *Config) *string { return &c.AccessKey })},
		{"secret-key", "", "root secret key, at least 16 characters; prefer B3_SECRET_KEY or --secret-key-file: a flag is visible to every local user in the process list", str(func(c *Config) *string { return &c.SecretKey })},
		{"secret-key-file", "", "file holding the root secret key (trailing newline ignored), instead of --secret-key", func(c *Config, _ *Output, v string) error {
			if v == "" {
				return nil
			}
			if c.SecretKey != "" {
				return errors.New("give the root secret key once: --secret-key (B3_SECRET_KEY) or --secret-key-file, not both")
			}
			data, err := os.ReadFile(v)
			if err != nil {
				return err
			}
			if c.SecretKey = strings.TrimRight(string(data), "\r\n"); c.SecretKey == "" {
				return errors.New("the file is empty")
			}
			return minLen("the root secret key in "+v, c.SecretKey)
		}},
		{"kms-keys", "", "master keys of SSE-S3 and SSE-KMS, name:base64key[,...] (32-byte keys; the first is the default, SSE-KMS names any); prefer B3_KMS_KEYS or --kms-keys-file: a flag is visible in the process list (b3 server's default: generated into <data>/kms-keys; docs/ENCRYPTION.md)", func(c *Config, _ *Output, v string) error {
			return setKeys(c, v, sse.ParseKeyRing)
		}},
		{"kms-keys-file", "", "file holding the master keys, one name:base64key a line, instead of --kms-keys", func(c *Config, _ *Output, v string) error {
			return setKeys(c, v, sse.LoadKeyRing)
		}},
		{"users", "", "extra users, name:accesskey:secret[,...] (not persisted)", func(c *Config, _ *Output, v string) error {
			users, err := ParseUsers(v)
			c.Users = users
			return err
		}},
		{"region", "us-east-1", "region", str(func(c *Config) *string { return &c.Region })},
		{"regions", "", "further region names accepted as a bucket's LocationConstraint and in request signatures, comma separated (clients configured for another region work unchanged)", list(func(c *Config) *[]string { return &c.Regions }, false)},
		{"domain", "", "base domain(s) of virtual-host-style requests, comma separated", list(func(c *Config) *[]string { return &c.Domains }, true)},
		{"media-headers", "true", "serve objects stored without a Content-Type (or a generic one) with the type of their extension (.m3u8, .ts, .m4s, .mp4, .vtt, .aac, ...) and playlists (.m3u8, .mpd) without a Cache-Control with no-cache (docs/HLS.md)", boolean(func(c *Config) *bool { return &c.MediaHeaders })},
		{"max-retention", "36525d", "longest Object Lock retention a client may set, from the moment it sets it (retain-until dates, a bucket's default retention; refused beyond, root included): a COMPLIANCE retention can never be shortened. Days (30d) or a duration (720h)", func(c *Config, _ *Output, v string) error {
			d, err := ParseDays(v)
			c.MaxRetention = d
			return err
		}},
		{"default-object-ownership", meta.OwnershipBucketOwnerEnforced, "Object Ownership of new buckets whose CreateBucket does not choose one: BucketOwnerEnforced (ACLs disabled, AWS's default), BucketOwnerPreferred or ObjectWriter (ACLs enabled, for applications that use object ACLs: docs/OPERATIONS.md)", func(c *Config, o *Output, v string) error {
			c.NewBuckets.ObjectOwnership = v
			if v != meta.OwnershipBucketOwnerEnforced {
				o.Warnings = append(o.Warnings, "new buckets get Object Ownership "+v+": object ACLs take effect in them (legacy-compatible mode, docs/OPERATIONS.md)")
			}
			return c.NewBuckets.Validate()
		}},
		{"default-block-public-access", "true", "new buckets get all four Block Public Access settings on, as on AWS; false creates them without, so that public ACLs and bucket policies take effect (legacy-compatible mode: docs/OPERATIONS.md)", func(c *Config, o *Output, v string) error {
			on, err := strconv.ParseBool(v)
			c.NewBuckets.NoPublicAccessBlock = !on
			if err == nil && !on {
				o.Warnings = append(o.Warnings, "new buckets get no Block Public Access: a public ACL or bucket policy opens them to anyone (legacy-compatible mode, docs/OPERATIONS.md)")
			}
			return err
		}},
		{"fsync", "batch", "durability: batch (group commit), always, none (benchmarks only)", func(c *Config, _ *Output, v string) error {
			p, err := blob.ParseSyncPolicy(v)
			c.Sync = p
			return err
		}},
		{"direct-io", "true", "write segments with O_DIRECT where supported", boolean(func(c *Config) *bool { return &c.DirectIO })},
		{"segment-size", "1GiB", "segment file size", size(func(c *Config) *int64 { return &c.SegmentSize })},
		{"inline-max", "4KiB", "objects up to this size are kept in their metadata record (metadata disk), not in segments: one fsync per PUT instead of two (0 = none, at most 1MiB)", size(func(c *Config) *int64 { return &c.InlineMax })},
		{"min-free-space", "1GiB", "free-space reserve of the data and metadata disks: uploads that would cut into it get 507 InsufficientStorage (0 = off)", size(func(c *Config) *int64 { return &c.MinFreeBytes })},
		{"log-level", "info", "debug, info, warn, error", func(_ *Config, o *Output, v string) error { return o.LogLevel.UnmarshalText([]byte(v)) }},
		{"log-format", "text", "text or json", func(_ *Config, o *Output, v string) error {
			if v != "text" && v != "json" {
				return fmt.Errorf("want text or json")
			}
			o.LogFormat = v
			return nil
		}},
		{"access-log", "false", "log every S3 request (request id, operation, status, bytes, duration)", boolean(func(c *Config) *bool { return &c.AccessLog })},
		{"admin-address", "127.0.0.1:9001", "admin API, /metrics, /health, pprof listen address (\"\" disables)", str(func(c *Config) *string { return &c.AdminAddress })},
		{"console-address", "127.0.0.1:9002", "web console listen address (\"\" disables); log in with any user's access key and secret key", str(func(c *Config) *string { return &c.ConsoleAddress })},
		{"admin-token", "", "admin bearer token, at least 16 characters (default: generated into <data>/admin-token); prefer B3_ADMIN_TOKEN: a flag is visible in the process list", str(func(c *Config) *string { return &c.AdminToken })},
		{"tls-cert", "", "PEM certificate chain of the S3 listener: with --tls-key, S3 is served over HTTPS (reloaded on SIGHUP and when the file changes)", str(func(c *Config) *string { return &c.TLSCert })},
		{"tls-key", "", "PEM private key of --tls-cert", str(func(c *Config) *string { return &c.TLSKey })},
		{"admin-tls-cert", "", "PEM certificate chain of the admin listener (HTTPS with --admin-tls-key)", str(func(c *Config) *string { return &c.AdminTLSCert })},
		{"admin-tls-key", "", "PEM private key of --admin-tls-cert", str(func(c *Config) *string { return &c.AdminTLSKey })},
		{"console-tls-cert", "", "PEM certificate chain of the console listener (HTTPS with --console-tls-key)", str(func(c *Config) *string { return &c.ConsoleTLSCert })},
		{"console-tls-key", "", "PEM private key of --console-tls-cert", str(func(c *Config) *string { return &c.ConsoleTLSKey })},
		{"tls-check-interval", "30s", "how often the TLS files are checked for a renewal (SIGHUP reloads at once)", dur(func(c *Config) *time.Duration { return &c.TLSCheckInterval })},
		{"drain-delay", "5s", "on SIGTERM, how long /health/ready fails while requests are still served, before the listener closes (0 = none)", dur(func(c *Config) *time.Duration { return &c.DrainDelay })},
		{"auth-backoff", "10", "failed authentications (wrong S3 signature or unknown access key, wrong console login) one client address may make in a row; then its requests with credentials get 503 SlowDown (console: 429) with Retry-After, one more allowed per second (0 = off)", func(c *Config, _ *Output, v string) error {
			n, err := strconv.Atoi(v)
			if err == nil && n < 0 {
				err = errors.New("want 0 (off) or more")
			}
			c.AuthBackOff = n
			if n == 0 {
				c.AuthBackOff = -1
			}
			return err
		}},
		{"metrics-token", "", "bearer token /metrics requires, at least 16 characters (the admin token works too; default: /metrics is open)", str(func(c *Config) *string { return &c.MetricsToken })},
		{"bucket-metrics", "0", "per-bucket object and byte gauges for the largest N buckets (0 = off; their bucket labels show bucket names to whoever reads /metrics: see --metrics-token)", func(c *Config, _ *Output, v string) error {
			n, err := strconv.Atoi(v)
			c.BucketMetrics = n
			return err
		}},
		{"bucket-metrics-interval", "5m", "how often per-bucket gauges are counted (a scan of the metadata)", dur(func(c *Config) *time.Duration { return &c.BucketMetricsInterval })},
		{"read-limit", "0", "disk read bytes/s, all priorities (0 = unlimited; units KiB, MiB, GiB, KB, MB, GB)", size(func(c *Config) *int64 { return &c.Limits.ReadBytesPerSec })},
		{"write-limit", "0", "disk write bytes/s, all priorities (0 = unlimited)", size(func(c *Config) *int64 { return &c.Limits.WriteBytesPerSec })},
		{"background-read-limit", "0", "disk read bytes/s of vacuum (0 = what clients leave)", size(func(c *Config) *int64 { return &c.Limits.BackgroundReadBytesPerSec })},
		{"background-write-limit", "0", "disk write bytes/s of vacuum (0 = what clients leave)", size(func(c *Config) *int64 { return &c.Limits.BackgroundWriteBytesPerSec })},
		{"background-pacing", "true", "pace vacuum and lifecycle deletes by client load: full speed when clients are idle, --background-min-rate under load", func(c *Config, _ *Output, v string) error {
			b, err := strconv.ParseBool(v)
			c.Pace.Off = !b
			return err
		}},
		{"background-min-rate", "8MiB", "background work (bytes read + written) per second kept under sustained client load", size(func(c *Config) *int64 { return &c.Pace.MinBytesPerSec })},
		{"vacuum-threshold", "0.5", "dead/size ratio from which a sealed segment is vacuumed", num(func(c *Config) *float64 { return &c.VacuumThreshold })},
		{"vacuum-interval", "5m", "automatic vacuum check period (0 = only on demand: b3 admin vacuum start, SIGUSR1)", dur(func(c *Config) *time.Duration { return &c.VacuumInterval })},
		{"scrub-interval", "30d", "period of the scrub: every segment record's CRCs and every object's extents read again in the background, paced like vacuum (days, e.g. 30d, or a duration; 0 = only on demand: b3 admin scrub start)", func(c *Config, _ *Output, v string) error {
			d, err := ParseDays(v)
			c.ScrubInterval = d
			return err
		}},
		{"lifecycle-interval", "1h", "lifecycle sweeper period (rule changes start a pass at once)", dur(func(c *Config) *time.Duration { return &c.LifecycleInterval })},
		{"lifecycle-rate", "1000", "lifecycle deletes and aborts per second (0 = unlimited)", num(func(c *Config) *float64 { return &c.LifecycleRate })},
		{"lifecycle-day", "24h", "length of a lifecycle day; DEBUG/TESTS ONLY: e.g. 1s makes Days=1 mean one second", dur(func(c *Config) *time.Duration { return &c.LifecycleDay })},
		{"cache-size", "64MiB", "small-object memory cache (0 = off)", size(func(c *Config) *int64 { return &c.CacheBytes })},
		{"cache-max-object", "1MiB", "largest object the cache holds", size(func(c *Config) *int64 { return &c.CacheMaxObject })},
		{"cache-policy", "s3fifo", "cache eviction: lru or s3fifo", func(c *Config, _ *Output, v string) error {
			p, err := cache.ParsePolicy(v)
			c.CachePolicy = p
			return err
		}},
	}
}

// setKeys sets the master keys from v (a key list or a file name, as
// load reads it); the keys may be given once.
func setKeys(c *Config, v string, load func(string) (*sse.KeyRing, error)) error {
	if v == "" {
		return nil
	}
	if c.Keys != nil {
		return errors.New("give the master keys once: --kms-keys (B3_KMS_KEYS) or --kms-keys-file, not both")
	}
	keys, err := load(v)
	c.Keys = keys
	return err
}

// ParseBytes parses "123", "64KiB", "1.5GiB", "100MB" (case-insensitive).
func ParseBytes(s string) (int64, error) {
	t := strings.TrimSpace(strings.ToLower(s))
	mult := 1.0
	for _, u := range []struct {
		suffix string
		mult   float64
	}{{"kib", 1 << 10}, {"mib", 1 << 20}, {"gib", 1 << 30}, {"tib", 1 << 40}, {"kb", 1e3}, {"mb", 1e6}, {"gb", 1e9}, {"tb", 1e12}, {"k", 1 << 10}, {"m", 1 << 20}, {"g", 1 << 30}, {"b", 1}} {
		if strings.HasSuffix(t, u.suffix) {
			t, mult = strings.TrimSpace(strings.TrimSuffix(t, u.suffix)), u.mult
			break
		}
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil || f < 0 {
		return 0, fmt.Errorf("size %q: want a non-negative number of bytes, units KiB MiB GiB KB MB GB", s)
	}
	return int64(f * mult), nil
}

// ParseDays parses a duration given in days ("36500d") or as a Go
// duration ("720h"): retentions are counted in days, which Go durations
// cannot spell.
func ParseDays(s string) (time.Duration, error) {
	const day = 24 * time.Hour
	t := strings.TrimSpace(s)
	if n, ok := strings.CutSuffix(t, "d"); ok {
		days, err := strconv.ParseInt(n, 10, 64)
		if err != nil || days < 0 || days > int64(math.MaxInt64/day) {
			return 0, fmt.Errorf("%q: want a whole number of days (e.g. 36500d) or a duration (e.g. 720h)", s)
		}
		return time.Duration(days) * day, nil
	}
	d, err := time.ParseDuration(t)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("%q: want a whole number of days (e.g. 36500d) or a duration (e.g. 720h)", s)
	}
	return d, nil
}

// LoadSettings resolves every setting from, in rising precedence: the
// defaults, the YAML file named by --config or B3_CONFIG, the B3_*
// environment, and the flags in args. It returns the Config and logging
// output; help text goes to usage.
func LoadSettings(args []string, getenv func(string) (string, bool), usage io.Writer) (Config, Output, error) {
	settings := Settings()
	values := map[string]string{}
	for _, s := range settings {
		values[s.Name] = s.Default
	}
	sources := map[string]string{}
	configPath, _ := getenv("B3_CONFIG")
	for i, a := range args {
		switch {
		case a == "--config" || a == "-config":
			if i+1 < len(args) {
				configPath = args[i+1]
			}
		case strings.HasPrefix(a, "--config="), strings.HasPrefix(a, "-config="):
			configPath = a[strings.Index(a, "=")+1:]
		}
	}
	if configPath != "" {
		file, err := readConfigFile(configPath, func(k string) bool { _, known := values[k]; return known })
		if err != nil {
			return Config{}, Output{}, err
		}
		for k, v := range file {
			values[k] = v
			sources[k] = fmt.Sprintf("key %s in %s", k, configPath)
		}
	}
	for _, s := range settings {
		if v, ok := getenv(s.Env()); ok {
			values[s.Name] = v
			sources[s.Name] = "environment variable " + s.Env()
		}
	}
	fs := flag.NewFlagSet("server", flag.ContinueOnError)
	fs.SetOutput(usage)
	fs.String("config", configPath, "YAML config file: keys are the flag names (B3_CONFIG)")
	ptrs := map[string]*string{}
	for _, s := range settings {
		v := &settingValue{s: values[s.Name], isBool: s.Default == "true" || s.Default == "false"}
		fs.Var(v, s.Name, fmt.Sprintf("%s (%s)", s.Help, s.Env()))
		ptrs[s.Name] = &v.s
	}
	fs.Usage = func() {
		fmt.Fprintln(usage, "usage: b3 server [flags]\n\nEvery setting is a flag, a B3_* environment variable and a key of the\nYAML file given by --config (precedence in that order). Settings:")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return Config{}, Output{}, err
	}
	if fs.NArg() > 0 {
		return Config{}, Output{}, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	fs.Visit(func(f *flag.Flag) { sources[f.Name] = "flag --" + f.Name })
	bad := func(name string, err error) error {
		src, ok := sources[name]
		if !ok {
			src = "the default"
		}
		if _, secret := secretFlags[name]; secret { // not into logs
			return fmt.Errorf("setting %s (from %s): %w", name, src, err)
		}
		return fmt.Errorf("setting %s=%q (from %s): %w", name, *ptrs[name], src, err)
	}
	var cfg Config
	out := Output{LogFormat: "text"}
	for _, s := range settings {
		if err := s.apply(&cfg, &out, *ptrs[s.Name]); err != nil {
			return Config{}, Output{}, bad(s.Name, err)
		}
	}
	for _, r := range settingRanges() {
		if err := r.check(&cfg); err != nil {
			return Config{}, Output{}, bad(r.name, err)
		}
	}
	out.Warnings = append(out.Warnings, secretFlagWarnings(fs)...)
	cfg.LogJSON = out.LogFormat == "json"
	return cfg, out, nil
}

// secretFlagWarnings warns of each secret given as a flag on fs's command
// line, which every local user reads in the process list.
func secretFlagWarnings(fs *flag.FlagSet) []string {
	var out []string
	fs.Visit(func(f *flag.Flag) {
		if sv, ok := f.Value.(*settingValue); ok && sv.src != "" {
			return // set by LoadFlags from the environment or a file, not on the command line
		}
		if instead, ok := secretFlags[f.Name]; ok && instead != "" && f.Value.String() != "" {
			out = append(out, fmt.Sprintf("--%s on the command line is visible to every local user (ps, /proc/PID/cmdline): give it as %s", f.Name, instead))
		}
	})
	return out
}

// readConfigFile reads a YAML config file: a map of setting names to
// values, a sequence joined with commas. A key known rejects is an error.
func readConfigFile(path string, known func(string) bool) (map[string]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config file: %w", err)
	}
	var doc map[string]any
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("config file %s: %w", path, err)
	}
	values := make(map[string]string, len(doc))
	for k, v := range doc {
		if !known(k) {
			return nil, fmt.Errorf("config file %s: unknown setting %q", path, k)
		}
		if seq, ok := v.([]any); ok {
			items := make([]string, len(seq))
			for i, item := range seq {
				items[i] = fmt.Sprint(item)
			}
			values[k] = strings.Join(items, ",")
			continue
		}
		values[k] = fmt.Sprint(v)
	}
	return values, nil
}

// FlagEnv is the environment variable of the flag name, as Setting.Env:
// B3_ and the name upper case, '-' as '_'.
func FlagEnv(name string) string { return Setting{Name: name}.Env() }

// LoadFlags gives the flags of fs, parsed already, that the command line
// did not set their value from the B3_* environment (FlagEnv) or from
// the YAML file named by the flag --config or else B3_CONFIG, as
// LoadSettings does for b3 server: flag over environment over file over
// default. Every flag of fs has those three spellings, not only the
// settings SharedFlags registers (b3 node's own flags too); a key of the
// file that is no flag of fs is an error. fs must define "config".
// Values are parsed by the flags' Set; an error names the source.
func LoadFlags(fs *flag.FlagSet, getenv func(string) (string, bool)) error {
	cmdline := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { cmdline[f.Name] = true })
	configPath := fs.Lookup("config").Value.String()
	if !cmdline["config"] {
		configPath, _ = getenv("B3_CONFIG")
	}
	file := map[string]string{}
	if configPath != "" {
		var err error
		known := func(k string) bool { return k != "config" && fs.Lookup(k) != nil }
		if file, err = readConfigFile(configPath, known); err != nil {
			return err
		}
	}
	var errs []error
	fs.VisitAll(func(f *flag.Flag) {
		if cmdline[f.Name] || f.Name == "config" {
			return
		}
		v, src := "", ""
		if ev, ok := getenv(FlagEnv(f.Name)); ok {
			v, src = ev, "environment variable "+FlagEnv(f.Name)
		} else if fv, ok := file[f.Name]; ok {
			v, src = fv, fmt.Sprintf("key %s in %s", f.Name, configPath)
		} else {
			return
		}
		if sv, ok := f.Value.(*settingValue); ok {
			sv.src = src
		}
		if err := fs.Set(f.Name, v); err != nil {
			errs = append(errs, fmt.Errorf("setting %s=%q (from %s): %w", f.Name, v, src, err))
		}
	})
	return errors.Join(errs...)
}

// NewLogger returns the slog logger Output asks for.
func (o Output) NewLogger(w io.Writer) *slog.Logger {
	opts := &slog.HandlerOptions{Level: o.LogLevel}
	if o.LogFormat == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// settingValue is a flag holding a setting's text; boolean settings may be
// given as a bare --name.
type settingValue struct {
	s      string
	isBool bool
	src    string // where s came from, when not the command line (LoadFlags)
}

func (v *settingValue) String() string     { return v.s }
func (v *settingValue) Set(s string) error { v.s = s; return nil }
func (v *settingValue) IsBoolFlag() bool   { return v.isBool }

// SharedFlags registers the named settings of b3 server on fs, for another
// command (b3 node) that takes them too: the same flag names, defaults,
// help and parsing. The function it returns resolves them, after
// fs.Parse (and LoadFlags, for their B3_* variables and config file
// keys), into a Config and Output, with b3 server's range checks of
// those settings; an error names the source (flag, variable, file key or
// the default) at fault.
func SharedFlags(fs *flag.FlagSet, names ...string) func() (Config, Output, error) {
	byName := map[string]Setting{}
	for _, s := range Settings() {
		byName[s.Name] = s
	}
	values := map[string]*settingValue{}
	for _, name := range names {
		s, ok := byName[name]
		if !ok {
			panic("server.SharedFlags: no setting " + name)
		}
		v := &settingValue{s: s.Default, isBool: s.Default == "true" || s.Default == "false"}
		fs.Var(v, name, fmt.Sprintf("%s (%s)", s.Help, s.Env()))
		values[name] = v
	}
	return func() (Config, Output, error) {
		set := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
		bad := func(name string, err error) error {
			src := "the default"
			switch {
			case values[name].src != "":
				src = values[name].src
			case set[name]:
				src = "flag --" + name
			}
			if _, secret := secretFlags[name]; secret { // not into logs
				return fmt.Errorf("setting %s (from %s): %w", name, src, err)
			}
			return fmt.Errorf("setting %s=%q (from %s): %w", name, values[name].s, src, err)
		}
		var cfg Config
		out := Output{LogFormat: "text"}
		for _, name := range names {
			if err := byName[name].apply(&cfg, &out, values[name].s); err != nil {
				return Config{}, Output{}, bad(name, err)
			}
		}
		for _, r := range settingRanges() {
			if values[r.name] != nil {
				if err := r.check(&cfg); err != nil {
					return Config{}, Output{}, bad(r.name, err)
				}
			}
		}
		out.Warnings = append(out.Warnings, secretFlagWarnings(fs)...)
		cfg.LogJSON = out.LogFormat == "json"
		return cfg, out, nil
	}
}
