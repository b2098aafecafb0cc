package bench

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// SystemSample is one second of the local machine while a run was going:
// CPU use from /proc/stat, one block device's utilisation and await from
// /proc/diskstats (computed as iostat does), and a process's RSS.
type SystemSample struct {
	Second     int     `json:"second"`
	CPUPercent float64 `json:"cpu_percent"` // busy share of all CPUs, 0..100, steal not included
	IOWait     float64 `json:"iowait_percent"`
	// Steal is the share of CPU time a virtual machine's host ran
	// something else while this machine had work (the "steal" column of
	// /proc/stat): neither busy nor idle here, so a stall in which the
	// host takes the CPUs is not mistaken for this machine's own work.
	Steal       float64 `json:"steal_percent"`
	Device      string  `json:"device,omitempty"`
	DiskUtil    float64 `json:"disk_util_percent"` // time the device had I/O in flight
	DiskAwaitMS float64 `json:"disk_await_ms"`     // mean time per completed I/O
	DiskReadMB  float64 `json:"disk_read_mb"`
	DiskWriteMB float64 `json:"disk_write_mb"`
	RSSMB       float64 `json:"rss_mb,omitempty"`
}

// SystemSampler samples the machine once a second until Stop.
type SystemSampler struct {
	pid     int
	device  string
	stop    chan struct{}
	done    chan struct{}
	samples []SystemSample
}

// StartSystemSampler begins sampling. pid 0 skips RSS; device "" picks the
// device with the most I/O time during the first second.
func StartSystemSampler(pid int, device string) *SystemSampler {
	s := &SystemSampler{pid: pid, device: device, stop: make(chan struct{}), done: make(chan struct{})}
	go s.loop()
	return s
}

// Stop ends sampling and returns the samples.
func (s *SystemSampler) Stop() []SystemSample {
	close(s.stop)
	<-s.done
	return s.samples
}

func (s *SystemSampler) loop() {
	defer close(s.done)
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	prevCPU, _ := readCPU()
	prevDisk, _ := readDiskStats()
	prevTime := time.Now()
	for second := 0; ; second++ {
		select {
		case <-s.stop:
			return
		case now := <-tick.C:
			cpu, _ := readCPU()
			disk, _ := readDiskStats()
			sample := SystemSample{Second: second}
			sample.CPUPercent, sample.IOWait, sample.Steal = cpu.busySince(prevCPU)
			if s.device == "" {
				s.device = busiest(prevDisk, disk)
			}
			if cur, ok := disk[s.device]; ok {
				sample.Device = s.device
				cur.fill(prevDisk[s.device], now.Sub(prevTime), &sample)
			}
			if s.pid > 0 {
				sample.RSSMB = readRSSMB(s.pid)
			}
			s.samples = append(s.samples, sample)
			prevCPU, prevDisk, prevTime = cpu, disk, now
		}
	}
}

// cpuTimes are the aggregate "cpu" line of /proc/stat, in ticks.
type cpuTimes struct{ total, idle, iowait, steal uint64 }

func readCPU() (cpuTimes, error) {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return cpuTimes{}, err
	}
	return parseCPU(data)
}

func parseCPU(data []byte) (cpuTimes, error) {
	line, _, _ := bytes.Cut(data, []byte("\n"))
	fields := strings.Fields(string(line))
	if len(fields) < 6 || fields[0] != "cpu" {
		return cpuTimes{}, fmt.Errorf("/proc/stat: unexpected first line %q", line)
	}
	var t cpuTimes
	for i, f := range fields[1:] {
		v, _ := strconv.ParseUint(f, 10, 64)
		if i >= 8 { // guest times are already counted in user/nice
			break
		}
		t.total += v
		switch i {
		case 3:
			t.idle += v
		case 4:
			t.idle += v
			t.iowait = v
		case 7:
			t.steal = v
		}
	}
	return t, nil
}

// busySince returns the busy, iowait and steal percentages between prev
// and t. Busy is what this machine ran: neither idle, iowait nor steal.
func (t cpuTimes) busySince(prev cpuTimes) (busy, iowait, steal float64) {
	dt := float64(t.total - prev.total)
	if dt <= 0 {
		return 0, 0, 0
	}
	stolen := float64(t.steal - prev.steal)
	return 100 * (dt - float64(t.idle-prev.idle) - stolen) / dt, 100 * float64(t.iowait-prev.iowait) / dt, 100 * stolen / dt
}

// diskStat holds the /proc/diskstats counters we use.
type diskStat struct {
	reads, readSectors, readMS    uint64
	writes, writeSectors, writeMS uint64
	ioMS                          uint64 // time with I/O in flight
}

func readDiskStats() (map[string]diskStat, error) {
	f, err := os.Open("/proc/diskstats")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string]diskStat{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name, st, ok := parseDiskLine(sc.Text())
		if ok {
			out[name] = st
		}
	}
	return out, sc.Err()
}

func parseDiskLine(line string) (string, diskStat, bool) {
	f := strings.Fields(line)
	if len(f) < 14 {
		return "", diskStat{}, false
	}
	u := func(i int) uint64 { v, _ := strconv.ParseUint(f[i], 10, 64); return v }
	return f[2], diskStat{
		reads: u(3), readSectors: u(5), readMS: u(6),
		writes: u(7), writeSectors: u(9), writeMS: u(10),
		ioMS: u(12),
	}, true
}

// fill computes iostat's %util and await for the interval since prev.
func (cur diskStat) fill(prev diskStat, interval time.Duration, s *SystemSample) {
	ios := (cur.reads - prev.reads) + (cur.writes - prev.writes)
	if ios > 0 {
		s.DiskAwaitMS = float64((cur.readMS-prev.readMS)+(cur.writeMS-prev.writeMS)) / float64(ios)
	}
	if ms := float64(interval.Milliseconds()); ms > 0 {
		s.DiskUtil = min(100, 100*float64(cur.ioMS-prev.ioMS)/ms)
	}
	s.DiskReadMB = float64(cur.readSectors-prev.readSectors) * 512 / 1e6
	s.DiskWriteMB = float64(cur.writeSectors-prev.writeSectors) * 512 / 1e6
}

// busiest names the whole device (not a partition or loop device) with the
// most I/O time between two snapshots, or "" if none did any I/O.
func busiest(prev, cur map[string]diskStat) string {
	best, bestMS := "", uint64(0)
	for name, st := range cur {
		if strings.HasPrefix(name, "loop") || strings.HasPrefix(name, "ram") {
			continue
		}
		if _, err := os.Stat("/sys/block/" + name); err != nil {
			continue // a partition
		}
		if d := st.ioMS - prev[name].ioMS; d > bestMS {
			best, bestMS = name, d
		}
	}
	return best
}

func readRSSMB(pid int) float64 {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			f := strings.Fields(rest)
			if len(f) > 0 {
				kb, _ := strconv.ParseFloat(f[0], 64)
				return kb * 1024 / 1e6
			}
		}
	}
	return 0
}
