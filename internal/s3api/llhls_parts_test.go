package s3api

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// waitPartsHeld waits until n GETs of hinted parts are held.
func (e *testEnv) waitPartsHeld(n int) {
	e.t.Helper()
	for deadline := time.Now().Add(30 * time.Second); e.api.parts.Held() != n; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			e.t.Fatalf("%d part GETs held, want %d", e.api.parts.Held(), n)
		}
	}
}

// waitStreamed waits until n GETs in all have read an upload in flight.
func (e *testEnv) waitStreamed(n uint64) {
	e.t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(time.Millisecond) {
		if streamed := e.api.LLHLSCounts().StreamedParts; streamed == n {
			return
		} else if time.Now().After(deadline) {
			e.t.Fatalf("%d GETs read an upload in flight, want %d", streamed, n)
		}
	}
}

// pipePut starts an anonymous chunked PUT of path whose body is what the
// test writes to the returned pipe; the PUT's answer comes on the
// channel once the pipe is closed (or fails when it is closed with an
// error).
func (e *testEnv) pipePut(path string) (*io.PipeWriter, <-chan answer) {
	pr, pw := io.Pipe()
	req, err := http.NewRequest(http.MethodPut, e.ts.URL+path, pr)
	if err != nil {
		e.t.Fatal(err)
	}
	req.ContentLength = -1
	return pw, getAsync(e.ts.Client(), req)
}

// openGet sends a GET and returns its response with the body unread.
func openGet(t *testing.T, client *http.Client, req *http.Request) <-chan *http.Response {
	out := make(chan *http.Response, 1)
	go func() {
		resp, err := client.Do(req)
		if err != nil {
			t.Errorf("GET %s: %v", req.URL, err)
			close(out)
			return
		}
		out <- resp
	}()
	return out
}

func receive(t *testing.T, ch <-chan *http.Response) *http.Response {
	t.Helper()
	select {
	case resp, ok := <-ch:
		if !ok {
			t.FailNow()
		}
		return resp
	case <-time.After(30 * time.Second):
		t.Fatal("no answer in 30 s")
	}
	return nil
}

