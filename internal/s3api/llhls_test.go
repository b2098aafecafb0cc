package s3api

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/b3-storage/b3/internal/iolimit"
	"github.com/b3-storage/b3/internal/meta"
)

// llPlaylist is a live LL-HLS media playlist with a target duration of
// one second: segments 0..last complete, then parts of segment last+1.
func llPlaylist(last, parts int) []byte {
	var b strings.Builder
	b.WriteString("#EXTM3U\n#EXT-X-VERSION:9\n#EXT-X-TARGETDURATION:1\n" +
		"#EXT-X-SERVER-CONTROL:CAN-BLOCK-RELOAD=YES,PART-HOLD-BACK=1.0,CAN-SKIP-UNTIL=6.0\n" +
		"#EXT-X-PART-INF:PART-TARGET=0.5\n#EXT-X-MEDIA-SEQUENCE:0\n")
	for i := 0; i <= last; i++ {
		fmt.Fprintf(&b, "#EXTINF:1.0,\ns%d.m4s\n", i)
	}
	for p := 0; p < parts; p++ {
		fmt.Fprintf(&b, "#EXT-X-PART:DURATION=0.5,URI=\"p%d.%d.m4s\"\n", last+1, p)
	}
	fmt.Fprintf(&b, "#EXT-X-PRELOAD-HINT:TYPE=PART,URI=\"p%d.%d.m4s\"\n", last+1, parts)
	return []byte(b.String())
}

// patient is playlist with a target duration of 10 s: requests held for
// it wait up to 30 s, long enough to register 1,000 of them on a busy
// machine.
func patient(playlist []byte) []byte {
	return bytes.Replace(playlist, []byte("#EXT-X-TARGETDURATION:1\n"), []byte("#EXT-X-TARGETDURATION:10\n"), 1)
}

// newLLHLSEnv has bucket "live" (anonymous GET and PUT from loopback, as
// an encoder's bucket) and "private" (signed requests only), both
// LL-HLS origins, and "plain" with the setting off.
func newLLHLSEnv(t *testing.T, opts ...envOption) *testEnv {
	e := newEnv(t, append([]envOption{withMediaHeaders(true)}, opts...)...)
	e.mustCreateStreamBucket("live")
	e.mustCreateBucket("private")
	e.mustCreateStreamBucket("plain")
	for _, b := range []string{"live", "private"} {
		if err := e.store.UpdateBucket(b, func(r *meta.Bucket) error { r.LLHLS = true; return nil }); err != nil {
			t.Fatal(err)
		}
	}
	return e
}

// putPlaylist stores a playlist with an anonymous PUT, as an encoder does.
func (e *testEnv) putPlaylist(path string, body []byte) {
	e.t.Helper()
	req, _ := http.NewRequest(http.MethodPut, e.ts.URL+path, bytes.NewReader(body))
	resp, text := e.do(req)
	if resp.StatusCode != http.StatusOK {
		e.t.Fatalf("PUT %s: %d %s", path, resp.StatusCode, text)
	}
}

// answer is a finished GET.
type answer struct {
	resp *http.Response
	body string
	err  error
}

// getAsync sends req and delivers the answer on the channel.
func getAsync(client *http.Client, req *http.Request) <-chan answer {
	out := make(chan answer, 1)
	go func() {
		resp, err := client.Do(req)
		if err != nil {
			out <- answer{err: err}
			return
		}
		data, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		out <- answer{resp: resp, body: string(data), err: err}
	}()
	return out
}

// waitHeld waits until n requests are held by the server (a request is
// held once it registered; the registry is the server's own count).
func (e *testEnv) waitHeld(n int) {
	e.t.Helper()
	for deadline := time.Now().Add(30 * time.Second); e.api.playlists.Held() != n; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			e.t.Fatalf("%d requests held, want %d", e.api.playlists.Held(), n)
		}
	}
}

func anonymousGet(t *testing.T, url string) *http.Request {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	return req
}

