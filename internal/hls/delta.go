package hls

import (
	"slices"
	"strconv"
	"strings"
)

// The EXT-X-VERSION a playlist with EXT-X-SKIP must declare at least,
// and one whose EXT-X-SKIP replaces EXT-X-DATERANGE tags.
const (
	skipVersion           = 9
	skipDateRangesVersion = 10
)

// Delta returns the Playlist Delta Update answering _HLS_skip=YES, and
// whether there is one: only a live media playlist whose
// EXT-X-SERVER-CONTROL has CAN-SKIP-UNTIL gets one (the directive is
// ignored otherwise, as the specification says).
//
// The segments skipped are the leading ones that end further from the
// end of the last complete segment than the Skip Boundary; the
// remaining segments always cover at least the Skip Boundary. Their
// URIs and Media Segment tags give way to one EXT-X-SKIP tag. Every
// other line stays, in order: EXT-X-DATERANGE tags among the skipped
// segments follow EXT-X-SKIP, and so do the EXT-X-MAP, EXT-X-KEY (one
// per KEYFORMAT) and EXT-X-BITRATE tags in force at the first kept
// segment, which they apply to as well. An EXT-X-VERSION below 9 is
// raised to 9 (EXT-X-SKIP needs it). With nothing old enough to skip,
// the playlist is answered unchanged.
func (p *Playlist) Delta() ([]byte, bool) { return p.delta(nil, nil, false) }

// DeltaDateRanges is the delta update answering _HLS_skip=v2 (with
// History.DateRanges): as Delta, and also without the EXT-X-DATERANGE
// tags whose IDs are in old, anywhere in the playlist; the EXT-X-SKIP tag
// lists removed in RECENTLY-REMOVED-DATERANGES (possibly empty), and
// EXT-X-VERSION is at least 10. A playlist without CAN-SKIP-DATERANGES
// gets Delta's answer.
func (p *Playlist) DeltaDateRanges(old map[string]bool, removed []string) ([]byte, bool) {
	if !p.CanSkipDateRanges {
		return p.Delta()
	}
	return p.delta(old, removed, true)
}

func (p *Playlist) delta(old map[string]bool, removed []string, dateRanges bool) ([]byte, bool) {
	if !p.Media || p.Ended || p.CanSkipUntil <= 0 {
		return nil, false
	}
	var total int64
	for _, s := range p.segments {
		total += int64(s.duration)
	}
	skipped, end := 0, int64(0)
	for _, s := range p.segments {
		end += int64(s.duration)
		if total-end <= int64(p.CanSkipUntil) {
			break
		}
		skipped++
	}
	if skipped == 0 {
		return []byte(strings.Join(p.lines, "\n")), true
	}
	first, last := p.segments[0].first, p.segments[skipped-1].uri
	keep := func(lines []string) []string {
		return slices.DeleteFunc(slices.Clone(lines), func(line string) bool {
			value, ok := strings.CutPrefix(strings.TrimSpace(line), "#EXT-X-DATERANGE:")
			return ok && old[attribute(value, "ID")]
		})
	}
	version, skip := skipVersion, "#EXT-X-SKIP:SKIPPED-SEGMENTS="+strconv.Itoa(skipped)
	if dateRanges {
		removed = slices.Sorted(slices.Values(removed))
		version, skip = skipDateRangesVersion, skip+`,RECENTLY-REMOVED-DATERANGES="`+strings.Join(removed, "\t")+`"`
	}
	out := make([]string, 0, len(p.lines)-(last-first)+8)
	out = append(out, withVersion(keep(p.lines[:first]), version)...)
	out = append(out, skip)
	out = append(out, keep(inForce(p.lines[first:last+1]))...)
	out = append(out, keep(p.lines[last+1:])...)
	return []byte(strings.Join(out, "\n")), true
}

// inForce returns, of the lines of skipped segments, those that stay:
// EXT-X-DATERANGE tags, then the last EXT-X-MAP, the last EXT-X-KEY of
// each KEYFORMAT and the last EXT-X-BITRATE.
func inForce(skipped []string) []string {
	var dateRanges, keyFormats []string
	var mapTag, bitrate string
	keys := map[string]string{}
	for _, raw := range skipped {
		line := strings.TrimSpace(raw)
		name, value, _ := strings.Cut(line, ":")
		switch name {
		case "#EXT-X-DATERANGE":
			dateRanges = append(dateRanges, raw)
		case "#EXT-X-MAP":
			mapTag = raw
		case "#EXT-X-BITRATE":
			bitrate = raw
		case "#EXT-X-KEY":
			format := attribute(value, "KEYFORMAT")
			if _, seen := keys[format]; !seen {
				keyFormats = append(keyFormats, format)
			}
			keys[format] = raw
		}
	}
	out := dateRanges
	if mapTag != "" {
		out = append(out, mapTag)
	}
	for _, f := range keyFormats {
		out = append(out, keys[f])
	}
	if bitrate != "" {
		out = append(out, bitrate)
	}
	return out
}

// withVersion returns the header lines with EXT-X-VERSION at least
// version, adding the tag after #EXTM3U when there is none.
func withVersion(header []string, version int) []string {
	out := append([]string(nil), header...)
	tag := "#EXT-X-VERSION:" + strconv.Itoa(version)
	for i, line := range out {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "#EXT-X-VERSION:"); ok {
			if n, err := strconv.Atoi(v); err != nil || n < version {
				out[i] = tag
			}
			return out
		}
	}
	if len(out) == 0 {
		return []string{tag}
	}
	return append([]string{out[0], tag}, out[1:]...)
}