// TestLLHLSPreloadHint: a GET of the part a playlist's preload hint
// names is held until its upload begins (no other write answers it),
// then gets the encoder's body as it arrives, before the upload ends,
// chunked, ending with the object; a key no hint names is 404 at once.
func TestLLHLSPreloadHint(t *testing.T) {
	e := newLLHLSEnv(t)
	e.putPlaylist("/live/cam/index.m3u8", llPlaylist(2, 1)) // hints cam/p3.1.m4s
	client := e.ts.Client()

	resp, body := e.do(anonymousGet(t, e.ts.URL+"/live/cam/p3.2.m4s"))
	wantXMLError(t, resp, body, http.StatusNotFound, "NoSuchKey")
	if e.api.parts.Held() != 0 {
		t.Fatal("a GET of a key no hint names was held")
	}

	held := openGet(t, client, anonymousGet(t, e.ts.URL+"/live/cam/p3.1.m4s"))
	e.waitPartsHeld(1)
	// Writes of other keys, and of the playlist still hinting the part,
	// do not answer it.
	e.putPlaylist("/live/cam/p3.0.m4s", []byte("other part"))
	e.putPlaylist("/live/other/p3.1.m4s", []byte("other stream"))
	e.putPlaylist("/live/cam/index.m3u8", llPlaylist(2, 1))
	if e.api.parts.Held() != 1 {
		t.Fatal("the held GET was woken by a write that does not store its part")
	}

	pw, put := e.pipePut("/live/cam/p3.1.m4s")
	first := bytes.Repeat([]byte("moof"), 1000)
	if _, err := pw.Write(first); err != nil {
		t.Fatal(err)
	}
	r := receive(t, held)
	defer r.Body.Close()
	if r.StatusCode != http.StatusOK || r.ContentLength != -1 || r.Header.Get("Content-Type") != "video/iso.segment" ||
		r.Header.Get("ETag") != "" {
		t.Fatalf("answer %d length %d headers %v", r.StatusCode, r.ContentLength, r.Header)
	}
	got := make([]byte, len(first))
	if _, err := io.ReadFull(r.Body, got); err != nil || !bytes.Equal(got, first) {
		t.Fatalf("first bytes while the upload is in flight: %v", err)
	}
	select {
	case a := <-put:
		t.Fatalf("the PUT ended before its body did: %+v", a)
	default:
	}
	// A GET arriving mid-upload reads it from its start.
	late := openGet(t, client, anonymousGet(t, e.ts.URL+"/live/cam/p3.1.m4s"))
	e.waitStreamed(2)
	rest := bytes.Repeat([]byte("mdat"), 20000)
	if _, err := pw.Write(rest); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	if a := <-put; a.err != nil || a.resp.StatusCode != http.StatusOK {
		t.Fatalf("PUT: %+v", a)
	}
	tail, err := io.ReadAll(r.Body)
	if err != nil || !bytes.Equal(tail, rest) {
		t.Fatalf("rest of the body: %d bytes, %v", len(tail), err)
	}
	whole := append(append([]byte(nil), first...), rest...)
	lr := receive(t, late)
	lateBody, err := io.ReadAll(lr.Body)
	lr.Body.Close()
	if err != nil || !bytes.Equal(lateBody, whole) {
		t.Fatalf("GET that joined mid-upload: %d bytes, %v", len(lateBody), err)
	}
	// Stored: a plain GET with its length.
	resp, body = e.do(anonymousGet(t, e.ts.URL+"/live/cam/p3.1.m4s"))
	if resp.StatusCode != http.StatusOK || resp.ContentLength != int64(len(whole)) || body != string(whole) {
		t.Fatalf("stored part: %d length %d", resp.StatusCode, resp.ContentLength)
	}
	if c := e.api.LLHLSCounts(); c.HeldPartsTotal != 1 || c.StreamedParts != 2 {
		t.Fatalf("held %d streamed %d, want 1 and 2", c.HeldPartsTotal, c.StreamedParts)
	}

	// The setting off: a plain object store.
	resp, body = e.do(anonymousGet(t, e.ts.URL+"/plain/cam/p3.1.m4s"))
	wantXMLError(t, resp, body, http.StatusNotFound, "NoSuchKey")
}

// rawPut sends a PUT of path with the given headers and the first part
// of its body on a connection of its own, then closes it: an encoder
// that dies mid-body.
func (e *testEnv) rawPut(path string, header string, partial []byte) {
	e.t.Helper()
	u, _ := url.Parse(e.ts.URL)
	conn, err := net.Dial("tcp", u.Host)
	if err != nil {
		e.t.Fatal(err)
	}
	fmt.Fprintf(conn, "PUT %s HTTP/1.1\r\nHost: %s\r\n%s\r\n", path, u.Host, header)
	if _, err := conn.Write(partial); err != nil {
		e.t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	conn.Close()
}

// TestLLHLSPreloadHintUploadDies: the upload a held GET reads dies mid
// body (declared length and chunked): the GET fails after the bytes it
// got, never ending as if it had the whole part; nothing is stored, and
// the part is still awaited.
func TestLLHLSPreloadHintUploadDies(t *testing.T) {
	for _, c := range []struct {
		name, header string
		partial      []byte
	}{
		{"content-length", "Content-Length: 100000\r\n", bytes.Repeat([]byte("x"), 5000)},
		{"chunked", "Transfer-Encoding: chunked\r\n", []byte("1388\r\n" + strings.Repeat("x", 5000) + "\r\n1000\r\nxx")},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newLLHLSEnv(t)
			e.putPlaylist("/live/cam/index.m3u8", llPlaylist(2, 1))
			held := openGet(t, e.ts.Client(), anonymousGet(t, e.ts.URL+"/live/cam/p3.1.m4s"))
			e.waitPartsHeld(1)
			e.rawPut("/live/cam/p3.1.m4s", c.header, c.partial)
			r := receive(t, held)
			got, err := io.ReadAll(r.Body)
			r.Body.Close()
			if err == nil {
				t.Fatalf("the GET of an upload that died ended cleanly with %d bytes", len(got))
			}
			if r.StatusCode != http.StatusOK || len(got) > 5002 || !bytes.Equal(got, bytes.Repeat([]byte("x"), len(got))) {
				t.Fatalf("status %d, %d bytes", r.StatusCode, len(got))
			}
			req, _ := http.NewRequest(http.MethodHead, e.ts.URL+"/live/cam/p3.1.m4s", nil)
			if resp, _ := e.do(req); resp.StatusCode != http.StatusNotFound {
				t.Fatalf("HEAD after the failed upload: %d", resp.StatusCode)
			}
			// Still hinted: the next GET is held again, and the
			// encoder's retry answers it.
			again := getAsync(e.ts.Client(), anonymousGet(t, e.ts.URL+"/live/cam/p3.1.m4s"))
			e.waitPartsHeld(1)
			e.putPlaylist("/live/cam/p3.1.m4s", []byte("retried"))
			if a := <-again; a.err != nil || a.resp.StatusCode != http.StatusOK || a.body != "retried" {
				t.Fatalf("after the retry: %+v", a)
			}
		})
	}
}