// TestLLHLSBlockingReload: a held request is answered by the write that
// reaches its target and by no other; a target already reached is
// answered at once; the 400 rules; directives in a bucket without the
// setting are ignored.
func TestLLHLSBlockingReload(t *testing.T) {
	e := newLLHLSEnv(t)
	const path = "/live/cam/index.m3u8"
	e.putPlaylist(path, llPlaylist(2, 1))
	client := e.ts.Client()

	// Segment 4, part 1: held through writes that do not reach it.
	held := getAsync(client, anonymousGet(t, e.ts.URL+path+"?_HLS_msn=4&_HLS_part=1"))
	e.waitHeld(1)
	for _, notYet := range []struct {
		path string
		body []byte
	}{
		{path, llPlaylist(3, 0)},                      // segment 3 complete
		{path, llPlaylist(3, 1)},                      // segment 4 part 0
		{path, llPlaylist(2, 3)},                      // older again
		{"/live/cam/other.m3u8", llPlaylist(9, 3)},    // another playlist
		{"/live/cam/index.m3u8.ts", llPlaylist(9, 3)}, // not a playlist
	} {
		e.putPlaylist(notYet.path, notYet.body)
		// Wake runs inside the PUT: had it reached the target, the
		// waiter would be gone now.
		if e.api.playlists.Held() != 1 {
			t.Fatalf("PUT %s woke the request:\n%s", notYet.path, notYet.body)
		}
	}
	select {
	case a := <-held:
		t.Fatalf("answered before its part was written: %+v", a)
	default:
	}
	reached := llPlaylist(3, 2) // segment 4 parts 0 and 1
	e.putPlaylist(path, reached)
	a := <-held
	if a.err != nil || a.resp.StatusCode != http.StatusOK || a.body != string(reached) {
		t.Fatalf("held request: %v %+v\n%s", a.err, a.resp, a.body)
	}
	if cc := a.resp.Header.Get("Cache-Control"); cc != "max-age=1" {
		t.Errorf("Cache-Control of a blocking answer: %q", cc)
	}
	if ct := a.resp.Header.Get("Content-Type"); ct != "application/vnd.apple.mpegurl" {
		t.Errorf("Content-Type: %q", ct)
	}
	e.waitHeld(0)

	cases := []struct {
		name, url string
		status    int
		code      string
		body      string
	}{
		{"segment present", path + "?_HLS_msn=2", 200, "", string(reached)},
		{"part present", path + "?_HLS_msn=4&_HLS_part=1", 200, "", string(reached)},
		{"long gone segment", path + "?_HLS_msn=0", 200, "", string(reached)},
		{"three segments ahead", path + "?_HLS_msn=6", 400, "InvalidArgument", ""},
		{"parts beyond the advance limit", path + "?_HLS_msn=4&_HLS_part=9", 400, "InvalidArgument", ""},
		{"part without msn", path + "?_HLS_part=1", 400, "InvalidArgument", ""},
		{"not a number", path + "?_HLS_msn=four", 400, "InvalidArgument", ""},
		{"unknown skip", path + "?_HLS_skip=all", 400, "InvalidArgument", ""},
		{"missing playlist", "/live/cam/none.m3u8?_HLS_msn=1", 404, "NoSuchKey", ""},
		{"setting off: ignored", "/plain/cam/index.m3u8?_HLS_msn=100&_HLS_part=7", 200, "", string(reached)},
		{"setting off: part alone ignored", "/plain/cam/index.m3u8?_HLS_part=1", 200, "", string(reached)},
		{"not a playlist key", "/live/cam/index.txt?_HLS_msn=100", 200, "", string(reached)},
		{"a Range asks for bytes", path + "?_HLS_msn=100", 206, "", string(reached[:4])},
	}
	e.putPlaylist("/plain/cam/index.m3u8", reached)
	e.putPlaylist("/live/cam/index.txt", reached)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req := anonymousGet(t, e.ts.URL+c.url)
			if c.status == 206 {
				req.Header.Set("Range", "bytes=0-3")
			}
			resp, body := e.do(req)
			if c.code != "" {
				wantXMLError(t, resp, body, c.status, c.code)
				return
			}
			if resp.StatusCode != c.status || body != c.body {
				t.Fatalf("%d %q", resp.StatusCode, body)
			}
		})
	}
	if e.api.playlists.Held() != 0 {
		t.Fatalf("%d requests left held", e.api.playlists.Held())
	}

	// Conditional headers apply to the version answered: with the
	// current ETag, a present target is 304, a future one is held (not
	// 304) and answered by the write that reaches it.
	etag := e.headETag("live", "cam/index.m3u8")
	req := anonymousGet(t, e.ts.URL+path+"?_HLS_msn=3")
	req.Header.Set("If-None-Match", etag)
	if resp, body := e.do(req); resp.StatusCode != http.StatusNotModified {
		t.Fatalf("present target, current ETag: %d %s", resp.StatusCode, body)
	}
	req = anonymousGet(t, e.ts.URL+path+"?_HLS_msn=4")
	req.Header.Set("If-None-Match", etag)
	held = getAsync(client, req)
	e.waitHeld(1)
	e.putPlaylist(path, llPlaylist(4, 0))
	if a := <-held; a.err != nil || a.resp.StatusCode != http.StatusOK || a.body != string(llPlaylist(4, 0)) {
		t.Fatalf("held conditional request: %v %+v %s", a.err, a.resp, a.body)
	}
}

