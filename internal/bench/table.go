package bench

import (
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
)

// WriteTable prints the report as an aligned table, one row per cell, then
// the mixed verdicts and the notes.
func (r *Report) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	hasMode, hasConc := false, false
	for _, c := range r.Cells {
		hasMode = hasMode || c.Mode != ""
		hasConc = hasConc || c.Concurrency > 0
	}
	head := []string{"op"}
	if hasMode {
		head = append(head, "mode")
	}
	head = append(head, "size")
	if hasConc {
		head = append(head, "conc")
	}
	head = append(head, "ops", "errors", "ops/s", "MB/s", "p50 ms", "p90 ms", "p99 ms", "p99.5 ms", "p99.9 ms", "max ms", "client cpu")
	fmt.Fprintln(tw, strings.Join(head, "\t")+"\t")
	for _, c := range r.Cells {
		row := []string{c.Op}
		if hasMode {
			row = append(row, c.Mode)
		}
		row = append(row, FormatSize(c.Size))
		if hasConc {
			row = append(row, strconv.Itoa(c.Concurrency))
		}
		l := c.Latency
		row = append(row, strconv.FormatInt(c.Ops, 10), errorsText(c),
			fmt.Sprintf("%.1f", c.OpsPerSec), fmt.Sprintf("%.2f", c.MBPerSec),
			ms(l.P50), ms(l.P90), ms(l.P99), ms(l.P995), ms(l.P999), ms(l.Max), cpuText(c.ClientCPU))
		fmt.Fprintln(tw, strings.Join(row, "\t")+"\t")
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, m := range r.Mixed {
		var mb float64
		for _, c := range m.Cells {
			mb += c.MBPerSec
		}
		fmt.Fprintf(w, "x%-5g %-11s %8.1f MB/s", m.Multiplier, m.Verdict, mb)
		if len(m.Reasons) > 0 {
			fmt.Fprintf(w, "  (%s)", strings.Join(m.Reasons, "; "))
		}
		fmt.Fprintln(w)
	}
	r.writeHLSVerdicts(w)
	for _, run := range r.LLHLS {
		fmt.Fprintln(w, run.line())
	}
	if r.Interrupted {
		fmt.Fprintln(w, "interrupted: partial results")
	}
	for _, n := range r.Notes {
		fmt.Fprintln(w, "note:", n)
	}
	return nil
}

// cpuText renders the client's CPU share ("-" where it was not measured).
func cpuText(percent float64) string {
	if percent == 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f%%", percent)
}

func ms(v float64) string {
	switch {
	case v == 0:
		return "-"
	case v < 1:
		return fmt.Sprintf("%.3f", v)
	case v < 100:
		return fmt.Sprintf("%.2f", v)
	}
	return fmt.Sprintf("%.0f", v)
}

// errorsText renders "0" or "12 (SlowDown 10, timeout 2)".
func errorsText(c Cell) string {
	if len(c.ErrorsByType) == 0 {
		return strconv.FormatInt(c.Errors, 10)
	}
	keys := make([]string, 0, len(c.ErrorsByType))
	for k := range c.ErrorsByType {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d", k, c.ErrorsByType[k])
	}
	return fmt.Sprintf("%d (%s)", c.Errors, strings.Join(parts, ", "))
}
