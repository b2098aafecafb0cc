package hls

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"
)

// Query parameters of the delivery directives.
const (
	ParamMSN  = "_HLS_msn"
	ParamPart = "_HLS_part"
	ParamSkip = "_HLS_skip"
)

// Skip values of _HLS_skip.
const (
	SkipSegments   = "YES" // skip old segments
	SkipDateRanges = "v2"  // skip old segments and old EXT-X-DATERANGE tags
)

// Target is the position a blocking request waits for. Part is -1 when
// the request named no part.
type Target struct {
	MSN  int64
	Part int
}

// Directives are a playlist request's delivery directives.
type Directives struct {
	// Block: the request named _HLS_msn (Target) and is held until the
	// playlist reaches it.
	Block  bool
	Target Target
	// Skip is "", SkipSegments or SkipDateRanges.
	Skip string
}

// Present reports whether the query names any delivery directive.
func Present(q url.Values) bool {
	return q.Has(ParamMSN) || q.Has(ParamPart) || q.Has(ParamSkip)
}

// ErrDirective is wrapped by every error of ParseDirectives: the client
// asked something the specification does not allow (400).
var ErrDirective = errors.New("invalid delivery directive")

// ParseDirectives reads the directives of a playlist request.
func ParseDirectives(q url.Values) (Directives, error) {
	d := Directives{Target: Target{Part: -1}}
	one := func(name string) (string, bool, error) {
		vs, ok := q[name]
		if !ok {
			return "", false, nil
		}
		if len(vs) != 1 {
			return "", false, fmt.Errorf("%w: %s given %d times", ErrDirective, name, len(vs))
		}
		return vs[0], true, nil
	}
	number := func(name string) (int64, bool, error) {
		v, ok, err := one(name)
		if !ok || err != nil {
			return 0, ok, err
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return 0, false, fmt.Errorf("%w: %s=%q is not a decimal integer", ErrDirective, name, v)
		}
		return n, true, nil
	}
	msn, hasMSN, err := number(ParamMSN)
	if err != nil {
		return d, err
	}
	part, hasPart, err := number(ParamPart)
	if err != nil {
		return d, err
	}
	if hasPart && !hasMSN {
		return d, fmt.Errorf("%w: %s without %s", ErrDirective, ParamPart, ParamMSN)
	}
	if hasPart && part > 1<<30 {
		return d, fmt.Errorf("%w: %s=%d is out of range", ErrDirective, ParamPart, part)
	}
	if hasMSN {
		d.Block, d.Target.MSN = true, msn
	}
	if hasPart {
		d.Target.Part = int(part)
	}
	skip, _, err := one(ParamSkip)
	if err != nil {
		return d, err
	}
	switch skip {
	case "", SkipSegments, SkipDateRanges:
		d.Skip = skip
	default:
		return d, fmt.Errorf("%w: %s=%q: want %s or %s", ErrDirective, ParamSkip, skip, SkipSegments, SkipDateRanges)
	}
	return d, nil
}
