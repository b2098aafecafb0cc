package bench

import (
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"text/tabwriter"
)

// Compare prints the cells of two or more reports side by side: for each
// cell (matched by op, size, mode and concurrency), ops/s, MB/s and P99 of
// each report, and each later report's ratio to the first. Ratios above 1
// mean more throughput, or more latency, than the first report.
func Compare(w io.Writer, names []string, reports []*Report) error {
	if len(reports) < 2 {
		return fmt.Errorf("compare: need at least two reports")
	}
	index := make([]map[string]Cell, len(reports))
	var order []string
	seen := map[string]bool{}
	for i, r := range reports {
		index[i] = map[string]Cell{}
		for _, c := range r.Cells {
			k := c.Key()
			index[i][k] = c
			if !seen[k] {
				seen[k] = true
				order = append(order, k)
			}
		}
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	head := []string{"cell"}
	for i, n := range names {
		head = append(head, n+" ops/s", n+" MB/s", n+" p99 ms")
		if i > 0 {
			head = append(head, "MB/s ×", "p99 ×")
		}
	}
	fmt.Fprintln(tw, strings.Join(head, "\t")+"\t")
	for _, k := range order {
		row := []string{k}
		base, baseOK := index[0][k]
		for i := range reports {
			c, ok := index[i][k]
			if !ok {
				row = append(row, "-", "-", "-")
			} else {
				row = append(row, fmt.Sprintf("%.1f", c.OpsPerSec), fmt.Sprintf("%.2f", c.MBPerSec), ms(c.Latency.P99))
			}
			if i > 0 {
				row = append(row, ratio(baseOK && ok, c.MBPerSec, base.MBPerSec, c.OpsPerSec, base.OpsPerSec),
					ratio(baseOK && ok, c.Latency.P99, base.Latency.P99, 0, 0))
			}
		}
		fmt.Fprintln(tw, strings.Join(row, "\t")+"\t")
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for i, r := range reports {
		for _, m := range r.Mixed {
			fmt.Fprintf(w, "%s: x%g %s\n", names[i], m.Multiplier, m.Verdict)
		}
	}
	return nil
}

// ratio is v/base (falling back to alt/altBase when base is 0, e.g. MB/s of
// zero-byte cells), or "-" when either side is missing or zero.
func ratio(ok bool, v, base, alt, altBase float64) string {
	switch {
	case !ok:
		return "-"
	case base > 0:
		return fmt.Sprintf("%.2f", v/base)
	case altBase > 0:
		return fmt.Sprintf("%.2f", alt/altBase)
	}
	return "-"
}

func runCompare(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("b3 bench compare", flag.ContinueOnError)
	fs.SetOutput(stderr)
	names := fs.String("names", "", "comma-separated column names, one per file (default #1, #2, ...)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: b3 bench compare [--names a,b] A.json B.json [more.json...]\n\nRatios are each report over the first (A).")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return err
		}
		return usageError{err}
	}
	if fs.NArg() < 2 {
		return usagef("compare needs at least two result files")
	}
	var labels []string
	if *names != "" {
		labels = splitList(*names)
		if len(labels) != fs.NArg() {
			return usagef("--names has %d names for %d files", len(labels), fs.NArg())
		}
	}
	var reports []*Report
	for i, path := range fs.Args() {
		r, err := ReadReport(path)
		if err != nil {
			return err
		}
		reports = append(reports, r)
		if *names == "" {
			labels = append(labels, fmt.Sprintf("#%d", i+1))
		}
		fmt.Fprintf(stdout, "%s = %s (%s, %s)\n", labels[i], filepath.Base(path), r.Kind, r.Target)
	}
	return Compare(stdout, labels, reports)
}