// headETag is the ETag of the current version of bucket/key.
func (e *testEnv) headETag(bucket, key string) string {
	e.t.Helper()
	out, err := e.root().HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		e.t.Fatal(err)
	}
	return aws.ToString(out.ETag)
}

// TestLLHLSTimeout: a playlist that does not reach the target within
// three target durations (1 s here) answers 503 with Retry-After.
func TestLLHLSTimeout(t *testing.T) {
	e := newLLHLSEnv(t)
	e.putPlaylist("/live/cam/index.m3u8", llPlaylist(2, 0))
	resp, body := e.do(anonymousGet(t, e.ts.URL+"/live/cam/index.m3u8?_HLS_msn=3"))
	wantXMLError(t, resp, body, http.StatusServiceUnavailable, "ServiceUnavailable")
	if ra := resp.Header.Get("Retry-After"); ra != "1" {
		t.Fatalf("Retry-After %q", ra)
	}
	if e.api.playlists.Held() != 0 {
		t.Fatalf("%d requests left held after the timeout", e.api.playlists.Held())
	}
}

// TestLLHLSThousandWaiters: one write wakes 1,000 held requests, each
// answered with the playlist that reached them.
func TestLLHLSThousandWaiters(t *testing.T) {
	const n = 1000
	e := newLLHLSEnv(t)
	const path = "/live/cam/index.m3u8"
	e.putPlaylist(path, patient(llPlaylist(5, 0)))
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: n}}
	defer client.CloseIdleConnections()
	answers := make([]<-chan answer, n)
	for i := range answers {
		answers[i] = getAsync(client, anonymousGet(t, e.ts.URL+path+"?_HLS_msn=6"))
	}
	e.waitHeld(n)
	// Registered first, counted once the playlist read shows they wait.
	for deadline := time.Now().Add(30 * time.Second); e.api.LLHLSCounts().HeldPlaylistsTotal != n; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d playlist requests counted held, want %d", e.api.LLHLSCounts().HeldPlaylistsTotal, n)
		}
	}
	next := patient(llPlaylist(6, 0))
	e.putPlaylist(path, next)
	var wg sync.WaitGroup
	errs := make(chan string, n)
	for _, ch := range answers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a := <-ch
			if a.err != nil || a.resp.StatusCode != http.StatusOK || a.body != string(next) {
				errs <- fmt.Sprintf("%v %v", a.err, a.resp)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("a woken request: %s", err)
	}
}

