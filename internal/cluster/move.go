package cluster

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cespare/xxhash/v2"

	"github.com/b3-storage/b3/internal/admin"
	"github.com/b3-storage/b3/internal/iolimit"
	"github.com/b3-storage/b3/internal/meta"
	"github.com/b3-storage/b3/internal/objstore"
	"github.com/b3-storage/b3/internal/partition"
	"github.com/b3-storage/b3/internal/s3api"
)

// Moving partitions between groups.
//
// The first group's leader plans (partition.Map.Plan) and starts a batch
// of moves from one group to another by a map change that lists them;
// everything else is the destination's leader's, which pulls:
//
//  1. sync: it reads the source leader's records of the partitions
//     (GET /_b3/v1/move/records, one consistent view streamed), and for
//     each record it lacks or holds otherwise it copies it — the bytes
//     read from the source (GET /_b3/v1/bytes) and staged in its own group
//     as a PUT's are, then an opMigrate command installing the record as
//     the source has it; records it holds that the source has not it
//     removes (opDrop). It syncs twice, the second time to shrink what is
//     left.
//  2. fence: a map change marks the moves fenced; the source's leader,
//     asked (POST /_b3/v1/move/fence), answers once it knows that map and
//     no write of those partitions is between its check and its commit
//     (Node.fence): from then on it refuses their writes with 503
//     SlowDown, which clients retry.
//  3. a last sync, which now misses nothing;
//  4. switch: one map change gives the partitions to the destination and
//     ends the moves. Requests go there from then on; the source answers
//     those that reach it on an older map with 503 SlowDown and the
//     sender refreshes its map.
//  5. The source's leader removes the records of partitions its group
//     neither owns nor receives (sweepForeign), a batch of keys per
//     opDrop; so does any group, for what an interrupted move left.
//
// A crash of either leader at any step loses nothing: the map keeps the
// moves until the switch, the next leader of the destination syncs
// again from the start (records it already holds are not copied again),
// and until the switch the source owns, serves and holds everything.
//
// Invariant: a write of a partition commits in the group that owns it
// and not while it is fenced there (Node.checkOwner under fenceMu); the
// destination's last sync starts after the source's fence answered, so
// the switch hands over every acknowledged write.

// moveBatch bounds the partitions one batch of moves carries.
const moveBatch = 256

// fencePause holds a destination between the fence and its last sync,
// for tests that need a batch to stay fenced (B3_TEST_FENCE_PAUSE, a
// duration); unset outside tests.
var fencePause, _ = time.ParseDuration(os.Getenv("B3_TEST_FENCE_PAUSE"))

// A destination fences once a sync copied at most fenceBelow records, or
// after maxSyncs syncs.
const (
	fenceBelow = 64
	maxSyncs   = 8
)

// planMoves starts the next batch of moves if none is under way and the
// map is not balanced; run by the first group's leader.
func (n *Node) planMoves() error {
	m := n.cmap.load()
	if m == nil || m.Paused || len(m.Moves) > 0 {
		return nil
	}
	plan := m.Plan()
	if len(plan) == 0 {
		return nil
	}
	_, err := n.changeMap(n.closing, func(next *partition.Map) error {
		if len(next.Moves) > 0 {
			return nil
		}
		for _, mv := range next.Plan() {
			if mv.From == plan[0].From && mv.To == plan[0].To && len(next.Moves) < moveBatch {
				next.Moves = append(next.Moves, mv)
			}
		}
		return nil
	})
	if err == nil {
		n.log.Info("moving partitions", "from", plan[0].From, "to", plan[0].To, "planned", len(plan))
	}
	return err
}

// moveRequest is a change a destination asks of the first group's
// leader (POST /_b3/v1/cluster/move): "fence" or "switch" the moves of
// Partitions to To.
type moveRequest struct {
	Op         string `json:"op"`
	To         string `json:"to"`
	Partitions []int  `json:"partitions"`
}

