package server

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/b3-storage/b3/internal/blob"
	"github.com/b3-storage/b3/internal/s3api"
)

func TestSettingsPrecedence(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "b3.yaml")
	os.WriteFile(file, []byte("vacuum-interval: 10m\nregion: eu-west-1\nfsync: always\ncache-size: 128MiB\nlog-format: json\naccess-log: true\n"), 0o644)
	env := map[string]string{"B3_CONFIG": file, "B3_REGION": "eu-central-1", "B3_BACKGROUND_WRITE_LIMIT": "20MiB"}
	getenv := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	cfg, out, err := LoadSettings([]string{"--region", "ap-south-1", "--lifecycle-day=1s"}, getenv, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	checks := []struct {
		name      string
		got, want any
	}{
		{"flag over env over file", cfg.Region, "ap-south-1"},
		{"file over default", cfg.VacuumInterval, 10 * time.Minute},
		{"file fsync", cfg.Sync, blob.SyncAlways},
		{"file size", cfg.CacheBytes, int64(128 << 20)},
		{"env size", cfg.Limits.BackgroundWriteBytesPerSec, int64(20 << 20)},
		{"flag duration", cfg.LifecycleDay, time.Second},
		{"default", cfg.Address, "127.0.0.1:9000"},
		{"default bool", cfg.DirectIO, true},
		{"file bool", cfg.AccessLog, true},
		{"log format", out.LogFormat, "json"},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s: got %v, want %v", c.name, c.got, c.want)
		}
	}

	os.WriteFile(file, []byte("no-such-setting: 1\n"), 0o644)
	if _, _, err := LoadSettings(nil, getenv, &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), "no-such-setting") {
		t.Fatalf("unknown file key: %v", err)
	}
	for _, bad := range [][]string{{"--fsync", "sometimes"}, {"--cache-policy", "arc"}, {"--vacuum-interval", "-1s"}, {"--write-limit", "lots"}} {
		if _, _, err := LoadSettings(bad, func(string) (string, bool) { return "", false }, &bytes.Buffer{}); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
}

// TestRegionsSetting: --regions, B3_REGIONS and a YAML list or string.
func TestRegionsSetting(t *testing.T) {
	file := filepath.Join(t.TempDir(), "b3.yaml")
	none := func(string) (string, bool) { return "", false }
	for _, tc := range []struct {
		yaml string
		env  map[string]string
		args []string
		want []string
	}{
		{"regions: [eu-west-1, eu-central-1]\n", nil, nil, []string{"eu-west-1", "eu-central-1"}},
		{"regions:\n  - eu-west-1\n", nil, nil, []string{"eu-west-1"}},
		{"regions: eu-west-1, us-west-2\n", nil, nil, []string{"eu-west-1", "us-west-2"}},
		{"", map[string]string{"B3_REGIONS": "ap-south-1,"}, nil, []string{"ap-south-1"}},
		{"regions: [eu-west-1]\n", nil, []string{"--regions", " us-west-2 , eu-north-1"}, []string{"us-west-2", "eu-north-1"}},
		{"", nil, nil, nil},
	} {
		os.WriteFile(file, []byte(tc.yaml), 0o644)
		getenv := func(k string) (string, bool) {
			if k == "B3_CONFIG" {
				return file, true
			}
			v, ok := tc.env[k]
			return v, ok
		}
		if tc.env == nil && tc.yaml == "" {
			getenv = none
		}
		cfg, _, err := LoadSettings(tc.args, getenv, &bytes.Buffer{})
		if err != nil || !slices.Equal(cfg.Regions, tc.want) {
			t.Errorf("%q %v %v: regions %q (%v), want %q", tc.yaml, tc.env, tc.args, cfg.Regions, err, tc.want)
		}
	}
}

