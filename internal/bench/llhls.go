package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// The hls test with --part is Low-Latency HLS (docs/HLS.md): streams
// publish parts, players block and ask for parts before they exist.
//
//	stream s (of N), part k (segment k/P, part k%P, P parts a segment):
//	  due(s, k) = start + s*D/N + k*D           (D = --part)
//	  PUT  <prefix>/ll<s>/s<seg>.p<i>.m4s      (Bitrate*D/8 bytes)
//	  PUT  <prefix>/ll<s>/s<seg>.m4s           (when the part ends a segment: its parts)
//	  PUT  <prefix>/ll<s>/index.m3u8           (EXT-X-PART of the last 3 segments and the
//	                                            current one, EXT-X-PRELOAD-HINT of part k+1)
//	  DELETE the parts of segment seg-4, and segment seg-W-1 (W listed)
//	player (M per stream), one request at a time:
//	  GET the hinted part (held by b3 until its PUT, read as it arrives)
//	  GET index.m3u8?_HLS_msn=seg&_HLS_part=i of the part it has (a
//	    blocking reload, held until listed), which hints the next part
//
// Part latency is the time from the instant the part's PUT began to the
// player having the whole part: what the origin adds on top of the part
// duration (the encoder had the part when it began the PUT). A part
// misses its deadline when its PUT and its playlist's are not both done
// when the next part is due. A stream count is HELD when no part missed
// its deadline, no request failed, and the p99 part latency is at most
// --max-p99.

// LLHLSConfig is the hls test with parts.
type LLHLSConfig struct {
	Streams         []int
	Players         int // per stream
	Part            time.Duration
	PartsPerSegment int
	Bitrate         int64
	ListSize        int // segments listed
	Duration        time.Duration
	MaxP99          time.Duration
	Prefix          string
}

// PartBytes is the size of one part.
func (c LLHLSConfig) PartBytes() int64 { return c.Bitrate * int64(c.Part) / int64(time.Second) / 8 }

// LLHLSRun is one stream count.
type LLHLSRun struct {
	Streams int      `json:"streams"`
	Players int      `json:"players"`
	PartMS  float64  `json:"part_ms"`
	Verdict string   `json:"verdict"`
	Reasons []string `json:"reasons,omitempty"`
	Parts   int64    `json:"parts_published"`
	Missed  int64    `json:"missed_deadlines"`
	Errors  int64    `json:"errors"`
	// Received counts parts players had; Latency is their part latency
	// (ms); Reloads counts blocking playlist requests.
	Received  int64    `json:"parts_received"`
	Reloads   int64    `json:"blocking_reloads"`
	P50       float64  `json:"part_latency_p50_ms"`
	P99       float64  `json:"part_latency_p99_ms"`
	P999      float64  `json:"part_latency_p99_9_ms"`
	Max       float64  `json:"part_latency_max_ms"`
	FirstErrs []string `json:"first_errors,omitempty"`
}

// LLHLSRunner runs the LL-HLS test against an HTTP target.
type LLHLSRunner struct {
	Target *HTTPTarget
	Log    io.Writer
}

// llStream is one stream's state shared with its players.
type llStream struct {
	mu     sync.Mutex
	begins map[int64]time.Time // part index → when its PUT began (recent parts)
}

func (s *llStream) began(k int64, t time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.begins[k] = t
	delete(s.begins, k-256)
}

func (s *llStream) beginOf(k int64) (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.begins[k]
	return t, ok
}

// llCounts are a run's counters.
type llCounts struct {
	parts, missed, errors, received, reloads atomic.Int64
	mu                                       sync.Mutex
	latency                                  *hdrhistogram.Histogram // µs
	firstErrs                                []string
}

func (c *llCounts) fail(err error) {
	c.errors.Add(1)
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.firstErrs) < 5 {
		c.firstErrs = append(c.firstErrs, err.Error())
	}
}

