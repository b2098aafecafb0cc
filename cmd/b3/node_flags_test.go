package main

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/b3-storage/b3/internal/cache"
	"github.com/b3-storage/b3/internal/s3api"
	"github.com/b3-storage/b3/internal/server"
)

// TestNodeTakesServerSettings: every setting of b3 server is a flag of
// b3 node or one of nodeExceptions, and docs/CLUSTER.md lists each
// exception. A new server setting fails here until the node takes it or
// the table says why not.
func TestNodeTakesServerSettings(t *testing.T) {
	var help bytes.Buffer
	if _, code := parseNode([]string{"--help"}, func(string) (string, bool) { return "", false }, &help); code != 0 {
		t.Fatalf("--help: exit %d", code)
	}
	takes := func(name string) bool {
		return strings.Contains(help.String(), "\n  -"+name+" ") || strings.Contains(help.String(), "\n  -"+name+"\n")
	}
	docs, err := os.ReadFile("../../docs/CLUSTER.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range server.Settings() {
		why, exception := nodeExceptions[s.Name]
		switch {
		case exception && takes(s.Name):
			t.Errorf("--%s is a flag of b3 node and listed in nodeExceptions (%s): drop it from the table", s.Name, why)
		case !exception && !takes(s.Name):
			t.Errorf("b3 server's --%s is no flag of b3 node: add it (server.SharedFlags in node.go) or list it in nodeExceptions and docs/CLUSTER.md with the reason", s.Name)
		case exception && !strings.Contains(string(docs), "| `--"+s.Name+"` |"):
			t.Errorf("docs/CLUSTER.md lacks a row `| `--%s` | ...` in its table of b3 server settings b3 node does not take", s.Name)
		}
	}
	for name := range nodeExceptions {
		if !slices.ContainsFunc(server.Settings(), func(s server.Setting) bool { return s.Name == name }) {
			t.Errorf("nodeExceptions lists %s, which is no setting of b3 server", name)
		}
	}
}

