package bench

import (
	"reflect"
	"testing"
)

func TestParseSize(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		bad  bool
	}{
		{in: "512", want: 512},
		{in: "1KiB", want: 1024},
		{in: "64kib", want: 64 << 10},
		{in: "1MiB", want: 1 << 20},
		{in: "5MB", want: 5_000_000},
		{in: "1KB", want: 1000},
		{in: "1GB", want: 1_000_000_000},
		{in: "10GiB", want: 10 << 30},
		{in: "1.5KiB", want: 1536},
		{in: " 2 MiB ", want: 2 << 20},
		{in: "4k", want: 4096},
		{in: "100B", want: 100},
		{in: "", bad: true},
		{in: "MiB", bad: true},
		{in: "-1KiB", bad: true},
		{in: "0", bad: true},
		{in: "1.3B", bad: true},
		{in: "abc", bad: true},
		{in: "1TB", bad: true},
	} {
		got, err := ParseSize(tc.in)
		if (err != nil) != tc.bad || (!tc.bad && got != tc.want) {
			t.Errorf("ParseSize(%q) = %d, %v; want %d, bad=%v", tc.in, got, err, tc.want, tc.bad)
		}
	}
}

func TestParseLists(t *testing.T) {
	sizes, err := ParseSizeList("1KiB,64KiB,1MiB,5MiB,10MiB,64MiB,1GiB", MaxObjectSize)
	if err != nil || !reflect.DeepEqual(sizes, []int64{1 << 10, 64 << 10, 1 << 20, 5 << 20, 10 << 20, 64 << 20, 1 << 30}) {
		t.Errorf("default sizes: %v %v", sizes, err)
	}
	for _, bad := range []string{"11GiB", "", ",", "1KiB,x"} {
		if _, err := ParseSizeList(bad, MaxObjectSize); err == nil {
			t.Errorf("ParseSizeList(%q) accepted", bad)
		}
	}
	if got, err := ParseIntList("1, 2,4,128"); err != nil || !reflect.DeepEqual(got, []int{1, 2, 4, 128}) {
		t.Errorf("ParseIntList: %v %v", got, err)
	}
	for _, bad := range []string{"0", "-1", "1.5", "", "a"} {
		if _, err := ParseIntList(bad); err == nil {
			t.Errorf("ParseIntList(%q) accepted", bad)
		}
	}
	if got, err := ParseFloatList("1,1.25,2,4,6,8"); err != nil || !reflect.DeepEqual(got, []float64{1, 1.25, 2, 4, 6, 8}) {
		t.Errorf("ParseFloatList: %v %v", got, err)
	}
	for _, bad := range []string{"0", "-2", "inf", "NaN", ""} {
		if _, err := ParseFloatList(bad); err == nil {
			t.Errorf("ParseFloatList(%q) accepted", bad)
		}
	}
	modes, err := ParseDiskModes("buffered,direct+sync")
	if err != nil || !reflect.DeepEqual(modes, []DiskMode{{}, {Direct: true, Sync: true}}) {
		t.Errorf("ParseDiskModes: %v %v", modes, err)
	}
	if _, err := ParseDiskModes("odirect"); err == nil {
		t.Error("ParseDiskModes accepted odirect")
	}
	if got, err := parsePercents("95,50,0,100"); err != nil || !reflect.DeepEqual(got, []int{95, 50, 0, 100}) {
		t.Errorf("parsePercents: %v %v", got, err)
	}
	for _, bad := range []string{"101", "-5", "5x", ""} {
		if _, err := parsePercents(bad); err == nil {
			t.Errorf("parsePercents(%q) accepted", bad)
		}
	}
}

func TestFormatSizeRoundTrips(t *testing.T) {
	for _, n := range []int64{1, 512, 1000, 1024, 1536, 5_000_000, 5 << 20, 1 << 30, 10 << 30, 123456} {
		s := FormatSize(n)
		back, err := ParseSize(s)
		if n == 123456 {
			if s != "120.6KiB" {
				t.Errorf("FormatSize(%d) = %q, want the rounded 120.6KiB", n, s)
			}
		} else if err != nil || back != n {
			t.Errorf("FormatSize(%d) = %q parses back to %d, %v", n, s, back, err)
		}
	}
}

func TestParseFlagsValidates(t *testing.T) {
	for _, tc := range []struct {
		mode string
		args []string
	}{
		{"peak", []string{"--sizes", "20GiB"}},
		{"peak", []string{"--concurrency", "0"}},
		{"peak", []string{"--duration", "0", "--count", "0"}},
		{"peak", []string{"--ops", "list"}},
		{"mixed", []string{"--preset", "nope"}},
		{"mixed", []string{"--multipliers", "1,-2"}},
		{"mixed", []string{"--upload-rate", "0", "--download-rate", "0"}},
		{"disk", []string{"--modes", "fast"}},
		{"kv", []string{"--distribution", "pareto"}},
		{"kv", []string{"--read-percent", "120"}},
		{"peak", []string{"extra"}},
	} {
		if _, err := parseFlags(tc.mode, tc.args, discard{}); err == nil {
			t.Errorf("%s %v: accepted", tc.mode, tc.args)
		}
	}
	o, err := parseFlags("mixed", []string{"--preset", "high", "--duration", "2s"}, discard{})
	if err != nil || o.params["preset"] != "high" || o.params["multipliers"] != "1,1.25,2,4,6,8" {
		t.Errorf("mixed defaults: %v %v", o, err)
	}
	if _, hasSecret := o.params["secret-key"]; hasSecret {
		t.Error("secret key recorded in the report parameters")
	}
}

type discard struct{}

func (discard) Write(b []byte) (int, error) { return len(b), nil }
