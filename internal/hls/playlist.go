package hls

import (
	"math"
	"strconv"
	"strings"
	"time"
)

// Playlist is what the directives are decided on, read from a media
// playlist by Parse. Durations are rounded to the microsecond.
type Playlist struct {
	// Media is false for anything but a media playlist (no
	// EXT-X-TARGETDURATION: a multivariant playlist, or not a playlist):
	// directives do not apply to it.
	Media          bool
	TargetDuration time.Duration
	PartTarget     time.Duration // EXT-X-PART-INF PART-TARGET; 0 without parts
	Ended          bool          // EXT-X-ENDLIST

	// CanSkipUntil is EXT-X-SERVER-CONTROL's CAN-SKIP-UNTIL (the Skip
	// Boundary), 0 when absent; CanSkipDateRanges is CAN-SKIP-DATERANGES=YES.
	CanSkipUntil      time.Duration
	CanSkipDateRanges bool

	// LastMSN is the Media Sequence Number of the last complete segment
	// (EXT-X-MEDIA-SEQUENCE - 1 when there is none).
	LastMSN int64
	// LastPartMSN and LastPart place the last EXT-X-PART: the Media
	// Sequence Number of its parent segment and its Part Index. LastPart
	// is -1 when the playlist lists no part.
	LastPartMSN int64
	LastPart    int

	// Hints are the playlist's EXT-X-PRELOAD-HINT tags of TYPE PART or
	// MAP, in order.
	Hints []PreloadHint

	lines    []string
	segments []segment // complete segments, in order
}

// PreloadHint is an EXT-X-PRELOAD-HINT tag: the URI (as written) of a
// resource the client may request before it exists, and the byte range
// of it the hint names (BYTERANGE-START, BYTERANGE-LENGTH; Length -1
// when the range runs to the end of the resource).
type PreloadHint struct {
	Type          string // PART or MAP
	URI           string
	Start, Length int64
}

// segment is one complete media segment of the parsed lines: its tags
// and parts start at line first, its URI is line uri.
type segment struct {
	first, uri int
	duration   time.Duration
}

// Parse reads a playlist. It never fails: what it does not understand
// leaves the facts at their zero values (a playlist that is not a media
// playlist has Media false).
func Parse(data []byte) *Playlist {
	text := strings.ReplaceAll(string(data), "\r\n", "\n")
	p := &Playlist{lines: strings.Split(text, "\n"), LastPart: -1}
	var mediaSequence int64
	first := -1               // first line of the segment being read, -1 before its first tag
	var pending time.Duration // EXTINF of the segment being read
	parts := 0                // parts of the segment being read
	for i, raw := range p.lines {
		line := strings.TrimSpace(raw)
		if line == "" {
			continue
		}
		if !strings.HasPrefix(line, "#") {
			if first < 0 {
				first = i
			}
			p.segments = append(p.segments, segment{first: first, uri: i, duration: pending})
			first, pending, parts = -1, 0, 0
			continue
		}
		name, value, _ := strings.Cut(line, ":")
		if segmentTags[name] && first < 0 {
			first = i
		}
		switch name {
		case "#EXT-X-TARGETDURATION":
			p.TargetDuration = seconds(value)
			p.Media = p.TargetDuration > 0
		case "#EXT-X-MEDIA-SEQUENCE":
			mediaSequence, _ = strconv.ParseInt(value, 10, 64)
		case "#EXT-X-PART-INF":
			p.PartTarget = seconds(attribute(value, "PART-TARGET"))
		case "#EXT-X-SERVER-CONTROL":
			p.CanSkipUntil = seconds(attribute(value, "CAN-SKIP-UNTIL"))
			p.CanSkipDateRanges = attribute(value, "CAN-SKIP-DATERANGES") == "YES"
		case "#EXT-X-ENDLIST":
			p.Ended = true
		case "#EXTINF":
			d, _, _ := strings.Cut(value, ",")
			pending = seconds(d)
		case "#EXT-X-PRELOAD-HINT":
			if h, ok := preloadHint(value); ok {
				p.Hints = append(p.Hints, h)
			}
		case "#EXT-X-PART":
			p.LastPartMSN, p.LastPart = mediaSequence+int64(len(p.segments)), parts
			parts++
		}
	}
	p.LastMSN = mediaSequence + int64(len(p.segments)) - 1
	return p
}

