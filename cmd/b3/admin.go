package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/b3-storage/b3/internal/admin"
	"github.com/b3-storage/b3/internal/server"
)

const adminUsage = `usage: b3 admin [flags] <command>

commands:
  stats [--objects]          segments (live/dead), vacuum, lifecycle, cache, disk I/O
  users list                 access keys
  users add <name>           new access key (the secret is shown once)
  users remove <access-key>  remove a key added with "users add"
  vacuum start [threshold]   one pass now (threshold: dead ratio, default the server's)
  vacuum stop                cancel a pass and stop the automatic loop
  vacuum auto <interval>     (re)start the automatic loop, e.g. 5m
  vacuum status              progress, dead bytes, and the background pace: rate now and why
  limits get
  limits set name=value...   read, write, background-read, background-write (bytes/s, units KiB MiB GiB)
  cache                      cache statistics
  lifecycle run              one lifecycle pass now
  cluster status [--json]    members of the replica group, health, leader, term, lag (b3 node)
  cluster add ID=ADDR [--json]  add the node waiting at cluster address ADDR (b3 node --join)
  cluster remove ID [--json]    remove a member; it stops serving

flags:
`

// runAdmin is "b3 admin": a client of the admin API.
func runAdmin(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("admin", flag.ContinueOnError)
	fs.SetOutput(stderr)
	env := func(name, def string) string {
		if v, ok := os.LookupEnv(name); ok {
			return v
		}
		return def
	}
	endpoint := fs.String("endpoint", env("B3_ADMIN_ENDPOINT", "http://127.0.0.1:9001"), "admin API (B3_ADMIN_ENDPOINT)")
	token := fs.String("token", env("B3_ADMIN_TOKEN", ""), "admin token (B3_ADMIN_TOKEN; default: read from <data>/admin-token)")
	data := fs.String("data", env("B3_DATA", "data"), "server data root, to find the admin token (B3_DATA)")
	asJSON := fs.Bool("json", false, "print JSON")
	fs.Usage = func() { fmt.Fprint(stderr, adminUsage); fs.PrintDefaults() }
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return 0
		}
		return 2
	}
	if *token == "" {
		b, err := os.ReadFile(filepath.Join(*data, server.AdminTokenFile))
		if err != nil {
			fmt.Fprintf(stderr, "b3 admin: no --token and %v\n", err)
			return 2
		}
		*token = strings.TrimSpace(string(b))
	}
	c := &admin.Client{Endpoint: *endpoint, Token: *token}
	cmd := fs.Args()
	if len(cmd) == 0 {
		fs.Usage()
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	show := func(v any, err error, text func()) int {
		if err != nil {
			fmt.Fprintf(stderr, "b3 admin: %v\n", err)
			return 1
		}
		if *asJSON || text == nil {
			enc := json.NewEncoder(stdout)
			enc.SetIndent("", "  ")
			_ = enc.Encode(v)
			return 0
		}
		text()
		return 0
	}
	arg := func(i int) string {
		if i < len(cmd) {
			return cmd[i]
		}
		return ""
	}
	switch arg(0) + " " + arg(1) {
	case "stats ", "stats --objects", "stats -objects":
		st, err := c.Stats(ctx, arg(1) != "")
		return show(st, err, func() { printStats(stdout, st) })
	case "users list", "users ":
		us, err := c.Users(ctx)
		return show(us, err, func() {
			tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ACCESS KEY\tNAME\tREMOVABLE\tCANONICAL ID")
			for _, u := range us {
				fmt.Fprintf(tw, "%s\t%s\t%v\t%s\n", u.AccessKey, u.Name, u.Managed, u.CanonicalID)
			}
			tw.Flush()
		})
	case "users add":
		u, err := c.AddUser(ctx, arg(2))
		return show(u, err, func() {
			fmt.Fprintf(stdout, "access key: %s\nsecret key: %s\n(the secret is not shown again)\n", u.AccessKey, u.Secret)
		})
	case "users remove":
		err := c.RemoveUser(ctx, arg(2))
		return show(map[string]string{"removed": arg(2)}, err, func() { fmt.Fprintf(stdout, "removed %s\n", arg(2)) })
	case "vacuum start":
		var threshold float64
		if arg(2) != "" {
			var err error
			if threshold, err = strconv.ParseFloat(arg(2), 64); err != nil {
				fmt.Fprintf(stderr, "b3 admin: threshold %q: %v\n", arg(2), err)
				return 2
			}
		}
		err := c.VacuumStart(ctx, threshold)
		return show(map[string]string{"status": "started"}, err, func() { fmt.Fprintln(stdout, "vacuum pass started") })
	case "vacuum stop":
		st, err := c.VacuumStop(ctx)
		return show(st, err, nil)
	case "vacuum auto":
		d, err := time.ParseDuration(arg(2))
		if err != nil {
			fmt.Fprintf(stderr, "b3 admin: interval %q: %v\n", arg(2), err)
			return 2
		}
		st, err := c.VacuumAuto(ctx, d)
		return show(st, err, nil)
	case "vacuum status", "vacuum ":
		st, err := c.VacuumStatus(ctx)
		return show(st, err, nil)
	case "limits get", "limits ":
		l, err := c.Limits(ctx)
		return show(l, err, nil)
	case "limits set":
		l, err := c.Limits(ctx)
		if err != nil {
			return show(nil, err, nil)
		}
		for _, kv := range cmd[2:] {
			name, value, _ := strings.Cut(kv, "=")
			n, err := server.ParseBytes(value)
			if err != nil {
				fmt.Fprintf(stderr, "b3 admin: %s: %v\n", kv, err)
				return 2
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
				fmt.Fprintf(stderr, "b3 admin: unknown limit %q (read, write, background-read, background-write)\n", name)
				return 2
			}
		}
		l, err = c.SetLimits(ctx, l)
		return show(l, err, nil)
	case "cache ":
		st, err := c.Cache(ctx)
		return show(st, err, nil)
	case "lifecycle run":
		res, err := c.LifecycleRun(ctx)
		return show(res, err, nil)
	case "cluster status":
		*asJSON = *asJSON || arg(2) == "--json" || arg(2) == "-json"
		st, err := c.ClusterStatus(ctx)
		return show(st, err, func() { printClusterStatus(stdout, st) })
	case "cluster add", "cluster remove":
		*asJSON = *asJSON || arg(3) == "--json" || arg(3) == "-json"
		var ch admin.ClusterChange
		var err error
		if arg(1) == "add" {
			id, addr, ok := strings.Cut(arg(2), "=")
			if !ok || id == "" || addr == "" {
				fmt.Fprintf(stderr, "b3 admin: cluster add %q: want ID=HOST:PORT (the node's --cluster-address)\n", arg(2))
				return 2
			}
			ch, err = c.AddClusterMember(ctx, id, addr)
		} else {
			ch, err = c.RemoveClusterMember(ctx, arg(2))
		}
		return show(ch, err, func() { printClusterChange(stdout, ch) })
	}
	fmt.Fprintf(stderr, "b3 admin: unknown command %q\n\n", strings.Join(cmd, " "))
	fs.Usage()
	return 2
}

