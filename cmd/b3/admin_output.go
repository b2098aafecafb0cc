package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/b3-storage/b3/internal/admin"
	"github.com/b3-storage/b3/internal/cache"
	"github.com/b3-storage/b3/internal/iolimit"
	"github.com/b3-storage/b3/internal/objstore"
	"github.com/b3-storage/b3/internal/server"
	"github.com/b3-storage/b3/internal/sse"
)

// The JSON `b3 admin --json` prints: snake_case, documented command by
// command in docs/OPERATIONS.md, stable across releases (fields may be
// added, none renamed or removed). A time that never happened is null.

type vacuumStarted struct {
	Status    string  `json:"status"`
	Threshold float64 `json:"threshold"` // 0: the server's
}

type paceJSON struct {
	BytesPerSecond    int64   `json:"bytes_per_second"` // 0: unpaced
	Reason            string  `json:"reason"`
	MinBytesPerSecond int64   `json:"min_bytes_per_second"`
	ClientsInFlight   int     `json:"clients_in_flight"`
	ClientUtilization float64 `json:"client_utilization"`
}

type vacuumJSON struct {
	Running          bool       `json:"running"`
	Auto             bool       `json:"auto"`
	CurrentSegment   uint64     `json:"current_segment"`
	SegmentsRemoved  int64      `json:"segments_removed"`
	BytesReclaimed   int64      `json:"bytes_reclaimed"`
	BytesCopied      int64      `json:"bytes_copied"`
	LastPass         *time.Time `json:"last_pass"`
	LastError        string     `json:"last_error"`
	DeadBytes        int64      `json:"dead_bytes"`
	TotalBytes       int64      `json:"total_bytes"`
	ThresholdPercent float64    `json:"threshold_percent"`
	Held             bool       `json:"held_for_recovery"`
	Pace             paceJSON   `json:"pace"`
}

type lifecycleJSON struct {
	Running        bool       `json:"running"`
	Auto           bool       `json:"auto"`
	Passes         int64      `json:"passes"`
	Expired        int64      `json:"expired"`
	Aborted        int64      `json:"aborted"`
	Reevaluated    int64      `json:"reevaluated"`
	ScannedObjects int64      `json:"scanned_objects"`
	LastPass       *time.Time `json:"last_pass"`
	LastPassTook   float64    `json:"last_pass_seconds"`
	LastError      string     `json:"last_error"`
	DaySeconds     float64    `json:"day_seconds"`
}

type cacheJSON struct {
	Policy         string `json:"policy"`
	Bytes          int64  `json:"bytes"`
	MaxBytes       int64  `json:"max_bytes"`
	MaxObjectBytes int64  `json:"max_object_bytes"`
	Entries        int64  `json:"entries"`
	Hits           int64  `json:"hits"`
	Misses         int64  `json:"misses"`
	Inserts        int64  `json:"inserts"`
	Evictions      int64  `json:"evictions"`
	Invalidations  int64  `json:"invalidations"`
	Refused        int64  `json:"refused"`
}

type ioClassJSON struct {
	Bytes       int64   `json:"bytes"`
	Waits       int64   `json:"waits"`
	WaitSeconds float64 `json:"wait_seconds"`
}

type ioDirJSON struct {
	Foreground ioClassJSON `json:"foreground"`
	Background ioClassJSON `json:"background"`
}

type segmentJSON struct {
	ID        uint64 `json:"id"`
	Bytes     int64  `json:"bytes"`
	DeadBytes int64  `json:"dead_bytes"`
	Active    bool   `json:"active"`
}

type fsyncJSON struct {
	Count        int64   `json:"count"`
	MeanSeconds  float64 `json:"mean_seconds"`
	MaxSeconds   float64 `json:"max_seconds"`
	GroupCommits int64   `json:"group_commits"`
}

type statsJSON struct {
	UptimeSeconds float64              `json:"uptime_seconds"`
	Objects       *admin.ObjectCounts  `json:"objects"` // null without --objects
	Segments      []segmentJSON        `json:"segments"`
	Vacuum        vacuumJSON           `json:"vacuum"`
	Lifecycle     lifecycleJSON        `json:"lifecycle"`
	Cache         cacheJSON            `json:"cache"`
	DiskIO        map[string]ioDirJSON `json:"disk_io"` // "read", "write"
	Limits        admin.LimitsDoc      `json:"limits"`
	Fsync         fsyncJSON            `json:"fsync"`
}

