package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/b3-storage/b3/internal/partition"
	"github.com/b3-storage/b3/internal/server"
)

// The cluster map (package partition): which groups there are, their
// members, and which group owns each partition of the key space.
//
// The first group (partition.FirstGroup) keeps it in its Raft log: each
// change is an opMap command carrying the whole next map (the leader
// decides it; the command carries the outcome), applied by every member
// of g1 into DATA/cluster-map.json and its snapshots. Every other node
// and router follows it (follow.go): it asks g1's members for the map
// newer than its own, holding the request until there is one, and keeps
// the latest in the same file, so that a restart routes at once.
//
// Invariant: a map replaces the one held only if its epoch is higher
// (mapState.offer); within g1 the log orders them, each epoch exactly
// one more than the last.
const MapFile = "cluster-map.json"

// mapState is the map this node (or router) knows.
type mapState struct {
	path string // "" for a router without a data directory

	mu      sync.Mutex
	cur     *partition.Map
	changed chan struct{} // closed (and replaced) when cur changes
}

func openMapState(root string) (*mapState, error) {
	s := &mapState{changed: make(chan struct{})}
	if root == "" {
		return s, nil
	}
	s.path = filepath.Join(root, MapFile)
	data, err := os.ReadFile(s.path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return s, nil
	case err != nil:
		return nil, err
	}
	m, err := partition.Decode(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.path, err)
	}
	s.cur = m
	return s, nil
}

// load returns the current map (nil: none yet).
func (s *mapState) load() *partition.Map {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cur
}

// watch returns the current map and a channel closed when it changes.
func (s *mapState) watch() (*partition.Map, <-chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cur, s.changed
}

// offer makes m the map if it is newer than the one held; it reports
// whether it did.
func (s *mapState) offer(m *partition.Map) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cur != nil && m.Epoch <= s.cur.Epoch {
		return false, nil
	}
	return true, s.setLocked(m)
}

// replace makes m the map whatever its epoch (a snapshot's).
func (s *mapState) replace(m *partition.Map) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.setLocked(m)
}

func (s *mapState) setLocked(m *partition.Map) error {
	if s.path != "" {
		if m == nil {
			if err := os.Remove(s.path); err != nil && !errors.Is(err, os.ErrNotExist) {
				return err
			}
		} else if err := server.WriteFileSync(s.path, append(m.Encode(), '\n'), 0o600); err != nil {
			return fmt.Errorf("save the cluster map: %w", err)
		}
	}
	s.cur = m
	close(s.changed)
	s.changed = make(chan struct{})
	return nil
}

// wait returns the map once its epoch is above after, or the current one
// when ctx ends first.
func (s *mapState) wait(ctx context.Context, after uint64) *partition.Map {
	for {
		m, changed := s.watch()
		if m != nil && m.Epoch > after {
			return m
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return m
		}
	}
}

// applyMap runs an opMap command. In the first group the map it carries
// follows the one held by exactly one epoch (the first map: any), or the
// command changes nothing and says why. In another group it is a map
// the group's leader saw when it confirmed a fence (move.go): every
// member holds at least that map once it applied the command, so that a
// member that leads later refuses the fenced writes too.
func (f *fsm) applyMap(c *command) error {
	if c.Map == nil {
		return errors.New("cluster: map command without a map")
	}
	if err := c.Map.Validate(); err != nil {
		return err
	}
	if !f.firstGroup {
		_, err := f.maps.offer(c.Map)
		return err
	}
	cur := f.maps.load()
	if cur != nil && c.Map.Epoch != cur.Epoch+1 {
		return fmt.Errorf("cluster: map epoch %d does not follow %d", c.Map.Epoch, cur.Epoch)
	}
	return f.maps.replace(c.Map)
}