// handleMoveChange serves POST /_b3/v1/cluster/move on the first group.
func (n *Node) handleMoveChange(w http.ResponseWriter, r *http.Request) {
	var req moveRequest
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&req); err != nil || (req.Op != "fence" && req.Op != "switch") {
		admin.WriteJSON(w, http.StatusBadRequest, map[string]string{"error": "want {op: fence|switch, to, partitions}"})
		return
	}
	if !n.onMapLeader(w, r, req) {
		return
	}
	if req.Op == "switch" {
		// The destination serves the partitions from the switch on: it
		// must hold the cluster's buckets and users as they are now (a
		// group that was drained may have stopped following them).
		err := n.awaitCatalogOf(r.Context(), n.catalogVersion(), req.To)
		if err == nil && n.backend.anyBucketDeleting() {
			err = errBucketMoving // bucketdelete.go
		}
		if err != nil {
			admin.WriteJSON(w, http.StatusServiceUnavailable, map[string]string{"error": err.Error()})
			return
		}
	}
	m, err := n.changeMap(r.Context(), func(m *partition.Map) error {
		for _, p := range req.Partitions {
			i := slices.IndexFunc(m.Moves, func(mv partition.Move) bool { return mv.Partition == p && mv.To == req.To })
			if i < 0 {
				return fmt.Errorf("partition %d is not moving to %s", p, req.To)
			}
			switch req.Op {
			case "fence":
				m.Moves[i].Fenced = true
			case "switch":
				if !m.Moves[i].Fenced {
					return fmt.Errorf("partition %d is not fenced", p)
				}
				m.Owners[p] = req.To
				m.Moves = slices.Delete(m.Moves, i, i+1)
			}
		}
		return nil
	})
	if err != nil {
		admin.WriteJSON(w, http.StatusConflict, map[string]string{"error": err.Error()})
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(m.Encode())
}

// checkOwner refuses a client's write of bucket/key unless this group
// owns its partition and it is not fenced. The caller holds fenceMu
// (read) from the check until the write committed.
func (n *Node) checkOwner(bucket, key string) error {
	m := n.cmap.load()
	if m == nil {
		return nil
	}
	p := m.Partition(bucket, key)
	if m.Owners[p] != n.cfg.Group {
		return errWrongGroup
	}
	if mv, ok := m.Moving(p); ok && mv.Fenced {
		return errMoving
	}
	return nil
}

// ownsRead refuses a read of bucket/key unless this group owns its
// partition by the map it knows and is not giving it away: once the
// source confirmed a fence, the destination may switch and take writes
// at any moment, and a source member that has not learned the switch (cut
// off from the first group) must not answer from its copy then. The
// fenced time is one short sync; clients retry the 503.
func (n *Node) ownsRead(bucket, key string) error {
	m := n.cmap.load()
	if m == nil || len(m.Groups) < 2 {
		return nil
	}
	return n.checkOwner(bucket, key)
}

// errMoving: the write's partition is moving to another group, in its
// last step.
var errMoving = &s3api.APIError{Code: "SlowDown", Status: http.StatusServiceUnavailable, Message: "The key's partition is moving to another replica group; retry."}

// keyOf returns the key a client's command writes ("" for none: a bucket,
// a user, the map, a migration).
func keyOf(c *command) (bucket, key string) {
	switch c.Op {
	case opPutObject, opUpdateObject, opUpdateVersion, opComplete:
		return c.Object.Bucket, c.Object.Key
	case opCreateUpload:
		return c.Upload.Bucket, c.Upload.Key
	case opDeleteObject, opPutPart, opAbort, opDeleteVersion, opExpire, opExpireVersion:
		return c.Name, c.Key
	}
	return "", ""
}

// fence answers once this node knows map epoch (or a later one) and no
// write it checked against an older map is still to commit; on the
// source's leader (POST /_b3/v1/move/fence?epoch=E).
func (n *Node) handleFence(w http.ResponseWriter, r *http.Request) {
	epoch, _ := strconv.ParseUint(r.URL.Query().Get("epoch"), 10, 64)
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	if err := n.holdFence(ctx, epoch); err != nil {
		if errors.Is(err, errNotLeader) {
			w.Header().Set(notLeaderHeader, "1")
		}
		admin.WriteJSON(w, http.StatusServiceUnavailable, map[string]string{"error": err.Error()})
		return
	}
	admin.WriteJSON(w, http.StatusOK, map[string]uint64{"applied": n.fsm.applied.Load()})
}

// holdFence makes the fence of map epoch hold in this group, on its
// leader: the map (epoch or later) goes into the group's log, unless it
// is the first group's, whose log holds it already, so that whoever
// leads the group next refuses the fenced writes too; then every write
// checked against an older map has committed.
func (n *Node) holdFence(ctx context.Context, epoch uint64) error {
	m := n.cmap.wait(ctx, epoch-1)
	if m == nil || m.Epoch < epoch {
		return errors.New("this node does not know that map yet")
	}
	if !n.leading() {
		return errNotLeader
	}
	if !n.firstGroup() {
		if _, err := n.propose(&command{Op: opMap, Map: m}); err != nil {
			return err
		}
	}
	n.fenceMu.Lock()
	//lint:ignore SA2001 an empty critical section: every write checked before is committed
	n.fenceMu.Unlock()
	return nil
}

// A move record is one line of GET /_b3/v1/move/records: a current
// object, a noncurrent version or delete marker, an upload or a part.
type moveRecord struct {
	Kind   string       `json:"kind"` // "o" current, "v" version, "u" upload, "p" part
	Object *meta.Object `json:"object,omitempty"`
	Upload *meta.Upload `json:"upload,omitempty"`
	Part   *meta.Part   `json:"part,omitempty"`
	Bucket string       `json:"bucket,omitempty"` // of a part
	Key    string       `json:"key,omitempty"`
}

