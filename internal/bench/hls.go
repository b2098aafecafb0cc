package bench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// The hls test is the workload b3 is for: live cameras pushing HLS.
//
//	camera c (of N), segment k:
//	  due(c, k) = start + c*S/N + k*S         (cameras spread over one period)
//	  PUT  <prefix>/cam<c>/seg<k>.ts          (Bitrate*S/8 bytes)
//	  PUT  <prefix>/cam<c>/index.m3u8         (the last ListSize segments)
//	  DELETE <prefix>/cam<c>/seg<k-R>.ts      (R = Retention/S)
//	viewer v (of V) watches camera v*N/V, once per period:
//	  GET index.m3u8, then GET its newest segment
//
// A camera is sequential, as an encoder is: segment k+1 is not sent before
// segment k and its playlist are. Latency counts from the due instant, so
// a camera that falls behind shows it in every later segment's latency
// (no coordinated omission). A segment misses its deadline when it is not
// stored (acknowledged) before the next one is due: due(c, k) + S; a failed
// upload misses it too. Playlist staleness is what a viewer sees: the time
// from the instant the newest segment listed in the playlist it read was
// due (its recording ended) to the read; on a server that keeps up it lies
// between the upload latency and S plus it.
//
// A run is HELD when no segment missed its deadline, no request failed, the
// 99th percentile of segment upload latency is at most MaxP99, and the
// cameras started their segments on time (P99 issue lateness at most
// DefaultRule.MaxLateness; else the client, not the server, fell behind).

// HLSConfig is the hls test: each camera count in Cameras is held for
// Duration.
type HLSConfig struct {
	Cameras   []int
	Viewers   func(cameras int) int
	Segment   time.Duration // segment duration (the upload period)
	Bitrate   int64         // bits per second
	Retention time.Duration // segments older than this are deleted
	ListSize  int           // segments listed in a playlist
	Duration  time.Duration
	Drain     time.Duration
	MaxP99    time.Duration
	Prefix    string
	Cleanup   bool
}

// SegmentBytes is the size of one segment.
func (c HLSConfig) SegmentBytes() int64 { return c.Bitrate * int64(c.Segment) / int64(time.Second) / 8 }

// HLSTarget is a Target that can also do what encoders and players do with
// small objects: write and read a playlist, delete one segment.
type HLSTarget interface {
	Target
	PutSmall(ctx context.Context, key string, body []byte, contentType string) error
	GetSmall(ctx context.Context, key string) ([]byte, error)
	DeleteOne(ctx context.Context, key string) error
}

// HLSRun is one camera count of the hls test.
type HLSRun struct {
	Cameras int      `json:"cameras"`
	Viewers int      `json:"viewers"`
	Verdict string   `json:"verdict"` // held | not held | interrupted
	Reasons []string `json:"reasons,omitempty"`
	// Missed counts segments not stored before the next one was due.
	Missed  int64        `json:"missed_deadlines"`
	Cells   []Cell       `json:"cells"`
	Streams []HLSStream  `json:"streams"` // one per camera
	Series  []HLSSecond  `json:"series"`
	Late    LatenessNote `json:"issue_lateness_ms"`
}

// LatenessNote is how late cameras started their segments (client delay).
type LatenessNote struct {
	P99 float64 `json:"p99"`
	Max float64 `json:"max"`
}

// HLSStream is one camera's segment uploads: latency percentiles (ms,
// from the due instant), missed deadlines and errors.
type HLSStream struct {
	Camera   int     `json:"camera"`
	Segments int64   `json:"segments"`
	Missed   int64   `json:"missed"`
	Errors   int64   `json:"errors"`
	P50      float64 `json:"p50_ms"`
	P99      float64 `json:"p99_ms"`
	P999     float64 `json:"p99_9_ms"`
	Max      float64 `json:"max_ms"`
}