// TestLLHLSPreloadHintRange: a preload hint with BYTERANGE-START; the
// player's open-ended range GET is answered 206 from the upload in
// flight, with the total length when the upload declared one.
func TestLLHLSPreloadHintRange(t *testing.T) {
	e := newLLHLSEnv(t)
	playlist := "#EXTM3U\n#EXT-X-VERSION:9\n#EXT-X-TARGETDURATION:1\n#EXT-X-SERVER-CONTROL:CAN-BLOCK-RELOAD=YES,PART-HOLD-BACK=1.0\n" +
		"#EXT-X-PART-INF:PART-TARGET=0.5\n#EXT-X-MEDIA-SEQUENCE:0\n" +
		"#EXT-X-PART:DURATION=0.5,URI=\"s0.mp4\",BYTERANGE=\"100@0\"\n" +
		"#EXT-X-PRELOAD-HINT:TYPE=PART,URI=\"s0.mp4\",BYTERANGE-START=100\n"
	e.putPlaylist("/live/r/index.m3u8", []byte(playlist))
	data := make([]byte, 300)
	for i := range data {
		data[i] = byte(i)
	}
	get := func(rng string) <-chan answer {
		req := anonymousGet(t, e.ts.URL+"/live/r/s0.mp4")
		req.Header.Set("Range", rng)
		return getAsync(e.ts.Client(), req)
	}
	open, bounded := get("bytes=100-"), get("bytes=100-149")
	e.waitPartsHeld(2)
	pr, pw := io.Pipe()
	req, _ := http.NewRequest(http.MethodPut, e.ts.URL+"/live/r/s0.mp4", pr)
	req.ContentLength = int64(len(data))
	put := getAsync(e.ts.Client(), req)
	pw.Write(data[:150])
	e.waitStreamed(2) // both read the upload in flight
	go func() { pw.Write(data[150:]); pw.Close() }()
	for _, c := range []struct {
		ch           <-chan answer
		contentRange string
		want         []byte
	}{
		{open, "bytes 100-299/300", data[100:]},
		{bounded, "bytes 100-149/300", data[100:150]},
	} {
		a := <-c.ch
		if a.err != nil || a.resp.StatusCode != http.StatusPartialContent || a.resp.Header.Get("Content-Range") != c.contentRange || a.body != string(c.want) {
			t.Fatalf("ranged GET: %v %v %q, %d bytes", a.err, a.resp, a.resp.Header.Get("Content-Range"), len(a.body))
		}
	}
	if a := <-put; a.err != nil || a.resp.StatusCode != http.StatusOK {
		t.Fatalf("PUT %+v", a)
	}
	// A chunked upload: the total is not known.
	e.putPlaylist("/live/r/index.m3u8", []byte(strings.ReplaceAll(playlist, "s0.mp4", "s1.mp4")))
	req2 := anonymousGet(t, e.ts.URL+"/live/r/s1.mp4")
	req2.Header.Set("Range", "bytes=100-")
	ch := getAsync(e.ts.Client(), req2)
	e.waitPartsHeld(1)
	pw2, put2 := e.pipePut("/live/r/s1.mp4")
	pw2.Write(data)
	e.waitStreamed(3) // the GET reads the upload before it ends
	pw2.Close()
	if a := <-ch; a.err != nil || a.resp.StatusCode != http.StatusPartialContent || a.resp.Header.Get("Content-Range") != "bytes 100-*/*" || a.body != string(data[100:]) {
		t.Fatalf("ranged GET of a chunked upload: %+v", a)
	}
	<-put2
}