// partitionSet parses "1,2,3".
func partitionSet(s string, count int) (map[int]bool, error) {
	set := map[int]bool{}
	for _, f := range strings.Split(s, ",") {
		p, err := strconv.Atoi(f)
		if err != nil || p < 0 || p >= count {
			return nil, fmt.Errorf("bad partition %q", f)
		}
		set[p] = true
	}
	return set, nil
}

func joinInts(ps []int) string {
	var b strings.Builder
	for i, p := range ps {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(p))
	}
	return b.String()
}

// handleRecords streams this node's records of the partitions named
// (?partitions=1,2,...), one JSON line each, from one view; on the
// source's leader. Inline bytes travel in the records; others are read
// by reference (GET /_b3/v1/bytes).
func (n *Node) handleRecords(w http.ResponseWriter, r *http.Request) {
	m := n.cmap.load()
	if m == nil || !n.leading() {
		w.Header().Set(notLeaderHeader, "1")
		admin.WriteJSON(w, http.StatusServiceUnavailable, map[string]string{"error": "not the leader"})
		return
	}
	set, err := partitionSet(r.URL.Query().Get("partitions"), m.Count)
	if err != nil {
		admin.WriteJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
		return
	}
	to := r.URL.Query().Get("to")
	for p := range set {
		// Only partitions this group owns and gives to the asker: a
		// destination that runs on an old map (its move switched
		// already) must not sync from what is left here.
		if mv, ok := m.Moving(p); !ok || mv.From != n.cfg.Group || mv.To != to {
			admin.WriteJSON(w, http.StatusConflict, map[string]string{"error": fmt.Sprintf("partition %d is not moving from %s to %s", p, n.cfg.Group, to)})
			return
		}
	}
	if f := r.URL.Query().Get("fence"); f != "" {
		// The last sync: the view is taken once the fence holds here,
		// whoever leads now (a leader elected since the fence was
		// confirmed may not have known it).
		epoch, _ := strconv.ParseUint(f, 10, 64)
		ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
		err := n.holdFence(ctx, epoch)
		cancel()
		if err != nil {
			admin.WriteJSON(w, http.StatusServiceUnavailable, map[string]string{"error": err.Error()})
			return
		}
	}
	in := func(bucket, key string) bool { return set[partition.Of(bucket, key, m.Count)] }
	view := n.store.Meta().NewView()
	defer view.Close()
	w.Header().Set("Content-Type", "application/x-ndjson")
	bw := bufio.NewWriterSize(w, 256<<10)
	enc := json.NewEncoder(bw)
	send := func(rec moveRecord) error {
		if rec.Object != nil {
			o := *rec.Object
			o.Extents = nil
			rec.Object = &o
		}
		if rec.Part != nil {
			p := *rec.Part
			p.Extents = nil
			rec.Part = &p
		}
		return enc.Encode(rec)
	}
	uploads := map[string]*meta.Upload{}
	err = errors.Join(
		view.ScanObjects(func(o *meta.Object) error {
			if !in(o.Bucket, o.Key) {
				return nil
			}
			return send(moveRecord{Kind: "o", Object: o})
		}),
		view.ScanVersions(func(o *meta.Object) error {
			if !in(o.Bucket, o.Key) {
				return nil
			}
			return send(moveRecord{Kind: "v", Object: o})
		}),
		view.ScanUploads(func(u *meta.Upload) error {
			if !in(u.Bucket, u.Key) {
				return nil
			}
			uploads[u.UploadID] = u
			return send(moveRecord{Kind: "u", Upload: u})
		}),
		view.ScanParts(func(p *meta.Part) error {
			u := uploads[p.UploadID]
			if u == nil {
				return nil
			}
			return send(moveRecord{Kind: "p", Part: p, Bucket: u.Bucket, Key: u.Key})
		}),
	)
	if err != nil {
		n.log.Warn("send records of moving partitions", "err", err)
		panic(http.ErrAbortHandler) // the receiver sees a cut stream, never a short one taken for whole
	}
	_ = enc.Encode(moveRecord{Kind: "end"})
	_ = bw.Flush()
}

