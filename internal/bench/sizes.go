package bench

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// MaxObjectSize is the largest object size a size list may name.
const MaxObjectSize = 10 << 30

// sizeUnits maps a suffix to its multiplier. Binary suffixes (KiB, MiB, GiB)
// are powers of 1024, decimal ones (KB, MB, GB) powers of 1000, as in the
// IEC/SI convention; a bare number is bytes. Matching is case-insensitive.
var sizeUnits = []struct {
	suffix string
	mult   int64
}{
	// Longest suffixes first so "KiB" is not read as "B".
	{"kib", 1 << 10}, {"mib", 1 << 20}, {"gib", 1 << 30},
	{"kb", 1e3}, {"mb", 1e6}, {"gb", 1e9},
	{"k", 1 << 10}, {"m", 1 << 20}, {"g", 1 << 30},
	{"b", 1},
}

// ParseSize parses "5MiB", "64KB", "1.5GiB" or "4096" into bytes.
// Fractions are allowed with a unit and must come out to whole bytes.
func ParseSize(s string) (int64, error) {
	text := strings.TrimSpace(s)
	lower := strings.ToLower(text)
	mult := int64(1)
	for _, u := range sizeUnits {
		if strings.HasSuffix(lower, u.suffix) {
			mult = u.mult
			lower = strings.TrimSpace(strings.TrimSuffix(lower, u.suffix))
			break
		}
	}
	if lower == "" {
		return 0, fmt.Errorf("size %q: no number", s)
	}
	v, err := strconv.ParseFloat(lower, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("size %q: not a number", s)
	}
	bytes := v * float64(mult)
	if bytes <= 0 {
		return 0, fmt.Errorf("size %q: must be positive", s)
	}
	if bytes > math.MaxInt64/2 || bytes != math.Trunc(bytes) {
		return 0, fmt.Errorf("size %q: not a whole number of bytes", s)
	}
	return int64(bytes), nil
}

// ParseSizeList parses a comma-separated list of sizes, each at most max.
func ParseSizeList(s string, max int64) ([]int64, error) {
	var out []int64
	for _, field := range splitList(s) {
		n, err := ParseSize(field)
		if err != nil {
			return nil, err
		}
		if n > max {
			return nil, fmt.Errorf("size %q: larger than the limit %s", field, FormatSize(max))
		}
		out = append(out, n)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("empty size list")
	}
	return out, nil
}

// ParseIntList parses "1,2,4,8" into positive integers.
func ParseIntList(s string) ([]int, error) {
	var out []int
	for _, field := range splitList(s) {
		n, err := strconv.Atoi(field)
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("%q: want a positive integer", field)
		}
		out = append(out, n)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("empty list")
	}
	return out, nil
}

// ParseFloatList parses "1,1.25,2" into positive numbers.
func ParseFloatList(s string) ([]float64, error) {
	var out []float64
	for _, field := range splitList(s) {
		v, err := strconv.ParseFloat(field, 64)
		if err != nil || !(v > 0) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("%q: want a positive number", field)
		}
		out = append(out, v)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("empty list")
	}
	return out, nil
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// FormatSize renders bytes in the largest binary or decimal unit that
// divides it exactly (1048576 -> "1MiB", 5000000 -> "5MB"), else in bytes
// with one decimal of the nearest binary unit.
func FormatSize(n int64) string {
	for _, u := range []struct {
		name string
		mult int64
	}{{"GiB", 1 << 30}, {"GB", 1e9}, {"MiB", 1 << 20}, {"MB", 1e6}, {"KiB", 1 << 10}, {"KB", 1e3}} {
		if n >= u.mult && n%u.mult == 0 {
			return strconv.FormatInt(n/u.mult, 10) + u.name
		}
	}
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1fGiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1fMiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1fKiB", float64(n)/(1<<10))
	}
	return strconv.FormatInt(n, 10) + "B"
}

// formatDuration rounds for a human: "1m05s", "12.3s", "850ms".
func formatDuration(d time.Duration) string {
	switch {
	case d >= time.Minute:
		return d.Round(time.Second).String()
	case d >= time.Second:
		return d.Round(100 * time.Millisecond).String()
	}
	return d.Round(time.Millisecond).String()
}