// TestNodeSettingsPrecedence: b3 node reads its settings, its own and
// those it shares with b3 server, from flags, B3_* variables and the
// YAML file of --config (or B3_CONFIG), in that precedence.
func TestNodeSettingsPrecedence(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "node.yaml")
	yaml := "id: n1\npeers: n1=127.0.0.1:9100,n2=127.0.0.1:9101\ncluster-address: 127.0.0.1:9100\n" +
		"region: eu-west-1\nregions: [eu-central-1, us-west-2]\ndomain: S3.Example.COM\nvacuum-threshold: 0.25\n" +
		"cache-size: 8MiB\ncache-policy: lru\naccess-log: true\nmeta-dir: /ssd/meta\nsnapshot-threshold: 100\n" +
		"vacuum-interval: 1m\nbucket-metrics: 7\nmin-free-space: 2GiB\nlog-format: json\n" +
		"default-object-ownership: ObjectWriter\ndefault-block-public-access: false\n"
	if err := os.WriteFile(file, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"B3_CONFIG": file, "B3_DATA": "/env/data", "B3_DATA_DIR": "/hdd/segments",
		"B3_CACHE_SIZE": "16MiB", "B3_REGION": "eu-north-1", "B3_ACCESS_KEY": "AK", "B3_SECRET_KEY": "SK-SK-SK-SK-SK-SK", "B3_ADMIN_TOKEN": "tok-tok-tok-tok-tok",
		"B3_CLUSTER_SECRET": "secret-secret-secret"}
	getenv := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	var stderr bytes.Buffer
	cfg, code := parseNode([]string{"--region", "ap-south-1", "--vacuum-threshold=0.75"}, getenv, &stderr)
	if code != -1 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	checks := []struct {
		name      string
		got, want any
	}{
		{"flag over env over file", cfg.Region, "ap-south-1"},
		{"shared flag over file", cfg.VacuumThreshold, 0.75},
		{"env over file", cfg.CacheBytes, int64(16 << 20)},
		{"env", cfg.Root, "/env/data"},
		{"env shared", cfg.DataDir, "/hdd/segments"},
		{"file shared", cfg.MetaDir, "/ssd/meta"},
		{"file own", cfg.ID, "n1"},
		{"file own peers", len(cfg.Peers), 2},
		{"file own uint", cfg.SnapshotThreshold, uint64(100)},
		{"file own duration", cfg.VacuumInterval, time.Minute},
		{"file own size", cfg.MinFreeBytes, int64(2 << 30)},
		{"file list", strings.Join(cfg.Regions, ","), "eu-central-1,us-west-2"},
		{"file domain, lower case", strings.Join(cfg.Domains, ","), "s3.example.com"},
		{"file bool", cfg.AccessLog, true},
		{"file policy", cfg.CachePolicy, cache.LRU},
		{"default", cfg.CacheMaxObject, int64(1 << 20)},
		{"file int", cfg.BucketMetrics, 7},
		{"default duration", cfg.BucketMetricsInterval, 5 * time.Minute},
		{"file log format", cfg.LogJSON, true},
		{"file new-bucket defaults", cfg.NewBuckets, s3api.BucketDefaults{ObjectOwnership: "ObjectWriter", NoPublicAccessBlock: true}},
		{"env keys", cfg.AccessKey + "/" + cfg.SecretKey + "/" + cfg.AdminToken, "AK/SK-SK-SK-SK-SK-SK/tok-tok-tok-tok-tok"},
		{"env secret", cfg.ClusterSecret, "secret-secret-secret"},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s: got %v, want %v", c.name, c.got, c.want)
		}
	}

	// --config on the command line over B3_CONFIG.
	other := filepath.Join(dir, "other.yaml")
	os.WriteFile(other, []byte("id: n2\npeers: n2=127.0.0.1:9101\ncluster-address: 127.0.0.1:9101\ndata: /x\n"), 0o600)
	if cfg, code := parseNode([]string{"--config", other}, getenv, &stderr); code != -1 || cfg.ID != "n2" {
		t.Errorf("--config over B3_CONFIG: id %q, exit %d: %s", cfg.ID, code, stderr.String())
	}

	for _, tc := range []struct {
		yaml string
		env  map[string]string
		args []string
		want string
	}{
		{"users: a:b:c\n", nil, nil, `unknown setting "users"`},
		{"no-such-setting: 1\n", nil, nil, `unknown setting "no-such-setting"`},
		{"cache-policy: arc\n", nil, nil, "cache-policy=\"arc\" (from key cache-policy in "},
		{"", map[string]string{"B3_VACUUM_THRESHOLD": "2"}, nil, "(from environment variable B3_VACUUM_THRESHOLD)"},
		{"", map[string]string{"B3_SNAPSHOT_THRESHOLD": "many"}, nil, "(from environment variable B3_SNAPSHOT_THRESHOLD)"},
		{"", nil, []string{"--cache-max-object", "2MiB", "--cache-size", "1MiB"}, "larger than --cache-size"},
		{"", map[string]string{"B3_ACCESS_KEY": "AK"}, nil, "give both of --access-key and --secret-key"},
	} {
		os.WriteFile(file, []byte("id: n1\npeers: n1=127.0.0.1:9100\ncluster-address: 127.0.0.1:9100\ndata: /d\n"+tc.yaml), 0o600)
		getenv := func(k string) (string, bool) {
			if k == "B3_CONFIG" {
				return file, true
			}
			v, ok := tc.env[k]
			return v, ok
		}
		var stderr bytes.Buffer
		if _, code := parseNode(tc.args, getenv, &stderr); code != 2 || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("%q %v %v: exit %d, %q; want exit 2 and %q", tc.yaml, tc.env, tc.args, code, stderr.String(), tc.want)
		}
	}
}