// TestLLHLSAuthorization: the directives work with a presigned URL that
// does not cover them (a player appends them), one that does, a
// header-signed request, and an anonymous GET allowed by a bucket
// policy; they open nothing else.
func TestLLHLSAuthorization(t *testing.T) {
	e := newLLHLSEnv(t)
	body := llPlaylist(2, 1)
	e.mustPut("private", "cam/index.m3u8", body)
	e.putPlaylist("/live/cam/index.m3u8", body)
	presigner := s3.NewPresignClient(e.root(), func(o *s3.PresignOptions) { o.Expires = time.Minute })
	presigned, err := presigner.PresignGetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String("private"), Key: aws.String("cam/index.m3u8")})
	if err != nil {
		t.Fatal(err)
	}
	// A presigned URL whose signature covers the directives.
	covering, _ := http.NewRequest(http.MethodGet, e.ts.URL+"/private/cam/index.m3u8?_HLS_msn=2&_HLS_part=0&X-Amz-Expires=60", nil)
	creds := aws.Credentials{AccessKeyID: rootUser.AccessKey, SecretAccessKey: rootUser.SecretKey}
	signedURL, _, err := v4.NewSigner().PresignHTTP(context.Background(), creds, covering, "UNSIGNED-PAYLOAD", "s3", testRegion, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		req    *http.Request
		status int
		code   string
	}{
		{"presigned, directives appended", anonymousGet(t, presigned.URL+"&_HLS_msn=2&_HLS_part=0&_HLS_skip=YES"), 200, ""},
		{"presigned, directives signed", anonymousGet(t, signedURL), 200, ""},
		{"presigned, another parameter appended", anonymousGet(t, presigned.URL+"&_HLS_msn=2&response-content-type=text/html"), 403, "SignatureDoesNotMatch"},
		{"presigned, directives appended to a PUT's", nil, 403, "SignatureDoesNotMatch"},
		{"header-signed", e.signedRequest(rootUser, http.MethodGet, "/private/cam/index.m3u8?_HLS_msn=2&_HLS_part=0", nil, "", nil), 200, ""},
		{"anonymous, private bucket", anonymousGet(t, e.ts.URL+"/private/cam/index.m3u8?_HLS_msn=2"), 403, "AccessDenied"},
		{"anonymous under the bucket policy", anonymousGet(t, e.ts.URL+"/live/cam/index.m3u8?_HLS_msn=2&_HLS_part=0"), 200, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			req := c.req
			if req == nil {
				put, err := presigner.PresignPutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String("private"), Key: aws.String("cam/index.m3u8")})
				if err != nil {
					t.Fatal(err)
				}
				req, _ = http.NewRequest(http.MethodPut, put.URL+"&_HLS_msn=2", bytes.NewReader(body))
			}
			resp, got := e.do(req)
			if c.code != "" {
				wantXMLError(t, resp, got, c.status, c.code)
				return
			}
			if resp.StatusCode != c.status || !strings.HasPrefix(got, "#EXTM3U") {
				t.Fatalf("%d %s", resp.StatusCode, got)
			}
		})
	}
	// A held presigned request is woken like any other.
	held := getAsync(e.ts.Client(), anonymousGet(t, presigned.URL+"&_HLS_msn=3"))
	e.waitHeld(1)
	e.mustPut("private", "cam/index.m3u8", llPlaylist(3, 0))
	if a := <-held; a.err != nil || a.resp.StatusCode != http.StatusOK || a.body != string(llPlaylist(3, 0)) {
		t.Fatalf("held presigned request: %v %+v %s", a.err, a.resp, a.body)
	}
}