// preloadHint reads the attributes of an EXT-X-PRELOAD-HINT tag; ok is
// false for a type other than PART and MAP, no URI, or a byte range that
// is not one.
func preloadHint(list string) (PreloadHint, bool) {
	h := PreloadHint{Type: attribute(list, "TYPE"), URI: attribute(list, "URI"), Length: -1}
	if h.Type != "PART" && h.Type != "MAP" || h.URI == "" {
		return h, false
	}
	var err error
	if v := attribute(list, "BYTERANGE-START"); v != "" {
		if h.Start, err = strconv.ParseInt(v, 10, 64); err != nil || h.Start < 0 {
			return h, false
		}
	}
	if v := attribute(list, "BYTERANGE-LENGTH"); v != "" {
		if h.Length, err = strconv.ParseInt(v, 10, 64); err != nil || h.Length < 0 {
			return h, false
		}
	}
	return h, true
}

// segmentTags are the Media Segment tags: they belong to the segment
// whose URI follows them.
var segmentTags = map[string]bool{
	"#EXTINF": true, "#EXT-X-BYTERANGE": true, "#EXT-X-DISCONTINUITY": true, "#EXT-X-KEY": true,
	"#EXT-X-MAP": true, "#EXT-X-PROGRAM-DATE-TIME": true, "#EXT-X-GAP": true, "#EXT-X-BITRATE": true,
	"#EXT-X-PART": true,
}

// seconds reads a decimal-floating-point number of seconds; anything
// else is 0.
func seconds(s string) time.Duration {
	f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || f < 0 || f > 1e6 || math.IsNaN(f) {
		return 0
	}
	return time.Duration(math.Round(f*1e6)) * time.Microsecond
}

// attribute returns the value of name in an attribute list, unquoted;
// "" when absent.
func attribute(list, name string) string {
	for len(list) > 0 {
		var key string
		key, list, _ = strings.Cut(list, "=")
		var value string
		if strings.HasPrefix(list, `"`) {
			end := strings.IndexByte(list[1:], '"')
			if end < 0 {
				return ""
			}
			value, list = list[1:end+1], list[end+2:]
			list = strings.TrimPrefix(list, ",")
		} else {
			value, list, _ = strings.Cut(list, ",")
		}
		if strings.TrimSpace(key) == name {
			return value
		}
	}
	return ""
}

// Verdict is what to do with a request.
type Verdict int

const (
	// Answer the request with the playlist now.
	Answer Verdict = iota
	// Hold the request until a write reaches its target (or three
	// target durations pass).
	Hold
	// TooFar: the target is further ahead than the rules allow (400).
	TooFar
)

// Decide says what to do with a request carrying d. Directives do not
// apply to a playlist that is not a media playlist or that has ended.
func (p *Playlist) Decide(d Directives) Verdict {
	switch {
	case !d.Block || !p.Media || p.Ended:
		return Answer
	case p.tooFar(d.Target):
		return TooFar
	case p.Reached(d.Target):
		return Answer
	}
	return Hold
}

// Reached reports whether the playlist holds the target or something
// later (see the package comment), or has ended.
func (p *Playlist) Reached(t Target) bool {
	switch {
	case p.Ended:
		return true
	case t.Part < 0 || p.LastPart < 0:
		// No part asked for, or a playlist without parts: the whole
		// segment.
		return p.LastMSN >= t.MSN
	case p.LastMSN > t.MSN || p.LastPartMSN > t.MSN:
		return true
	}
	// Part N of segment M, or, M complete, part 0 of M+1 (covered above
	// once it exists).
	return p.LastPartMSN == t.MSN && p.LastPart >= t.Part
}

// tooFar applies the 400 rules: more than two segments past the last
// one, or more parts past the last part than the Advance Part Limit.
func (p *Playlist) tooFar(t Target) bool {
	if t.MSN > p.LastMSN+2 {
		return true
	}
	if t.Part < 0 || p.LastPart < 0 {
		return false
	}
	var ahead int64
	switch {
	case t.MSN == p.LastPartMSN:
		ahead = int64(t.Part - p.LastPart)
	case t.MSN > p.LastPartMSN:
		ahead = int64(t.Part) + 1 // at least: every part of a later segment up to N
	}
	return ahead > p.advancePartLimit()
}

// advancePartLimit is three divided by the Part Target Duration in
// seconds when that is under one second, else three.
func (p *Playlist) advancePartLimit() int64 {
	if p.PartTarget > 0 && p.PartTarget < time.Second {
		return int64(3 * time.Second / p.PartTarget)
	}
	return 3
}

// HoldLimit is how long a request may be held before the answer is 503:
// three target durations.
func (p *Playlist) HoldLimit() time.Duration { return 3 * p.TargetDuration }