// Run holds every stream count in order, appending to rep.LLHLS.
func (h *LLHLSRunner) Run(ctx context.Context, cfg LLHLSConfig, rep *Report) error {
	if err := h.preflight(ctx, cfg); err != nil {
		return err
	}
	for _, n := range cfg.Streams {
		if ctx.Err() != nil {
			return nil
		}
		run := h.runStreams(ctx, cfg, n)
		rep.LLHLS = append(rep.LLHLS, run)
		fmt.Fprintln(h.Log, run.line())
	}
	return nil
}

// preflight checks that the bucket holds requests (LL-HLS on): a
// blocking request for the next segment of a playlist is not answered
// within a second.
func (h *LLHLSRunner) preflight(ctx context.Context, cfg LLHLSConfig) error {
	key := cfg.Prefix + "preflight/index.m3u8"
	playlist := "#EXTM3U\n#EXT-X-VERSION:9\n#EXT-X-TARGETDURATION:2\n#EXT-X-SERVER-CONTROL:CAN-BLOCK-RELOAD=YES\n#EXT-X-MEDIA-SEQUENCE:0\n#EXTINF:2.0,\na.m4s\n"
	if err := h.Target.PutSmall(ctx, key, []byte(playlist), "application/vnd.apple.mpegurl"); err != nil {
		return err
	}
	defer h.Target.DeleteOne(context.WithoutCancel(ctx), key)
	short, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	_, err := h.Target.getQuery(short, key, "_HLS_msn=1")
	if err == nil {
		return errors.New("the bucket answered a blocking playlist request at once: turn LL-HLS on for it (b3 admin buckets hls BUCKET on) and run with --bucket BUCKET --create-bucket=false")
	}
	if short.Err() == nil {
		return fmt.Errorf("preflight: %w", err)
	}
	return nil
}

func (h *LLHLSRunner) runStreams(ctx context.Context, cfg LLHLSConfig, n int) LLHLSRun {
	counts := &llCounts{latency: hdrhistogram.New(1, 120_000_000, 3)}
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	part := make([]byte, cfg.PartBytes())
	for i := range part {
		part[i] = byte(rand.Uint32())
	}
	start := time.Now().Add(200 * time.Millisecond)
	end := start.Add(cfg.Duration)
	var wg sync.WaitGroup
	for s := range n {
		st := &llStream{begins: map[int64]time.Time{}}
		dir := fmt.Sprintf("%sll%04d/", cfg.Prefix, s)
		offset := time.Duration(s) * cfg.Part / time.Duration(n)
		wg.Add(1)
		go func() {
			defer wg.Done()
			h.publish(runCtx, cfg, st, dir, part, start.Add(offset), end, counts)
		}()
		for range cfg.Players {
			wg.Add(1)
			go func() {
				defer wg.Done()
				h.play(runCtx, cfg, st, dir, start.Add(offset), end, counts)
			}()
		}
	}
	wg.Wait()
	run := LLHLSRun{Streams: n, Players: cfg.Players, PartMS: float64(cfg.Part) / 1e6,
		Parts: counts.parts.Load(), Missed: counts.missed.Load(), Errors: counts.errors.Load(),
		Received: counts.received.Load(), Reloads: counts.reloads.Load(), FirstErrs: counts.firstErrs}
	q := func(p float64) float64 { return float64(counts.latency.ValueAtQuantile(p)) / 1000 }
	run.P50, run.P99, run.P999, run.Max = q(50), q(99), q(99.9), float64(counts.latency.Max())/1000
	if run.Missed > 0 {
		run.Reasons = append(run.Reasons, fmt.Sprintf("%d parts missed their deadline", run.Missed))
	}
	if run.Errors > 0 {
		run.Reasons = append(run.Reasons, fmt.Sprintf("%d requests failed", run.Errors))
	}
	if run.Received == 0 || run.P99 > float64(cfg.MaxP99)/1e6 {
		run.Reasons = append(run.Reasons, fmt.Sprintf("p99 part latency %.1f ms > %v", run.P99, cfg.MaxP99))
	}
	run.Verdict = "held"
	if len(run.Reasons) > 0 {
		run.Verdict = "not held"
	}
	if ctx.Err() != nil {
		run.Verdict = "interrupted"
	}
	return run
}

