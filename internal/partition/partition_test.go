package partition

import (
	"fmt"
	"math"
	"testing"
)

// The partition of a key is part of the on-disk state of a cluster (which
// group holds it): it must never change between releases.
func TestOfIsStable(t *testing.T) {
	for _, tc := range []struct {
		bucket, key string
		count, want int
	}{
		// Pinned: xxhash64("photos\x00a.jpg") & 1023, and so on.
		{"photos", "a.jpg", 1024, 815},
		{"cams", "cam-1/seg-000001.ts", 1024, 105},
		{"b", "", 1, 0},
	} {
		if got := Of(tc.bucket, tc.key, tc.count); got != tc.want {
			t.Errorf("Of(%q, %q, %d) = %d, want %d", tc.bucket, tc.key, tc.count, got, tc.want)
		}
	}
	// The bucket and the key are separated: "ab"/"c" and "a"/"bc" differ.
	if Of("ab", "c", 1<<30) == Of("a", "bc", 1<<30) {
		t.Error("bucket and key run together")
	}
	// Spread: 64 Ki keys over 1024 partitions, none far from the mean.
	counts := make([]int, 1024)
	for i := range 1 << 16 {
		counts[Of("cams", fmt.Sprintf("cam-%d/seg-%06d.ts", i%37, i), 1024)]++
	}
	for p, c := range counts {
		if c < 20 || c > 120 { // mean 64
			t.Fatalf("partition %d holds %d of 65536 keys", p, c)
		}
	}
}

func groups(spec ...any) []Group {
	var gs []Group
	for i := 0; i < len(spec); i += 2 {
		gs = append(gs, Group{Name: spec[i].(string), Weight: spec[i+1].(float64)})
	}
	return gs
}

func TestTargets(t *testing.T) {
	for _, tc := range []struct {
		name   string
		count  int
		groups []Group
		want   map[string]int
	}{
		{"one", 1024, groups("g1", 0.0), map[string]int{"g1": 1024}},
		{"two equal", 1024, groups("g1", 1.0, "g2", 1.0), map[string]int{"g1": 512, "g2": 512}},
		{"three equal: remainder to the first", 1024, groups("g1", 1.0, "g2", 1.0, "g3", 1.0), map[string]int{"g1": 342, "g2": 341, "g3": 341}},
		{"weighted", 1024, groups("g1", 1.0, "g2", 3.0), map[string]int{"g1": 256, "g2": 768}},
		{"capacity", 8, []Group{{Name: "g1", Capacity: 1 << 40}, {Name: "g2", Capacity: 3 << 40}}, map[string]int{"g1": 2, "g2": 6}},
		{"draining", 16, []Group{{Name: "g1"}, {Name: "g2", Draining: true}, {Name: "g3"}}, map[string]int{"g1": 8, "g2": 0, "g3": 8}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := New(tc.count, tc.groups[0])
			for _, g := range tc.groups[1:] {
				m.PutGroup(g)
			}
			got := m.Targets()
			sum := 0
			for g, n := range tc.want {
				if got[g] != n {
					t.Errorf("target of %s = %d, want %d", g, got[g], n)
				}
				sum += got[g]
			}
			if sum != tc.count {
				t.Errorf("targets sum to %d, want %d", sum, tc.count)
			}
		})
	}
}

// apply makes every planned move, as the cluster does when moves finish.
func apply(m *Map, moves []Move) *Map {
	n := m.Next()
	for _, mv := range moves {
		n.Owners[mv.Partition] = mv.To
	}
	return n
}

