package s3api

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/b3-storage/b3/internal/cache"
	"github.com/b3-storage/b3/internal/objstore"
)

func withMediaHeaders(on bool) envOption { return func(c *Config) { c.MediaHeaders = on } }

// mustCreateStreamBucket creates a bucket owned by root whose policy lets
// anyone on loopback write, delete and read its objects, as docs/HLS.md
// sets up a bucket for encoders that cannot sign and for players.
func (e *testEnv) mustCreateStreamBucket(name string) {
	e.t.Helper()
	e.mustCreateBucket(name)
	policy := `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":"*",
		"Action":["s3:PutObject","s3:DeleteObject","s3:GetObject"],"Resource":"arn:aws:s3:::` + name + `/*",
		"Condition":{"IpAddress":{"aws:SourceIp":"127.0.0.0/8"}}}]}`
	if _, err := e.root().PutBucketPolicy(context.Background(), &s3.PutBucketPolicyInput{Bucket: aws.String(name), Policy: aws.String(policy)}); err != nil {
		e.t.Fatalf("put bucket policy %s: %v", name, err)
	}
}

// TestMediaHeaders: with media headers on, an object uploaded without a
// Content-Type or with a generic one is served (GET and HEAD) with its
// extension's type, a playlist without a Cache-Control with no-cache; what
// the uploader set, and a request's response-* overrides, win. Off, the
// stored values are served.
func TestMediaHeaders(t *testing.T) {
	cases := []struct {
		key, contentType, cacheControl string
		wantType, wantCache            string // with media headers on
		offType                        string // with them off
	}{
		{"live/cam1/index.m3u8", "", "", "application/vnd.apple.mpegurl", "no-cache", defaultContentType},
		{"live/cam1/INDEX.M3U8", "application/octet-stream", "", "application/vnd.apple.mpegurl", "no-cache", "application/octet-stream"},
		{"live/cam1/index.m3u8", "application/x-mpegURL", "", "application/x-mpegURL", "no-cache", "application/x-mpegURL"},
		{"live/cam1/index.m3u8", "", "max-age=1", "application/vnd.apple.mpegurl", "max-age=1", defaultContentType},
		{"live/cam1/seg00001.ts", "", "", "video/mp2t", "", defaultContentType},
		{"live/cam1/seg00001.ts", "binary/octet-stream", "", "video/mp2t", "", "binary/octet-stream"},
		{"live/cam1/seg00001.ts", "application/x-www-form-urlencoded", "", "video/mp2t", "", "application/x-www-form-urlencoded"},
		{"live/cam1/seg00001.ts", "video/MP2T", "", "video/MP2T", "", "video/MP2T"},
		{"live/cam1/seg00001.ts", "text/vnd.trolltech.linguist", "", "video/mp2t", "", "text/vnd.trolltech.linguist"}, // the aws CLI's guess
		{"live/cam1/notes.txt", "text/vnd.trolltech.linguist", "", "text/vnd.trolltech.linguist", "", "text/vnd.trolltech.linguist"},
		{"live/cam1/chunk-1.m4s", "", "", "video/iso.segment", "", defaultContentType},
		{"live/cam1/init.mp4", "", "", "video/mp4", "", defaultContentType},
		{"live/cam1/subs.vtt", "", "", "text/vtt", "", defaultContentType},
		{"live/cam1/audio.aac", "", "", "audio/aac", "", defaultContentType},
		{"live/cam1/manifest.mpd", "", "", "application/dash+xml", "no-cache", defaultContentType},
		{"live/cam1/notes.txt", "", "", defaultContentType, "", defaultContentType},
		{"live/cam1/noext", "", "", defaultContentType, "", defaultContentType},
		{"live/cam1.d/noext", "", "", defaultContentType, "", defaultContentType},
	}
	for _, on := range []bool{true, false} {
		e := newEnv(t, withMediaHeaders(on))
		e.mustCreateStreamBucket("live")
		for _, c := range cases {
			header := http.Header{}
			if c.contentType != "" {
				header.Set("Content-Type", c.contentType)
			}
			if c.cacheControl != "" {
				header.Set("Cache-Control", c.cacheControl)
			}
			req := e.signedRequest(rootUser, http.MethodPut, "/live/"+c.key, []byte("payload"), "", header)
			if resp, body := e.do(req); resp.StatusCode != http.StatusOK {
				t.Fatalf("put %s: %d %s", c.key, resp.StatusCode, body)
			}
			wantType, wantCache := c.wantType, c.wantCache
			if !on {
				wantType, wantCache = c.offType, c.cacheControl
			}
			for _, method := range []string{http.MethodGet, http.MethodHead} {
				resp, err := http.DefaultClient.Do(mustRequest(t, method, e.ts.URL+"/live/"+c.key))
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if got := resp.Header.Get("Content-Type"); got != wantType {
					t.Errorf("media headers %v: %s %s (uploaded as %q): Content-Type %q, want %q", on, method, c.key, c.contentType, got, wantType)
				}
				if got := resp.Header.Get("Cache-Control"); got != wantCache {
					t.Errorf("media headers %v: %s %s: Cache-Control %q, want %q", on, method, c.key, got, wantCache)
				}
			}
		}
		// The request's overrides win over the media defaults.
		e.mustPut("live", "x/index.m3u8", []byte("#EXTM3U\n"))
		req := e.signedRequest(rootUser, http.MethodGet, "/live/x/index.m3u8?response-content-type=text%2Fplain&response-cache-control=max-age%3D5", nil, "", nil)
		resp, body := e.do(req)
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/plain" || resp.Header.Get("Cache-Control") != "max-age=5" {
			t.Fatalf("overrides under media headers %v: %d %q %q %s", on, resp.StatusCode, resp.Header.Get("Content-Type"), resp.Header.Get("Cache-Control"), body)
		}
	}
}