type userJSON struct {
	Name        string `json:"name"`
	AccessKey   string `json:"access_key"`
	CanonicalID string `json:"canonical_id"`
	Managed     bool   `json:"managed"`
	Admin       bool   `json:"admin"`
}

type userAddedJSON struct {
	Name      string `json:"name"`
	AccessKey string `json:"access_key"`
	SecretKey string `json:"secret_key"`
}

func timeOrNull(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

func vacuumView(v objstore.VacuumStatus) vacuumJSON {
	return vacuumJSON{Running: v.Running, Auto: v.Auto, CurrentSegment: v.CurrentSegment, SegmentsRemoved: v.SegmentsRemoved,
		BytesReclaimed: v.BytesReclaimed, BytesCopied: v.BytesCopied, LastPass: timeOrNull(v.LastPass), LastError: v.LastError,
		DeadBytes: v.DeadBytes, TotalBytes: v.TotalBytes, ThresholdPercent: v.ThresholdPercent, Held: v.Held,
		Pace: paceJSON{BytesPerSecond: v.Pace.BytesPerSec, Reason: string(v.Pace.Reason), MinBytesPerSecond: v.Pace.MinBytesPerSec,
			ClientsInFlight: v.Pace.ClientsInFlight, ClientUtilization: v.Pace.ClientUtilization}}
}

func cacheView(c cache.Stats) cacheJSON {
	return cacheJSON{Policy: string(c.Policy), Bytes: c.Bytes, MaxBytes: c.MaxBytes, MaxObjectBytes: c.MaxObjectSize, Entries: c.Entries,
		Hits: c.Hits, Misses: c.Misses, Inserts: c.Inserts, Evictions: c.Evictions, Invalidations: c.Invalidations, Refused: c.Refused}
}

func statsView(st admin.Stats) statsJSON {
	l := st.Lifecycle
	io := func(c iolimit.Counters) ioClassJSON {
		return ioClassJSON{Bytes: c.Bytes, Waits: c.Waits, WaitSeconds: c.WaitTime.Seconds()}
	}
	out := statsJSON{UptimeSeconds: st.Uptime.Seconds(), Objects: st.Objects, Segments: []segmentJSON{}, Vacuum: vacuumView(st.Vacuum),
		Lifecycle: lifecycleJSON{Running: l.Running, Auto: l.Auto, Passes: l.Passes, Expired: l.Expired, Aborted: l.Aborted,
			Reevaluated: l.Reevaluated, ScannedObjects: l.ScannedObjects, LastPass: timeOrNull(l.LastPass),
			LastPassTook: l.LastPassTook.Seconds(), LastError: l.LastError, DaySeconds: l.Day.Seconds()},
		Cache: cacheView(st.Cache),
		DiskIO: map[string]ioDirJSON{
			"read":  {Foreground: io(st.IO.Read.Foreground), Background: io(st.IO.Read.Background)},
			"write": {Foreground: io(st.IO.Write.Foreground), Background: io(st.IO.Write.Background)},
		},
		Limits: admin.LimitsDocOf(st.Limits),
		Fsync:  fsyncJSON{Count: st.Blob.Fsyncs, MaxSeconds: float64(st.Blob.FsyncMaxNanos) / 1e9, GroupCommits: st.Blob.GroupCommits},
	}
	if st.Blob.Fsyncs > 0 {
		out.Fsync.MeanSeconds = float64(st.Blob.FsyncNanos) / float64(st.Blob.Fsyncs) / 1e9
	}
	for _, s := range st.Segments {
		out.Segments = append(out.Segments, segmentJSON{ID: s.ID, Bytes: s.Size, DeadBytes: s.DeadBytes, Active: s.Active})
	}
	return out
}

func table(w io.Writer, header string, rows func(tw io.Writer)) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, header)
	rows(tw)
	_ = tw.Flush()
}

func adminStats(a *adminCall) (any, func(io.Writer), error) {
	st, err := a.c.Stats(a.ctx, a.flags.objects)
	v := statsView(st)
	return v, func(w io.Writer) { printStats(w, v) }, err
}

