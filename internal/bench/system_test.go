package bench

import (
	"math"
	"testing"
)

// TestBusySinceSeparatesSteal: between two /proc/stat snapshots, time the
// host took from this virtual machine (steal) is reported on its own, not
// as this machine's busy CPU — a stall where the host runs something else
// must not read as the server using every core.
func TestBusySinceSeparatesSteal(t *testing.T) {
	//      user nice system idle iowait irq softirq steal guest guest_nice
	before := "cpu  1000 0 500 8000 100 0 50 200 0 0\ncpu0 1 2 3 4 5 6 7 8 9 10\n"
	cases := []struct {
		name                 string
		after                string
		busy, iowait, stolen float64
	}{
		{"no steal", "cpu  1350 0 600 8400 200 0 100 200 0 0\n", 50, 10, 0},
		{"host took most", "cpu  1100 0 550 8100 150 0 50 900 0 0\n", 15, 5, 70},
		{"all stolen", "cpu  1000 0 500 8000 100 0 50 1200 0 0\n", 0, 0, 100},
		{"guest time not counted twice", "cpu  1350 0 600 8400 200 0 100 200 300 0\n", 50, 10, 0},
		{"no time passed", before, 0, 0, 0},
	}
	prev, err := parseCPU([]byte(before))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cur, err := parseCPU([]byte(c.after))
			if err != nil {
				t.Fatal(err)
			}
			busy, iowait, stolen := cur.busySince(prev)
			for _, v := range []struct {
				what      string
				got, want float64
			}{{"busy", busy, c.busy}, {"iowait", iowait, c.iowait}, {"steal", stolen, c.stolen}} {
				if math.Abs(v.got-v.want) > 1e-9 {
					t.Errorf("%s = %v%%, want %v%%", v.what, v.got, v.want)
				}
			}
		})
	}
}

// TestParseCPURefusesOtherLines: a first line that is not the aggregate
// cpu line is an error, not zeros.
func TestParseCPURefusesOtherLines(t *testing.T) {
	for _, in := range []string{"", "intr 1 2 3 4 5 6", "cpu 1 2"} {
		if _, err := parseCPU([]byte(in)); err == nil {
			t.Errorf("parseCPU(%q) accepted", in)
		}
	}
}
