package main

import (
	"fmt"
	"io"
	"time"

	"github.com/b3-storage/b3/internal/scrub"
)

// b3 admin scrub status|start (package scrub; docs/OPERATIONS.md).

func adminScrubStatus(a *adminCall) (any, func(io.Writer), error) {
	st, err := a.c.ScrubStatus(a.ctx)
	return st, printScrub(st), err
}

func adminScrubStart(a *adminCall) (any, func(io.Writer), error) {
	if err := a.c.ScrubStart(a.ctx); err != nil {
		return nil, nil, err
	}
	res := map[string]string{"status": "started"}
	return res, func(w io.Writer) { fmt.Fprintln(w, "scrub pass started (b3 admin scrub status)") }, nil
}

func printScrub(st scrub.Status) func(io.Writer) {
	return func(w io.Writer) {
		phase := st.Phase
		if phase == "" {
			phase = "-"
		}
		interval := "off (on demand only)"
		if st.IntervalSeconds > 0 {
			interval = (time.Duration(st.IntervalSeconds) * time.Second).String()
		}
		table(w, "RUNNING\tPHASE\tSTARTED\tFINISHED\tSEGMENTS\tRECORDS\tBYTES\tCORRUPT RECORDS\tCHECKED\tREPAIRED\tDAMAGED", func(tw io.Writer) {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\n", yesNo(st.Running), phase, fmtTime(st.Started), fmtTime(st.Finished),
				st.SegmentsChecked, st.RecordsChecked, st.BytesChecked, st.CorruptRecords, st.Checked, st.Repaired, len(st.Damaged))
		})
		fmt.Fprintf(w, "interval: %s, next pass: %s, passes: %d\n", interval, fmtTime(st.NextPass), st.Passes)
		if len(st.Damaged) == 0 {
			return
		}
		fmt.Fprintln(w, "damaged objects (reads of them fail; write them again, or delete them):")
		table(w, "BUCKET\tKEY\tVERSION\tCURRENT\tSIZE\tDAMAGED BYTES", func(tw io.Writer) {
			for _, d := range st.Damaged {
				for i, r := range d.Ranges {
					bucket, key, version, current, size := d.Bucket, d.Key, d.Version, yesNo(d.Current), fmt.Sprint(d.Size)
					if i > 0 {
						bucket, key, version, current, size = "", "", "", "", ""
					}
					fmt.Fprintf(tw, "%s\t%q\t%s\t%s\t%s\t%d-%d (segment %016x at %d: %s)\n", bucket, key, version, current, size,
						r.Offset, r.Offset+r.Length-1, r.Segment, r.FileOffset, r.Reason)
				}
			}
		})
	}
}