func llPart(seg int64, i int) string { return fmt.Sprintf("s%d.p%d.m4s", seg, i) }

// publish is one stream's packager.
func (h *LLHLSRunner) publish(ctx context.Context, cfg LLHLSConfig, st *llStream, dir string, part []byte, start, end time.Time, c *llCounts) {
	pps := int64(cfg.PartsPerSegment)
	for k := int64(0); ; k++ {
		due := start.Add(time.Duration(k) * cfg.Part)
		if !due.Before(end) {
			return
		}
		if d := time.Until(due); d > 0 {
			select {
			case <-time.After(d):
			case <-ctx.Done():
				return
			}
		}
		seg, i := k/pps, int(k%pps)
		st.began(k, time.Now())
		err := h.Target.PutSmall(ctx, dir+llPart(seg, i), part, "video/iso.segment")
		if err == nil && i == int(pps-1) {
			err = h.Target.put(ctx, dir+fmt.Sprintf("s%d.m4s", seg), io.MultiReader(repeat(part, int(pps))...), int64(len(part))*pps, "video/iso.segment")
		}
		if err == nil {
			err = h.Target.PutSmall(ctx, dir+"index.m3u8", llPlaylist(cfg, k), "application/vnd.apple.mpegurl")
		}
		if err == nil && i == int(pps-1) {
			// Parts are listed for the last three segments only, segments
			// for ListSize.
			for j := range pps {
				if old := seg - 3; old >= 0 && err == nil {
					err = h.Target.DeleteOne(ctx, dir+llPart(old, int(j)))
				}
			}
			if old := seg - int64(cfg.ListSize) - 1; old >= 0 && err == nil {
				err = h.Target.DeleteOne(ctx, dir+fmt.Sprintf("s%d.m4s", old))
			}
		}
		if ctx.Err() != nil {
			return
		}
		c.parts.Add(1)
		if err != nil {
			c.fail(err)
		} else if time.Now().After(due.Add(cfg.Part)) {
			c.missed.Add(1)
		}
	}
}

func repeat(b []byte, n int) []io.Reader {
	out := make([]io.Reader, n)
	for i := range out {
		out[i] = bytes.NewReader(b)
	}
	return out
}

// llPlaylist is a stream's playlist once part k is published.
func llPlaylist(cfg LLHLSConfig, k int64) []byte {
	pps := int64(cfg.PartsPerSegment)
	partSec := cfg.Part.Seconds()
	segSec := partSec * float64(pps)
	complete := (k + 1) / pps // complete segments
	first := max(0, complete-int64(cfg.ListSize))
	var b strings.Builder
	fmt.Fprintf(&b, "#EXTM3U\n#EXT-X-VERSION:9\n#EXT-X-TARGETDURATION:%d\n#EXT-X-PART-INF:PART-TARGET=%.3f\n", int(segSec+0.999), partSec)
	fmt.Fprintf(&b, "#EXT-X-SERVER-CONTROL:CAN-BLOCK-RELOAD=YES,PART-HOLD-BACK=%.3f\n#EXT-X-MEDIA-SEQUENCE:%d\n#EXT-X-MAP:URI=\"init.mp4\"\n", 3*partSec, first)
	parts := func(seg int64, n int64) {
		for i := range n {
			fmt.Fprintf(&b, "#EXT-X-PART:DURATION=%.3f,URI=%q\n", partSec, llPart(seg, int(i)))
		}
	}
	for s := first; s < complete; s++ {
		if s >= complete-3 {
			parts(s, pps)
		}
		fmt.Fprintf(&b, "#EXTINF:%.3f,\ns%d.m4s\n", segSec, s)
	}
	parts(complete, (k+1)%pps)
	next := k + 1
	fmt.Fprintf(&b, "#EXT-X-PRELOAD-HINT:TYPE=PART,URI=%q\n", llPart(next/pps, int(next%pps)))
	return []byte(b.String())
}