// runMoves drives the moves to this group; run by its leader.
func (n *Node) runMoves(ctx context.Context) {
	m := n.cmap.load()
	if m == nil || !slices.ContainsFunc(m.Moves, func(mv partition.Move) bool { return mv.To == n.cfg.Group }) {
		return
	}
	// Moves to this group by the map as of now: one this node's map still
	// lists may have switched already.
	m, err := n.currentMap(ctx)
	if err != nil {
		return
	}
	var from string
	var parts []int
	for _, mv := range m.Moves {
		if mv.To == n.cfg.Group && (from == "" || mv.From == from) {
			from = mv.From
			parts = append(parts, mv.Partition)
		}
	}
	if len(parts) == 0 {
		return
	}
	// The moves end with this node's leadership: another leader runs them.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		for ctx.Err() == nil {
			if !n.leading() {
				cancel()
				return
			}
			time.Sleep(200 * time.Millisecond)
		}
	}()
	start := time.Now()
	n.log.Info("receiving partitions", "from", from, "partitions", len(parts))
	if err := n.receive(ctx, from, parts); err != nil {
		n.log.Warn("receiving partitions: retrying", "from", from, "partitions", len(parts), "err", err)
		return
	}
	n.log.Info("received partitions", "from", from, "partitions", len(parts), "took", time.Since(start).Round(time.Millisecond))
}

