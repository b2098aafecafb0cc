package hls

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/b3-storage/b3/internal/testutil"
)

// tool returns the path of a command the test needs, or fails naming the
// script that installs it.
func tool(t *testing.T, name string) string {
	t.Helper()
	for _, path := range []string{"/usr/bin/" + name} {
		if err := exec.Command(path, "-version").Run(); err == nil {
			return path
		}
	}
	if path, err := exec.LookPath(name); err == nil && exec.Command(path, "-version").Run() == nil {
		return path
	}
	t.Fatalf("no working %s: run `sh scripts/install-test-tools.sh` as root (or `make tools`)", name)
	return ""
}

// run runs a command (bounded) and returns its combined output.
func run(t *testing.T, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// encoderPolicy lets anyone on the loopback network write, delete and read
// under prefix of bucket, and nothing else: the policy docs/HLS.md
// recommends for encoders that cannot sign.
func encoderPolicy(bucket, prefix string) string {
	return fmt.Sprintf(`{
  "Version": "2012-10-17",
  "Statement": [{
    "Sid": "EncodersOnLoopback",
    "Effect": "Allow",
    "Principal": "*",
    "Action": ["s3:PutObject", "s3:DeleteObject", "s3:GetObject"],
    "Resource": "arn:aws:s3:::%s/%s*",
    "Condition": {"IpAddress": {"aws:SourceIp": "127.0.0.0/8"}}
  }]
}`, bucket, prefix)
}

// anonymous sends an unsigned request and returns its status and headers.
func anonymous(t *testing.T, method, url string, body io.Reader) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, body)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(data)
}

// list returns name -> size of the objects under dir.
func list(t *testing.T, c *s3.Client, bucket, dir string) map[string]int64 {
	t.Helper()
	objects := map[string]int64{}
	p := s3.NewListObjectsV2Paginator(c, &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String(dir)})
	for p.HasMorePages() {
		page, err := p.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range page.Contents {
			objects[strings.TrimPrefix(aws.ToString(o.Key), dir)] = aws.ToInt64(o.Size)
		}
	}
	return objects
}