func printStats(w io.Writer, st statsJSON) {
	if o := st.Objects; o != nil {
		fmt.Fprintf(w, "objects: %d in %d buckets, %d bytes\n", o.Objects, o.Buckets, o.Bytes)
	} else {
		fmt.Fprintln(w, "objects: not counted (b3 admin stats --objects counts them: a full metadata scan)")
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
		fmt.Fprintf(tw, "  %d%s\t%d\t%d\t%d\t%.1f\t\n", s.ID, active, s.Bytes, s.Bytes-s.DeadBytes, s.DeadBytes, pct(s.DeadBytes, s.Bytes))
	}
	_ = tw.Flush()
	fmt.Fprintf(w, "vacuum: running=%v auto=%v threshold=%.0f%% removed=%d reclaimed=%d copied=%d last=%s %s\n",
		v.Running, v.Auto, v.ThresholdPercent, v.SegmentsRemoved, v.BytesReclaimed, v.BytesCopied, fmtTime(v.LastPass), v.LastError)
	fmt.Fprintf(w, "background pace: %s\n", paceText(v.Pace))
	l := st.Lifecycle
	fmt.Fprintf(w, "lifecycle: passes=%d expired=%d aborted=%d reevaluated=%d day=%s last=%s %s\n",
		l.Passes, l.Expired, l.Aborted, l.Reevaluated, time.Duration(l.DaySeconds*1e9), fmtTime(l.LastPass), l.LastError)
	c := st.Cache
	fmt.Fprintf(w, "cache: %s %d/%d bytes, %d entries, hits=%d misses=%d evictions=%d\n",
		c.Policy, c.Bytes, c.MaxBytes, c.Entries, c.Hits, c.Misses, c.Evictions)
	r, wr := st.DiskIO["read"], st.DiskIO["write"]
	fmt.Fprintf(w, "segment I/O bytes: read fg=%d bg=%d, write fg=%d bg=%d\n",
		r.Foreground.Bytes, r.Background.Bytes, wr.Foreground.Bytes, wr.Background.Bytes)
	li := st.Limits
	fmt.Fprintf(w, "limits (bytes/s, 0 = none): read=%d write=%d background-read=%d background-write=%d\n",
		li.Read, li.Write, li.BackgroundRead, li.BackgroundWrite)
	f := st.Fsync
	fmt.Fprintf(w, "segment fsyncs: %d (mean %.2f ms, max %.2f ms), group commits %d\n", f.Count, f.MeanSeconds*1e3, f.MaxSeconds*1e3, f.GroupCommits)
}

func paceText(p paceJSON) string {
	if p.BytesPerSecond == 0 {
		return fmt.Sprintf("full speed (%s)", p.Reason)
	}
	return fmt.Sprintf("%d bytes/s (%s; floor %d, %d client requests in flight, utilization %.2f)",
		p.BytesPerSecond, p.Reason, p.MinBytesPerSecond, p.ClientsInFlight, p.ClientUtilization)
}

func adminUsersList(a *adminCall) (any, func(io.Writer), error) {
	us, err := a.c.Users(a.ctx)
	out := []userJSON{}
	for _, u := range us {
		out = append(out, userJSON{Name: u.Name, AccessKey: u.AccessKey, CanonicalID: u.CanonicalID, Managed: u.Managed, Admin: u.Admin})
	}
	return out, func(w io.Writer) {
		table(w, "ACCESS KEY\tNAME\tADMIN\tREMOVABLE\tCANONICAL ID", func(tw io.Writer) {
			for _, u := range out {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", u.AccessKey, u.Name, yesNo(u.Admin), yesNo(u.Managed), u.CanonicalID)
			}
		})
	}, err
}

func adminUsersAdd(a *adminCall) (any, func(io.Writer), error) {
	u, err := a.c.AddUser(a.ctx, a.arg(0))
	out := userAddedJSON{Name: u.Name, AccessKey: u.AccessKey, SecretKey: u.Secret}
	return out, func(w io.Writer) {
		fmt.Fprintf(w, "added user %s\naccess key: %s\nsecret key: %s\n(the secret is not shown again)\n", out.Name, out.AccessKey, out.SecretKey)
	}, err
}