// TestNewBucketSettings: --default-object-ownership and
// --default-block-public-access, from flags, B3_* variables and the YAML
// file; AWS's defaults without them, a warning with weaker ones, and an
// ownership that is none of the three refused.
func TestNewBucketSettings(t *testing.T) {
	file := filepath.Join(t.TempDir(), "b3.yaml")
	legacy := s3api.BucketDefaults{ObjectOwnership: "ObjectWriter", NoPublicAccessBlock: true}
	for _, tc := range []struct {
		name     string
		yaml     string
		env      map[string]string
		args     []string
		want     s3api.BucketDefaults
		warnings int
		fails    bool
	}{
		{"defaults", "", nil, nil, s3api.BucketDefaults{ObjectOwnership: "BucketOwnerEnforced"}, 0, false},
		{"flags", "", nil, []string{"--default-object-ownership", "ObjectWriter", "--default-block-public-access=false"}, legacy, 2, false},
		{"file", "default-object-ownership: ObjectWriter\ndefault-block-public-access: false\n", nil, nil, legacy, 2, false},
		{"env over file", "default-object-ownership: ObjectWriter\n", map[string]string{"B3_DEFAULT_OBJECT_OWNERSHIP": "BucketOwnerPreferred"}, nil,
			s3api.BucketDefaults{ObjectOwnership: "BucketOwnerPreferred"}, 1, false},
		{"flag over file", "default-block-public-access: false\n", nil, []string{"--default-block-public-access=true"}, s3api.BucketDefaults{ObjectOwnership: "BucketOwnerEnforced"}, 0, false},
		{"unknown ownership", "", nil, []string{"--default-object-ownership", "Writer"}, s3api.BucketDefaults{}, 0, true},
		{"not a bool", "default-block-public-access: maybe\n", nil, nil, s3api.BucketDefaults{}, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := os.WriteFile(file, []byte(tc.yaml), 0o644); err != nil {
				t.Fatal(err)
			}
			getenv := func(k string) (string, bool) {
				if k == "B3_CONFIG" {
					return file, true
				}
				v, ok := tc.env[k]
				return v, ok
			}
			cfg, out, err := LoadSettings(tc.args, getenv, &bytes.Buffer{})
			if tc.fails {
				if err == nil {
					t.Fatalf("accepted: %+v", cfg.NewBuckets)
				}
				return
			}
			if err != nil || cfg.NewBuckets != tc.want || len(out.Warnings) != tc.warnings {
				t.Fatalf("%+v, %d warnings %q, %v; want %+v, %d warnings", cfg.NewBuckets, len(out.Warnings), out.Warnings, err, tc.want, tc.warnings)
			}
		})
	}
}

// TestHelpListsEverySetting: --help shows each flag with its variable.
func TestHelpListsEverySetting(t *testing.T) {
	var help bytes.Buffer
	if _, _, err := LoadSettings([]string{"--help"}, func(string) (string, bool) { return "", false }, &help); err == nil {
		t.Fatal("--help did not stop")
	}
	for _, s := range Settings() {
		if !strings.Contains(help.String(), "-"+s.Name) || !strings.Contains(help.String(), s.Env()) {
			t.Errorf("--help lacks %s / %s", s.Name, s.Env())
		}
	}
}