func printStats(w io.Writer, st admin.Stats) {
	if o := st.Objects; o != nil {
		fmt.Fprintf(w, "objects: %d in %d buckets, %d bytes\n", o.Objects, o.Buckets, o.Bytes)
	}
	v := st.Vacuum
	fmt.Fprintf(w, "segments: %d, %d bytes, %d dead (%.1f%%)\n", len(st.Segments), v.TotalBytes, v.DeadBytes, pct(v.DeadBytes, v.TotalBytes))
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "  SEGMENT\tSIZE\tLIVE\tDEAD\tDEAD%\t")
	for _, s := range st.Segments {
		active := ""
		if s.Active {
			active = " (active)"
		}
		fmt.Fprintf(tw, "  %d%s\t%d\t%d\t%d\t%.1f\t\n", s.ID, active, s.Size, s.Size-s.DeadBytes, s.DeadBytes, pct(s.DeadBytes, s.Size))
	}
	tw.Flush()
	fmt.Fprintf(w, "vacuum: running=%v auto=%v threshold=%.0f%% removed=%d reclaimed=%d copied=%d last=%s %s\n",
		v.Running, v.Auto, v.ThresholdPercent, v.SegmentsRemoved, v.BytesReclaimed, v.BytesCopied, fmtTime(v.LastPass), v.LastError)
	fmt.Fprintf(w, "background pace: %s\n", v.Pace)
	l := st.Lifecycle
	fmt.Fprintf(w, "lifecycle: passes=%d expired=%d aborted=%d reevaluated=%d day=%s last=%s %s\n",
		l.Passes, l.Expired, l.Aborted, l.Reevaluated, l.Day, fmtTime(l.LastPass), l.LastError)
	c := st.Cache
	fmt.Fprintf(w, "cache: %s %d/%d bytes, %d entries, hits=%d misses=%d evictions=%d\n",
		c.Policy, c.Bytes, c.MaxBytes, c.Entries, c.Hits, c.Misses, c.Evictions)
	fmt.Fprintf(w, "disk I/O bytes: read fg=%d bg=%d, write fg=%d bg=%d\n",
		st.IO.Read.Foreground.Bytes, st.IO.Read.Background.Bytes, st.IO.Write.Foreground.Bytes, st.IO.Write.Background.Bytes)
	fmt.Fprintf(w, "limits (bytes/s, 0 = none): read=%d write=%d background-read=%d background-write=%d\n",
		st.Limits.ReadBytesPerSec, st.Limits.WriteBytesPerSec, st.Limits.BackgroundReadBytesPerSec, st.Limits.BackgroundWriteBytesPerSec)
	b := st.Blob
	mean := 0.0
	if b.Fsyncs > 0 {
		mean = float64(b.FsyncNanos) / float64(b.Fsyncs) / 1e6
	}
	fmt.Fprintf(w, "fsyncs: %d (mean %.2f ms, max %.2f ms), group commits %d\n", b.Fsyncs, mean, float64(b.FsyncMaxNanos)/1e6, b.GroupCommits)
}

func pct(part, whole int64) float64 {
	if whole == 0 {
		return 0
	}
	return 100 * float64(part) / float64(whole)
}

func fmtTime(t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	return t.Format(time.RFC3339)
}
