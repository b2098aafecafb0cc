package bench

import (
	"fmt"
	"html"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
)

// Charts are plain SVG documents written with fmt: no plotting dependency,
// viewable in any browser, small enough to commit next to docs.

type point struct{ x, y float64 }

type series struct {
	name   string
	points []point
}

// lineChart is a line chart with markers. With logX the x axis is log2 and
// ticks sit at the data's x values (concurrency levels, buffer sizes); with
// logY the y axis is log10.
type lineChart struct {
	title, xLabel, yLabel string
	logX, logY            bool
	xFormat               func(float64) string
	series                []series
}

const (
	chartW, chartH                     = 860, 480
	marginL, marginR, marginT, marginB = 80, 170, 44, 56
)

var palette = []string{"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"}

func (c lineChart) write(w io.Writer) error {
	var xs []float64
	ymin, ymax := math.Inf(1), math.Inf(-1)
	seenX := map[float64]bool{}
	for _, s := range c.series {
		for _, p := range s.points {
			if !seenX[p.x] {
				seenX[p.x] = true
				xs = append(xs, p.x)
			}
			if c.logY && p.y <= 0 {
				continue
			}
			ymin, ymax = math.Min(ymin, p.y), math.Max(ymax, p.y)
		}
	}
	sort.Float64s(xs)
	fx := func(x float64) float64 { return x }
	if c.logX {
		fx = func(x float64) float64 { return math.Log2(math.Max(x, 1e-9)) }
	}
	if len(xs) == 0 {
		xs = []float64{0, 1}
	}
	if math.IsInf(ymax, -1) {
		// Nothing to plot (every run failed, or no positive value on a log
		// axis): draw an empty frame. A log axis needs a positive range, or
		// its tick loop would start at log10(0) = -Inf and never end.
		ymin, ymax = 0, 1
		if c.logY {
			ymin, ymax = 1, 10
		}
	}
	x0, x1 := fx(xs[0]), fx(xs[len(xs)-1])
	if x1 == x0 {
		x0, x1 = x0-1, x1+1
	}
	var yTicks []float64
	fy := func(y float64) float64 { return y }
	if c.logY {
		fy = func(y float64) float64 { return math.Log10(math.Max(y, 1e-12)) }
		lo, hi := math.Floor(math.Log10(ymin)), math.Ceil(math.Log10(ymax))
		if hi == lo {
			hi++
		}
		for e := lo; e <= hi; e++ {
			yTicks = append(yTicks, math.Pow(10, e))
		}
		ymin, ymax = yTicks[0], yTicks[len(yTicks)-1]
	} else {
		ymin = 0
		step := niceStep(ymax / 5)
		ymax = math.Max(step, math.Ceil(ymax/step)*step)
		for v := 0.0; v <= ymax+step/2; v += step {
			yTicks = append(yTicks, v)
		}
	}
	plotW, plotH := float64(chartW-marginL-marginR), float64(chartH-marginT-marginB)
	px := func(x float64) float64 { return marginL + (fx(x)-x0)/(x1-x0)*plotW }
	py := func(y float64) float64 {
		return marginT + plotH - (fy(y)-fy(ymin))/(fy(ymax)-fy(ymin))*plotH
	}
	xf := c.xFormat
	if xf == nil {
		xf = func(v float64) string { return strconv.FormatFloat(v, 'g', 4, 64) }
	}

	var b strings.Builder
	fmt.Fprintf(&b, `<?xml version="1.0" encoding="UTF-8"?>`+"\n")
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", chartW, chartH, chartW, chartH)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(&b, `<text x="%d" y="24" font-size="16" font-weight="bold">%s</text>`+"\n", marginL, esc(c.title))
	// Grid and y ticks.
	for _, t := range yTicks {
		y := py(t)
		fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#ddd"/>`+"\n", marginL, y, marginL+plotW, y)
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end">%s</text>`+"\n", marginL-6, y+4, esc(tickLabel(t)))
	}
	// X ticks: every data x when there are few, else about ten.
	stride := max(1, len(xs)/10)
	for i := 0; i < len(xs); i += stride {
		x := px(xs[i])
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%.1f" stroke="#eee"/>`+"\n", x, marginT, x, marginT+plotH)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", x, marginT+plotH+18, esc(xf(xs[i])))
	}
	fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%.1f" height="%.1f" fill="none" stroke="#333"/>`+"\n", marginL, marginT, plotW, plotH)
	fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">%s</text>`+"\n", marginL+plotW/2, chartH-12, esc(c.xLabel))
	fmt.Fprintf(&b, `<text transform="translate(18 %.1f) rotate(-90)" text-anchor="middle">%s</text>`+"\n", marginT+plotH/2, esc(c.yLabel))
	// Series and legend.
	for i, s := range c.series {
		color := palette[i%len(palette)]
		var pts []string
		for _, p := range s.points {
			if c.logY && p.y <= 0 {
				continue
			}
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", px(p.x), py(p.y)))
		}
		if len(pts) > 0 {
			fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>`+"\n", color, strings.Join(pts, " "))
			if len(pts) <= 64 {
				for _, p := range pts {
					xy := strings.SplitN(p, ",", 2)
					fmt.Fprintf(&b, `<circle cx="%s" cy="%s" r="3" fill="%s"/>`+"\n", xy[0], xy[1], color)
				}
			}
		}
		ly := marginT + 10 + 18*i
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="%s" stroke-width="3"/>`+"\n", marginL+plotW+12, ly, marginL+plotW+32, ly, color)
		fmt.Fprintf(&b, `<text x="%.1f" y="%d">%s</text>`+"\n", marginL+plotW+38, ly+4, esc(s.name))
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func esc(s string) string { return html.EscapeString(s) }

// niceStep rounds raw up to 1, 2 or 5 times a power of ten.
func niceStep(raw float64) float64 {
	if raw <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= raw {
			return m * p
		}
	}
	return 10 * p
}

func tickLabel(v float64) string {
	switch {
	case v == 0:
		return "0"
	case math.Abs(v) >= 1e6:
		return strconv.FormatFloat(v/1e6, 'g', 3, 64) + "M"
	case math.Abs(v) >= 1e3:
		return strconv.FormatFloat(v/1e3, 'g', 3, 64) + "k"
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}

// Charts returns the charts that fit the report, by short name.
func (r *Report) Charts() map[string]func(io.Writer) error {
	out := map[string]func(io.Writer) error{}
	add := func(name string, c lineChart) {
		if len(c.series) > 0 {
			out[name] = c.write
		}
	}
	sizeX := func(v float64) string { return FormatSize(int64(v)) }
	switch r.Kind {
	case "peak":
		for _, op := range []string{"upload", "download"} {
			// Small objects move few bytes however fast they go: on one
			// MB/s axis with large ones they would all lie on zero, so
			// they get an ops/s chart of their own.
			small := func(c Cell) bool { return c.Size < smallObjectSize }
			add("ops-"+op, lineChart{title: op + ": operations/s by concurrency, objects under " + FormatSize(smallObjectSize), xLabel: "concurrency",
				yLabel: "ops/s", logX: true, series: r.seriesBy(op, "size", func(c Cell) float64 { return c.OpsPerSec }, small)})
			add("throughput-"+op, lineChart{title: op + ": throughput by concurrency, objects of " + FormatSize(smallObjectSize) + " and more", xLabel: "concurrency",
				yLabel: "MB/s", logX: true, series: r.seriesBy(op, "size", func(c Cell) float64 { return c.MBPerSec }, func(c Cell) bool { return !small(c) })})
			add("latency-"+op, lineChart{title: op + ": P99 latency by concurrency and size", xLabel: "concurrency",
				yLabel: "P99 latency (ms)", logX: true, logY: true, series: r.seriesBy(op, "size", func(c Cell) float64 { return c.Latency.P99 })})
			add("percentiles-"+op, lineChart{title: op + ": latency percentiles by size (highest concurrency)", xLabel: "object size",
				yLabel: "latency (ms)", logX: true, logY: true, xFormat: sizeX, series: r.percentileSeries(op)})
		}
	case "disk":
		add("disk-throughput", lineChart{title: "write throughput by buffer size", xLabel: "buffer size", yLabel: "MB/s",
			logX: true, xFormat: sizeX, series: r.seriesBy("write", "mode", func(c Cell) float64 { return c.MBPerSec })})
		add("disk-latency", lineChart{title: "write() P99 latency by buffer size", xLabel: "buffer size", yLabel: "P99 latency (ms)",
			logX: true, logY: true, xFormat: sizeX, series: r.seriesBy("write", "mode", func(c Cell) float64 { return c.Latency.P99 })})
	case "kv":
		for _, op := range []string{"read", "update"} {
			var s series
			s.name = op
			for _, c := range r.Cells {
				if c.Op == op {
					var pct float64
					fmt.Sscanf(c.Mode, "r%g", &pct)
					s.points = append(s.points, point{pct, c.OpsPerSec})
				}
			}
			if len(s.points) > 0 {
				out["kv-"+op] = lineChart{title: "kv " + op + " ops/s by read percentage", xLabel: "reads (%)", yLabel: "ops/s", series: []series{s}}.write
			}
		}
	case "mixed":
		r.mixedCharts(add)
	case "hls":
		r.hlsCharts(add)
	}
	if len(r.System) > 0 {
		var cpu, steal, util, rss series
		cpu.name, steal.name, util.name, rss.name = "CPU %", "steal %", "disk util %", "RSS MB"
		for _, s := range r.System {
			cpu.points = append(cpu.points, point{float64(s.Second), s.CPUPercent})
			steal.points = append(steal.points, point{float64(s.Second), s.Steal})
			util.points = append(util.points, point{float64(s.Second), s.DiskUtil})
			rss.points = append(rss.points, point{float64(s.Second), s.RSSMB})
		}
		add("system", lineChart{title: "local machine", xLabel: "seconds", yLabel: "%", series: []series{cpu, steal, util}})
		if r.System[len(r.System)-1].RSSMB > 0 {
			add("system-rss", lineChart{title: "server RSS", xLabel: "seconds", yLabel: "MB", series: []series{rss}})
		}
	}
	return out
}

// smallObjectSize: peak charts objects below it by ops/s, others by MB/s.
const smallObjectSize = 1 << 20

// seriesBy makes one series per size (or mode) of op's cells that every
// keep accepts, x being the concurrency (by size) or the size (by mode).
func (r *Report) seriesBy(op, by string, y func(Cell) float64, keep ...func(Cell) bool) []series {
	var order []string
	groups := map[string]*series{}
cells:
	for _, c := range r.Cells {
		if c.Op != op {
			continue
		}
		for _, k := range keep {
			if !k(c) {
				continue cells
			}
		}
		name, x := FormatSize(c.Size), float64(c.Concurrency)
		if by == "mode" {
			name, x = c.Mode, float64(c.Size)
		}
		s, ok := groups[name]
		if !ok {
			s = &series{name: name}
			groups[name] = s
			order = append(order, name)
		}
		s.points = append(s.points, point{x, y(c)})
	}
	out := make([]series, len(order))
	for i, name := range order {
		out[i] = *groups[name]
	}
	return out
}

// percentileSeries: one series per percentile, x the object size, at the
// highest concurrency measured for each size.
func (r *Report) percentileSeries(op string) []series {
	best := map[int64]Cell{}
	var sizes []int64
	for _, c := range r.Cells {
		if c.Op != op || c.Ops == 0 {
			continue
		}
		prev, ok := best[c.Size]
		if !ok {
			sizes = append(sizes, c.Size)
		}
		if !ok || c.Concurrency > prev.Concurrency {
			best[c.Size] = c
		}
	}
	names := []string{"P50", "P90", "P99", "P99.9", "max"}
	out := make([]series, 0, len(names))
	for i, name := range names {
		s := series{name: name}
		for _, size := range sizes {
			l := best[size].Latency
			s.points = append(s.points, point{float64(size), []float64{l.P50, l.P90, l.P99, l.P999, l.Max}[i]})
		}
		if len(s.points) > 0 {
			out = append(out, s)
		}
	}
	return out
}

// mixedCharts: the per-second series of all multiples laid end to end, and
// achieved versus scheduled throughput per multiple.
func (r *Report) mixedCharts(add func(string, lineChart)) {
	streams := map[string]*[3]series{} // MB/s, in flight, lateness
	var names []string
	offset := 0
	for _, m := range r.Mixed {
		longest := 0
		for _, name := range sortedKeys(m.Series) {
			ss, ok := streams[name]
			if !ok {
				ss = &[3]series{{name: name + " MB/s"}, {name: "in flight"}, {name: name + " max lateness ms"}}
				streams[name] = ss
				names = append(names, name)
			}
			for _, s := range m.Series[name] {
				x := float64(offset + s.Second)
				ss[0].points = append(ss[0].points, point{x, s.MBPerSec})
				ss[1].points = append(ss[1].points, point{x, float64(s.MaxInFlight)})
				ss[2].points = append(ss[2].points, point{x, s.MaxLateMS})
			}
			longest = max(longest, len(m.Series[name]))
		}
		offset += longest
	}
	var mb, lateness []series
	var inflight []series
	for i, name := range names {
		mb = append(mb, streams[name][0])
		lateness = append(lateness, streams[name][2])
		if i == 0 { // in flight is over all streams; one line
			inflight = append(inflight, streams[name][1])
		}
	}
	add("mixed-throughput", lineChart{title: "mixed: completed MB/s per second (multiples end to end)", xLabel: "seconds", yLabel: "MB/s", series: mb})
	add("mixed-inflight", lineChart{title: "mixed: requests in flight", xLabel: "seconds", yLabel: "requests", series: inflight})
	add("mixed-lateness", lineChart{title: "mixed: issue lateness", xLabel: "seconds", yLabel: "ms", series: lateness})

	var achieved, target series
	achieved.name, target.name = "achieved MB/s", "scheduled MB/s"
	for _, m := range r.Mixed {
		var a, t float64
		for _, c := range m.Cells {
			a += c.MBPerSec
			var rate float64
			fmt.Sscanf(c.Note, "target %g", &rate)
			t += rate * float64(c.Size) / 1e6
		}
		achieved.points = append(achieved.points, point{m.Multiplier, a})
		target.points = append(target.points, point{m.Multiplier, t})
	}
	if len(r.Mixed) > 0 {
		add("mixed-summary", lineChart{title: "mixed: throughput by multiple of the baseline", xLabel: "multiple",
			yLabel: "MB/s", series: []series{target, achieved}})
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// WriteSeriesCSV writes the mixed test's per-second series, one row per
// multiple, stream and second.
func (r *Report) WriteSeriesCSV(w io.Writer) error {
	if _, err := fmt.Fprintln(w, "multiplier,stream,second,issued,completed,errors,bytes,mb_per_sec,max_in_flight,late,max_lateness_ms"); err != nil {
		return err
	}
	for _, m := range r.Mixed {
		for _, name := range sortedKeys(m.Series) {
			for _, s := range m.Series[name] {
				if _, err := fmt.Fprintf(w, "%g,%s,%d,%d,%d,%d,%d,%g,%d,%d,%g\n", m.Multiplier, name, s.Second, s.Issued,
					s.Completed, s.Errors, s.Bytes, s.MBPerSec, s.MaxInFlight, s.Late, s.MaxLateMS); err != nil {
					return err
				}
			}
		}
	}
	return nil
}