func TestPlanReachesTargetsWithFewestMoves(t *testing.T) {
	m := New(1024, Group{Name: "g1"})
	steps := []struct {
		change    func(*Map)
		wantMoves int
	}{
		{func(m *Map) { m.PutGroup(Group{Name: "g2"}) }, 512},
		{func(m *Map) { m.PutGroup(Group{Name: "g3"}) }, 341},
		{func(m *Map) { m.Group("g2").Draining = true }, 341},
		{func(m *Map) { m.Group("g2").Draining = false; m.Group("g3").Weight = 3 }, 0},
	}
	for i, s := range steps {
		m = m.Next()
		s.change(m)
		plan := m.Plan()
		if s.wantMoves > 0 && len(plan) != s.wantMoves {
			t.Fatalf("step %d: %d moves, want %d", i, len(plan), s.wantMoves)
		}
		seen := map[int]bool{}
		for _, mv := range plan {
			if seen[mv.Partition] || m.Owners[mv.Partition] != mv.From || mv.From == mv.To {
				t.Fatalf("step %d: bad move %+v", i, mv)
			}
			seen[mv.Partition] = true
		}
		m = apply(m, plan)
		if err := m.Validate(); err != nil {
			t.Fatal(err)
		}
		if !m.Balanced() {
			t.Fatalf("step %d: not balanced after the plan: %v, targets %v", i, m.Counts(), m.Targets())
		}
		if c := m.Counts(); m.Group("g2") != nil && m.Group("g2").Draining && c["g2"] != 0 {
			t.Fatalf("step %d: draining g2 still owns %d", i, c["g2"])
		}
	}
	// Weighted 1:0:3 after the last step (g2 no longer drains: 1:1:3).
	want := map[string]float64{"g1": 1024.0 / 5, "g2": 1024.0 / 5, "g3": 3 * 1024.0 / 5}
	for g, n := range m.Counts() {
		if math.Abs(float64(n)-want[g]) > 1 {
			t.Errorf("%s owns %d, want about %.0f", g, n, want[g])
		}
	}
}

// Moves under way count as done: planning again while they run plans
// nothing more.
func TestPlanCountsMovesUnderWay(t *testing.T) {
	m := New(64, Group{Name: "g1"}).Next()
	m.PutGroup(Group{Name: "g2"})
	plan := m.Plan()
	m.Moves = plan[:10]
	rest := m.Plan()
	if len(rest) != len(plan)-10 {
		t.Fatalf("with 10 of %d moves under way, %d more planned", len(plan), len(rest))
	}
	for _, mv := range rest {
		if _, ok := m.Moving(mv.Partition); ok {
			t.Fatalf("partition %d planned twice", mv.Partition)
		}
	}
}

func TestValidate(t *testing.T) {
	good := func() *Map { m := New(8, Group{Name: "g1"}); m.PutGroup(Group{Name: "g2"}); return m }
	for _, tc := range []struct {
		name    string
		breakIt func(*Map)
	}{
		{"count not a power of two", func(m *Map) { m.Count = 6; m.Owners = m.Owners[:6] }},
		{"owners short", func(m *Map) { m.Owners = m.Owners[:7] }},
		{"unknown owner", func(m *Map) { m.Owners[3] = "g9" }},
		{"groups out of order", func(m *Map) { m.Groups[0], m.Groups[1] = m.Groups[1], m.Groups[0] }},
		{"move from a non-owner", func(m *Map) { m.Moves = []Move{{Partition: 1, From: "g2", To: "g1"}} }},
		{"move twice", func(m *Map) {
			m.Moves = []Move{{Partition: 1, From: "g1", To: "g2"}, {Partition: 1, From: "g1", To: "g2"}}
		}},
		{"move to nowhere", func(m *Map) { m.Moves = []Move{{Partition: 1, From: "g1", To: "g7"}} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := good()
			if err := m.Validate(); err != nil {
				t.Fatalf("the good map: %v", err)
			}
			tc.breakIt(m)
			if err := m.Validate(); err == nil {
				t.Fatal("Validate accepted it")
			}
			if _, err := Decode(m.Encode()); err == nil {
				t.Fatal("Decode accepted it")
			}
		})
	}
	m := good()
	back, err := Decode(m.Encode())
	if err != nil || back.Epoch != m.Epoch || back.Owner("b", "k") != m.Owner("b", "k") {
		t.Fatalf("round trip: %v", err)
	}
}

func TestRemoveGroup(t *testing.T) {
	m := New(4, Group{Name: "g1"})
	m.PutGroup(Group{Name: "g2"})
	m.Owners[0] = "g2"
	if err := m.RemoveGroup("g2"); err == nil {
		t.Fatal("removed a group that owns a partition")
	}
	m.Owners[0] = "g1"
	if err := m.RemoveGroup("g2"); err != nil || m.Group("g2") != nil {
		t.Fatalf("remove: %v", err)
	}
}