func TestParseBytes(t *testing.T) {
	for in, want := range map[string]int64{"0": 0, "123": 123, "64KiB": 64 << 10, "1.5GiB": 3 << 29, "100MB": 100e6, "2m": 2 << 20, "7 B": 7} {
		if got, err := ParseBytes(in); err != nil || got != want {
			t.Errorf("ParseBytes(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "-1", "x", "1XB"} {
		if _, err := ParseBytes(bad); err == nil {
			t.Errorf("ParseBytes(%q) accepted", bad)
		}
	}
}

// TestExampleConfig: the example shipped in deploy/ is valid.
func TestExampleConfig(t *testing.T) {
	env := func(k string) (string, bool) {
		if k == "B3_CONFIG" {
			return "../../deploy/b3.yaml", true
		}
		return "", false
	}
	cfg, out, err := LoadSettings(nil, env, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Root != "/var/lib/b3" || cfg.Limits.BackgroundWriteBytesPerSec != 40<<20 || out.LogFormat != "json" || cfg.CacheBytes != 256<<20 {
		t.Fatalf("example config read as %+v %+v", cfg, out)
	}
}

// TestDeployAgrees: the systemd unit, the example YAML, the Dockerfile
// and the docs tell the same story: the unit reads /etc/b3/b3.yaml, sets
// no setting of its own that would override the file, may write every
// directory the YAML names, and is rated low exposure by
// `systemd-analyze security`; the image checks its health with b3
// itself and builds without a local data root.
func TestDeployAgrees(t *testing.T) {
	read := func(path string) string {
		data, err := os.ReadFile("../../" + path)
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}
	unit := map[string][]string{}
	for _, line := range strings.Split(read("deploy/b3.service"), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok && !strings.HasPrefix(line, "#") {
			unit[k] = append(unit[k], v)
		}
	}
	if !slices.Contains(unit["ExecStart"], "/usr/local/bin/b3 server --config /etc/b3/b3.yaml") {
		t.Errorf("unit ExecStart %q does not read /etc/b3/b3.yaml", unit["ExecStart"])
	}
	for _, env := range unit["Environment"] {
		if strings.Contains(env, "B3_") {
			t.Errorf("unit sets %s, overriding /etc/b3/b3.yaml", env)
		}
	}
	writable := []string{}
	for _, d := range unit["StateDirectory"] {
		writable = append(writable, "/var/lib/"+d)
	}
	for _, paths := range unit["ReadWritePaths"] {
		writable = append(writable, strings.Fields(paths)...)
	}
	cfg, _, err := LoadSettings([]string{"--config", "../../deploy/b3.yaml"}, func(string) (string, bool) { return "", false }, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{cfg.Root, cfg.MetaDir, cfg.DataDir} {
		ok := dir == ""
		for _, w := range writable {
			ok = ok || dir == w || strings.HasPrefix(dir, w+"/")
		}
		if !ok {
			t.Errorf("deploy/b3.yaml names %s, which the unit cannot write (writable: %v)", dir, writable)
		}
	}
	docs := read("docs/OPERATIONS.md")
	for _, want := range []string{"/etc/b3/b3.yaml", "/var/lib/b3", "systemctl reload b3"} {
		if !strings.Contains(docs, want) {
			t.Errorf("docs/OPERATIONS.md does not mention %s", want)
		}
	}
	if df := read("Dockerfile"); !strings.Contains(df, `HEALTHCHECK`) || !strings.Contains(df, `"/b3", "healthcheck"`) {
		t.Error("Dockerfile lacks a HEALTHCHECK running b3 healthcheck")
	}
	ignored := strings.Fields(read(".dockerignore"))
	for _, want := range []string{"data", ".git"} {
		if !slices.Contains(ignored, want) {
			t.Errorf(".dockerignore does not exclude %s", want)
		}
	}

	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Fatal("systemd-analyze not found: install systemd (scripts/install-test-tools.sh)")
	}
	out, err := exec.Command(analyze, "security", "--offline=true", "../../deploy/b3.service").CombinedOutput()
	m := regexp.MustCompile(`Overall exposure level for b3.service: ([0-9.]+)`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("systemd-analyze security: %v\n%s", err, out)
	}
	if level, _ := strconv.ParseFloat(string(m[1]), 64); level > 2.0 {
		t.Fatalf("systemd-analyze security rates deploy/b3.service %.1f, want 2.0 or less:\n%s", level, out)
	}
}

// TestMaxRetentionSetting: --max-retention, B3_MAX_RETENTION and the
// YAML key max-retention, in days or as a duration; 100 years unless set.
func TestMaxRetentionSetting(t *testing.T) {
	file := filepath.Join(t.TempDir(), "b3.yaml")
	if err := os.WriteFile(file, []byte("max-retention: 10d\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	const day = 24 * time.Hour
	for _, tc := range []struct {
		env  map[string]string
		args []string
		want time.Duration
	}{
		{nil, nil, 36525 * day},
		{map[string]string{"B3_CONFIG": file}, nil, 10 * day},
		{map[string]string{"B3_CONFIG": file, "B3_MAX_RETENTION": "720h"}, nil, 30 * day},
		{map[string]string{"B3_MAX_RETENTION": "720h"}, []string{"--max-retention", "365d"}, 365 * day},
	} {
		getenv := func(k string) (string, bool) { v, ok := tc.env[k]; return v, ok }
		cfg, _, err := LoadSettings(tc.args, getenv, &bytes.Buffer{})
		if err != nil || cfg.MaxRetention != tc.want {
			t.Errorf("%v %v: max retention %v (%v), want %v", tc.env, tc.args, cfg.MaxRetention, err, tc.want)
		}
	}
	for _, bad := range []string{"0d", "0", "-1d", "1.5d", "x", "d", "99999999999999d"} {
		if _, _, err := LoadSettings([]string{"--max-retention", bad}, func(string) (string, bool) { return "", false }, &bytes.Buffer{}); err == nil {
			t.Errorf("--max-retention %q accepted", bad)
		}
	}
}