// TestLLHLSPreloadHintTimeout: a hinted part not written within three
// target durations answers 503 with Retry-After; a GET held for a part
// the next playlist no longer hints answers 404 at that write.
func TestLLHLSPreloadHintTimeout(t *testing.T) {
	e := newLLHLSEnv(t)
	e.putPlaylist("/live/cam/index.m3u8", llPlaylist(2, 1))
	start := time.Now()
	resp, body := e.do(anonymousGet(t, e.ts.URL+"/live/cam/p3.1.m4s"))
	wantXMLError(t, resp, body, http.StatusServiceUnavailable, "ServiceUnavailable")
	if ra := resp.Header.Get("Retry-After"); ra != "1" || time.Since(start) < 3*time.Second {
		t.Fatalf("Retry-After %q after %v", ra, time.Since(start))
	}
	if e.api.parts.Held() != 0 {
		t.Fatal("a GET left held after its timeout")
	}
	held := getAsync(e.ts.Client(), anonymousGet(t, e.ts.URL+"/live/cam/p3.1.m4s"))
	e.waitPartsHeld(1)
	e.putPlaylist("/live/cam/index.m3u8", llPlaylist(2, 2)) // hints p3.2 now
	a := <-held
	if a.err != nil {
		t.Fatal(a.err)
	}
	wantXMLError(t, a.resp, a.body, http.StatusNotFound, "NoSuchKey")
}

// TestLLHLSPreloadHintThousand: 1,000 GETs held for one hinted part are
// all answered, whole, by its one upload, and leave nothing held.
func TestLLHLSPreloadHintThousand(t *testing.T) {
	const n = 1000
	e := newLLHLSEnv(t)
	e.putPlaylist("/live/cam/index.m3u8", patient(llPlaylist(2, 1)))
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: n}}
	defer client.CloseIdleConnections()
	answers := make([]<-chan answer, n)
	for i := range answers {
		answers[i] = getAsync(client, anonymousGet(t, e.ts.URL+"/live/cam/p3.1.m4s"))
	}
	e.waitPartsHeld(n)
	part := bytes.Repeat([]byte("0123456789abcdef"), 6000) // 96 KB: 200 ms at 4 Mbit/s
	pw, put := e.pipePut("/live/cam/p3.1.m4s")
	w := bufio.NewWriterSize(pw, 8<<10)
	w.Write(part)
	w.Flush()
	pw.Close()
	if a := <-put; a.err != nil || a.resp.StatusCode != http.StatusOK {
		t.Fatalf("PUT %+v", a)
	}
	var wg sync.WaitGroup
	bad := make(chan string, n)
	for _, ch := range answers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if a := <-ch; a.err != nil || a.resp.StatusCode != http.StatusOK || a.body != string(part) {
				bad <- fmt.Sprintf("%v %v %d bytes", a.err, a.resp, len(a.body))
			}
		}()
	}
	wg.Wait()
	close(bad)
	for b := range bad {
		t.Fatalf("a held GET: %s", b)
	}
	if h := e.api.parts.Held(); h != 0 {
		t.Fatalf("%d still held", h)
	}
}

