package partition

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"math/bits"
	"slices"

	"github.com/cespare/xxhash/v2"
)

// DefaultCount is the number of partitions of a new cluster: enough that
// shares of up to a few hundred groups stay even, few enough that the map
// (one owner name each) stays a few KiB.
const DefaultCount = 1024

// FirstGroup is the group a cluster starts with, and the one a
// one-group cluster's data belongs to when it upgrades.
const FirstGroup = "g1"

// Of returns the partition of bucket/key among count partitions (a power
// of two).
func Of(bucket, key string, count int) int {
	d := xxhash.New()
	_, _ = d.WriteString(bucket)
	_, _ = d.Write([]byte{0})
	_, _ = d.WriteString(key)
	return int(d.Sum64() & uint64(count-1))
}

// Member is one node of a group.
type Member struct {
	ID      string `json:"id"`
	Address string `json:"address"` // its cluster address
}

// Group is one replica group.
type Group struct {
	Name    string   `json:"name"`
	Members []Member `json:"members"`
	// Weight, if set (--weight), is the group's share relative to the
	// others'; otherwise Capacity (bytes its members can hold, the
	// smallest member's) is, and a group that reported neither weighs 1.
	Weight   float64 `json:"weight,omitempty"`
	Capacity int64   `json:"capacity,omitempty"`
	// Draining: an operator asked for the group to be emptied (b3 admin
	// cluster drain); its target is 0 partitions.
	Draining bool `json:"draining,omitempty"`
}

// share is the group's weight for Targets.
func (g *Group) share() float64 {
	switch {
	case g.Draining:
		return 0
	case g.Weight > 0:
		return g.Weight
	case g.Capacity > 0:
		return float64(g.Capacity)
	}
	return 1
}

// Move is a partition leaving one group for another.
type Move struct {
	Partition int    `json:"partition"`
	From      string `json:"from"`
	To        string `json:"to"`
	// Fenced: From refuses writes of the partition from this epoch on,
	// so that To's last catch-up misses none (package cluster).
	Fenced bool `json:"fenced,omitempty"`
}

// Map is the cluster map at one epoch.
type Map struct {
	Epoch  uint64   `json:"epoch"`
	Count  int      `json:"count"`
	Groups []Group  `json:"groups"` // by name
	Owners []string `json:"owners"` // the owning group of each partition
	Moves  []Move   `json:"moves,omitempty"`
	// Paused: no move is started (b3 admin cluster rebalance pause);
	// those under way finish.
	Paused bool `json:"paused,omitempty"`
}

// New returns the map of a cluster whose only group is first, owning
// every one of count partitions, at epoch 1.
func New(count int, first Group) *Map {
	m := &Map{Epoch: 1, Count: count, Groups: []Group{first}, Owners: make([]string, count)}
	for p := range m.Owners {
		m.Owners[p] = first.Name
	}
	return m
}

// Next returns a copy of m at the next epoch, for a change.
func (m *Map) Next() *Map {
	n := &Map{Epoch: m.Epoch + 1, Count: m.Count, Paused: m.Paused,
		Owners: slices.Clone(m.Owners), Moves: slices.Clone(m.Moves)}
	for _, g := range m.Groups {
		g.Members = slices.Clone(g.Members)
		n.Groups = append(n.Groups, g)
	}
	return n
}

// Partition returns the partition of bucket/key.
func (m *Map) Partition(bucket, key string) int { return Of(bucket, key, m.Count) }

// Owner returns the group owning bucket/key.
func (m *Map) Owner(bucket, key string) string { return m.Owners[m.Partition(bucket, key)] }

// Group returns the group named name, or nil.
func (m *Map) Group(name string) *Group {
	if m == nil {
		return nil
	}
	i, ok := slices.BinarySearchFunc(m.Groups, name, func(g Group, n string) int { return cmp.Compare(g.Name, n) })
	if !ok {
		return nil
	}
	return &m.Groups[i]
}

// PutGroup adds g, or replaces the group of its name.
func (m *Map) PutGroup(g Group) {
	i, ok := slices.BinarySearchFunc(m.Groups, g.Name, func(x Group, n string) int { return cmp.Compare(x.Name, n) })
	if ok {
		m.Groups[i] = g
		return
	}
	m.Groups = slices.Insert(m.Groups, i, g)
}

// RemoveGroup removes the group named name; it must own nothing.
func (m *Map) RemoveGroup(name string) error {
	if n := m.Counts()[name]; n > 0 {
		return fmt.Errorf("group %s still owns %d partitions", name, n)
	}
	for _, mv := range m.Moves {
		if mv.From == name || mv.To == name {
			return fmt.Errorf("group %s has a move under way (partition %d)", name, mv.Partition)
		}
	}
	m.Groups = slices.DeleteFunc(m.Groups, func(g Group) bool { return g.Name == name })
	return nil
}