// HLSSecond is one second of a run (by completion time): segments
// stored, missed and failed, MB/s of segments, segment latency, uploads in
// flight.
type HLSSecond struct {
	Second       int     `json:"second"`
	Segments     int64   `json:"segments"`
	Missed       int64   `json:"missed"`
	Errors       int64   `json:"errors"`
	MBPerSec     float64 `json:"mb_per_sec"`
	SegmentP50MS float64 `json:"segment_p50_ms"`
	SegmentP99MS float64 `json:"segment_p99_ms"`
	SegmentMaxMS float64 `json:"segment_max_ms"`
	InFlight     int64   `json:"max_in_flight"`
}

// HLSRunner runs the hls test against a target.
type HLSRunner struct {
	Target   HLSTarget
	Pool     *Pool
	Clock    Clock
	Progress *Progress
	Log      io.Writer
}

// Run holds every camera count in order, appending to rep.HLS and
// rep.Cells.
func (h *HLSRunner) Run(ctx context.Context, cfg HLSConfig, rep *Report) {
	for _, n := range cfg.Cameras {
		if ctx.Err() != nil {
			return
		}
		run := h.runCameras(ctx, cfg, n)
		rep.HLS = append(rep.HLS, run)
		rep.Cells = append(rep.Cells, run.Cells...)
	}
}

// msHistogram is a small histogram of milliseconds (1 ms .. 1 h, 2
// significant digits): one per camera and per second stays cheap.
func msHistogram() *hdrhistogram.Histogram { return hdrhistogram.New(1, 3_600_000, 2) }

func recordMS(h *hdrhistogram.Histogram, d time.Duration) {
	_ = h.RecordValue(min(max(d.Milliseconds(), 1), 3_600_000))
}

type hlsSlot struct {
	mu                       sync.Mutex
	segments, missed, errors int64
	bytes                    int64
	inFlight                 int64
	hist                     *hdrhistogram.Histogram
}

// hlsState is what one run's cameras and viewers share.
type hlsState struct {
	cfg      HLSConfig
	prefix   string
	start    time.Time
	cameras  int
	segBytes int64

	segment, playlist, deletes, viewPlaylist, viewSegment, staleness *Recorder
	lateness                                                         *Recorder
	streams                                                          []HLSStream
	streamHist                                                       []*hdrhistogram.Histogram
	slots                                                            []hlsSlot
	inFlight                                                         atomic.Int64
	last                                                             []atomic.Int64 // per camera: next segment number not yet sent
}

func (s *hlsState) due(camera int, k int64) time.Time {
	offset := time.Duration(int64(s.cfg.Segment) * int64(camera) / int64(s.cameras))
	return s.start.Add(offset + time.Duration(k)*s.cfg.Segment)
}

func (s *hlsState) slot(t time.Time) *hlsSlot {
	i := int(t.Sub(s.start) / time.Second)
	return &s.slots[max(0, min(i, len(s.slots)-1))]
}

func (s *hlsState) segmentKey(camera int, k int64) string {
	return fmt.Sprintf("%s/cam%04d/seg%08d.ts", s.prefix, camera, k)
}

func (s *hlsState) playlistKey(camera int) string {
	return fmt.Sprintf("%s/cam%04d/index.m3u8", s.prefix, camera)
}

// playlistBody lists segments first..last of a camera.
func (s *hlsState) playlistBody(first, last int64) []byte {
	var b bytes.Buffer
	secs := s.cfg.Segment.Seconds()
	fmt.Fprintf(&b, "#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-TARGETDURATION:%d\n#EXT-X-MEDIA-SEQUENCE:%d\n", int64(secs+0.999), first)
	for k := first; k <= last; k++ {
		fmt.Fprintf(&b, "#EXTINF:%.3f,\nseg%08d.ts\n", secs, k)
	}
	return b.Bytes()
}

// newestListed is the number of the last segment a playlist lists, or -1.
func newestListed(body []byte) int64 {
	text := string(body)
	i := strings.Index(text, "#EXT-X-MEDIA-SEQUENCE:")
	if i < 0 {
		return -1
	}
	rest := text[i+len("#EXT-X-MEDIA-SEQUENCE:"):]
	first, err := strconv.ParseInt(rest[:max(0, strings.IndexByte(rest, '\n'))], 10, 64)
	if err != nil {
		return -1
	}
	return first + int64(strings.Count(text, "#EXTINF:")) - 1
}

