//go:build tenmillion

package meta

// The 10-million-object scale check. Not built by default (CI never runs
// it); run on a real disk with:
//
//	go test -tags tenmillion -run TestTenMillion -timeout 60m -v ./internal/meta/
//
// B3_META_10M_DIR picks the directory (default /tmp/b3-meta-10m, removed
// afterwards unless B3_META_10M_KEEP=1); B3_META_10M_N changes the count.
// The parent process loads the records and closes the store; a fresh child
// process then opens it, so that its resident memory is that of an opened
// store, not of the load.

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

type tenMillionResult struct {
	OpenMillis           float64
	RSSBeforeOpenKiB     int
	RSSAfterOpenKiB      int
	RSSAfterListKiB      int
	ListMedianMillis     float64
	ListMaxMillis        float64
	ListKeys             []int
	GetMedianMicros      float64
	GetMaxMicros         float64
	DiskBytesAfterReopen int64
	L0SublevelsAtOpen    int32
	CompactionDebtMiB    uint64
}

func TestMain(m *testing.M) {
	if dir := os.Getenv("B3_META_10M_CHILD"); dir != "" {
		n, _ := strconv.Atoi(os.Getenv("B3_META_10M_N"))
		res, err := tenMillionChild(dir, n)
		if err != nil {
			fmt.Fprintln(os.Stderr, "child:", err)
			os.Exit(1)
		}
		out, _ := json.Marshal(res)
		fmt.Printf("RESULT %s\n", out)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func tenMillionCount() int {
	if n, err := strconv.Atoi(os.Getenv("B3_META_10M_N")); err == nil && n > 0 {
		return n
	}
	return 10_000_000
}

func TestTenMillion(t *testing.T) {
	n := tenMillionCount()
	dir := os.Getenv("B3_META_10M_DIR")
	if dir == "" {
		dir = "/tmp/b3-meta-10m"
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if os.Getenv("B3_META_10M_KEEP") != "1" {
		defer os.RemoveAll(dir)
	}

	db, err := Open(Options{Dir: dir, Logger: quietLogger})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	const batchSize = 50_000
	var valueBytes int64
	for lo := 0; lo < n; lo += batchSize {
		b := db.NewBatch()
		for i := lo; i < min(n, lo+batchSize); i++ {
			o := benchObject("bench", i)
			valueBytes += int64(len(encodeObject(o)))
			b.PutObject(o)
		}
		if err := b.Commit(); err != nil {
			t.Fatal(err)
		}
		b.Close()
		if (lo+batchSize)%1_000_000 == 0 {
			t.Logf("loaded %d objects in %v", lo+batchSize, time.Since(start).Round(time.Second))
		}
	}
	loadTime := time.Since(start)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	t.Logf("load: %d objects, mean value %d bytes, %v (%.0f objects/s)",
		n, valueBytes/int64(n), loadTime.Round(time.Second), float64(n)/loadTime.Seconds())

	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "B3_META_10M_CHILD="+dir, "B3_META_10M_N="+strconv.Itoa(n))
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	var res tenMillionResult
	line := ""
	for l := range strings.SplitSeq(string(out), "\n") {
		if rest, ok := strings.CutPrefix(l, "RESULT "); ok {
			line = rest
		}
	}
	if err := json.Unmarshal([]byte(line), &res); err != nil {
		t.Fatalf("child output %q: %v", out, err)
	}
	for _, k := range res.ListKeys {
		if k != 1000 {
			t.Errorf("a listing page held %d keys, want 1000", k)
		}
	}
	t.Logf("open: %.1f ms; RSS before open %d KiB, after open %d KiB, after listing %d KiB",
		res.OpenMillis, res.RSSBeforeOpenKiB, res.RSSAfterOpenKiB, res.RSSAfterListKiB)
	t.Logf("list 1000-key page at 20 random positions: median %.2f ms, max %.2f ms",
		res.ListMedianMillis, res.ListMaxMillis)
	t.Logf("GetObject at 1000 random keys: median %.1f µs, max %.1f µs", res.GetMedianMicros, res.GetMaxMicros)
	t.Logf("disk: %d MiB; at open: %d L0 sublevels, compaction debt %d MiB",
		res.DiskBytesAfterReopen>>20, res.L0SublevelsAtOpen, res.CompactionDebtMiB)
}

func tenMillionChild(dir string, n int) (*tenMillionResult, error) {
	res := &tenMillionResult{RSSBeforeOpenKiB: vmRSS()}
	start := time.Now()
	db, err := Open(Options{Dir: dir, Logger: quietLogger})
	if err != nil {
		return nil, err
	}
	defer db.Close()
	res.OpenMillis = float64(time.Since(start).Microseconds()) / 1000
	res.RSSAfterOpenKiB = vmRSS()
	m := db.pdb.Metrics()
	res.L0SublevelsAtOpen = m.Levels[0].Sublevels
	res.CompactionDebtMiB = m.Compact.EstimatedDebt >> 20

	rng := rand.New(rand.NewPCG(10, 10))
	var lists []float64
	for range 20 {
		start := time.Now()
		page, err := db.ListObjects("bench", ListOptions{StartAfter: benchKey(rng.IntN(n)), MaxKeys: 1000})
		if err != nil {
			return nil, err
		}
		lists = append(lists, float64(time.Since(start).Microseconds())/1000)
		if page.IsTruncated { // a position near the end may give a short page
			res.ListKeys = append(res.ListKeys, len(page.Objects))
		}
	}
	res.RSSAfterListKiB = vmRSS()
	res.ListMedianMillis, res.ListMaxMillis = medianMax(lists)

	var gets []float64
	for range 1000 {
		start := time.Now()
		if _, err := db.GetObject("bench", benchKey(rng.IntN(n))); err != nil {
			return nil, err
		}
		gets = append(gets, float64(time.Since(start).Nanoseconds())/1000)
	}
	res.GetMedianMicros, res.GetMaxMicros = medianMax(gets)
	res.DiskBytesAfterReopen = int64(db.pdb.Metrics().DiskSpaceUsage())
	return res, nil
}

func medianMax(xs []float64) (median, maximum float64) {
	slices.Sort(xs)
	return xs[len(xs)/2], xs[len(xs)-1]
}

// vmRSS reads this process's resident set size in KiB.
func vmRSS() int {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return -1
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kib, _ := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")))
			return kib
		}
	}
	return -1
}