// receive moves parts from group from here: sync, sync, fence, sync,
// switch.
func (n *Node) receive(ctx context.Context, from string, parts []int) error {
	// Sync until one sync finds little to copy: the fenced time, when the
	// partitions' writes are refused, is the last sync's, which copies what
	// clients wrote during the one before it.
	for i := 1; ; i++ {
		copied, err := n.syncFrom(ctx, from, parts, 0)
		if err != nil {
			return err
		}
		if copied <= fenceBelow || i == maxSyncs {
			break
		}
	}
	fenced, err := n.changeMoves(ctx, moveRequest{Op: "fence", To: n.cfg.Group, Partitions: parts})
	if err != nil {
		return fmt.Errorf("fence: %w", err)
	}
	if err := n.askFence(ctx, from, fenced.Epoch); err != nil {
		return err
	}
	n.log.Info("fence holds", "from", from, "partitions", len(parts), "epoch", fenced.Epoch)
	if fencePause > 0 {
		select {
		case <-time.After(fencePause):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if _, err := n.syncFrom(ctx, from, parts, fenced.Epoch); err != nil {
		return err
	}
	if _, err := n.changeMoves(ctx, moveRequest{Op: "switch", To: n.cfg.Group, Partitions: parts}); err != nil {
		return fmt.Errorf("switch: %w", err)
	}
	n.moved.Add(int64(len(parts)))
	return nil
}

// changeMoves asks the first group's leader for a change of the moves,
// and makes the map it answers this node's.
func (n *Node) changeMoves(ctx context.Context, req moveRequest) (*partition.Map, error) {
	var raw json.RawMessage
	if err := n.mesh().postFirst(ctx, n.mapSources(), "/_b3/v1/cluster/move", req, &raw); err != nil {
		return nil, err
	}
	m, err := partition.Decode(raw)
	if err != nil {
		return nil, err
	}
	_, err = n.cmap.offer(m)
	return m, err
}

// askFence has the source's leader confirm the fence of map epoch.
func (n *Node) askFence(ctx context.Context, from string, epoch uint64) error {
	g := n.cmap.load().Group(from)
	if g == nil {
		return fmt.Errorf("group %s is not in the map", from)
	}
	ms := n.mesh()
	for attempt := 0; ; attempt++ {
		addr, err := ms.leaderOf(ctx, g)
		if err == nil {
			var out map[string]uint64
			if err = ms.postJSON(ctx, addr, "/_b3/v1/move/fence?epoch="+strconv.FormatUint(epoch, 10), struct{}{}, &out); err == nil {
				return nil
			}
			ms.leaders.forget(from, addr)
		}
		if attempt == 20 || ctx.Err() != nil {
			return fmt.Errorf("the source %s did not confirm the fence: %w", from, err)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// syncFrom makes this group's records of parts those of group from's
// leader; it reports how many records it copied.
func (n *Node) syncFrom(ctx context.Context, from string, parts []int, fence uint64) (int, error) {
	g := n.cmap.load().Group(from)
	if g == nil {
		return 0, fmt.Errorf("group %s is not in the map", from)
	}
	ms := n.mesh()
	addr, err := ms.leaderOf(ctx, g)
	if err != nil {
		return 0, err
	}
	u := "http://" + addr + "/_b3/v1/move/records?to=" + n.cfg.Group + "&partitions=" + joinInts(parts)
	if fence != 0 {
		u += "&fence=" + strconv.FormatUint(fence, 10)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return 0, err
	}
	resp, err := ms.http.Do(req)
	if err != nil {
		ms.leaders.forget(from, addr)
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		ms.leaders.forget(from, addr)
		return 0, fmt.Errorf("records from %s: %s", addr, resp.Status)
	}
	seen := newSeenRecords()
	dec := json.NewDecoder(bufio.NewReaderSize(resp.Body, 256<<10))
	ended := false
	start, records := time.Now(), 0
	copies := newCopiers(ctx, moveCopiers, func(ctx context.Context, rec moveRecord) (bool, error) {
		return n.copyRecord(ctx, addr, rec)
	})
	for {
		var rec moveRecord
		if err := dec.Decode(&rec); err != nil {
			copies.wait()
			return 0, fmt.Errorf("records from %s: %w", addr, err)
		}
		if rec.Kind == "end" {
			ended = true
			break
		}
		records++
		seen.add(rec)
		if err := n.stillReceiving(parts); err != nil {
			copies.wait()
			return 0, err
		}
		if !copies.add(rec) {
			break // a copy failed: wait says why
		}
	}
	copied, err := copies.wait()
	n.copied.Add(int64(copied))
	if err != nil {
		return 0, err
	}
	n.log.Info("synced partitions", "from", from, "partitions", len(parts), "fence", fence,
		"records", records, "copied", copied, "took", time.Since(start).Round(time.Millisecond))
	if !ended {
		return 0, errors.New("records cut short")
	}
	set := map[int]bool{}
	for _, p := range parts {
		set[p] = true
	}
	// What the view lacked is removed here only while the moves are still
	// pending by the map as of now: the view was taken before this check,
	// so before any switch, and before the source removed anything.
	if _, err := n.currentMap(ctx); err != nil {
		return 0, err
	}
	if err := n.stillReceiving(parts); err != nil {
		return 0, err
	}
	return copied, n.dropUnseen(set, seen)
}

// stillReceiving reports an error unless every partition of parts is, by
// this node's map, moving to its group.
func (n *Node) stillReceiving(parts []int) error {
	m := n.cmap.load()
	for _, p := range parts {
		if mv, ok := m.Moving(p); !ok || mv.To != n.cfg.Group {
			return fmt.Errorf("partition %d is no longer moving here (epoch %d)", p, m.Epoch)
		}
	}
	return nil
}

// moveCopiers is how many records a sync copies at once: each copy waits
// for its bytes to be read, staged on the group's members and synced, and
// for a command to commit, so one at a time copies a few dozen small
// records a second, fewer than clients may write them.
const moveCopiers = 8

// copiers copy a sync's records on a few goroutines; the records of one
// key go to one goroutine, in the order the source sent them (a current
// record before the key's versions, an upload before its parts), since
// installing one may replace another.
type copiers struct {
	cancel context.CancelFunc
	lanes  []chan moveRecord
	wg     sync.WaitGroup
	mu     sync.Mutex
	err    error
	copied int
}

func newCopiers(ctx context.Context, n int, copy func(context.Context, moveRecord) (bool, error)) *copiers {
	ctx, cancel := context.WithCancel(ctx)
	c := &copiers{cancel: cancel, lanes: make([]chan moveRecord, n)}
	for i := range c.lanes {
		lane := make(chan moveRecord, 64)
		c.lanes[i] = lane
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			for rec := range lane {
				if err := ctx.Err(); err != nil {
					// Drain: a copy failed, or the sync's context ended with
					// records still to copy, which is an error of its own.
					c.mu.Lock()
					if c.err == nil {
						c.err = err
					}
					c.mu.Unlock()
					continue
				}
				did, err := copy(ctx, rec)
				c.mu.Lock()
				if err != nil && c.err == nil {
					c.err = err
					cancel()
				}
				if did && err == nil {
					c.copied++
				}
				c.mu.Unlock()
			}
		}()
	}
	return c
}

// add queues rec on its key's goroutine; false once a copy failed.
func (c *copiers) add(rec moveRecord) bool {
	var bucket, key string
	switch {
	case rec.Object != nil:
		bucket, key = rec.Object.Bucket, rec.Object.Key
	case rec.Upload != nil:
		bucket, key = rec.Upload.Bucket, rec.Upload.Key
	default:
		bucket, key = rec.Bucket, rec.Key
	}
	c.mu.Lock()
	failed := c.err != nil
	c.mu.Unlock()
	if failed {
		return false
	}
	c.lanes[xxhash.Sum64String(bucket+"\x00"+key)%uint64(len(c.lanes))] <- rec
	return true
}

// wait waits for the queued copies and reports how many records were
// copied, or the first error.
func (c *copiers) wait() (int, error) {
	for _, lane := range c.lanes {
		close(lane)
	}
	c.wg.Wait()
	c.cancel()
	return c.copied, c.err
}

// seenRecords are the records a sync read from the source.
type seenRecords struct{ m map[string]bool }

func newSeenRecords() *seenRecords { return &seenRecords{m: map[string]bool{}} }

func recordID(kind, bucket, key string, version uint64, upload string) string {
	return kind + "\x00" + bucket + "\x00" + key + "\x00" + strconv.FormatUint(version, 10) + "\x00" + upload
}

func (s *seenRecords) add(rec moveRecord) {
	switch rec.Kind {
	case "o", "v":
		s.m[recordID(rec.Kind, rec.Object.Bucket, rec.Object.Key, rec.Object.Version, "")] = true
	case "u":
		s.m[recordID("u", rec.Upload.Bucket, rec.Upload.Key, 0, rec.Upload.UploadID)] = true
	}
}

// sameRecord reports whether the local record a is the source's b:
// everything but where the bytes lie here.
func sameRecord(a, b *meta.Object) bool {
	x, y := *a, *b
	x.Extents, y.Extents = nil, nil
	x.Expiry, y.Expiry = time.Time{}, time.Time{}
	if objstore.Hollow(a) {
		return false // its bytes are still to come
	}
	return reflect.DeepEqual(normObject(&x), normObject(&y))
}

// normObject is o as JSON makes it (times in UTC, empty slices nil).
func normObject(o *meta.Object) meta.Object {
	data, _ := json.Marshal(o)
	var out meta.Object
	_ = json.Unmarshal(data, &out)
	return out
}

// copyRecord installs rec here unless this group holds it already; it
// reports whether it did.
func (n *Node) copyRecord(ctx context.Context, source string, rec moveRecord) (bool, error) {
	switch rec.Kind {
	case "o", "v":
		o := rec.Object
		var local *meta.Object
		var err error
		if rec.Kind == "o" {
			local, err = n.store.Meta().GetObject(o.Bucket, o.Key)
		} else {
			local, err = n.store.Meta().GetVersion(o.Bucket, o.Key, o.Version)
		}
		if err == nil && sameRecord(local, o) {
			return false, nil
		}
		c := &command{Op: opMigrate, Object: o, Current: rec.Kind == "o"}
		if o.Inline == nil && !o.DeleteMarker && o.Size > 0 {
			ref := bytesRef{Bucket: o.Bucket, Key: o.Key, Version: o.Version}
			stage, err := n.copyBytes(ctx, source, ref)
			if errors.Is(err, errGone) {
				return false, nil // removed there since the view: the next sync drops it here
			}
			if err != nil {
				return false, err
			}
			c.Stage = stage
		}
		_, err = n.propose(c)
		return err == nil, err
	case "u":
		if local, err := n.store.GetUpload(rec.Upload.Bucket, rec.Upload.Key, rec.Upload.UploadID); err == nil && reflect.DeepEqual(local, rec.Upload) {
			return false, nil
		}
		_, err := n.propose(&command{Op: opMigrate, Upload: rec.Upload})
		return err == nil, err
	case "p":
		p := rec.Part
		if local, err := n.store.Meta().GetPart(p.UploadID, p.Number); err == nil && local.ETag == p.ETag && local.Size == p.Size && !objstore.HollowPart(local) {
			return false, nil
		}
		ref := bytesRef{Bucket: rec.Bucket, Key: rec.Key, UploadID: p.UploadID, Part: p.Number}
		stage, err := n.copyBytes(ctx, source, ref)
		if errors.Is(err, errGone) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		c := &command{Op: opMigrate, Part: p, Name: rec.Bucket, Key: rec.Key, Stage: stage}
		if up, err := n.store.GetUpload(rec.Bucket, rec.Key, p.UploadID); err == nil && up.SSE != nil {
			c.Encrypted = true // ciphertext: its ETag is no MD5 of it
		}
		_, err = n.propose(c)
		return err == nil, err
	}
	return false, fmt.Errorf("unknown record kind %q", rec.Kind)
}

// copyBytes reads ref's bytes from the source's leader and stages them in
// this group, as a PUT's; it returns the stage id.
func (n *Node) copyBytes(ctx context.Context, source string, ref bytesRef) (uint64, error) {
	ctx = iolimit.WithPriority(ctx, iolimit.Background)
	u := "http://" + source + "/_b3/v1/bytes?" + refQuery(ref).Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return 0, err
	}
	resp, err := n.peerClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusGone:
		return 0, errGone
	default:
		return 0, fmt.Errorf("bytes of %s/%s from %s: %s", ref.Bucket, ref.Key, source, resp.Status)
	}
	want := resp.ContentLength
	stage, size, err := n.backend.stageAndPush(ctx, ref.Bucket, ref.Key, ref.Version, resp.Body, func(int64) error { return nil })
	if err != nil {
		return 0, err
	}
	if want >= 0 && size != want {
		n.dropStage(stage)
		return 0, fmt.Errorf("bytes of %s/%s from %s: %d of %d", ref.Bucket, ref.Key, source, size, want)
	}
	return stage, nil
}

// dropUnseen removes this group's records of the partitions in set that
// the source's view did not have.
func (n *Node) dropUnseen(set map[int]bool, seen *seenRecords) error {
	m := n.cmap.load()
	return n.dropWhere(func(kind, bucket, key string, version uint64, upload string) bool {
		return set[m.Partition(bucket, key)] && !seen.m[recordID(kind, bucket, key, version, upload)]
	})
}

// dropWhere removes, through the log, the local records drop selects,
// a batch of them per opDrop command.
func (n *Node) dropWhere(drop func(kind, bucket, key string, version uint64, upload string) bool) error {
	var batch []dropRef
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		_, err := n.propose(&command{Op: opDrop, Drops: batch})
		batch = nil
		return err
	}
	view := n.store.Meta().NewView()
	defer view.Close()
	add := func(d dropRef) error {
		batch = append(batch, d)
		if len(batch) == 256 {
			return flush()
		}
		return nil
	}
	err := errors.Join(
		view.ScanObjects(func(o *meta.Object) error {
			if drop("o", o.Bucket, o.Key, o.Version, "") {
				return add(dropRef{Kind: "o", Bucket: o.Bucket, Key: o.Key, Version: o.Version})
			}
			return nil
		}),
		view.ScanVersions(func(o *meta.Object) error {
			if drop("v", o.Bucket, o.Key, o.Version, "") {
				return add(dropRef{Kind: "v", Bucket: o.Bucket, Key: o.Key, Version: o.Version})
			}
			return nil
		}),
		view.ScanUploads(func(u *meta.Upload) error {
			if drop("u", u.Bucket, u.Key, 0, u.UploadID) {
				return add(dropRef{Kind: "u", Bucket: u.Bucket, Key: u.Key, UploadID: u.UploadID})
			}
			return nil
		}),
	)
	if err != nil {
		return err
	}
	return flush()
}

// dropRef names a record an opDrop removes.
type dropRef struct {
	Kind     string `json:"kind"` // "o", "v", "u"
	Bucket   string `json:"bucket"`
	Key      string `json:"key"`
	Version  uint64 `json:"version,omitempty"`
	UploadID string `json:"upload_id,omitempty"`
}

// sweepForeign removes the records of partitions this group neither owns
// nor receives: what it held before a move switched them away, or what
// an interrupted move left here. Run by a group's leader while no move
// into its group is under way.
func (n *Node) sweepForeign() error {
	if m := n.cmap.load(); m == nil || len(m.Groups) == 1 {
		return nil
	}
	// By the map as of now: a map this node holds may be older than a
	// move that switched partitions here.
	m, err := n.currentMap(n.closing)
	if err != nil {
		return err
	}
	for _, mv := range m.Moves {
		if mv.To == n.cfg.Group {
			return nil
		}
	}
	dropped := 0
	err = n.dropWhere(func(_, bucket, key string, _ uint64, _ string) bool {
		foreign := m.Owner(bucket, key) != n.cfg.Group
		if foreign {
			dropped++
		}
		return foreign
	})
	if dropped > 0 {
		n.log.Info("removed the records of partitions moved away", "records", dropped, "epoch", m.Epoch)
	}
	return err
}

// applyMigrate installs a record another group holds (opMigrate).
func (f *fsm) applyMigrate(c *command, index uint64) error {
	switch {
	case c.Upload != nil:
		return f.store.ApplyCreateUpload(c.Upload, index)
	case c.Part != nil:
		part := *c.Part
		if c.Stage != 0 {
			ref, _ := c.bytesRef(index)
			st, err := f.bytes(c, ref)
			switch {
			case errors.Is(err, errGone) || errors.Is(err, errLost):
				part.Extents = nil
				return f.store.ApplyPutPart(c.Name, c.Key, &part, index)
			case err != nil:
				return err
			}
			part.Extents, part.Size = st.Extents, st.Size
			if err := f.store.ApplyPutPart(c.Name, c.Key, &part, index); err != nil {
				f.node.keepForRetry(ref, st)
				return err
			}
			f.node.installedBytes(st)
			return nil
		}
		return f.store.ApplyPutPart(c.Name, c.Key, &part, index)
	case c.Object != nil:
		obj := *c.Object
		if c.Stage != 0 {
			ref, _ := c.bytesRef(index)
			st, err := f.bytes(c, ref)
			switch {
			case errors.Is(err, errGone) || errors.Is(err, errLost):
				obj.Extents, obj.Inline = nil, nil // hollow: the filler fetches the bytes
				return f.store.ApplyInstall(&obj, c.Current, index)
			case err != nil:
				return err
			}
			obj.Extents, obj.Size, obj.Inline = st.Extents, st.Size, nil
			if err := f.store.ApplyInstall(&obj, c.Current, index); err != nil {
				f.node.keepForRetry(ref, st)
				return err
			}
			f.node.installedBytes(st)
			return nil
		}
		return f.store.ApplyInstall(&obj, c.Current, index)
	}
	return errors.New("cluster: a migrate command without a record")
}

// applyDrop removes the records an opDrop names.
func (f *fsm) applyDrop(c *command, index uint64) error {
	var errs []error
	for _, d := range c.Drops {
		var err error
		switch d.Kind {
		case "o", "v":
			err = f.store.ApplyDrop(d.Bucket, d.Key, d.Version, d.Kind == "o", index)
		case "u":
			err = f.store.ApplyAbortUpload(d.Bucket, d.Key, d.UploadID, index)
			if errors.Is(err, objstore.ErrNoSuchUpload) {
				err = nil
			}
		}
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// mapSetting is an operator's change of the map (POST
// /_b3/v1/cluster/settings on the first group): "pause" or "resume" the
// start of new moves, "cancel" the moves under way (and pause), "drain"
// or "undrain" a group.
type mapSetting struct {
	Op    string `json:"op"`
	Group string `json:"group,omitempty"`
}

// handleMapSetting serves POST /_b3/v1/cluster/settings.
func (n *Node) handleMapSetting(w http.ResponseWriter, r *http.Request) {
	var req mapSetting
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<16)).Decode(&req); err != nil {
		admin.WriteJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
		return
	}
	if !n.onMapLeader(w, r, req) {
		return
	}
	m, err := n.changeMap(r.Context(), func(m *partition.Map) error {
		switch req.Op {
		case "pause", "resume":
			m.Paused = req.Op == "pause"
		case "cancel":
			// The moves under way end where they are, fenced or not: their
			// sources own the partitions throughout and removed nothing of
			// them, and take their writes again once they know this map; a
			// destination's switch, decided here too, now fails, and its
			// copies are swept as another group's. Paused, or the planner
			// would start the same moves again.
			m.Paused = true
			m.Moves = nil
		case "drain", "undrain":
			g := m.Group(req.Group)
			if g == nil {
				return fmt.Errorf("no group %q in the cluster", req.Group)
			}
			if req.Op == "drain" {
				others := 0
				for _, o := range m.Groups {
					if o.Name != g.Name && !o.Draining {
						others++
					}
				}
				if others == 0 {
					return fmt.Errorf("group %s is the last one not draining: its partitions would have nowhere to go", g.Name)
				}
			}
			g.Draining = req.Op == "drain"
		default:
			return fmt.Errorf("unknown change %q", req.Op)
		}
		return nil
	})
	if err != nil {
		admin.WriteJSON(w, http.StatusConflict, map[string]string{"error": err.Error()})
		return
	}
	n.log.Info("cluster map changed by an operator", "op", req.Op, "group", req.Group, "epoch", m.Epoch)
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(m.Encode())
}

// askMapSetting has the first group's leader make an operator's change,
// through any of sources (the first group's members).
func askMapSetting(ctx context.Context, ms *mesh, sources []string, req mapSetting) (*partition.Map, error) {
	var raw json.RawMessage
	if err := ms.postFirst(ctx, sources, "/_b3/v1/cluster/settings", req, &raw); err != nil {
		return nil, err
	}
	return partition.Decode(raw)
}

// serveMapSetting is the admin API's POST /admin/v1/cluster/rebalance
// ({"paused": bool}) and /admin/v1/cluster/drain ({"group": G, "drain":
// bool}), on a node or a router.
func serveMapSetting(ms *mesh, sources func() []string, maps *mapState, log *slog.Logger) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var in struct {
			Paused *bool  `json:"paused"`
			Cancel bool   `json:"cancel"`
			Group  string `json:"group"`
			Drain  *bool  `json:"drain"`
		}
		if err := json.NewDecoder(io.LimitReader(r.Body, 1<<16)).Decode(&in); err != nil {
			admin.WriteJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
			return
		}
		var req mapSetting
		switch {
		case strings.HasSuffix(r.URL.Path, "/rebalance") && in.Cancel:
			req.Op = "cancel"
		case strings.HasSuffix(r.URL.Path, "/rebalance") && in.Paused != nil:
			req.Op = map[bool]string{true: "pause", false: "resume"}[*in.Paused]
		case strings.HasSuffix(r.URL.Path, "/drain") && in.Drain != nil && in.Group != "":
			req.Op, req.Group = map[bool]string{true: "drain", false: "undrain"}[*in.Drain], in.Group
		default:
			admin.WriteJSON(w, http.StatusBadRequest, map[string]string{"error": `want {"paused": true|false}, {"cancel": true} or {"group": "g2", "drain": true|false}`})
			return
		}
		m, err := askMapSetting(r.Context(), ms, sources(), req)
		if err != nil {
			code := http.StatusServiceUnavailable
			if strings.Contains(err.Error(), "409 Conflict") {
				code = http.StatusConflict
			}
			admin.WriteJSON(w, code, map[string]string{"error": err.Error()})
			return
		}
		_, _ = maps.offer(m)
		admin.Audit(log, r, "cluster."+req.Op, "group", req.Group, "epoch", m.Epoch)
		admin.WriteJSON(w, http.StatusOK, mapStatus(r.Context(), ms, m, "", nil))
	}
}