func (h *HLSRunner) runCameras(ctx context.Context, cfg HLSConfig, cameras int) HLSRun {
	viewers := 0
	if cfg.Viewers != nil {
		viewers = cfg.Viewers(cameras)
	}
	s := &hlsState{
		cfg: cfg, prefix: fmt.Sprintf("%s/hls/c%d", cfg.Prefix, cameras), cameras: cameras, segBytes: cfg.SegmentBytes(),
		segment: NewRecorder(), playlist: NewRecorder(), deletes: NewRecorder(),
		viewPlaylist: NewRecorder(), viewSegment: NewRecorder(), staleness: NewRecorder(), lateness: NewRecorder(),
		streams: make([]HLSStream, cameras), streamHist: make([]*hdrhistogram.Histogram, cameras),
		slots: make([]hlsSlot, int((cfg.Duration+cfg.Drain)/time.Second)+2), last: make([]atomic.Int64, cameras),
	}
	for i := range s.slots {
		s.slots[i].hist = msHistogram()
	}
	for c := range s.streamHist {
		s.streamHist[c] = msHistogram()
		s.streams[c].Camera = c
	}
	if h.Progress != nil {
		h.Progress.Track(fmt.Sprintf("hls %d cameras: segments", cameras), s.segment, h.Clock.Now().Add(cfg.Duration))
	}
	// Ops outlive the hold by the drain, then are canceled.
	opCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	cpu, began := startCPUMeter(), time.Now()
	s.start = h.Clock.Now()
	end := s.start.Add(cfg.Duration)
	var cams, views sync.WaitGroup
	for c := range cameras {
		cams.Add(1)
		go func() {
			defer cams.Done()
			h.camera(opCtx, s, c, end)
		}()
	}
	viewCtx, stopViewers := context.WithCancel(opCtx)
	for v := range viewers {
		views.Add(1)
		go func() {
			defer views.Done()
			h.viewer(viewCtx, s, v, viewers, end)
		}()
	}
	camsDone := make(chan struct{})
	go func() { cams.Wait(); close(camsDone) }()
	select {
	case <-camsDone:
	case <-ctx.Done():
	case <-waitUntil(h.Clock, ctx, end.Add(cfg.Drain)):
		if h.Log != nil {
			fmt.Fprintf(h.Log, "hls %d cameras: drain of %s expired, canceling uploads in flight\n", cameras, cfg.Drain)
		}
	}
	stopViewers()
	cancel()
	cams.Wait()
	views.Wait()
	clientCPU := cpu.percent(time.Since(began))

	run := HLSRun{Cameras: cameras, Viewers: viewers, Streams: s.streams}
	mode := fmt.Sprintf("%d cams", cameras)
	add := func(op string, size int64, rec *Recorder) {
		c := rec.Cell(cfg.Duration)
		c.Op, c.Size, c.Mode, c.Concurrency, c.ClientCPU = op, size, mode, cameras, clientCPU
		run.Cells = append(run.Cells, c)
	}
	add("segment", s.segBytes, s.segment)
	add("playlist", 0, s.playlist)
	add("delete", 0, s.deletes)
	if viewers > 0 {
		add("view-playlist", 0, s.viewPlaylist)
		add("view-segment", s.segBytes, s.viewSegment)
		add("staleness", 0, s.staleness)
		run.Cells[len(run.Cells)-1].Note = "latency columns: age of the newest listed segment when a viewer read the playlist"
	}
	for c := range s.streams {
		st, hist := &s.streams[c], s.streamHist[c]
		if hist.TotalCount() > 0 {
			st.P50, st.P99, st.P999 = float64(hist.ValueAtQuantile(50)), float64(hist.ValueAtQuantile(99)), float64(hist.ValueAtQuantile(99.9))
			st.Max = float64(hist.Max())
		}
		run.Missed += st.Missed
	}
	for i := range s.slots {
		sl := &s.slots[i]
		if i*int(time.Second) > int(cfg.Duration+cfg.Drain) && sl.segments+sl.missed+sl.errors == 0 {
			break
		}
		sec := HLSSecond{Second: i, Segments: sl.segments, Missed: sl.missed, Errors: sl.errors,
			MBPerSec: float64(sl.bytes) / 1e6, InFlight: sl.inFlight}
		if sl.hist.TotalCount() > 0 {
			sec.SegmentP50MS, sec.SegmentP99MS = float64(sl.hist.ValueAtQuantile(50)), float64(sl.hist.ValueAtQuantile(99))
			sec.SegmentMaxMS = float64(sl.hist.Max())
		}
		run.Series = append(run.Series, sec)
	}
	late := s.lateness.Cell(cfg.Duration).Latency
	run.Late = LatenessNote{P99: late.P99, Max: late.Max}
	if ctx.Err() != nil {
		run.Verdict = "interrupted"
		return run
	}
	run.Verdict, run.Reasons = judgeHLS(run, cfg, time.Duration(late.P99*float64(time.Millisecond)))
	if cfg.Cleanup {
		h.cleanup(ctx, s)
	}
	return run
}