func adminUsersRemove(a *adminCall) (any, func(io.Writer), error) {
	res, err := a.c.RemoveUserWith(a.ctx, a.arg(0), a.flags.newOwner, a.flags.force)
	return res, func(w io.Writer) {
		fmt.Fprintf(w, "removed %s\n", res.AccessKey)
		if len(res.BucketsReassigned) > 0 {
			fmt.Fprintf(w, "buckets now owned by %s: %v\n", res.NewOwner, res.BucketsReassigned)
		}
		if len(res.BucketsOrphaned) > 0 {
			fmt.Fprintf(w, "buckets left to the root user (b3 admin buckets chown): %v\n", res.BucketsOrphaned)
		}
	}, err
}

func adminBucketsList(a *adminCall) (any, func(io.Writer), error) {
	bs, err := a.c.Buckets(a.ctx)
	if bs == nil {
		bs = []admin.Bucket{}
	}
	return bs, func(w io.Writer) {
		table(w, "BUCKET\tOWNER\tOWNER KEY\tOBJECTS\tBYTES\tREGION\tCREATED\tLL-HLS", func(tw io.Writer) {
			for _, b := range bs {
				owner := b.OwnerName
				if owner == "" {
					owner = "(removed user)"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%s\t%s\t%s\n", b.Name, owner, b.Owner, b.Objects, b.Bytes, b.Region,
					b.Created.Format(time.RFC3339), onOff(b.LLHLS))
			}
		})
	}, err
}

func adminBucketsChown(a *adminCall) (any, func(io.Writer), error) {
	b, err := a.c.SetBucketOwner(a.ctx, a.arg(0), a.arg(1))
	return b, func(w io.Writer) { fmt.Fprintf(w, "bucket %s now owned by %s (%s)\n", b.Name, b.OwnerName, b.Owner) }, err
}

func adminBucketsHLS(a *adminCall) (any, func(io.Writer), error) {
	var on bool
	switch a.arg(1) {
	case "on":
		on = true
	case "off":
	default:
		return nil, nil, usageError{fmt.Sprintf("%q: want on or off", a.arg(1))}
	}
	b, err := a.c.SetBucketHLS(a.ctx, a.arg(0), on)
	return b, func(w io.Writer) { fmt.Fprintf(w, "bucket %s: LL-HLS origin %s\n", b.Name, onOff(b.LLHLS)) }, err
}

func onOff(on bool) string {
	if on {
		return "on"
	}
	return "off"
}

func adminBucketsDelete(a *adminCall) (any, func(io.Writer), error) {
	res, err := a.c.DeleteBucket(a.ctx, a.arg(0), a.flags.force)
	return res, func(w io.Writer) {
		fmt.Fprintf(w, "deleted bucket %s (%d objects deleted, %d uploads aborted)\n", res.Name, res.ObjectsDeleted, res.UploadsAborted)
	}, err
}

func printVacuum(v vacuumJSON) func(io.Writer) {
	return func(w io.Writer) {
		table(w, "RUNNING\tAUTO\tTHRESHOLD\tDEAD\tTOTAL\tREMOVED\tRECLAIMED\tCOPIED\tLAST PASS\tLAST ERROR", func(tw io.Writer) {
			fmt.Fprintf(tw, "%s\t%s\t%.0f%%\t%d\t%d\t%d\t%d\t%d\t%s\t%s\n", yesNo(v.Running), yesNo(v.Auto), v.ThresholdPercent, v.DeadBytes,
				v.TotalBytes, v.SegmentsRemoved, v.BytesReclaimed, v.BytesCopied, fmtTime(v.LastPass), v.LastError)
		})
		fmt.Fprintf(w, "background pace: %s\n", paceText(v.Pace))
		if v.Held {
			fmt.Fprintln(w, "held: the segments an unclean end left are kept as they are while the node looks for staged bytes in them")
		}
	}
}

func adminVacuumStatus(a *adminCall) (any, func(io.Writer), error) {
	st, err := a.c.VacuumStatus(a.ctx)
	return vacuumView(st), printVacuum(vacuumView(st)), err
}

func adminVacuumStop(a *adminCall) (any, func(io.Writer), error) {
	st, err := a.c.VacuumStop(a.ctx)
	return vacuumView(st), printVacuum(vacuumView(st)), err
}

