package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/b3-storage/b3/internal/admin"
	"github.com/b3-storage/b3/internal/server"
)

// adminCommand is one `b3 admin` command. Adding a command is adding an
// entry to adminCommands; its JSON shape goes into docs/OPERATIONS.md
// (TestAdminJSONShapes checks the two agree).
type adminCommand struct {
	name    string   // words, e.g. "users add"
	args    string   // positional arguments, for the usage text
	summary string   // one line
	flags   []string // command flags it accepts (see adminFlags)
	nargs   [2]int   // least and most positional arguments
	run     func(a *adminCall) (result any, table func(io.Writer), err error)
}

// adminCommands lists every command, in usage order. A command's bare
// first word ("users", "vacuum", ...) runs the entry marked default.
func adminCommands() []adminCommand {
	return []adminCommand{
		{name: "stats", summary: "segments (live/dead), vacuum, lifecycle, cache, disk I/O, fsync", flags: []string{"objects"}, run: adminStats},
		{name: "users list", summary: "access keys", run: adminUsersList},
		{name: "users add", args: "<name>", summary: "new access key (the secret is shown once)", nargs: [2]int{1, 1}, run: adminUsersAdd},
		{name: "users remove", args: "<access-key>", summary: "remove a key; one owning buckets needs --new-owner <access-key> or --force",
			flags: []string{"new-owner", "force"}, nargs: [2]int{1, 1}, run: adminUsersRemove},
		{name: "buckets list", summary: "every bucket with owner, objects and bytes (scans the metadata)", run: adminBucketsList},
		{name: "buckets chown", args: "<bucket> <access-key>", summary: "give a bucket to another user", nargs: [2]int{2, 2}, run: adminBucketsChown},
		{name: "buckets hls", args: "<bucket> on|off", summary: "make a bucket a Low-Latency HLS origin, or stop (docs/HLS.md)", nargs: [2]int{2, 2}, run: adminBucketsHLS},
		{name: "buckets delete", args: "<bucket>", summary: "delete a bucket; --force deletes its objects and uploads first",
			flags: []string{"force"}, nargs: [2]int{1, 1}, run: adminBucketsDelete},
		{name: "vacuum status", summary: "progress, dead bytes, and the background pace: rate now and why", run: adminVacuumStatus},
		{name: "vacuum start", args: "[threshold]", summary: "one pass now (threshold: dead ratio, default the server's)", nargs: [2]int{0, 1}, run: adminVacuumStart},
		{name: "vacuum stop", summary: "cancel a pass and stop the automatic loop (kept over restarts)", run: adminVacuumStop},
		{name: "vacuum auto", args: "<interval>", summary: "(re)start the automatic loop, e.g. 5m (kept over restarts)", nargs: [2]int{1, 1}, run: adminVacuumAuto},
		{name: "limits get", summary: "disk I/O limits in force", run: adminLimitsGet},
		{name: "limits set", args: "name=value...", summary: "read, write, background-read, background-write (bytes/s, KiB MiB GiB; kept over restarts)", nargs: [2]int{1, 4}, run: adminLimitsSet},
		{name: "settings list", summary: "runtime-changeable settings: in force, configured, overridden", run: adminSettingsList},
		{name: "settings reset", summary: "drop every runtime override: back to the configuration", run: adminSettingsReset},
		{name: "cache stats", summary: "object cache: size, bound, hits, misses, evictions", run: adminCache},
		{name: "cache set", summary: "resize the object cache: --size 256MiB (0 = off; a smaller size evicts at once; kept over restarts)",
			flags: []string{"size"}, run: adminCacheSet},
		{name: "lifecycle run", summary: "one lifecycle pass now", run: adminLifecycleRun},
		{name: "scrub status", summary: "the scrub: pass under way or last, counts, and the damaged objects with their damaged bytes", run: adminScrubStatus},
		{name: "scrub start", summary: "a scrub pass now: every segment record's CRCs, every object's extents (paced like vacuum)", run: adminScrubStart},
		{name: "kms status", summary: "master keys (names), the default key, and the key rotation job", run: adminKMSStatus},
		{name: "kms rotate", summary: "re-seal data keys under another master key in the background, no data rewritten: --from <key> (default: every SSE-S3 key not under --to) --to <key> (default: the default key)",
			flags: []string{"from", "to"}, run: adminKMSRotate},
		{name: "cluster status", summary: "members of the replica group, health, leader, term, lag (b3 node)", run: adminClusterStatus},
		{name: "cluster rebalance", args: "pause|resume|cancel|status", summary: "partition moves between groups: pause (those under way finish), resume, cancel (end those under way where they are, and pause), or whether the cluster is balanced",
			nargs: [2]int{1, 1}, run: adminClusterRebalance},
		{name: "cluster drain", args: "<group>", summary: "move every partition of a group to the others (it can be stopped once it owns none); --stop ends a drain",
			nargs: [2]int{1, 1}, flags: []string{"stop"}, run: adminClusterDrain},
		{name: "cluster add", args: "<id>=<host:port>", summary: "add the node waiting at that cluster address (b3 node --join)", nargs: [2]int{1, 1}, run: adminClusterAdd},
		{name: "cluster remove", args: "<id>", summary: "remove a member; it stops serving", nargs: [2]int{1, 1}, run: adminClusterRemove},
		{name: "cluster declare-lost", summary: "the group waits for object bytes no member holds: remove that version everywhere so it goes on (asks first; --yes)",
			flags: []string{"yes", "gone"}, run: adminClusterDeclareLost},
	}
}