// judgeHLS applies the rule described at the top of this file.
func judgeHLS(run HLSRun, cfg HLSConfig, p99Late time.Duration) (string, []string) {
	var reasons []string
	if run.Missed > 0 {
		reasons = append(reasons, fmt.Sprintf("%d segments missed their deadline", run.Missed))
	}
	for _, c := range run.Cells {
		if c.Errors > 0 {
			reasons = append(reasons, fmt.Sprintf("%s: %d errors (%s)", c.Op, c.Errors, formatErrorTypes(c.ErrorsByType)))
		}
		if c.Op == "segment" {
			if p99 := time.Duration(c.Latency.P99 * float64(time.Millisecond)); p99 > cfg.MaxP99 {
				reasons = append(reasons, fmt.Sprintf("segment upload P99 %s > %s", formatDuration(p99), cfg.MaxP99))
			}
			if c.Ops == 0 {
				reasons = append(reasons, "no segment stored")
			}
		}
	}
	if p99Late > DefaultRule.MaxLateness {
		reasons = append(reasons, fmt.Sprintf("P99 camera issue lateness %s (> %s): the client fell behind", formatDuration(p99Late), DefaultRule.MaxLateness))
	}
	if len(reasons) > 0 {
		return "not held", reasons
	}
	return "held", nil
}

// waitUntil returns a channel closed at t (or when ctx ends).
func waitUntil(clock Clock, ctx context.Context, t time.Time) <-chan struct{} {
	ch := make(chan struct{})
	go func() {
		_ = clock.SleepUntil(ctx, t)
		close(ch)
	}()
	return ch
}