func printLimits(l admin.LimitsDoc) func(io.Writer) {
	return func(w io.Writer) {
		table(w, "LIMIT\tBYTES/S (0 = none)", func(tw io.Writer) {
			fmt.Fprintf(tw, "read\t%d\nwrite\t%d\nbackground-read\t%d\nbackground-write\t%d\n", l.Read, l.Write, l.BackgroundRead, l.BackgroundWrite)
		})
	}
}

func adminLimitsGet(a *adminCall) (any, func(io.Writer), error) {
	l, err := a.c.Limits(a.ctx)
	doc := admin.LimitsDocOf(l)
	return doc, printLimits(doc), err
}

func printSettings(rows []admin.Setting) func(io.Writer) {
	return func(w io.Writer) {
		table(w, "SETTING\tVALUE\tCONFIGURED\tOVERRIDDEN", func(tw io.Writer) {
			for _, s := range rows {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", s.Name, s.Value, s.Configured, yesNo(s.Overridden))
			}
		})
	}
}

func adminSettingsList(a *adminCall) (any, func(io.Writer), error) {
	rows, err := a.c.Settings(a.ctx)
	return rows, printSettings(rows), err
}

func adminSettingsReset(a *adminCall) (any, func(io.Writer), error) {
	rows, err := a.c.ResetSettings(a.ctx)
	return rows, printSettings(rows), err
}

func adminCache(a *adminCall) (any, func(io.Writer), error) {
	st, err := a.c.Cache(a.ctx)
	return cacheView(st), printCache(cacheView(st)), err
}

func adminCacheSet(a *adminCall) (any, func(io.Writer), error) {
	if a.flags.size == "" {
		return nil, nil, usageError{"cache set needs --size (e.g. 256MiB; 0 = off)"}
	}
	n, err := server.ParseBytes(a.flags.size)
	if err != nil {
		return nil, nil, usageError{fmt.Sprintf("--size %q: %v", a.flags.size, err)}
	}
	st, err := a.c.SetCache(a.ctx, n)
	return cacheView(st), printCache(cacheView(st)), err
}

func printCache(v cacheJSON) func(io.Writer) {
	return func(w io.Writer) {
		table(w, "POLICY\tBYTES\tMAX\tENTRIES\tHITS\tMISSES\tEVICTIONS\tINVALIDATIONS", func(tw io.Writer) {
			fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\n", v.Policy, v.Bytes, v.MaxBytes, v.Entries, v.Hits, v.Misses, v.Evictions, v.Invalidations)
		})
	}
}

type lifecycleRunJSON struct {
	Scanned     int `json:"scanned"`
	Expired     int `json:"expired"`
	Aborted     int `json:"aborted"`
	Reevaluated int `json:"reevaluated"`
}

func adminLifecycleRun(a *adminCall) (any, func(io.Writer), error) {
	res, err := a.c.LifecycleRun(a.ctx)
	v := lifecycleRunJSON{Scanned: res.Scanned, Expired: res.Expired, Aborted: res.Aborted, Reevaluated: res.Reevaluated}
	return v, func(w io.Writer) {
		fmt.Fprintf(w, "lifecycle pass: scanned %d, expired %d, aborted %d uploads, reevaluated %d\n", v.Scanned, v.Expired, v.Aborted, v.Reevaluated)
	}, err
}

func adminKMSStatus(a *adminCall) (any, func(io.Writer), error) {
	st, err := a.c.KMSStatus(a.ctx)
	return st, printKMS(st), err
}

func adminKMSRotate(a *adminCall) (any, func(io.Writer), error) {
	st, err := a.c.KMSRotate(a.ctx, a.flags.from, a.flags.to)
	return st, printKMS(st), err
}

func printKMS(st sse.KMSStatus) func(io.Writer) {
	return func(w io.Writer) {
		fmt.Fprintf(w, "master keys: %s (default %s)\n", strings.Join(st.Keys, ", "), st.DefaultKey)
		r := st.Rotation
		if r.Started == nil {
			fmt.Fprintln(w, "rotation: never run")
			return
		}
		state := "finished " + r.Finished.Format(time.RFC3339)
		if r.Running {
			state = "running"
		}
		from := r.From
		if from == "" {
			from = "every SSE-S3 key"
		}
		fmt.Fprintf(w, "rotation %s -> %s: %s; scanned %d, re-sealed %d, failed %d\n", from, r.To, state, r.Scanned, r.Rewrapped, r.Failed)
		if r.LastError != "" {
			fmt.Fprintf(w, "last error: %s\n", r.LastError)
		}
	}
}

