package bench

import (
	"fmt"
	"io"
	"sort"
	"strings"
)

// writeHLSVerdicts prints one line per camera count: the verdict, the
// segment upload percentiles, missed deadlines, and the worst cameras.
func (r *Report) writeHLSVerdicts(w io.Writer) {
	for _, run := range r.HLS {
		var seg, stale Cell
		for _, c := range run.Cells {
			switch c.Op {
			case "segment":
				seg = c
			case "staleness":
				stale = c
			}
		}
		fmt.Fprintf(w, "%d cameras, %d viewers: %s; segment upload p50 %s p99 %s p99.9 %s ms, %d missed deadlines, %.1f MB/s",
			run.Cameras, run.Viewers, run.Verdict, ms(seg.Latency.P50), ms(seg.Latency.P99), ms(seg.Latency.P999), run.Missed, seg.MBPerSec)
		if stale.Ops > 0 {
			fmt.Fprintf(w, "; playlist staleness p50 %s p99 %s ms", ms(stale.Latency.P50), ms(stale.Latency.P99))
		}
		if len(run.Reasons) > 0 {
			fmt.Fprintf(w, "  (%s)", strings.Join(run.Reasons, "; "))
		}
		fmt.Fprintln(w)
		worst := append([]HLSStream(nil), run.Streams...)
		sort.SliceStable(worst, func(i, j int) bool { return worst[i].P99 > worst[j].P99 })
		var parts []string
		for _, s := range worst[:min(3, len(worst))] {
			parts = append(parts, fmt.Sprintf("cam%04d p99 %.0f ms max %.0f ms missed %d", s.Camera, s.P99, s.Max, s.Missed))
		}
		if len(parts) > 0 {
			fmt.Fprintf(w, "  worst cameras: %s\n", strings.Join(parts, "; "))
		}
	}
}

// hlsCharts: per-second segment latency, throughput and missed deadlines
// of all camera counts laid end to end, and the summary by camera count.
func (r *Report) hlsCharts(add func(string, lineChart)) {
	var p50, p99, maxLat, mb, missed, inflight series
	p50.name, p99.name, maxLat.name = "segment P50", "segment P99", "segment max"
	mb.name, missed.name, inflight.name = "segments MB/s", "missed deadlines", "uploads in flight"
	offset := 0
	for _, run := range r.HLS {
		for _, s := range run.Series {
			x := float64(offset + s.Second)
			p50.points = append(p50.points, point{x, s.SegmentP50MS})
			p99.points = append(p99.points, point{x, s.SegmentP99MS})
			maxLat.points = append(maxLat.points, point{x, s.SegmentMaxMS})
			mb.points = append(mb.points, point{x, s.MBPerSec})
			missed.points = append(missed.points, point{x, float64(s.Missed)})
			inflight.points = append(inflight.points, point{x, float64(s.InFlight)})
		}
		offset += len(run.Series)
	}
	add("hls-latency", lineChart{title: "hls: segment upload latency per second (camera counts end to end)", xLabel: "seconds",
		yLabel: "ms", logY: true, series: []series{p50, p99, maxLat}})
	add("hls-throughput", lineChart{title: "hls: segments stored, MB/s per second", xLabel: "seconds", yLabel: "MB/s", series: []series{mb}})
	add("hls-missed", lineChart{title: "hls: missed deadlines and uploads in flight per second", xLabel: "seconds", yLabel: "count",
		series: []series{missed, inflight}})
	var sp99, sp999, stale series
	sp99.name, sp999.name, stale.name = "segment P99", "segment P99.9", "playlist staleness P99"
	for _, run := range r.HLS {
		for _, c := range run.Cells {
			x := float64(run.Cameras)
			switch c.Op {
			case "segment":
				sp99.points = append(sp99.points, point{x, c.Latency.P99})
				sp999.points = append(sp999.points, point{x, c.Latency.P999})
			case "staleness":
				stale.points = append(stale.points, point{x, c.Latency.P99})
			}
		}
	}
	add("hls-summary", lineChart{title: "hls: latency by number of cameras", xLabel: "cameras", yLabel: "ms", logY: true,
		series: []series{sp99, sp999, stale}})
}

// writeHLSSeriesCSV writes the hls per-second series, one row per camera
// count and second.
func (r *Report) writeHLSSeriesCSV(w io.Writer) error {
	if _, err := fmt.Fprintln(w, "cameras,second,segments,missed,errors,mb_per_sec,segment_p50_ms,segment_p99_ms,segment_max_ms,max_in_flight"); err != nil {
		return err
	}
	for _, run := range r.HLS {
		for _, s := range run.Series {
			if _, err := fmt.Fprintf(w, "%d,%d,%d,%d,%d,%g,%g,%g,%g,%d\n", run.Cameras, s.Second, s.Segments, s.Missed, s.Errors,
				s.MBPerSec, s.SegmentP50MS, s.SegmentP99MS, s.SegmentMaxMS, s.InFlight); err != nil {
				return err
			}
		}
	}
	return nil
}