// camera is one encoder: a segment, its playlist, the expired segment's
// delete, every period until the hold ends.
func (h *HLSRunner) camera(ctx context.Context, s *hlsState, c int, end time.Time) {
	retain := max(int64(s.cfg.Retention/s.cfg.Segment), int64(s.cfg.ListSize))
	var free time.Time // when the camera finished its previous segment
	for k := int64(0); ; k++ {
		due := s.due(c, k)
		if !due.Before(end) || h.Clock.SleepUntil(ctx, due) != nil {
			return
		}
		// Issue lateness is the client's own delay: from the later of the
		// due instant and the end of the previous segment's requests (a
		// camera still busy with a slow upload is the server's delay, and
		// shows in the latency, which counts from due).
		s.lateness.Done(h.Clock.Now().Sub(later(due, free)), 0, nil)
		key := s.segmentKey(c, k)
		s.segment.Issue()
		s.last[c].Store(k + 1)
		n := s.inFlight.Add(1)
		sl := s.slot(h.Clock.Now())
		sl.mu.Lock()
		sl.inFlight = max(sl.inFlight, n)
		sl.mu.Unlock()
		err := h.Target.Put(ctx, key, h.Pool.Payload(key, s.segBytes))
		s.inFlight.Add(-1)
		done := h.Clock.Now()
		latency := done.Sub(due)
		s.segment.Done(latency, s.segBytes, err)
		// A segment canceled by an interrupted run did not miss; one cut
		// off by the drain did (it is past its deadline).
		missed := done.After(due.Add(s.cfg.Segment)) || (err != nil && ctx.Err() == nil)
		st := &s.streams[c]
		sl = s.slot(done)
		sl.mu.Lock()
		st.Segments++
		if err != nil {
			st.Errors++
			sl.errors++
		} else {
			sl.segments++
			sl.bytes += s.segBytes
			recordMS(sl.hist, latency)
			recordMS(s.streamHist[c], latency)
		}
		if missed {
			st.Missed++
			sl.missed++
		}
		sl.mu.Unlock()
		if err != nil {
			free = done
			continue
		}
		first := max(0, k-int64(s.cfg.ListSize)+1)
		body := s.playlistBody(first, k)
		s.playlist.Issue()
		began := h.Clock.Now()
		err = h.Target.PutSmall(ctx, s.playlistKey(c), body, "application/vnd.apple.mpegurl")
		s.playlist.Done(h.Clock.Now().Sub(began), int64(len(body)), err)
		if old := k - retain; old >= 0 {
			s.deletes.Issue()
			began := h.Clock.Now()
			err := h.Target.DeleteOne(ctx, s.segmentKey(c, old))
			s.deletes.Done(h.Clock.Now().Sub(began), 0, err)
		}
		free = h.Clock.Now()
	}
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// viewer is one player: once a period, the playlist and its newest
// segment, starting one period in (when playlists exist).
func (h *HLSRunner) viewer(ctx context.Context, s *hlsState, v, viewers int, end time.Time) {
	c := v * s.cameras / viewers
	// Players tune in at any moment of a segment's period: spread their
	// phases over it (golden-ratio steps), so that staleness is sampled
	// across the period, not at one point of it.
	phase := math.Mod(float64(v)*0.6180339887498949, 1)
	offset := time.Duration(phase * float64(s.cfg.Segment))
	for k := int64(1); ; k++ {
		due := s.due(c, 0).Add(time.Duration(k)*s.cfg.Segment + offset)
		if !due.Before(end) || h.Clock.SleepUntil(ctx, due) != nil {
			return
		}
		s.viewPlaylist.Issue()
		began := h.Clock.Now()
		body, err := h.Target.GetSmall(ctx, s.playlistKey(c))
		read := h.Clock.Now()
		s.viewPlaylist.Done(read.Sub(began), int64(len(body)), err)
		if err != nil {
			continue
		}
		newest := newestListed(body)
		if newest < 0 {
			continue
		}
		s.staleness.Issue()
		s.staleness.Done(read.Sub(s.due(c, newest)), 0, nil)
		key := s.segmentKey(c, newest)
		s.viewSegment.Issue()
		began = h.Clock.Now()
		n, err := h.Target.Get(ctx, key, s.segBytes, NewSink(nil))
		s.viewSegment.Done(h.Clock.Now().Sub(began), n, err)
	}
}

// cleanup deletes the segments still kept and the playlists.
func (h *HLSRunner) cleanup(ctx context.Context, s *hlsState) {
	retain := max(int64(s.cfg.Retention/s.cfg.Segment), int64(s.cfg.ListSize))
	var keys []string
	for c := range s.cameras {
		last := s.last[c].Load()
		for k := max(0, last-retain-1); k < last; k++ {
			keys = append(keys, s.segmentKey(c, k))
		}
		keys = append(keys, s.playlistKey(c))
	}
	if err := h.Target.Delete(ctx, keys); err != nil && h.Log != nil {
		fmt.Fprintf(h.Log, "hls: cleanup: %v\n", err)
	}
}