// Counts returns how many partitions each group owns (every group of the
// map is present, 0 for none).
func (m *Map) Counts() map[string]int {
	c := make(map[string]int, len(m.Groups))
	for _, g := range m.Groups {
		c[g.Name] = 0
	}
	for _, o := range m.Owners {
		c[o]++
	}
	return c
}

// Moving returns the move of partition p, if one is under way.
func (m *Map) Moving(p int) (Move, bool) {
	for _, mv := range m.Moves {
		if mv.Partition == p {
			return mv, true
		}
	}
	return Move{}, false
}

// Targets returns how many partitions each group should own: Count split
// in proportion to the groups' shares, by largest remainder (ties to the
// group first by name), summing to Count. With no group of any share
// (all draining), every group keeps what it owns.
func (m *Map) Targets() map[string]int {
	var total float64
	for i := range m.Groups {
		total += m.Groups[i].share()
	}
	t := make(map[string]int, len(m.Groups))
	if total == 0 {
		return m.Counts()
	}
	type rest struct {
		name string
		frac float64
	}
	var rests []rest
	left := m.Count
	for i := range m.Groups {
		g := &m.Groups[i]
		exact := float64(m.Count) * g.share() / total
		n := int(exact)
		t[g.Name] = n
		left -= n
		if g.share() > 0 {
			rests = append(rests, rest{g.Name, exact - float64(n)})
		}
	}
	slices.SortStableFunc(rests, func(a, b rest) int { return cmp.Compare(b.frac, a.frac) })
	for i := 0; left > 0; i++ {
		t[rests[i%len(rests)].name]++
		left--
	}
	return t
}

// Plan returns the moves that bring every group to its target, given the
// moves already under way (counted as done): partitions leave the groups
// over their target, highest partition first, for the groups most under
// theirs. It is a function of m alone.
func (m *Map) Plan() []Move {
	target := m.Targets()
	have := m.Counts()
	moving := make(map[int]bool, len(m.Moves))
	for _, mv := range m.Moves {
		have[mv.From]--
		have[mv.To]++
		moving[mv.Partition] = true
	}
	var out []Move
	for p := m.Count - 1; p >= 0; p-- {
		from := m.Owners[p]
		if moving[p] || have[from] <= target[from] {
			continue
		}
		to, need := "", 0
		for _, g := range m.Groups { // by name: ties go to the first
			if d := target[g.Name] - have[g.Name]; d > need {
				to, need = g.Name, d
			}
		}
		if to == "" {
			break
		}
		out = append(out, Move{Partition: p, From: from, To: to})
		have[from]--
		have[to]++
	}
	return out
}

// Balanced reports whether no move is under way or needed.
func (m *Map) Balanced() bool { return len(m.Moves) == 0 && len(m.Plan()) == 0 }

// Validate checks m's invariants.
func (m *Map) Validate() error {
	if m.Count <= 0 || bits.OnesCount(uint(m.Count)) != 1 {
		return fmt.Errorf("partition count %d is not a power of two", m.Count)
	}
	if len(m.Owners) != m.Count {
		return fmt.Errorf("%d owners for %d partitions", len(m.Owners), m.Count)
	}
	if len(m.Groups) == 0 {
		return errors.New("no group")
	}
	for i := range m.Groups {
		if m.Groups[i].Name == "" {
			return errors.New("a group without a name")
		}
		if i > 0 && m.Groups[i-1].Name >= m.Groups[i].Name {
			return errors.New("groups out of order or repeated")
		}
	}
	for p, o := range m.Owners {
		if m.Group(o) == nil {
			return fmt.Errorf("partition %d is owned by %q, no group of the map", p, o)
		}
	}
	seen := map[int]bool{}
	for _, mv := range m.Moves {
		switch {
		case mv.Partition < 0 || mv.Partition >= m.Count:
			return fmt.Errorf("move of partition %d out of range", mv.Partition)
		case seen[mv.Partition]:
			return fmt.Errorf("two moves of partition %d", mv.Partition)
		case m.Owners[mv.Partition] != mv.From:
			return fmt.Errorf("move of partition %d from %s, owned by %s", mv.Partition, mv.From, m.Owners[mv.Partition])
		case m.Group(mv.To) == nil || mv.To == mv.From:
			return fmt.Errorf("move of partition %d to %q", mv.Partition, mv.To)
		}
		seen[mv.Partition] = true
	}
	return nil
}

// Encode returns m as JSON.
func (m *Map) Encode() []byte {
	b, err := json.Marshal(m)
	if err != nil {
		panic(err) // plain structs
	}
	return b
}

// Decode reads a map Encode wrote, and validates it.
func Decode(b []byte) (*Map, error) {
	var m Map
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("cluster map: %w", err)
	}
	if err := m.Validate(); err != nil {
		return nil, fmt.Errorf("cluster map: %w", err)
	}
	return &m, nil
}