// adminDefaults maps a bare first word to its command.
var adminDefaults = map[string]string{
	"users": "users list", "buckets": "buckets list", "vacuum": "vacuum status",
	"limits": "limits get", "settings": "settings list", "cache": "cache stats", "kms": "kms status",
	"scrub": "scrub status",
}

// adminFlags are every flag of `b3 admin`; they may appear anywhere on
// the line. Connection flags fall back to B3_ADMIN_* variables, then to
// the config file (adminConfigPath).
type adminFlags struct {
	url, token, caCert, data, config string
	json                             bool
	// command flags
	objects, force, yes, stop bool
	newOwner, size            string
	gone                      string
	from, to                  string
}

func (f *adminFlags) register(fs *flag.FlagSet) map[string]bool {
	fs.StringVar(&f.url, "url", "", "admin API URL (B3_ADMIN_URL; config file url; default http://127.0.0.1:9001)")
	fs.StringVar(&f.url, "endpoint", "", "same as --url")
	fs.StringVar(&f.token, "token", "", "admin token (B3_ADMIN_TOKEN; config file token; else <data>/admin-token)")
	fs.StringVar(&f.caCert, "ca-cert", "", "PEM file of the CA that signed an https admin listener (B3_ADMIN_CA_CERT; config file ca_cert)")
	fs.StringVar(&f.data, "data", "", "server data root, to read admin-token from when no token is given (B3_DATA)")
	fs.StringVar(&f.config, "config", "", "config file (B3_ADMIN_CONFIG; default "+adminConfigPath()+")")
	fs.BoolVar(&f.json, "json", false, "print JSON (documented in docs/OPERATIONS.md) instead of a table")
	fs.BoolVar(&f.objects, "objects", false, "stats: also count objects and bytes (a full metadata scan)")
	fs.BoolVar(&f.force, "force", false, "users remove: leave the user's buckets to the root user; buckets delete: delete the contents too")
	fs.StringVar(&f.newOwner, "new-owner", "", "users remove: access key that gets the user's buckets")
	fs.StringVar(&f.size, "size", "", "cache set: the object cache's new size (bytes, KiB MiB GiB; 0 = off)")
	fs.BoolVar(&f.yes, "yes", false, "cluster declare-lost: do not ask for a confirmation")
	fs.StringVar(&f.gone, "gone", "", "cluster declare-lost: members gone for good (id,id...): the leader does not wait for their answer")
	fs.BoolVar(&f.stop, "stop", false, "cluster drain: end the drain of the group (its share comes back)")
	fs.StringVar(&f.from, "from", "", "kms rotate: the master key whose data keys are re-sealed (default: every SSE-S3 key not under --to)")
	fs.StringVar(&f.to, "to", "", "kms rotate: the master key that seals them (default: the default key)")
	return map[string]bool{"objects": true, "force": true, "new-owner": true, "size": true, "yes": true, "gone": true, "stop": true, "from": true, "to": true}
}

// adminConfig is the file `b3 admin` reads its connection from when
// neither flags nor variables give it.
type adminConfig struct {
	URL    string `yaml:"url"`
	Token  string `yaml:"token"`
	CACert string `yaml:"ca_cert"`
}