// TestMediaCORSForHLSJS: a player in a browser (hls.js) on another origin
// reads a public stream: the preflight for a ranged GET is answered with
// the rule's methods and the requested header, and the playlist and a
// ranged segment read carry Access-Control-Allow-Origin and expose the
// headers the player reads.
func TestMediaCORSForHLSJS(t *testing.T) {
	e := newEnv(t, withMediaHeaders(true))
	e.mustCreateStreamBucket("live")
	ctx := context.Background()
	if _, err := e.root().PutBucketCors(ctx, &s3.PutBucketCorsInput{Bucket: aws.String("live"), CORSConfiguration: &types.CORSConfiguration{
		CORSRules: []types.CORSRule{{
			AllowedOrigins: []string{"*"}, AllowedMethods: []string{"GET", "HEAD"}, AllowedHeaders: []string{"*"},
			ExposeHeaders: []string{"Content-Length", "Content-Range", "ETag"}, MaxAgeSeconds: aws.Int32(3000),
		}},
	}}); err != nil {
		t.Fatal(err)
	}
	e.mustPut("live", "cam1/index.m3u8", []byte("#EXTM3U\n#EXTINF:2.0,\nseg1.ts\n"))
	e.mustPut("live", "cam1/seg1.ts", bytes.Repeat([]byte{0x47}, 188*10))
	const origin = "https://player.example"

	pre := mustRequest(t, http.MethodOptions, e.ts.URL+"/live/cam1/seg1.ts")
	pre.Header.Set("Origin", origin)
	pre.Header.Set("Access-Control-Request-Method", "GET")
	pre.Header.Set("Access-Control-Request-Headers", "range")
	resp, err := http.DefaultClient.Do(pre)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Access-Control-Allow-Origin") != "*" ||
		!strings.Contains(resp.Header.Get("Access-Control-Allow-Methods"), "GET") ||
		!strings.EqualFold(resp.Header.Get("Access-Control-Allow-Headers"), "range") {
		t.Fatalf("preflight: %d %v", resp.StatusCode, resp.Header)
	}
	for _, c := range []struct{ path, rng, wantType string }{
		{"/live/cam1/index.m3u8", "", "application/vnd.apple.mpegurl"},
		{"/live/cam1/seg1.ts", "bytes=0-187", "video/mp2t"},
	} {
		req := mustRequest(t, http.MethodGet, e.ts.URL+c.path)
		req.Header.Set("Origin", origin)
		if c.rng != "" {
			req.Header.Set("Range", c.rng)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode/100 != 2 || resp.Header.Get("Access-Control-Allow-Origin") != "*" ||
			!strings.Contains(resp.Header.Get("Access-Control-Expose-Headers"), "Content-Range") ||
			resp.Header.Get("Content-Type") != c.wantType {
			t.Fatalf("GET %s from %s: %d %v", c.path, origin, resp.StatusCode, resp.Header)
		}
	}
}

// playlist is version n of a live playlist: its media sequence names the
// version and its length varies with it (from below the inline limit to
// several KiB), so that a torn or mixed read cannot pass for a version.
func playlist(n int) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-TARGETDURATION:2\n#EXT-X-MEDIA-SEQUENCE:%d\n", n)
	for i := range 1 + n%97 {
		fmt.Fprintf(&b, "#EXTINF:2.000000,\nseg%08d.ts\n", n+i)
	}
	fmt.Fprintf(&b, "#B3-END:%d\n", n)
	return b.Bytes()
}

