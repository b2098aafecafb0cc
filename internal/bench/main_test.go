package bench

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestMainDiskWritesEverything(t *testing.T) {
	dir, out := t.TempDir(), t.TempDir()
	var stdout, stderr bytes.Buffer
	code := Main([]string{"disk", "--dir", dir, "--out", out, "--sizes", "4KiB,64KiB",
		"--modes", "buffered,direct+sync", "--bytes", "128KiB", "--duration", "1m"}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if !strings.Contains(stdout.String(), "p99.9 ms") || strings.Count(stdout.String(), "write") != 4 {
		t.Errorf("table:\n%s", stdout.String())
	}
	files, _ := filepath.Glob(filepath.Join(out, "disk-*"))
	var jsonPath string
	kinds := map[string]int{}
	for _, f := range files {
		kinds[filepath.Ext(f)]++
		if filepath.Ext(f) == ".json" {
			jsonPath = f
		}
	}
	if kinds[".json"] != 1 || kinds[".csv"] != 1 || kinds[".svg"] != 2 {
		t.Fatalf("outputs %v", files)
	}
	rep, err := ReadReport(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Kind != "disk" || len(rep.Cells) != 4 || rep.Params["bytes"] != "128KiB" || rep.Finished.Before(rep.Started) {
		t.Errorf("report: kind %s, %d cells, params %v", rep.Kind, len(rep.Cells), rep.Params)
	}

	// compare: the report against itself, all ratios 1.
	stdout.Reset()
	if code := Main([]string{"compare", jsonPath, jsonPath}, &stdout, &stderr); code != 0 {
		t.Fatalf("compare exit %d: %s", code, stderr.String())
	}
	if !strings.Contains(stdout.String(), "#2 = ") || strings.Count(stdout.String(), "1.00") < 4 {
		t.Errorf("compare:\n%s", stdout.String())
	}
}

func TestMainUsageErrors(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.json")
	if err := os.WriteFile(bad, []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		code int
	}{
		{nil, 2},
		{[]string{"nope"}, 2},
		{[]string{"peak", "--sizes", "11GiB"}, 2},
		{[]string{"disk", "--dir", "/nonexistent/dir", "--out", t.TempDir()}, 1},
		{[]string{"compare", "one.json"}, 2},
		{[]string{"compare", bad, bad}, 1},
		{[]string{"help"}, 0},
		{[]string{"kv", "-h"}, 0},
		{[]string{"mixed", "--at-hold", "3=true"}, 2},
		{[]string{"mixed", "--at-hold", "2"}, 2},
		{[]string{"mixed", "--at-hold", "2="}, 2},
		{[]string{"hls", "--bitrate", "fast"}, 2},
		{[]string{"hls", "--viewers", "-3"}, 2},
		{[]string{"hls", "--cameras", "x"}, 2},
		{[]string{"hls", "--segment", "0s"}, 2},
		{[]string{"hls", "--client", "curl"}, 2},
		{[]string{"hls", "--client", "sdk", "--chunked"}, 2},
		{[]string{"hls", "--sign-payload"}, 2},
		{[]string{"hls", "-h"}, 0},
	} {
		var stdout, stderr bytes.Buffer
		if code := Main(tc.args, &stdout, &stderr); code != tc.code {
			t.Errorf("%v: exit %d, want %d (%s)", tc.args, code, tc.code, stderr.String())
		}
	}
}
