package bench

import (
	"time"

	"golang.org/x/sys/unix"
)

// cpuMeter measures the CPU time this process (the load generator, not the
// server) spends over an interval, so every cell can report whether the
// client itself was busy enough to be the bottleneck.
type cpuMeter struct{ start time.Duration }

func startCPUMeter() cpuMeter { return cpuMeter{start: processCPU()} }

// percent returns the CPU used since start over wall, in percent of one
// core (200 = two cores busy).
func (m cpuMeter) percent(wall time.Duration) float64 {
	if wall <= 0 {
		return 0
	}
	return 100 * float64(processCPU()-m.start) / float64(wall)
}

// processCPU is the user + system time of the whole process so far.
func processCPU() time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
