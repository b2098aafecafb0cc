package hls

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// packager is a small LL-HLS packager: it reads the fragmented MP4 an
// encoder writes (ffmpeg, CMAF fragments of partDuration), makes each
// fragment a part and each partsPerSegment fragments a segment, and
// PUTs every part, segment and media playlist version to b3 with the AWS
// SDK, as a live LL-HLS packager would: the playlist lists the parts of
// the last three segments and hints the next part (EXT-X-PRELOAD-HINT)
// before the encoder has produced it.
type packager struct {
	client          *s3.Client
	bucket, dir     string // objects are dir+name in bucket
	partDuration    time.Duration
	partsPerSegment int

	mu   sync.Mutex
	puts map[string]time.Time // object name → when its PUT began

	segments int // complete segments
	parts    int // parts of the segment being made
	current  bytes.Buffer
}

// Playlist is the media playlist's name.
const playlistName = "index.m3u8"

// run encodes seconds of lavfi testsrc in real time with ffmpeg and
// publishes it; it ends the playlist (EXT-X-ENDLIST) when the encoder
// ends.
func (p *packager) run(ctx context.Context, ffmpeg string, seconds int) error {
	fps := 25
	frames := int(p.partDuration * time.Duration(fps) / time.Second)
	cmd := exec.CommandContext(ctx, ffmpeg, "-hide_banner", "-loglevel", "error", "-nostdin", "-re",
		"-f", "lavfi", "-i", fmt.Sprintf("testsrc=size=320x180:rate=%d", fps), "-t", strconv.Itoa(seconds),
		"-c:v", "libx264", "-preset", "ultrafast", "-tune", "zerolatency", "-pix_fmt", "yuv420p",
		"-g", strconv.Itoa(frames*p.partsPerSegment), "-keyint_min", strconv.Itoa(frames*p.partsPerSegment), "-sc_threshold", "0",
		"-f", "mp4", "-movflags", "cmaf+frag_keyframe+empty_moov+default_base_moof",
		"-frag_duration", strconv.FormatInt(p.partDuration.Microseconds(), 10), "pipe:1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	perr := p.publish(ctx, out)
	if err := cmd.Wait(); err != nil {
		return fmt.Errorf("ffmpeg: %v: %s", err, stderr.String())
	}
	return perr
}

// publish reads the encoder's top-level boxes: ftyp+moov is the
// initialization section, each moof+mdat a fragment.
func (p *packager) publish(ctx context.Context, r io.Reader) error {
	var init, fragment bytes.Buffer
	for {
		box, typ, err := readBox(r)
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		switch typ {
		case "ftyp", "moov":
			init.Write(box)
			if typ == "moov" {
				if err := p.put(ctx, "init.mp4", init.Bytes()); err != nil {
					return err
				}
			}
		case "styp", "prft", "moof":
			fragment.Write(box)
		case "mdat":
			fragment.Write(box)
			if err := p.part(ctx, bytes.Clone(fragment.Bytes())); err != nil {
				return err
			}
			fragment.Reset()
		}
	}
	return p.put(ctx, playlistName, p.playlist(true))
}

// readBox reads one ISO BMFF box whole.
func readBox(r io.Reader) ([]byte, string, error) {
	header := make([]byte, 8)
	if _, err := io.ReadFull(r, header); err != nil {
		return nil, "", err
	}
	size := uint64(binary.BigEndian.Uint32(header))
	typ := string(header[4:8])
	if size == 1 {
		large := make([]byte, 8)
		if _, err := io.ReadFull(r, large); err != nil {
			return nil, "", err
		}
		header = append(header, large...)
		size = binary.BigEndian.Uint64(large)
	}
	if size < uint64(len(header)) || size > 64<<20 {
		return nil, "", errors.New("bad box size")
	}
	box := make([]byte, size)
	copy(box, header)
	if _, err := io.ReadFull(r, box[len(header):]); err != nil {
		return nil, "", err
	}
	return box, typ, nil
}

// part publishes a fragment: the part, the segment it completes, then the
// playlist that lists it and hints the next one.
func (p *packager) part(ctx context.Context, data []byte) error {
	if err := p.put(ctx, partName(p.segments, p.parts), data); err != nil {
		return err
	}
	p.current.Write(data)
	p.parts++
	if p.parts == p.partsPerSegment {
		if err := p.put(ctx, segmentName(p.segments), p.current.Bytes()); err != nil {
			return err
		}
		p.current.Reset()
		p.segments, p.parts = p.segments+1, 0
	}
	return p.put(ctx, playlistName, p.playlist(false))
}

func partName(segment, part int) string { return fmt.Sprintf("s%d.p%d.m4s", segment, part) }
func segmentName(segment int) string    { return fmt.Sprintf("s%d.m4s", segment) }

// playlist is the media playlist now: every complete segment, the parts
// of the last three and of the one being made, and the preload hint of
// the next part (none once ended).
func (p *packager) playlist(ended bool) []byte {
	partSec := p.partDuration.Seconds()
	segSec := partSec * float64(p.partsPerSegment)
	var b strings.Builder
	fmt.Fprintf(&b, "#EXTM3U\n#EXT-X-VERSION:9\n#EXT-X-TARGETDURATION:%d\n", int(segSec+0.999))
	fmt.Fprintf(&b, "#EXT-X-PART-INF:PART-TARGET=%.3f\n", partSec)
	fmt.Fprintf(&b, "#EXT-X-SERVER-CONTROL:CAN-BLOCK-RELOAD=YES,PART-HOLD-BACK=%.3f\n", 3*partSec)
	b.WriteString("#EXT-X-MEDIA-SEQUENCE:0\n#EXT-X-MAP:URI=\"init.mp4\"\n")
	parts := func(segment, n int) {
		for i := range n {
			independent := ""
			if i == 0 {
				independent = ",INDEPENDENT=YES"
			}
			fmt.Fprintf(&b, "#EXT-X-PART:DURATION=%.3f,URI=%q%s\n", partSec, partName(segment, i), independent)
		}
	}
	for s := range p.segments {
		if s >= p.segments-3 {
			parts(s, p.partsPerSegment)
		}
		fmt.Fprintf(&b, "#EXTINF:%.3f,\n%s\n", segSec, segmentName(s))
	}
	parts(p.segments, p.parts)
	if ended {
		b.WriteString("#EXT-X-ENDLIST\n")
	} else {
		fmt.Fprintf(&b, "#EXT-X-PRELOAD-HINT:TYPE=PART,URI=%q\n", partName(p.segments, p.parts))
	}
	return []byte(b.String())
}

// put PUTs one object, noting when its PUT began.
func (p *packager) put(ctx context.Context, name string, data []byte) error {
	p.mu.Lock()
	p.puts[name] = time.Now()
	p.mu.Unlock()
	_, err := p.client.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(p.bucket), Key: aws.String(p.dir + name),
		Body: bytes.NewReader(data), ContentType: aws.String(contentType(name))})
	if err != nil {
		return fmt.Errorf("PUT %s: %w", name, err)
	}
	return nil
}

func contentType(name string) string {
	switch {
	case strings.HasSuffix(name, ".m3u8"):
		return "application/vnd.apple.mpegurl"
	case strings.HasSuffix(name, ".mp4"):
		return "video/mp4"
	}
	return "video/iso.segment"
}

// putTime returns when the PUT of name began.
func (p *packager) putTime(name string) (time.Time, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	t, ok := p.puts[name]
	return t, ok
}