func adminClusterStatus(a *adminCall) (any, func(io.Writer), error) {
	st, err := a.c.ClusterStatus(a.ctx)
	return st, func(w io.Writer) { printClusterStatus(w, st) }, err
}

func adminClusterRebalance(a *adminCall) (any, func(io.Writer), error) {
	var st admin.ClusterStatus
	var err error
	switch a.arg(0) {
	case "pause", "resume":
		st, err = a.c.SetRebalance(a.ctx, a.arg(0) == "pause")
	case "cancel":
		st, err = a.c.CancelMoves(a.ctx)
	case "status":
		st, err = a.c.ClusterStatus(a.ctx)
	default:
		return nil, nil, usageError{fmt.Sprintf("cluster rebalance %q: want pause, resume, cancel or status", a.arg(0))}
	}
	return rebalanceState(st), func(w io.Writer) { printRebalance(w, st) }, err
}

// rebalanceJSON is `cluster rebalance --json` and `cluster drain --json`.
type rebalanceJSON struct {
	Balanced bool                `json:"balanced"`
	Paused   bool                `json:"paused"`
	Moves    []admin.ClusterMove `json:"moves"`
	Groups   []rebalanceGroup    `json:"groups"`
}

type rebalanceGroup struct {
	Name       string `json:"name"`
	Partitions int    `json:"partitions"`
	Target     int    `json:"target"`
	Draining   bool   `json:"draining"`
}

func rebalanceState(st admin.ClusterStatus) rebalanceJSON {
	out := rebalanceJSON{Balanced: st.Balanced, Paused: st.Paused, Moves: st.Moves}
	if out.Moves == nil {
		out.Moves = []admin.ClusterMove{}
	}
	for _, g := range st.Groups {
		out.Groups = append(out.Groups, rebalanceGroup{Name: g.Name, Partitions: g.Partitions, Target: g.Target, Draining: g.Draining})
	}
	return out
}

// printRebalance says "balanced" when no move is under way or planned.
func printRebalance(w io.Writer, st admin.ClusterStatus) {
	switch {
	case st.Balanced:
		fmt.Fprint(w, "balanced")
	case len(st.Moves) > 0:
		fenced := 0
		for _, mv := range st.Moves {
			if mv.Fenced {
				fenced++
			}
		}
		fmt.Fprintf(w, "moving: %d partitions under way", len(st.Moves))
		if fenced > 0 {
			fmt.Fprintf(w, ", %d fenced (their writes wait for the switch; b3 admin cluster rebalance cancel ends the moves)", fenced)
		}
	default:
		fmt.Fprint(w, "not balanced: moves pending")
	}
	if st.Paused {
		fmt.Fprint(w, " (paused: no new move starts; b3 admin cluster rebalance resume)")
	}
	fmt.Fprintln(w)
	for _, g := range st.Groups {
		note := ""
		if g.Draining {
			note = " (draining)"
		}
		fmt.Fprintf(w, "  %s: %d partitions, target %d%s\n", g.Name, g.Partitions, g.Target, note)
	}
}

func adminClusterDrain(a *adminCall) (any, func(io.Writer), error) {
	st, err := a.c.DrainGroup(a.ctx, a.arg(0), !a.flags.stop)
	return rebalanceState(st), func(w io.Writer) { printRebalance(w, st) }, err
}

func adminClusterAdd(a *adminCall) (any, func(io.Writer), error) {
	id, addr, ok := strings.Cut(a.arg(0), "=")
	if !ok || id == "" || addr == "" {
		return nil, nil, usageError{fmt.Sprintf("cluster add %q: want ID=HOST:PORT (the node's --cluster-address)", a.arg(0))}
	}
	ch, err := a.c.AddClusterMember(a.ctx, id, addr)
	return ch, func(w io.Writer) { printClusterChange(w, ch) }, err
}

func adminClusterRemove(a *adminCall) (any, func(io.Writer), error) {
	ch, err := a.c.RemoveClusterMember(a.ctx, a.arg(0))
	return ch, func(w io.Writer) { printClusterChange(w, ch) }, err
}