// TestLLHLSDeltaUpdate: _HLS_skip=YES answers a Playlist Delta Update
// (checked line by line), and so does v2 for a playlist that cannot skip
// date ranges; a bucket without the setting answers the whole playlist.
func TestLLHLSDeltaUpdate(t *testing.T) {
	e := newLLHLSEnv(t)
	stored := llPlaylist(9, 1) // ten 1 s segments; CAN-SKIP-UNTIL=6
	e.putPlaylist("/live/cam/index.m3u8", stored)
	e.putPlaylist("/plain/cam/index.m3u8", stored)
	var want strings.Builder
	want.WriteString("#EXTM3U\n#EXT-X-VERSION:9\n#EXT-X-TARGETDURATION:1\n" +
		"#EXT-X-SERVER-CONTROL:CAN-BLOCK-RELOAD=YES,PART-HOLD-BACK=1.0,CAN-SKIP-UNTIL=6.0\n" +
		"#EXT-X-PART-INF:PART-TARGET=0.5\n#EXT-X-MEDIA-SEQUENCE:0\n" +
		"#EXT-X-SKIP:SKIPPED-SEGMENTS=3\n") // s0..s2 end more than 6 s before the end
	for i := 3; i <= 9; i++ {
		fmt.Fprintf(&want, "#EXTINF:1.0,\ns%d.m4s\n", i)
	}
	want.WriteString("#EXT-X-PART:DURATION=0.5,URI=\"p10.0.m4s\"\n#EXT-X-PRELOAD-HINT:TYPE=PART,URI=\"p10.1.m4s\"\n")
	for _, c := range []struct {
		name, url string
		delta     bool
		cache     string
	}{
		{"skip", "/live/cam/index.m3u8?_HLS_skip=YES", true, "no-cache"},
		{"skip while blocking", "/live/cam/index.m3u8?_HLS_msn=9&_HLS_part=0&_HLS_skip=YES", true, "max-age=1"},
		{"v2 without CAN-SKIP-DATERANGES: as YES", "/live/cam/index.m3u8?_HLS_skip=v2", true, "no-cache"},
		{"setting off", "/plain/cam/index.m3u8?_HLS_skip=YES", false, "no-cache"},
	} {
		t.Run(c.name, func(t *testing.T) {
			resp, body := e.do(anonymousGet(t, e.ts.URL+c.url))
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("%d %s", resp.StatusCode, body)
			}
			expected := string(stored)
			if c.delta {
				expected = want.String()
			}
			got, exp := strings.Split(body, "\n"), strings.Split(expected, "\n")
			for i := range max(len(got), len(exp)) {
				if i >= len(got) || i >= len(exp) || got[i] != exp[i] {
					t.Fatalf("line %d differs:\n got: %q\nwant: %q", i+1, got[min(i, len(got)-1)], exp[min(i, len(exp)-1)])
				}
			}
			if etag := resp.Header.Get("ETag"); (etag == "") != c.delta {
				t.Errorf("ETag %q on a response that is the stored object: %v", etag, !c.delta)
			}
			if cc := resp.Header.Get("Cache-Control"); cc != c.cache {
				t.Errorf("Cache-Control %q, want %q", cc, c.cache)
			}
			if resp.ContentLength != int64(len(expected)) {
				t.Errorf("Content-Length %d, body %d", resp.ContentLength, len(expected))
			}
		})
	}
}

// dateRangePlaylist is a playlist of ten 1 s segments that can skip date
// ranges (Skip Boundary 6 s), with the EXT-X-DATERANGE tags of ids after
// segment 1 (a skipped one) and those of recent after segment 8 (kept).
func dateRangePlaylist(ids, recent []string) string {
	var b strings.Builder
	b.WriteString("#EXTM3U\n#EXT-X-VERSION:9\n#EXT-X-TARGETDURATION:1\n" +
		"#EXT-X-SERVER-CONTROL:CAN-BLOCK-RELOAD=YES,CAN-SKIP-UNTIL=6.0,CAN-SKIP-DATERANGES=YES\n#EXT-X-MEDIA-SEQUENCE:0\n")
	for i := 0; i <= 9; i++ {
		fmt.Fprintf(&b, "#EXTINF:1.0,\ns%d.ts\n", i)
		tags := map[int][]string{1: ids, 8: recent}[i]
		for _, id := range tags {
			fmt.Fprintf(&b, "#EXT-X-DATERANGE:ID=\"%s\",START-DATE=\"2026-11-28T18:00:00Z\"\n", id)
		}
	}
	return b.String()
}