// TestLLHLSPreloadHintBodyTooLarge: an upload larger than what is kept
// in memory is not read in flight: a GET attached to it fails, one that
// comes after waits for it to be stored and gets it whole.
func TestLLHLSPreloadHintBodyTooLarge(t *testing.T) {
	e := newLLHLSEnv(t)
	e.api.parts.MaxBody = 1000
	e.putPlaylist("/live/cam/index.m3u8", llPlaylist(2, 1))
	held := openGet(t, e.ts.Client(), anonymousGet(t, e.ts.URL+"/live/cam/p3.1.m4s"))
	e.waitPartsHeld(1)
	pw, put := e.pipePut("/live/cam/p3.1.m4s")
	pw.Write(make([]byte, 600))
	r := receive(t, held)
	pw.Write(make([]byte, 600)) // past MaxBody
	if _, err := io.ReadAll(r.Body); err == nil {
		t.Fatal("a GET of a body no longer kept ended cleanly")
	}
	r.Body.Close()
	after := getAsync(e.ts.Client(), anonymousGet(t, e.ts.URL+"/live/cam/p3.1.m4s"))
	e.waitPartsHeld(1)
	pw.Write(make([]byte, 300))
	pw.Close()
	<-put
	if a := <-after; a.err != nil || a.resp.StatusCode != http.StatusOK || len(a.body) != 1500 || a.resp.ContentLength != 1500 {
		t.Fatalf("GET after: %+v", a)
	}
}

// TestLLHLSReleaseHeld: ReleaseHeld (b3 node calls it when the node stops
// leading) answers every held request, a blocking playlist request and a
// GET of a hinted part, with 503 SlowDown at once; requests held after it
// wait again.
func TestLLHLSReleaseHeld(t *testing.T) {
	e := newLLHLSEnv(t)
	e.putPlaylist("/live/cam/index.m3u8", patient(llPlaylist(2, 1)))
	playlist := getAsync(e.ts.Client(), anonymousGet(t, e.ts.URL+"/live/cam/index.m3u8?_HLS_msn=3"))
	part := getAsync(e.ts.Client(), anonymousGet(t, e.ts.URL+"/live/cam/p3.1.m4s"))
	e.waitHeld(1)
	e.waitPartsHeld(1)
	e.api.ReleaseHeld()
	for _, ch := range []<-chan answer{playlist, part} {
		a := <-ch
		if a.err != nil {
			t.Fatal(a.err)
		}
		wantXMLError(t, a.resp, a.body, http.StatusServiceUnavailable, "SlowDown")
	}
	again := getAsync(e.ts.Client(), anonymousGet(t, e.ts.URL+"/live/cam/p3.1.m4s"))
	e.waitPartsHeld(1)
	e.putPlaylist("/live/cam/p3.1.m4s", []byte("part"))
	if a := <-again; a.err != nil || a.resp.StatusCode != http.StatusOK || a.body != "part" {
		t.Fatalf("held after the release: %+v", a)
	}
}

// TestLLHLSPreloadHintConditional: a held GET with a conditional header
// is not answered from the upload in flight, which has no ETag yet: it
// waits until the part is stored and is answered from the store, its
// conditions evaluated there. A GET with partNumber asks for stored parts
// of an object: not held (404 at once).
func TestLLHLSPreloadHintConditional(t *testing.T) {
	e := newLLHLSEnv(t)
	e.putPlaylist("/live/cam/index.m3u8", patient(llPlaylist(2, 1)))
	req := anonymousGet(t, e.ts.URL+"/live/cam/p3.1.m4s")
	req.Header.Set("If-None-Match", `"not-this-one"`)
	conditional := getAsync(e.ts.Client(), req)
	resp, body := e.do(anonymousGet(t, e.ts.URL+"/live/cam/p3.1.m4s?partNumber=1"))
	wantXMLError(t, resp, body, http.StatusNotFound, "NoSuchKey")
	e.waitPartsHeld(1)
	pw, put := e.pipePut("/live/cam/p3.1.m4s")
	pw.Write([]byte("part bytes"))
	e.waitPartsHeld(1) // woken by the upload's start, held again
	select {
	case a := <-conditional:
		t.Fatalf("answered from the upload in flight: %+v", a)
	default:
	}
	pw.Close()
	<-put
	if a := <-conditional; a.err != nil || a.resp.StatusCode != http.StatusOK || a.body != "part bytes" || a.resp.ContentLength != 10 || a.resp.Header.Get("ETag") == "" {
		t.Fatalf("answer: %+v", a)
	}
	if c := e.api.LLHLSCounts(); c.StreamedParts != 0 {
		t.Fatalf("%d GETs read the upload in flight", c.StreamedParts)
	}
}