// hintOf returns the part index the playlist's preload hint names.
func hintOf(playlist []byte, pps int64) (int64, bool) {
	_, rest, ok := strings.Cut(string(playlist), "#EXT-X-PRELOAD-HINT:TYPE=PART,URI=\"s")
	if !ok {
		return 0, false
	}
	segText, rest, ok := strings.Cut(rest, ".p")
	partText, _, ok2 := strings.Cut(rest, ".m4s")
	seg, err1 := strconv.ParseInt(segText, 10, 64)
	i, err2 := strconv.ParseInt(partText, 10, 64)
	if !ok || !ok2 || err1 != nil || err2 != nil {
		return 0, false
	}
	return seg*pps + i, true
}

// play is one player: it waits for the stream's first playlist, then
// alternates the hinted part and the blocking reload that hints the next.
func (h *LLHLSRunner) play(ctx context.Context, cfg LLHLSConfig, st *llStream, dir string, start, end time.Time, c *llCounts) {
	pps := int64(cfg.PartsPerSegment)
	select {
	case <-time.After(time.Until(start.Add(cfg.Part + cfg.Part/2))):
	case <-ctx.Done():
		return
	}
	// The stream's first playlist, once it is there (a packager late to
	// start is its own missed deadlines, not this player's error).
	playlist, err := h.Target.GetSmall(ctx, dir+"index.m3u8")
	for ; err != nil && errorCode(err) == "NoSuchKey" && time.Now().Before(end); playlist, err = h.Target.GetSmall(ctx, dir+"index.m3u8") {
		select {
		case <-time.After(cfg.Part):
		case <-ctx.Done():
			return
		}
	}
	if err != nil {
		if ctx.Err() == nil && time.Now().Before(end) {
			c.fail(err)
		}
		return
	}
	next, ok := hintOf(playlist, pps)
	for ok && time.Now().Before(end) {
		resp, err := h.Target.get(ctx, dir+llPart(next/pps, int(next%pps)))
		if err == nil {
			_, err = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		if ctx.Err() != nil || !time.Now().Before(end) {
			return
		}
		if err != nil {
			c.fail(err)
			return
		}
		if began, ok := st.beginOf(next); ok {
			c.mu.Lock()
			_ = c.latency.RecordValue(time.Since(began).Microseconds())
			c.mu.Unlock()
			c.received.Add(1)
		}
		c.reloads.Add(1)
		playlist, err = h.Target.getQuery(ctx, dir+"index.m3u8", fmt.Sprintf("_HLS_msn=%d&_HLS_part=%d", next/pps, next%pps))
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			c.fail(err)
			return
		}
		if next, ok = hintOf(playlist, pps); !ok {
			c.fail(errors.New("a playlist without a preload hint"))
		}
	}
}

// line is the run's verdict line.
func (r LLHLSRun) line() string {
	s := fmt.Sprintf("%d LL-HLS streams (%.0f ms parts), %d players each: %s; part latency p50 %.1f p99 %.1f p99.9 %.1f max %.1f ms; %d parts published, %d received, %d blocking reloads, %d missed deadlines, %d errors",
		r.Streams, r.PartMS, r.Players, r.Verdict, r.P50, r.P99, r.P999, r.Max, r.Parts, r.Received, r.Reloads, r.Missed, r.Errors)
	if len(r.Reasons) > 0 {
		s += "  (" + strings.Join(r.Reasons, "; ") + ")"
	}
	if len(r.FirstErrs) > 0 {
		s += "\n  first errors: " + strings.Join(r.FirstErrs, " | ")
	}
	return s
}

// getQuery GETs key with a query string and reads the body whole.
func (t *HTTPTarget) getQuery(ctx context.Context, key, query string) ([]byte, error) {
	req, err := t.requestQuery(ctx, http.MethodGet, key, query, nil, 0)
	if err != nil {
		return nil, err
	}
	resp, err := t.do(req)
	if err != nil {
		return nil, fmt.Errorf("get %s?%s: %w", key, query, err)
	}
	defer resp.Body.Close()
	return io.ReadAll(resp.Body)
}

// errorCode is the S3 error code of err, "" when it has none.
func errorCode(err error) string {
	var ae interface{ ErrorCode() string }
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}