// adminClusterDeclareLost shows what the group's leader waits for, asks
// for a confirmation (unless --yes), and has the leader declare it lost;
// then it watches whether the leader stops at a later write whose bytes
// are lost too (a leader that died with several), and does the same for
// each.
func adminClusterDeclareLost(a *adminCall) (any, func(io.Writer), error) {
	answers := bufio.NewReader(a.stdin)
	done := []admin.ClusterLost{}
	table := func(w io.Writer) {
		for _, res := range done {
			fmt.Fprintf(w, "declared lost at log index %d: the bytes of log index %d (%s/%s version %s)\n",
				res.DeclaredIndex, res.Index, res.Bucket, res.Key, res.VersionID)
		}
		fmt.Fprintln(w, "the group goes on (b3 admin cluster status)")
	}
	for {
		leader, m, err := leaderWaits(a, done)
		switch {
		case err != nil && len(done) > 0:
			return done, nil, fmt.Errorf("%d declared, then: %w", len(done), err)
		case err != nil:
			return nil, nil, err
		case m == nil && len(done) == 0:
			return nil, nil, fmt.Errorf("the leader (%s) waits for no bytes: nothing to declare lost", leader)
		case m == nil:
			return done, table, nil
		}
		fmt.Fprintf(a.stderr, "leader %s: ", leader)
		printMissing(a.stderr, *m)
		fmt.Fprintf(a.stderr, "Declaring them lost removes %s/%s version %s from every node, as a DELETE of that version would", m.Bucket, m.Key, m.VersionID)
		if m.UploadID != "" {
			fmt.Fprintf(a.stderr, " (a lost part aborts upload %s)", m.UploadID)
		}
		fmt.Fprintln(a.stderr, "; a node that still holds the bytes discards them. It cannot be undone.")
		if !a.flags.yes {
			fmt.Fprint(a.stderr, "Declare these bytes lost? Type yes to go on: ")
			line, _ := answers.ReadString('\n')
			if strings.TrimSpace(line) != "yes" {
				err := errors.New("not declared: the answer was not yes (--yes does not ask)")
				if len(done) > 0 {
					return done, nil, fmt.Errorf("%d declared, then %w", len(done), err)
				}
				return nil, nil, err
			}
		}
		var gone []string
		if a.flags.gone != "" {
			gone = strings.Split(a.flags.gone, ",")
		}
		res, err := a.c.DeclareLost(a.ctx, *m, gone...)
		if err != nil {
			if len(done) > 0 {
				return done, nil, fmt.Errorf("%d declared, then: %w", len(done), err)
			}
			return nil, nil, err
		}
		done = append(done, res)
		fmt.Fprintf(a.stderr, "declared lost at log index %d; watching %s whether the leader stops at another write whose bytes are lost\n",
			res.DeclaredIndex, lostFollow)
	}
}

// lostFollow is how long declare-lost watches, after a declaration,
// whether the leader stops at a later command: it reaches it, and asks
// every member, within seconds.
const lostFollow = 8 * time.Second

// leaderWaits returns the group's leader and what its apply waits for
// (nil: nothing); after declarations (done), what it waits for at a later
// command, watched for lostFollow.
func leaderWaits(a *adminCall, done []admin.ClusterLost) (string, *admin.ClusterMissing, error) {
	deadline := time.Now().Add(lostFollow)
	for {
		st, err := a.c.ClusterStatus(a.ctx)
		if err != nil {
			return "", nil, err
		}
		var m *admin.ClusterMissing
		for _, mb := range st.Members {
			if st.Leader != "" && mb.ID == st.Leader {
				m = mb.MissingBytes
			}
		}
		switch {
		case len(done) == 0 && st.Leader == "":
			return "", nil, errors.New("the group has no leader now (b3 admin cluster status): retry once one is elected")
		case len(done) == 0:
			return st.Leader, m, nil
		case m != nil && m.Index > done[len(done)-1].Index:
			return st.Leader, m, nil
		case time.Now().After(deadline):
			return st.Leader, nil, nil
		}
		select {
		case <-a.ctx.Done():
			return "", nil, a.ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func pct(part, whole int64) float64 {
	if whole == 0 {
		return 0
	}
	return 100 * float64(part) / float64(whole)
}

func fmtTime(t *time.Time) string {
	if t == nil {
		return "never"
	}
	return t.Format(time.RFC3339)
}
