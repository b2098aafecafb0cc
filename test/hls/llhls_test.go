package hls

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/chromedp/chromedp"

	"github.com/b3-storage/b3/internal/testutil"
)

// playerFile returns the path of a file of an npm package that
// scripts/install-test-tools.sh installs into .tools/npm.
func playerFile(t *testing.T, rel string) string {
	t.Helper()
	_, here, _, _ := runtime.Caller(0)
	p := filepath.Join(filepath.Dir(here), "..", "..", ".tools", "npm", "node_modules", rel)
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("no %s: run `sh scripts/install-test-tools.sh` (or `make tools`)", p)
	}
	return p
}

// The player pages: each plays ?src= in low-latency mode, and records in
// window.loaded every part or segment it has (its URL and Date.now()), in
// window.errors every error, and in window.requests the playlist URLs it
// asked for.
const hlsjsPage = `<!doctype html><meta charset="utf-8"><video id="v" muted autoplay playsinline></video>
<script src="hls.min.js"></script><script>
performance.setResourceTimingBufferSize(100000);
window.loaded = []; window.errors = []; window.requests = [];
const v = document.getElementById('v');
const hls = new Hls({lowLatencyMode: true, backBufferLength: 10});
hls.on(Hls.Events.FRAG_LOADED, (e, d) => window.loaded.push({url: (d.part || d.frag).url, t: Date.now(), part: !!d.part}));
hls.on(Hls.Events.LEVEL_LOADING, (e, d) => window.requests.push(d.url));
hls.on(Hls.Events.ERROR, (e, d) => window.errors.push({details: String(d.details), fatal: !!d.fatal}));
hls.loadSource(new URLSearchParams(location.search).get('src'));
hls.attachMedia(v);
v.play().catch(() => {});
</script>`

const shakaPage = `<!doctype html><meta charset="utf-8"><video id="v" muted autoplay playsinline></video>
<script src="shaka-player.compiled.js"></script><script>
performance.setResourceTimingBufferSize(100000);
window.loaded = []; window.errors = []; window.requests = [];
(async () => {
  shaka.polyfill.installAll();
  const v = document.getElementById('v');
  const player = new shaka.Player();
  await player.attach(v);
  player.configure({streaming: {lowLatencyMode: true}});
  const T = shaka.net.NetworkingEngine.RequestType;
  player.getNetworkingEngine().registerRequestFilter((type, req) => { if (type === T.MANIFEST) window.requests.push(req.uris[0]); });
  player.getNetworkingEngine().registerResponseFilter((type, resp) => {
    if (type === T.SEGMENT) window.loaded.push({url: resp.uri, t: Date.now(), part: /\.p\d+\.m4s/.test(resp.uri)});
  });
  player.addEventListener('error', e => window.errors.push({details: String(e.detail && e.detail.code), fatal: e.detail && e.detail.severity === 2}));
  try { await player.load(new URLSearchParams(location.search).get('src')); v.play().catch(() => {}); }
  catch (e) { window.errors.push({details: 'load ' + String(e && e.code), fatal: true}); }
})();
</script>`

// metrics scrapes the server's /metrics for the series named.
func metrics(t *testing.T, srv *testutil.Server, names ...string) map[string]float64 {
	t.Helper()
	resp, err := http.Get("http://" + srv.AdminAddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), " ")
		if ok && slices.Contains(names, name) {
			out[name], _ = strconv.ParseFloat(value, 64)
		}
	}
	for _, n := range names {
		if _, ok := out[n]; !ok {
			t.Fatalf("/metrics has no %s", n)
		}
	}
	return out
}

// resource is the browser's timing of one request (Resource Timing,
// milliseconds since the epoch).
type resource struct {
	URL    string  `json:"url"`
	Start  float64 `json:"start"`
	End    float64 `json:"end"`
	Status int     `json:"status"`
}

func ms(v float64) time.Time { return time.UnixMicro(int64(v * 1000)) }

// loaded is what a player page recorded.
type loaded struct {
	URL  string `json:"url"`
	T    int64  `json:"t"`
	Part bool   `json:"part"`
}