// adminConfigPath is <user config dir>/b3/admin.yaml
// (~/.config/b3/admin.yaml on Linux).
func adminConfigPath() string {
	dir, err := os.UserConfigDir()
	if err != nil {
		return filepath.Join("~", ".config", "b3", "admin.yaml")
	}
	return filepath.Join(dir, "b3", "admin.yaml")
}

// adminCall is one run of a command.
type adminCall struct {
	ctx    context.Context
	c      *admin.Client
	args   []string
	flags  *adminFlags
	stdin  io.Reader // a confirmation's answer
	stderr io.Writer
}

func (a *adminCall) arg(i int) string {
	if i < len(a.args) {
		return a.args[i]
	}
	return ""
}

// usageError is a wrong command line: exit status 2.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func adminUsage(w io.Writer, fs *flag.FlagSet) {
	fmt.Fprintln(w, "usage: b3 admin <command> [arguments] [flags]   (flags may come anywhere)\n\ncommands:")
	for _, c := range adminCommands() {
		fmt.Fprintf(w, "  %-42s %s\n", strings.TrimSpace(c.name+" "+c.args), c.summary)
	}
	fmt.Fprintf(w, "\nThe server and token come from --url/--token, else B3_ADMIN_URL/B3_ADMIN_TOKEN,\nelse the config file %s (url:, token:, ca_cert:).\n\nflags:\n", adminConfigPath())
	fs.PrintDefaults()
}

// parseAnywhere parses flags wherever they are among the positional
// arguments; everything after "--" is positional.
func parseAnywhere(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		rest := args
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		if len(rest) > len(args) && rest[len(rest)-len(args)-1] == "--" {
			return append(pos, args...), nil
		}
		pos, args = append(pos, args[0]), args[1:]
	}
}

