package bench

import (
	"hash/crc32"
	"testing"
)

// TestProcessCPUAdvances: burning CPU shows up in processCPU, and the
// meter turns it into a positive share.
func TestProcessCPUAdvances(t *testing.T) {
	meter := startCPUMeter()
	buf := make([]byte, 1<<20)
	var sink uint32
	for i := 0; i < 100000 && processCPU() <= meter.start; i++ {
		sink += crc32.ChecksumIEEE(buf)
	}
	used := processCPU() - meter.start
	if used <= 0 {
		t.Fatalf("no CPU time accounted after hashing (%d)", sink)
	}
	if p := meter.percent(used); p <= 0 {
		t.Errorf("percent over the CPU time itself: %v", p)
	}
	if p := meter.percent(0); p != 0 {
		t.Errorf("percent over no wall time: %v", p)
	}
}