// TestLLHLSDeltaDateRanges: _HLS_skip=v2 leaves out the date ranges added
// more than the Skip Boundary ago and lists those removed within it,
// from the writes the server saw; before its history covers the Skip
// Boundary it answers the whole playlist. The server's clock is moved,
// not waited for.
func TestLLHLSDeltaDateRanges(t *testing.T) {
	e := newLLHLSEnv(t)
	const path = "/live/cam/index.m3u8"
	get := func() string {
		t.Helper()
		resp, body := e.do(anonymousGet(t, e.ts.URL+path+"?_HLS_skip=v2"))
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%d %s", resp.StatusCode, body)
		}
		return body
	}
	first := dateRangePlaylist([]string{"gone", "old"}, nil)
	e.putPlaylist(path, []byte(first))
	if got := get(); got != first {
		t.Fatalf("v2 before the history covers the Skip Boundary: %q", got)
	}
	e.offset.Add(int64(7 * time.Second))
	second := dateRangePlaylist([]string{"old"}, []string{"new"})
	e.putPlaylist(path, []byte(second))
	skipped := func(removed string, kept ...string) string {
		var b strings.Builder
		b.WriteString("#EXTM3U\n#EXT-X-VERSION:10\n#EXT-X-TARGETDURATION:1\n" +
			"#EXT-X-SERVER-CONTROL:CAN-BLOCK-RELOAD=YES,CAN-SKIP-UNTIL=6.0,CAN-SKIP-DATERANGES=YES\n#EXT-X-MEDIA-SEQUENCE:0\n" +
			"#EXT-X-SKIP:SKIPPED-SEGMENTS=3,RECENTLY-REMOVED-DATERANGES=\"" + removed + "\"\n")
		for i := 3; i <= 9; i++ {
			fmt.Fprintf(&b, "#EXTINF:1.0,\ns%d.ts\n", i)
			if i == 8 {
				for _, id := range kept {
					fmt.Fprintf(&b, "#EXT-X-DATERANGE:ID=\"%s\",START-DATE=\"2026-11-28T18:00:00Z\"\n", id)
				}
			}
		}
		return b.String()
	}
	for _, step := range []struct {
		name    string
		advance time.Duration
		want    string
	}{
		// "old" was added 7 s ago: left out; "gone" left just now:
		// listed; "new" was just added: kept.
		{"after the second write", 0, skipped("gone", "new")},
		// 7 s later: "gone" left more than 6 s ago, "new" is old too.
		{"later", 7 * time.Second, skipped("")},
	} {
		e.offset.Add(int64(step.advance))
		got, want := strings.Split(get(), "\n"), strings.Split(step.want, "\n")
		for i := range max(len(got), len(want)) {
			if i >= len(got) || i >= len(want) || got[i] != want[i] {
				t.Fatalf("%s: line %d differs:\n got: %q\nwant: %q", step.name, i+1, got[min(i, len(got)-1)], want[min(i, len(want)-1)])
			}
		}
	}
}

// TestLLHLSHeldIsNoClientLoad: while held, a playlist request does not
// count as client load to the pacer (background work need not give way
// to players waiting for an encoder); answering it does.
func TestLLHLSHeldIsNoClientLoad(t *testing.T) {
	pacer := iolimit.NewPacer(iolimit.PacerConfig{})
	var mu sync.Mutex
	var answering []int // clients in flight as each GET ends
	e := newLLHLSEnv(t, func(c *Config) {
		c.Observe = func(info RequestInfo) {
			if info.Operation == "GetObject" {
				mu.Lock()
				answering = append(answering, pacer.Status().ClientsInFlight)
				mu.Unlock()
			}
		}
	})
	ts := httptest.NewServer(pacer.Handler(e.api))
	defer ts.Close()
	const path = "/live/cam/index.m3u8"
	e.putPlaylist(path, llPlaylist(2, 0))
	held := getAsync(ts.Client(), anonymousGet(t, ts.URL+path+"?_HLS_msn=3"))
	e.waitHeld(1)
	for deadline := time.Now().Add(30 * time.Second); pacer.Status().ClientsInFlight != 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("a held request counts as %d clients in flight", pacer.Status().ClientsInFlight)
		}
	}
	e.putPlaylist(path, llPlaylist(3, 0))
	if a := <-held; a.err != nil || a.resp.StatusCode != http.StatusOK {
		t.Fatalf("held request: %v %+v", a.err, a.resp)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(answering) != 1 || answering[0] != 1 {
		t.Fatalf("clients in flight while the request was answered: %v, want [1]", answering)
	}
}