// TestPlaylistOverwriteAtomic: a player polling a playlist while the
// encoder overwrites it 1,000 times (chunked PUTs, as encoders send them)
// only ever reads a complete version, and never an older one after a
// newer, whether served from the segments, from the record (small
// versions) or from the object cache.
func TestPlaylistOverwriteAtomic(t *testing.T) {
	const versions = 1000
	for _, cached := range []bool{false, true} {
		t.Run("cache="+strconv.FormatBool(cached), func(t *testing.T) {
			e := newEnvStore(t, func(o *objstore.Options) {
				if cached {
					o.Cache = cache.New[objstore.CachedObject](cache.Options{MaxBytes: 1 << 20, MaxObjectSize: 64 << 10})
				}
			}, withMediaHeaders(true))
			e.mustCreateStreamBucket("live")
			url := e.ts.URL + "/live/cam1/index.m3u8"
			if resp, body := e.putChunked(nil, "/live/cam1/index.m3u8", bytes.NewReader(playlist(0)), ""); resp.StatusCode != http.StatusOK {
				t.Fatalf("first playlist: %d %s", resp.StatusCode, body)
			}
			done := make(chan struct{})
			var wg sync.WaitGroup
			reads, seen, errs := 0, map[int]bool{}, []string{}
			wg.Add(1)
			go func() {
				defer wg.Done()
				last := 0
				for {
					select {
					case <-done:
						return
					default:
					}
					resp, err := http.Get(url)
					if err != nil {
						errs = append(errs, err.Error())
						return
					}
					body, err := io.ReadAll(resp.Body)
					resp.Body.Close()
					reads++
					n := -1
					if i := bytes.Index(body, []byte("#EXT-X-MEDIA-SEQUENCE:")); i >= 0 {
						fmt.Sscanf(string(body[i+len("#EXT-X-MEDIA-SEQUENCE:"):]), "%d", &n)
					}
					switch {
					case err != nil || resp.StatusCode != http.StatusOK:
						errs = append(errs, fmt.Sprintf("read %d: %d %v", reads, resp.StatusCode, err))
					case n < 0 || !bytes.Equal(body, playlist(n)):
						errs = append(errs, fmt.Sprintf("read %d: not a complete version (%d bytes): %.80q", reads, len(body), body))
					case n < last:
						errs = append(errs, fmt.Sprintf("read %d: version %d after version %d", reads, n, last))
					case resp.Header.Get("Content-Type") != "application/vnd.apple.mpegurl" || resp.Header.Get("Cache-Control") != "no-cache":
						errs = append(errs, fmt.Sprintf("read %d: headers %v", reads, resp.Header))
					default:
						seen[n], last = true, n
					}
					if len(errs) > 10 {
						return
					}
				}
			}()
			for n := 1; n <= versions; n++ {
				if resp, body := e.putChunked(nil, "/live/cam1/index.m3u8", bytes.NewReader(playlist(n)), ""); resp.StatusCode != http.StatusOK {
					t.Errorf("overwrite %d: %d %s", n, resp.StatusCode, body)
					break
				}
			}
			close(done)
			wg.Wait()
			for _, err := range errs {
				t.Error(err)
			}
			if len(seen) < 2 {
				t.Fatalf("the reader saw %d versions in %d reads: it did not poll during the overwrites", len(seen), reads)
			}
			t.Logf("%d reads saw %d distinct versions", reads, len(seen))
		})
	}
}
