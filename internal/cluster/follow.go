package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/raft"

	"github.com/b3-storage/b3/internal/admin"
	"github.com/b3-storage/b3/internal/partition"
)

// Groups meet through the first group.
//
// The first group's leader creates the map when it first leads (a
// one-group cluster's data is the first group's: its first map gives it
// every partition) and keeps the group's own members in it. Another
// group's leader registers its group, with its members and weight, by
// asking a seed (--cluster-seeds) to add it (POST /_b3/v1/cluster/groups,
// which the first group's leader turns into a map change); every node of
// another group, and every router, follows the map by asking the first
// group's members for a newer one (GET /_b3/v1/cluster/map?after=E, held
// until there is one or mapWait passes).

// sweepEvery is how often a group's leader looks for records of
// partitions moved away (move.go).
const sweepEvery = 10 * time.Second

// mapWait is how long a map request waits for a newer map.
const mapWait = 20 * time.Second

var groupName = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,30}$`)

// checkGroupConfig checks --group, --cluster-seeds and --weight.
func checkGroupConfig(cfg Config) error {
	if !groupName.MatchString(cfg.Group) {
		return fmt.Errorf("--group %q: a group name is 1-31 lowercase letters, digits and dashes", cfg.Group)
	}
	if cfg.Group != partition.FirstGroup && len(cfg.Seeds) == 0 {
		return fmt.Errorf("--group %s needs --cluster-seeds: the cluster address of a node already in the cluster (of group %s, or of any group that joined it)", cfg.Group, partition.FirstGroup)
	}
	if cfg.Weight < 0 {
		return fmt.Errorf("--weight %v: want 0 (the disk's size) or more", cfg.Weight)
	}
	return nil
}

// firstGroup reports whether this node is of the group that keeps the map.
func (n *Node) firstGroup() bool { return n.cfg.Group == partition.FirstGroup }

// ownGroup is this node's group as the map should hold it.
func (n *Node) ownGroup() partition.Group {
	g := partition.Group{Name: n.cfg.Group, Weight: n.cfg.Weight, Capacity: diskSize(n.cfg.Root)}
	for _, p := range n.members() {
		g.Members = append(g.Members, partition.Member{ID: p.ID, Address: p.Address})
	}
	if old := n.cmap.load(); old != nil {
		if og := old.Group(n.cfg.Group); og != nil {
			g.Draining = og.Draining
			if og.Capacity > 0 {
				g.Capacity = og.Capacity // a group's capacity is what it joined with
			}
		}
	}
	return g
}

// sameGroup reports whether the map's record of a group is g.
func sameGroup(m *partition.Map, g partition.Group) bool {
	have := m.Group(g.Name)
	return have != nil && slices.Equal(have.Members, g.Members) && have.Weight == g.Weight
}

// diskSize is the size of the file system holding dir (0: unknown).
func diskSize(dir string) int64 {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0
	}
	return int64(st.Blocks) * int64(st.Bsize)
}

// keepMap runs on every node: the first group's leader creates and keeps
// the map; another group's leader registers its group; every node of
// another group follows the map.
func (n *Node) keepMap() {
	defer n.wg.Done()
	if !n.firstGroup() {
		go n.followMap(n.closing, n.cmap, n.mapSources)
	}
	t := time.NewTicker(time.Second)
	defer t.Stop()
	var lastSweep time.Time // the receiving goroutine's, one at a time
	for {
		select {
		case <-n.closing.Done():
			return
		case <-t.C:
		}
		if !n.leading() {
			continue
		}
		var err error
		if n.receiving.CompareAndSwap(false, true) {
			go func() {
				defer n.receiving.Store(false)
				n.runMoves(n.closing)
				if time.Since(lastSweep) > sweepEvery {
					if err := n.sweepForeign(); err != nil {
						n.log.Warn("remove the records of partitions moved away", "err", err)
					}
					lastSweep = time.Now()
				}
			}()
		}
		if n.firstGroup() {
			err = n.keepFirstGroup()
			if err == nil {
				err = n.planMoves()
			}
			if n.clearing.CompareAndSwap(false, true) {
				go func() { // may wait for the groups (a catalogue change)
					defer n.clearing.Store(false)
					if err := n.backend.clearStaleMarks(); err != nil {
						n.log.Warn("clear a bucket's deletion mark", "err", err)
					}
				}()
			}
		} else {
			err = n.register()
			if n.cmap.load().Group(n.cfg.Group) != nil && n.following.CompareAndSwap(false, true) {
				go func() {
					defer n.following.Store(false)
					n.followCatalog(n.closing)
				}()
			}
		}
		if err != nil {
			n.log.Warn("cluster map", "err", err)
		}
	}
}

// keepFirstGroup creates the map, or updates the first group's members
// in it; run by the first group's leader.
func (n *Node) keepFirstGroup() error {
	m := n.cmap.load()
	own := n.ownGroup()
	switch {
	case m == nil:
		m = partition.New(partition.DefaultCount, own)
	case sameGroup(m, own):
		return nil
	default:
		m = m.Next()
		m.PutGroup(own)
	}
	_, err := n.propose(&command{Op: opMap, Map: m})
	return err
}

// changeMap has the first group's leader apply change to the map: here if
// this node leads it, else on the leader this node knows.
func (n *Node) changeMap(ctx context.Context, change func(*partition.Map) error) (*partition.Map, error) {
	if !n.firstGroup() {
		return nil, errors.New("the cluster map is changed by the first group")
	}
	if !n.leading() {
		return nil, errNotLeader
	}
	n.mapMu.Lock()
	defer n.mapMu.Unlock()
	cur := n.cmap.load()
	if cur == nil {
		return nil, errors.New("the cluster has no map yet; retry")
	}
	next := cur.Next()
	if err := change(next); err != nil {
		return nil, err
	}
	if err := next.Validate(); err != nil {
		return nil, err
	}
	if _, err := n.propose(&command{Op: opMap, Map: next}); err != nil {
		return nil, err
	}
	return next, nil
}

// register adds or updates this node's group in the map; run by the
// group's leader.
func (n *Node) register() error {
	own := n.ownGroup()
	if m := n.cmap.load(); m != nil && sameGroup(m, own) {
		return nil
	}
	ctx, cancel := context.WithTimeout(n.closing, 10*time.Second)
	defer cancel()
	var raw json.RawMessage
	err := n.mesh().postFirst(ctx, n.mapSources(), "/_b3/v1/cluster/groups", own, &raw)
	if err != nil {
		return fmt.Errorf("register group %s: %w", own.Name, err)
	}
	m, err := partition.Decode(raw)
	if err != nil {
		return err
	}
	if _, err := n.cmap.offer(m); err != nil {
		return err
	}
	n.log.Info("group registered in the cluster map", "group", own.Name, "epoch", m.Epoch)
	return nil
}

// mapSources are the cluster addresses to ask for the map: the first
// group's members the map names, then the seeds.
func (n *Node) mapSources() []string { return mapSources(n.cmap.load(), n.cfg.Seeds) }

func mapSources(m *partition.Map, seeds []string) []string {
	var out []string
	if m != nil {
		if g := m.Group(partition.FirstGroup); g != nil {
			for _, mb := range g.Members {
				out = append(out, mb.Address)
			}
		}
	}
	for _, s := range seeds {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// handleMap answers GET /_b3/v1/cluster/map?after=E: the map once its
// epoch is above E (held up to mapWait), 204 if there is none by then.
func (n *Node) handleMap(w http.ResponseWriter, r *http.Request) {
	if r.URL.Query().Get("current") != "" {
		n.serveCurrentMap(w)
		return
	}
	serveMap(w, r, n.cmap)
}

// serveCurrentMap answers GET /_b3/v1/cluster/map?current=1 on the first
// group's leader: the map as of now, once it has confirmed that it still
// leads (every map change committed before is applied here).
func (n *Node) serveCurrentMap(w http.ResponseWriter) {
	if !n.firstGroup() || !n.leading() || n.raft.VerifyLeader().Error() != nil {
		w.Header().Set(notLeaderHeader, "1")
		admin.WriteJSON(w, http.StatusServiceUnavailable, map[string]string{"error": "ask the leader of group " + partition.FirstGroup})
		return
	}
	m := n.cmap.load()
	if m == nil {
		admin.WriteJSON(w, http.StatusServiceUnavailable, map[string]string{"error": "no map yet"})
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(m.Encode())
}

// currentMap returns the map as of now, from the first group's leader
// (this node's own when it is that leader), and makes it this node's.
// The decisions that must not be taken on an old map take it: removing
// records a move left (sweepForeign) and receiving partitions.
func (n *Node) currentMap(ctx context.Context) (*partition.Map, error) {
	if n.firstGroup() {
		if !n.leading() || n.raft.VerifyLeader().Error() != nil {
			return nil, errNotLeader
		}
		return n.cmap.load(), nil
	}
	ms := n.mesh()
	addr, err := n.firstGroupLeader(ctx)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var raw json.RawMessage
	if err := getJSON(ctx, ms.http, addr, "/_b3/v1/cluster/map?current=1", &raw); err != nil {
		ms.leaders.forget(partition.FirstGroup, addr)
		return nil, err
	}
	m, err := partition.Decode(raw)
	if err != nil {
		return nil, err
	}
	if _, err := n.cmap.offer(m); err != nil {
		return nil, err
	}
	return n.cmap.load(), nil
}

func serveMap(w http.ResponseWriter, r *http.Request, s *mapState) {
	after, _ := strconv.ParseUint(r.URL.Query().Get("after"), 10, 64)
	ctx, cancel := context.WithTimeout(r.Context(), mapWait)
	defer cancel()
	m := s.wait(ctx, after)
	if m == nil || m.Epoch <= after {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(m.Encode())
}

// handleGroup serves POST /_b3/v1/cluster/groups: a group's leader adds
// or updates its group. A member of the first group that does not lead
// hands it to its leader.
func (n *Node) handleGroup(w http.ResponseWriter, r *http.Request) {
	var g partition.Group
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&g); err != nil || !groupName.MatchString(g.Name) || len(g.Members) == 0 {
		admin.WriteJSON(w, http.StatusBadRequest, map[string]string{"error": "a group needs a name and members"})
		return
	}
	if !n.onMapLeader(w, r, g) {
		return
	}
	m, err := n.changeMap(r.Context(), func(m *partition.Map) error {
		if old := m.Group(g.Name); old != nil {
			g.Draining, g.Capacity = old.Draining, old.Capacity
		}
		m.PutGroup(g)
		return nil
	})
	if err != nil {
		admin.WriteJSON(w, http.StatusServiceUnavailable, map[string]string{"error": err.Error()})
		return
	}
	n.log.Info("a group joined or changed", "group", g.Name, "members", len(g.Members), "epoch", m.Epoch)
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(m.Encode())
}

// onMapLeader reports whether this node is the first group's leader,
// which changes the map; otherwise it answers r itself: a member of the
// first group hands body to its leader, another node refuses.
func (n *Node) onMapLeader(w http.ResponseWriter, r *http.Request, body any) bool {
	switch {
	case !n.firstGroup():
		admin.WriteJSON(w, http.StatusMisdirectedRequest, map[string]string{"error": "ask a member of group " + partition.FirstGroup})
		return false
	case !n.leading():
		n.toLeader(w, r, body)
		return false
	}
	return true
}

// toLeader sends body to this group's leader at r's path, and copies its
// answer back.
func (n *Node) toLeader(w http.ResponseWriter, r *http.Request, body any) {
	addr, id := n.raft.LeaderWithID()
	if addr == "" || string(id) == n.cfg.ID {
		admin.WriteJSON(w, http.StatusServiceUnavailable, map[string]string{"error": "no leader elected; retry"})
		return
	}
	var out json.RawMessage
	if err := n.mesh().postJSON(r.Context(), string(addr), r.URL.Path, body, &out); err != nil {
		admin.WriteJSON(w, http.StatusServiceUnavailable, map[string]string{"error": err.Error()})
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(out)
}

// followMap keeps s at the newest map sources() give, until ctx ends.
func (n *Node) followMap(ctx context.Context, s *mapState, sources func() []string) {
	followMap(ctx, n.mesh(), s, sources, n.log.Warn)
}

func followMap(ctx context.Context, ms *mesh, s *mapState, sources func() []string, warn func(string, ...any)) {
	failures, start := 0, 0
	for ctx.Err() == nil {
		cur := s.load()
		var after uint64
		if cur != nil {
			after = cur.Epoch
		}
		got := false
		srcs := sources()
		for i := range srcs {
			// Each round starts at the next source: one that answers but
			// lags (cut off from its leader) is not asked for ever.
			addr := srcs[(start+i)%len(srcs)]
			m, err := ms.getMap(ctx, addr, after)
			if err != nil {
				continue
			}
			got = true
			if m != nil {
				if _, err := s.offer(m); err != nil {
					warn("keep the cluster map", "err", err)
				}
			} else {
				start++
			}
			break
		}
		if got {
			failures = 0
			continue
		}
		failures++
		if failures%30 == 1 {
			warn("no node of the first group answers for the cluster map; retrying", "sources", sources())
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

// mesh is what talks to other nodes: the authenticated, pooled clients of
// the cluster port and the other groups' leaders. A node has one, and so
// has a router.
type mesh struct {
	http    *http.Client // protoHTTP: node-to-node endpoints
	leaders *leaderCache
}

func (n *Node) mesh() *mesh { return &mesh{http: n.peerClient, leaders: &n.leaders} }

// getMap asks addr for the map newer than epoch after (nil: none came).
func (ms *mesh) getMap(ctx context.Context, addr string, after uint64) (*partition.Map, error) {
	data, err := ms.poll(ctx, addr, "/_b3/v1/cluster/map?after="+strconv.FormatUint(after, 10))
	if err != nil || data == nil {
		return nil, err
	}
	return partition.Decode(data)
}

// poll GETs path from addr, which holds the request up to mapWait for
// something new: its answer, or nil if it had nothing new (204).
func (ms *mesh) poll(ctx context.Context, addr, path string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, mapWait+5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+path, nil)
	if err != nil {
		return nil, err
	}
	resp, err := ms.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusNoContent:
		return nil, nil
	case http.StatusOK:
	default:
		return nil, fmt.Errorf("%s%s: %s", addr, path, resp.Status)
	}
	return io.ReadAll(io.LimitReader(resp.Body, 64<<20))
}

// postJSON POSTs in as JSON to path on addr and decodes the answer into
// out; an answer other than 200 is an error carrying its text.
func (ms *mesh) postJSON(ctx context.Context, addr, path string, in, out any) error {
	body, _ := json.Marshal(in)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := ms.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return fmt.Errorf("%s%s: %s: %s", addr, path, resp.Status, bytes.TrimSpace(msg))
	}
	return json.NewDecoder(resp.Body).Decode(out)
}

// postFirst tries postJSON on each address in turn, until one answers 200.
func (ms *mesh) postFirst(ctx context.Context, addrs []string, path string, in, out any) error {
	var errs []error
	for _, a := range addrs {
		err := ms.postJSON(ctx, a, path, in, out)
		if err == nil {
			return nil
		}
		errs = append(errs, err)
	}
	if len(errs) == 0 {
		return errors.New("no address to ask")
	}
	return errors.Join(errs...)
}

// leaderCache is the leader each group was last found to have.
type leaderCache struct {
	mu sync.Mutex
	m  map[string]string // group → cluster address
}

func (c *leaderCache) get(group string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[group]
}

func (c *leaderCache) set(group, addr string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string]string{}
	}
	c.m[group] = addr
}

// forget drops addr as group's leader (it did not answer, or no longer
// leads).
func (c *leaderCache) forget(group, addr string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m[group] == addr {
		delete(c.m, group)
	}
}

// leaderOf returns the cluster address of group g's leader: the cached
// one, or the member that says it leads.
func (ms *mesh) leaderOf(ctx context.Context, g *partition.Group) (string, error) {
	if a := ms.leaders.get(g.Name); a != "" {
		return a, nil
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	type answer struct {
		addr string
		ok   bool
	}
	answers := make(chan answer, len(g.Members))
	for _, mb := range g.Members {
		go func() {
			var info admin.ClusterMember
			err := getJSON(ctx, ms.http, mb.Address, "/_b3/v1/info", &info)
			answers <- answer{mb.Address, err == nil && info.State == raft.Leader.String()}
		}()
	}
	for range g.Members {
		if a := <-answers; a.ok {
			ms.leaders.set(g.Name, a.addr)
			return a.addr, nil
		}
	}
	return "", fmt.Errorf("group %s has no leader that answers", g.Name)
}

// getJSON GETs path from addr's cluster port into out.
func getJSON(ctx context.Context, c *http.Client, addr, path string, out any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+path, nil)
	if err != nil {
		return err
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", path, resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(out)
}

// notJoined says why this node's group serves no client yet ("": it
// does): a group other than the first serves once the map names it and
// it holds the cluster's users (catalog.go).
func (n *Node) notJoined() string {
	if n.firstGroup() {
		return ""
	}
	if n.cmap.load().Group(n.cfg.Group) == nil {
		return "group " + n.cfg.Group + " has not joined the cluster yet"
	}
	if _, ok := n.users.root(); !ok {
		return "group " + n.cfg.Group + " does not hold the cluster's users yet"
	}
	return ""
}

// mapStatus describes m's groups, asking each member of every group but
// own (whose members' status the caller has: ownMembers) for its state.
func mapStatus(ctx context.Context, ms *mesh, m *partition.Map, own string, ownMembers []admin.ClusterMember) admin.ClusterStatus {
	st := admin.ClusterStatus{MapEpoch: m.Epoch, Partitions: m.Count, Balanced: m.Balanced(), Paused: m.Paused}
	counts, targets := m.Counts(), m.Targets()
	for _, mv := range m.Moves {
		st.Moves = append(st.Moves, admin.ClusterMove{Partition: mv.Partition, From: mv.From, To: mv.To, Fenced: mv.Fenced})
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	for _, g := range m.Groups {
		cg := admin.ClusterGroup{Name: g.Name, Partitions: counts[g.Name], Target: targets[g.Name],
			Weight: g.Weight, Capacity: g.Capacity, Draining: g.Draining}
		if g.Name == own {
			cg.Members = ownMembers
		} else {
			cg.Members = make([]admin.ClusterMember, len(g.Members))
			var wg sync.WaitGroup
			for i, mb := range g.Members {
				wg.Add(1)
				go func() {
					defer wg.Done()
					var info admin.ClusterMember
					if err := getJSON(ctx, ms.http, mb.Address, "/_b3/v1/info", &info); err != nil {
						info = admin.ClusterMember{ID: mb.ID, ClusterAddress: mb.Address, Error: err.Error()}
					}
					cg.Members[i] = info
				}()
			}
			wg.Wait()
		}
		for _, mb := range cg.Members {
			if mb.State == raft.Leader.String() {
				cg.Leader = mb.ID
			}
		}
		st.Groups = append(st.Groups, cg)
	}
	return st
}