// TestFFmpegPushesHLS: ffmpeg's HLS muxer pushes a 20-second test stream
// (2-second segments, the last 5 listed, older ones deleted) with unsigned
// chunked PUTs and DELETEs, which a bucket policy allows on one prefix
// from loopback addresses (and nothing else: not without the policy, not
// from another address range, not outside the prefix, no listing); ffprobe reads the playlist back and finds the
// 10 seconds it lists; the deleted segments are gone, the listed ones
// readable; playlists and segments are served with their media types, the
// playlist uncached. Both segment formats: MPEG-TS and fragmented MP4.
func TestFFmpegPushesHLS(t *testing.T) {
	ffmpeg, ffprobe := tool(t, "ffmpeg"), tool(t, "ffprobe")
	srv := testutil.StartServer(t, testutil.ServerOptions{NoAdmin: true})
	ctx := context.Background()
	c := srv.Client(30 * time.Second)
	const bucket, prefix = "live", "cams/"
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatal(err)
	}
	base := srv.Endpoint() + "/" + bucket + "/"
	// Before the policy, an encoder cannot write.
	if status, _, body := anonymous(t, http.MethodPut, base+prefix+"early.ts", strings.NewReader("x")); status != http.StatusForbidden {
		t.Fatalf("anonymous PUT without a policy: %d %s", status, body)
	}
	// A policy for another address range does not let loopback in.
	other := strings.Replace(encoderPolicy(bucket, prefix), "127.0.0.0/8", "192.0.2.0/24", 1)
	if _, err := c.PutBucketPolicy(ctx, &s3.PutBucketPolicyInput{Bucket: aws.String(bucket), Policy: aws.String(other)}); err != nil {
		t.Fatalf("put bucket policy: %v", err)
	}
	if status, _, body := anonymous(t, http.MethodPut, base+prefix+"early.ts", strings.NewReader("x")); status != http.StatusForbidden {
		t.Fatalf("anonymous PUT from outside the policy's address range: %d %s", status, body)
	}
	if _, err := c.PutBucketPolicy(ctx, &s3.PutBucketPolicyInput{Bucket: aws.String(bucket), Policy: aws.String(encoderPolicy(bucket, prefix))}); err != nil {
		t.Fatalf("put bucket policy: %v", err)
	}
	// The policy opens its prefix only, and grants no listing.
	if status, _, body := anonymous(t, http.MethodPut, base+"elsewhere/x.ts", strings.NewReader("x")); status != http.StatusForbidden {
		t.Fatalf("anonymous PUT outside the policy's prefix: %d %s", status, body)
	}
	if status, _, _ := anonymous(t, http.MethodGet, base+"?list-type=2", nil); status != http.StatusForbidden {
		t.Errorf("anonymous listing: %d, want 403", status)
	}

	for _, format := range []struct {
		name, segmentType, ext, segmentMime string
		extra                               []string
	}{
		{"ts", "mpegts", ".ts", "video/mp2t", nil},
		{"fmp4", "fmp4", ".m4s", "video/iso.segment", []string{"-hls_fmp4_init_filename", "init.mp4"}},
	} {
		t.Run(format.name, func(t *testing.T) {
			dir := prefix + format.name + "/"
			playlist := base + dir + "index.m3u8"
			args := []string{"-hide_banner", "-loglevel", "error", "-nostdin",
				"-f", "lavfi", "-i", "testsrc=duration=20:size=320x240:rate=25",
				"-c:v", "libx264", "-preset", "veryfast", "-g", "50", "-pix_fmt", "yuv420p",
				"-f", "hls", "-hls_time", "2", "-hls_list_size", "5", "-hls_flags", "delete_segments",
				"-hls_segment_type", format.segmentType, "-hls_segment_filename", base + dir + "seg%03d" + format.ext}
			args = append(append(args, format.extra...), "-method", "PUT", playlist)
			run(t, ffmpeg, args...)

			// ffmpeg does not wait for the answers to its PUTs and DELETEs
			// (it closes each connection after the body), so b3 may still
			// be finishing the last ones when ffmpeg exits: wait (bounded)
			// for the final playlist, the last segments and the deletes.
			want := []string{}
			for i := 5; i < 10; i++ {
				want = append(want, fmt.Sprintf("seg%03d%s", i, format.ext))
			}
			var status int
			var header http.Header
			var body string
			var objects map[string]int64
			for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
				status, header, body = anonymous(t, http.MethodGet, playlist, nil)
				objects = list(t, c, bucket, dir)
				_, settled := objects[fmt.Sprintf("seg%03d%s", 3, format.ext)]
				settled = !settled
				for _, name := range want {
					_, ok := objects[name]
					settled = settled && ok
				}
				if (strings.Contains(body, "#EXT-X-ENDLIST") && settled) || time.Now().After(deadline) {
					break
				}
			}
			if status != http.StatusOK || !strings.Contains(body, "#EXT-X-ENDLIST") {
				t.Fatalf("GET playlist: %d\n%s", status, body)
			}
			if got := header.Get("Content-Type"); got != "application/vnd.apple.mpegurl" {
				t.Errorf("playlist Content-Type %q", got)
			}
			if got := header.Get("Cache-Control"); got != "no-cache" {
				t.Errorf("playlist Cache-Control %q", got)
			}
			var listed []string
			for line := range strings.SplitSeq(body, "\n") {
				if line != "" && !strings.HasPrefix(line, "#") {
					listed = append(listed, line)
				}
			}
			if strings.Join(listed, " ") != strings.Join(want, " ") {
				t.Fatalf("playlist lists %q, want %q", listed, want)
			}

			// ffprobe plays the stream from b3: the 5 listed segments.
			out := run(t, ffprobe, "-v", "error", "-show_entries", "format=duration", "-of", "csv=p=0", playlist)
			duration, err := strconv.ParseFloat(strings.TrimSpace(out), 64)
			if err != nil || math.Abs(duration-10) > 0.2 {
				t.Errorf("ffprobe duration %q, want 10 s", out)
			}

			// Segments that left the playlist were deleted (ffmpeg keeps
			// one more than it lists: -hls_delete_threshold 1).
			for i := range 10 {
				name := fmt.Sprintf("seg%03d%s", i, format.ext)
				if _, ok := objects[name]; ok != (i >= 4) {
					t.Errorf("%s stored: %v (want %v); stored: %v", name, ok, i >= 4, objects)
				}
			}
			for _, name := range want {
				status, header, body := anonymous(t, http.MethodGet, base+dir+name, nil)
				if status != http.StatusOK || int64(len(body)) != objects[name] || len(body) == 0 {
					t.Errorf("GET %s: %d, %d bytes (listed %d)", name, status, len(body), objects[name])
				}
				if got := header.Get("Content-Type"); got != format.segmentMime {
					t.Errorf("%s Content-Type %q, want %q", name, got, format.segmentMime)
				}
				if got := header.Get("Cache-Control"); got != "" {
					t.Errorf("%s Cache-Control %q: segments are cacheable", name, got)
				}
			}
			if format.name == "fmp4" {
				if status, header, _ := anonymous(t, http.MethodHead, base+dir+"init.mp4", nil); status != http.StatusOK || header.Get("Content-Type") != "video/mp4" {
					t.Errorf("init.mp4: %d %q", status, header.Get("Content-Type"))
				}
			}
		})
	}
}