// TestLLHLSPlayers: a real encoder (ffmpeg, 200 ms CMAF fragments of
// lavfi testsrc in real time) and the test's packager publish LL-HLS into
// an LL-HLS bucket of a real b3 server; hls.js and shaka-player, in
// headless Chromium, play it in low-latency mode from b3 while it is
// made. Each must play (currentTime advances 4 s, no fatal error), load
// parts with blocking playlist requests (_HLS_msn) and get every part it
// asks for (200); b3's counters must show blocking playlist requests
// held, and GETs of preload-hinted parts held until the packager's PUT:
// shaka asks for the hinted part ahead (the browser's own timing shows
// the request began before the PUT), hls.js 1.7 parses
// EXT-X-PRELOAD-HINT but never asks for the hinted part. The time from a
// part's PUT to the player having it is logged (p50, p99, max; not
// asserted: a benchmark measures, docs/PERFORMANCE.md). Then ffprobe
// reads the finished stream whole.
func TestLLHLSPlayers(t *testing.T) {
	ffmpeg, ffprobe := tool(t, "ffmpeg"), tool(t, "ffprobe")
	hlsjs := playerFile(t, "hls.js/dist/hls.min.js")
	shaka := playerFile(t, "shaka-player/dist/shaka-player.compiled.js")
	srv := testutil.StartServer(t, testutil.ServerOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	c := srv.Client(30 * time.Second)
	const bucket = "live"
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatal(err)
	}
	readers := fmt.Sprintf(`{"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Principal": "*", "Action": "s3:GetObject",
		"Resource": "arn:aws:s3:::%s/*", "Condition": {"IpAddress": {"aws:SourceIp": "127.0.0.0/8"}}}]}`, bucket)
	if _, err := c.PutBucketPolicy(ctx, &s3.PutBucketPolicyInput{Bucket: aws.String(bucket), Policy: aws.String(readers)}); err != nil {
		t.Fatal(err)
	}
	if res, err := srv.Admin().SetBucketHLS(ctx, bucket, true); err != nil || !res.LLHLS {
		t.Fatalf("buckets hls live on: %+v %v", res, err)
	}
	// The players and their pages, served by b3 from the bucket itself
	// (same origin as the stream).
	for name, file := range map[string]string{"hls.min.js": hlsjs, "shaka-player.compiled.js": shaka} {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		putObject(ctx, t, c, bucket, "player/"+name, "text/javascript", data)
	}
	putObject(ctx, t, c, bucket, "player/hlsjs.html", "text/html", []byte(hlsjsPage))
	putObject(ctx, t, c, bucket, "player/shaka.html", "text/html", []byte(shakaPage))

	const seconds = 24
	pk := &packager{client: c, bucket: bucket, dir: "cam/", partDuration: 200 * time.Millisecond, partsPerSegment: 5, puts: map[string]time.Time{}}
	encoded := make(chan error, 1)
	go func() { encoded <- pk.run(ctx, ffmpeg, seconds) }()
	testutil.WaitFor(t, "the first segment published", func() bool {
		_, ok := pk.putTime(segmentName(0))
		return ok
	})

	allocCtx, cancelAlloc := chromedp.NewExecAllocator(ctx, append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(testutil.Chromium(t)), chromedp.NoSandbox, chromedp.Flag("autoplay-policy", "no-user-gesture-required"))...)
	defer cancelAlloc()
	browser, cancelBrowser := chromedp.NewContext(allocCtx)
	defer cancelBrowser()
	if err := chromedp.Do(browser); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	src := srv.Endpoint() + "/" + bucket + "/cam/" + playlistName
	tabs := map[string]context.Context{}
	for _, player := range []string{"hlsjs", "shaka"} {
		tab, cancelTab := chromedp.NewContext(browser)
		defer cancelTab()
		if err := chromedp.Do(tab, chromedp.Navigate(srv.Endpoint()+"/"+bucket+"/player/"+player+".html?src="+src)); err != nil {
			t.Fatalf("%s: open the page: %v", player, err)
		}
		tabs[player] = tab
	}
	// Both play while the stream is made: currentTime passes 4 s.
	for player, tab := range tabs {
		if _, err := chromedp.Run(tab, chromedp.Poll[bool](`document.getElementById('v').currentTime > 4 || window.errors.some(e => e.fatal)`,
			chromedp.WithPollingInterval(100*time.Millisecond), chromedp.WithPollingTimeout(time.Duration(seconds)*time.Second))); err != nil {
			t.Errorf("%s: did not play 4 s of the live stream: %v", player, err)
		}
	}
	if err := <-encoded; err != nil {
		t.Fatalf("packager: %v", err)
	}
	live := metrics(t, srv, "b3_llhls_playlist_requests_held_total", "b3_llhls_part_requests_held_total", "b3_llhls_part_requests_streamed_total")
	aheadBy := map[string]int{}
	for player, tab := range tabs {
		type state struct {
			Time      float64    `json:"time"`
			Errors    []any      `json:"errors"`
			Loaded    []loaded   `json:"loaded"`
			Requests  []string   `json:"requests"`
			Resources []resource `json:"resources"`
		}
		var st state
		raw, err := chromedp.Run(tab, chromedp.Evaluate[string](`JSON.stringify({time: document.getElementById('v').currentTime,
			errors: window.errors, loaded: window.loaded, requests: window.requests,
			resources: performance.getEntriesByType('resource').map(e => ({url: e.name,
				start: performance.timeOrigin + e.startTime, end: performance.timeOrigin + e.responseEnd, status: e.responseStatus}))})`))
		if err == nil {
			err = json.Unmarshal([]byte(raw), &st)
		}
		if err != nil {
			t.Fatalf("%s: read the page's record: %v", player, err)
		}
		fatal := 0
		for _, e := range st.Errors {
			if m, ok := e.(map[string]any); ok && m["fatal"] == true {
				fatal++
			}
		}
		blocking := 0
		for _, u := range st.Requests {
			if strings.Contains(u, "_HLS_msn=") {
				blocking++
			}
		}
		parts := 0
		for _, l := range st.Loaded {
			if l.Part {
				parts++
			}
		}
		// From the browser's own timing of each request of a part: the
		// time from the part's PUT beginning to the player having it
		// whole, and the requests made before that PUT began (a
		// preload-hinted part asked for ahead).
		var latencies []time.Duration
		ahead := 0
		for _, r := range st.Resources {
			name := r.URL[strings.LastIndex(r.URL, "/")+1:]
			name, _, _ = strings.Cut(name, "?")
			put, ok := pk.putTime(name)
			if !ok || !strings.Contains(name, ".p") {
				continue
			}
			if r.Status != http.StatusOK {
				t.Errorf("%s: GET %s answered %d", player, name, r.Status)
				continue
			}
			if ms(r.Start).Before(put) {
				ahead++
			}
			latencies = append(latencies, ms(r.End).Sub(put))
		}
		t.Logf("%s: %d part requests made before the part's PUT began", player, ahead)
		aheadBy[player] = ahead
		t.Logf("%s: played to %.1f s; %d playlist requests (%d blocking), %d parts loaded; errors %v", player, st.Time, len(st.Requests), blocking, parts, st.Errors)
		if fatal > 0 || st.Time < 4 {
			t.Errorf("%s: %d fatal errors, played to %.1f s", player, fatal, st.Time)
		}
		if parts < 10 || blocking < 10 {
			t.Errorf("%s: %d parts loaded, %d blocking playlist requests: not playing in low-latency mode", player, parts, blocking)
		}
		if len(latencies) > 0 {
			slices.Sort(latencies)
			q := func(f float64) time.Duration { return latencies[int(f*float64(len(latencies)-1))] }
			t.Logf("%s: part PUT began → player has the part (%d parts): p50 %v, p99 %v, max %v",
				player, len(latencies), q(0.5), q(0.99), latencies[len(latencies)-1])
		}
	}
	t.Logf("b3 while playing: %v", live)
	if live["b3_llhls_playlist_requests_held_total"] < 10 {
		t.Errorf("b3 held %v blocking playlist requests", live["b3_llhls_playlist_requests_held_total"])
	}
	if live["b3_llhls_part_requests_held_total"] < 10 || aheadBy["shaka"] < 10 {
		t.Errorf("b3 held %v GETs of preload-hinted parts; shaka asked for %d parts ahead", live["b3_llhls_part_requests_held_total"], aheadBy["shaka"])
	}

	// The finished stream, read back by ffprobe: every segment, in order.
	out := run(t, ffprobe, "-v", "error", "-show_entries", "format=duration", "-of", "csv=p=0", src)
	duration, err := strconv.ParseFloat(strings.TrimSpace(out), 64)
	complete := float64(pk.segments) * (pk.partDuration * time.Duration(pk.partsPerSegment)).Seconds()
	if err != nil || duration < complete-0.5 || duration > complete+1.5 || pk.segments < seconds-2 {
		t.Fatalf("ffprobe read %q of the finished stream, %d segments of 1 s published", out, pk.segments)
	}
}

func putObject(ctx context.Context, t *testing.T, c *s3.Client, bucket, key, contentType string, data []byte) {
	t.Helper()
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key),
		ContentType: aws.String(contentType), Body: strings.NewReader(string(data))}); err != nil {
		t.Fatalf("PUT %s: %v", key, err)
	}
}