// runAdmin is "b3 admin": a client of the admin API.
func runAdmin(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("b3 admin", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var f adminFlags
	commandFlags := f.register(fs)
	fs.Usage = func() { adminUsage(stderr, fs) }
	pos, err := parseAnywhere(fs, args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	fail := func(code int, format string, a ...any) int {
		fmt.Fprintf(stderr, "b3 admin: "+format+"\n", a...)
		return code
	}
	if len(pos) == 0 {
		fs.Usage()
		return 2
	}
	cmd, rest, ok := findAdminCommand(pos)
	if !ok {
		fmt.Fprintf(stderr, "b3 admin: unknown command %q\n\n", strings.Join(pos, " "))
		fs.Usage()
		return 2
	}
	if len(rest) < cmd.nargs[0] || len(rest) > cmd.nargs[1] {
		return fail(2, "usage: b3 admin %s %s", cmd.name, cmd.args)
	}
	var bad []string
	fs.Visit(func(fl *flag.Flag) {
		if commandFlags[fl.Name] && !contains(cmd.flags, fl.Name) {
			bad = append(bad, "--"+fl.Name)
		}
	})
	if len(bad) > 0 {
		return fail(2, "%s does not take %s", cmd.name, strings.Join(bad, ", "))
	}
	c, err := f.client()
	if err != nil {
		return fail(2, "%v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	result, table, err := cmd.run(&adminCall{ctx: ctx, c: c, args: rest, flags: &f, stdin: os.Stdin, stderr: stderr})
	var ue usageError
	switch {
	case errors.As(err, &ue):
		return fail(2, "%v", err)
	case err != nil:
		return fail(1, "%v", err)
	case f.json || table == nil:
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(result)
	default:
		table(stdout)
	}
	return 0
}

func findAdminCommand(pos []string) (adminCommand, []string, bool) {
	if name, ok := adminDefaults[pos[0]]; ok && (len(pos) == 1 || !isSubcommand(pos[0], pos[1])) {
		pos = append(strings.Fields(name), pos[1:]...)
	}
	for _, c := range adminCommands() {
		words := strings.Fields(c.name)
		if len(pos) >= len(words) && strings.Join(pos[:len(words)], " ") == c.name {
			return c, pos[len(words):], true
		}
	}
	return adminCommand{}, nil, false
}

func isSubcommand(first, second string) bool {
	for _, c := range adminCommands() {
		if c.name == first+" "+second {
			return true
		}
	}
	return false
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// client resolves the connection: flags, then B3_ADMIN_URL /
// B3_ADMIN_TOKEN / B3_ADMIN_CA_CERT, then the config file; a token may
// last come from <data>/admin-token.
func (f *adminFlags) client() (*admin.Client, error) {
	path, explicit := f.config, f.config != ""
	if !explicit {
		if v := os.Getenv("B3_ADMIN_CONFIG"); v != "" {
			path, explicit = v, true
		} else {
			path = adminConfigPath()
		}
	}
	var file adminConfig
	data, err := os.ReadFile(path)
	switch {
	case err == nil:
		if err := yaml.Unmarshal(data, &file); err != nil {
			return nil, fmt.Errorf("config file %s: %w", path, err)
		}
	case explicit || !errors.Is(err, os.ErrNotExist):
		return nil, fmt.Errorf("config file: %w", err)
	}
	pick := func(flagValue string, env []string, fileValue, def string) string {
		if flagValue != "" {
			return flagValue
		}
		for _, e := range env {
			if v := os.Getenv(e); v != "" {
				return v
			}
		}
		if fileValue != "" {
			return fileValue
		}
		return def
	}
	url := pick(f.url, []string{"B3_ADMIN_URL", "B3_ADMIN_ENDPOINT"}, file.URL, "http://127.0.0.1:9001")
	token := pick(f.token, []string{"B3_ADMIN_TOKEN"}, file.Token, "")
	caCert := pick(f.caCert, []string{"B3_ADMIN_CA_CERT"}, file.CACert, "")
	if token == "" {
		dataDir := pick(f.data, []string{"B3_DATA"}, "", "data")
		b, err := os.ReadFile(filepath.Join(dataDir, server.AdminTokenFile))
		if err != nil {
			return nil, fmt.Errorf("no admin token: give --token, B3_ADMIN_TOKEN or token: in %s (%v)", path, err)
		}
		token = strings.TrimSpace(string(b))
	}
	hc := &http.Client{Timeout: 10 * time.Minute}
	if caCert != "" {
		pem, err := os.ReadFile(caCert)
		if err != nil {
			return nil, fmt.Errorf("CA certificate: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("CA certificate %s: no PEM certificate", caCert)
		}
		hc.Transport = &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}
	}
	return &admin.Client{Endpoint: url, Token: token, HTTP: hc, Actor: actorName()}, nil
}

// actorName is user@host, sent for the server's audit log.
func actorName() string {
	name := "unknown"
	if u, err := user.Current(); err == nil {
		name = u.Username
	}
	host, _ := os.Hostname()
	return name + "@" + host
}

func adminVacuumStart(a *adminCall) (any, func(io.Writer), error) {
	var threshold float64
	if a.arg(0) != "" {
		var err error
		if threshold, err = strconv.ParseFloat(a.arg(0), 64); err != nil {
			return nil, nil, usageError{fmt.Sprintf("threshold %q: %v", a.arg(0), err)}
		}
	}
	if err := a.c.VacuumStart(a.ctx, threshold); err != nil {
		return nil, nil, err
	}
	res := vacuumStarted{Status: "started", Threshold: threshold}
	return res, func(w io.Writer) { fmt.Fprintln(w, "vacuum pass started") }, nil
}

func adminVacuumAuto(a *adminCall) (any, func(io.Writer), error) {
	d, err := time.ParseDuration(a.arg(0))
	if err != nil || d <= 0 {
		return nil, nil, usageError{fmt.Sprintf("interval %q: want a positive duration such as 5m", a.arg(0))}
	}
	st, err := a.c.VacuumAuto(a.ctx, d)
	return vacuumView(st), printVacuum(vacuumView(st)), err
}

func adminLimitsSet(a *adminCall) (any, func(io.Writer), error) {
	l, err := a.c.Limits(a.ctx)
	if err != nil {
		return nil, nil, err
	}
	for _, kv := range a.args {
		name, value, _ := strings.Cut(kv, "=")
		n, err := server.ParseBytes(value)
		if err != nil {
			return nil, nil, usageError{fmt.Sprintf("%s: %v", kv, err)}
		}
		switch name {
		case "read":
			l.ReadBytesPerSec = n
		case "write":
			l.WriteBytesPerSec = n
		case "background-read":
			l.BackgroundReadBytesPerSec = n
		case "background-write":
			l.BackgroundWriteBytesPerSec = n
		default:
			return nil, nil, usageError{fmt.Sprintf("unknown limit %q (read, write, background-read, background-write)", name)}
		}
	}
	l, err = a.c.SetLimits(a.ctx, l)
	doc := admin.LimitsDocOf(l)
	return doc, printLimits(doc), err
}
