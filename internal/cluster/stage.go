package cluster

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/b3-storage/b3/internal/iolimit"
	"github.com/b3-storage/b3/internal/objstore"
)

// stages holds, on each node, the bytes written beside the log and not yet
// installed by a command: id -> staged bytes. The leader puts its own copy
// here; a follower puts what the leader pushed. The command's apply takes
// the entry out (and installs or discards it); an entry no command claimed
// within stageTTL (its leader died before proposing) is discarded.
type stages struct {
	mu sync.Mutex
	m  map[uint64]*stageEntry

	// found holds the runs of records an unclean end left (recover.go),
	// from start until stageTTL later.
	found     *objstore.Found
	foundDone time.Time // when the expiry first saw found's scan ended
	// taken holds the bytes takeFound handed out and their apply has not
	// settled (installed, or put back): found stays open meanwhile, so
	// that MayHold still answers for them.
	taken map[*objstore.Staged]bool
}

type stageEntry struct {
	done     chan struct{} // closed when staged or err is set
	staged   *objstore.Staged
	err      error
	created  time.Time
	received atomic.Int64 // bytes arrived so far (progress while not done)
}

// countingReader counts what a push has delivered into its entry.
type countingReader struct {
	r io.Reader
	e *stageEntry
}

func (c countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.e.received.Add(int64(n))
	return n, err
}

// stageTTL bounds how long unclaimed bytes stay pinned against vacuum.
const stageTTL = 10 * time.Minute

func newStages() *stages { return &stages{m: map[uint64]*stageEntry{}} }

// begin registers bytes arriving under id, so an apply can wait for them.
func (s *stages) begin(id uint64) *stageEntry {
	e := &stageEntry{done: make(chan struct{}), created: time.Now()}
	s.mu.Lock()
	defer s.mu.Unlock()
	if old := s.m[id]; old != nil {
		// A second push of the same id (a retry): keep the first.
		return nil
	}
	s.m[id] = e
	return e
}

func (s *stages) finish(id uint64, e *stageEntry, st *objstore.Staged, err error) {
	e.staged, e.err = st, err
	close(e.done)
	if err != nil {
		s.mu.Lock()
		if s.m[id] == e {
			delete(s.m, id)
		}
		s.mu.Unlock()
	}
}

// take removes and returns the bytes staged under id, waiting for bytes
// still arriving as long as they make progress (some arrive within every
// stall period); nil if there are none, or they stopped coming.
func (s *stages) take(ctx context.Context, id uint64, stall time.Duration) *objstore.Staged {
	s.mu.Lock()
	e := s.m[id]
	s.mu.Unlock()
	if e == nil {
		return nil
	}
	t := time.NewTicker(max(stall, time.Millisecond))
	defer t.Stop()
	for last := int64(-1); ; {
		select {
		case <-e.done:
		case <-t.C:
			if got := e.received.Load(); got != last {
				last = got
				continue
			}
			return nil
		case <-ctx.Done():
			return nil
		}
		break
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m[id] != e || e.staged == nil {
		return nil
	}
	delete(s.m, id)
	return e.staged
}

// has reports whether bytes under id are arriving or staged.
func (s *stages) has(id uint64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m[id] != nil
}

// peek returns the bytes staged under id without claiming them.
func (s *stages) peek(id uint64) *objstore.Staged {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.m[id]
	if e == nil {
		return nil
	}
	select {
	case <-e.done:
		return e.staged
	default:
		return nil
	}
}

// adopt keeps what the scan at start found, for stageTTL.
func (s *stages) adopt(f *objstore.Found) {
	if f == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.found, s.foundDone = f, time.Time{}
}

// foundNow returns what the scan at start found, if it is still kept.
func (s *stages) foundNow() *objstore.Found {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.found
}

// closeFound closes found if it is still the one kept and no bytes it
// handed out wait to be installed (false: try again later).
func (s *stages) closeFound(found *objstore.Found) bool {
	s.mu.Lock()
	if s.found != found {
		s.mu.Unlock()
		return true
	}
	if len(s.taken) > 0 {
		s.mu.Unlock()
		return false
	}
	s.found = nil
	s.mu.Unlock()
	found.Close()
	return true
}

// settled says the apply is done with st (installed it, or put it back):
// if takeFound handed it out, found may close now.
func (s *stages) settled(st *objstore.Staged) {
	s.mu.Lock()
	delete(s.taken, st)
	s.mu.Unlock()
}

// putBack keeps st, bytes an apply got and could not install (its store
// failed), under stage id for the apply's retry: they are not discarded,
// so a node never lacks bytes it held because one install failed.
func (s *stages) putBack(id uint64, st *objstore.Staged) {
	if e := s.begin(id); e != nil {
		s.finish(id, e, st, nil)
		return
	}
	st.Discard() // an entry under that id came meanwhile: it serves the retry
}

// expire discards what no command claimed in time. applyWaits keeps
// what the scan after an unclean end found, whatever its age: the apply
// waits for bytes, which may be among them (a command it has not reached
// yet may need others).
func (s *stages) expire(now time.Time, applyWaits bool) {
	s.mu.Lock()
	var found *objstore.Found
	// Counted from the scan's end, not its start: runs a long scan found
	// are kept stageTTL for the commands that need them, whose applies
	// take them as soon as it ends.
	if s.found != nil && s.found.Done() {
		if s.foundDone.IsZero() {
			s.foundDone = now
		}
		if now.Sub(s.foundDone) > stageTTL && !applyWaits && len(s.taken) == 0 {
			found, s.found = s.found, nil
		}
	}
	var old []*stageEntry
	for id, e := range s.m {
		if applyWaits {
			break // the bytes it waits for may be among them
		}
		select {
		case <-e.done:
		default:
			continue
		}
		if now.Sub(e.created) > stageTTL {
			old = append(old, e)
			delete(s.m, id)
		}
	}
	s.mu.Unlock()
	for _, e := range old {
		if e.staged != nil {
			e.staged.Discard()
		}
	}
	if found != nil {
		found.Close()
	}
}

// discardAll releases every entry (the node is closing).
func (s *stages) discardAll() {
	s.mu.Lock()
	all, found := s.m, s.found
	s.m, s.found = map[uint64]*stageEntry{}, nil
	s.mu.Unlock()
	if found != nil {
		found.Close()
	}
	for _, e := range all {
		<-e.done
		if e.staged != nil {
			e.staged.Release() // bytes stay; vacuum finds them unreferenced
		}
	}
}

// Peer HTTP endpoints (on --cluster-address):
//
//	PUT /_b3/v1/stage?stage=&bucket=&key=&version=   body: the bytes
//	    The leader pushes bytes; 200 once they are synced here.
//	GET /_b3/v1/bytes?stage=&bucket=&key=&version=&upload=&part=&index=[&client=1]
//	    A replica that missed bytes asks for them: 200 with the bytes,
//	    410 Gone if this node applied the log past index and no longer holds
//	    them (a later command replaced them: the asker may skip them),
//	    404 if this node has not got that far (ask another, or later).

func refQuery(ref bytesRef) url.Values {
	q := url.Values{}
	q.Set("stage", strconv.FormatUint(ref.Stage, 10))
	q.Set("bucket", ref.Bucket)
	q.Set("key", ref.Key)
	q.Set("version", strconv.FormatUint(ref.Version, 10))
	if ref.UploadID != "" {
		q.Set("upload", ref.UploadID)
		q.Set("part", strconv.Itoa(ref.Part))
	}
	q.Set("index", strconv.FormatUint(ref.Index, 10))
	if ref.want != nil {
		// What the bytes must be: a peer that may hold them among those
		// its unclean end left tells them by these (foundMayHold).
		q.Set("size", strconv.FormatInt(ref.want.size, 10))
		if ref.want.md5 != nil {
			q.Set("md5", hex.EncodeToString(ref.want.md5))
		}
	}
	return q
}

func parseRef(q url.Values) (bytesRef, error) {
	var ref bytesRef
	var err error
	num := func(name string) uint64 {
		if err != nil || q.Get(name) == "" {
			return 0
		}
		var v uint64
		v, err = strconv.ParseUint(q.Get(name), 10, 64)
		return v
	}
	ref.Stage, ref.Version, ref.Index = num("stage"), num("version"), num("index")
	ref.Part = int(num("part"))
	ref.Bucket, ref.Key, ref.UploadID = q.Get("bucket"), q.Get("key"), q.Get("upload")
	if v := q.Get("size"); v != "" && err == nil {
		size, perr := strconv.ParseInt(v, 10, 64)
		if perr != nil {
			return ref, perr
		}
		ref.want = &bodyCheck{size: size}
		if m := q.Get("md5"); m != "" {
			if ref.want.md5, perr = hex.DecodeString(m); perr != nil || len(ref.want.md5) != md5.Size {
				return ref, fmt.Errorf("bad md5 %q", m)
			}
		}
	}
	if err == nil && ref.Bucket == "" {
		err = errors.New("no bucket")
	}
	return ref, err
}

// handleStage receives pushed bytes.
func (n *Node) handleStage(w http.ResponseWriter, r *http.Request) {
	ref, err := parseRef(r.URL.Query())
	if err != nil || ref.Stage == 0 {
		http.Error(w, "bad stage request", http.StatusBadRequest)
		return
	}
	e := n.stages.begin(ref.Stage)
	if e == nil {
		_, _ = io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusOK)
		return
	}
	// The MD5 sum as the bytes arrive: the apply checks it against the
	// command's ETag before it references them (fsm.bytes).
	sum := md5.New()
	st, err := n.store.Stage(r.Context(), ref.Bucket, ref.Key, ref.Version, io.TeeReader(countingReader{r.Body, e}, sum))
	if err == nil && r.ContentLength >= 0 && st.Size != r.ContentLength {
		st.Discard()
		st, err = nil, fmt.Errorf("stage %d: %d bytes of %d", ref.Stage, st.Size, r.ContentLength)
	}
	if err == nil {
		st.MD5 = sum.Sum(nil)
	}
	n.stages.finish(ref.Stage, e, st, err)
	if err != nil {
		n.log.Warn("stage pushed bytes", "stage", ref.Stage, "err", err)
		code := http.StatusInternalServerError
		if errors.Is(err, objstore.ErrStorageFull) {
			// Within the reserve: the leader counts this node absent for
			// this write, and this node fetches the bytes once it has room.
			code = http.StatusInsufficientStorage
		}
		http.Error(w, err.Error(), code)
		return
	}
	w.WriteHeader(http.StatusOK)
}

// handleBytes serves bytes a replica missed.
func (n *Node) handleBytes(w http.ResponseWriter, r *http.Request) {
	ref, err := parseRef(r.URL.Query())
	if err != nil {
		http.Error(w, "bad bytes request", http.StatusBadRequest)
		return
	}
	prio := iolimit.Background
	if r.URL.Query().Get("client") == "1" {
		prio = iolimit.Foreground // a read waits for these bytes (fill.go)
	}
	ctx := iolimit.WithPriority(r.Context(), prio)
	body, size, hollow, err := n.localBytes(ctx, ref)
	if err == nil && body == nil {
		switch {
		case n.fsm.applied.Load() >= ref.Index && !hollow:
			http.Error(w, "gone", http.StatusGone)
			return
		case n.foundMayHold(ref):
			// Not "lacks": the bytes may be among those an unclean end
			// left here, which this node's own apply takes (and then
			// serves) once its scan has ended.
			http.Error(w, errScanning.Error(), http.StatusConflict)
			return
		}
		// Installed since the first look, from found runs that closed
		// meanwhile? Then it holds them.
		body, size, _, err = n.localBytes(ctx, ref)
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	if body == nil {
		http.Error(w, "not yet", http.StatusNotFound)
		return
	}
	defer body.Close()
	w.Header().Set("Content-Length", strconv.FormatInt(size, 10))
	w.WriteHeader(http.StatusOK)
	_, _ = io.Copy(w, body)
}

// errGone says every peer that got past a command no longer holds its
// bytes: a later command replaced them.
var errGone = errors.New("cluster: bytes superseded")

// errScanning: the peer may hold the bytes among those its unclean end
// left (objstore.Found), still being scanned or not yet taken.
var errScanning = errors.New("may hold them: they may be among the bytes its unclean end left, which it is looking through")

// foundMayHold reports whether the scan after this node's unclean end may
// hold the bytes of ref (objstore.Found.MayHold).
func (n *Node) foundMayHold(ref bytesRef) bool {
	found := n.stages.foundNow()
	if found == nil {
		return false
	}
	var size int64 = -1
	var sum []byte
	if ref.want != nil {
		size, sum = ref.want.size, ref.want.md5
	}
	return found.MayHold(n.closing, objstore.StagedID{Bucket: ref.Bucket, Key: ref.Key, Version: ref.Version}, size, sum)
}

// localBytes opens the bytes of ref this node holds: staged under its
// stage id, or referenced by the part or object version it names. body is
// nil if it holds none; hollow says the record is there without its bytes
// (restored so: not here yet, fill.go).
func (n *Node) localBytes(ctx context.Context, ref bytesRef) (body io.ReadCloser, size int64, hollow bool, err error) {
	switch st := n.stages.peek(ref.Stage); {
	case ref.Stage != 0 && st != nil:
		body, err = n.store.ReadExtents(ctx, ref.Bucket, ref.Key, ref.Version, st.Extents, st.Size)
		return body, st.Size, false, err
	case ref.UploadID != "":
		part, perr := n.store.Meta().GetPart(ref.UploadID, ref.Part)
		if hollow = perr == nil && objstore.HollowPart(part); perr != nil || hollow {
			return nil, 0, hollow, nil
		}
		body, err = n.store.ReadExtents(ctx, ref.Bucket, ref.Key, ref.Version, part.Extents, part.Size)
		return body, part.Size, false, err
	}
	obj, oerr := n.store.Meta().GetObject(ref.Bucket, ref.Key)
	if oerr != nil || obj.Version != ref.Version {
		// Noncurrent now, in a bucket with versioning.
		obj, oerr = n.store.Meta().GetVersion(ref.Bucket, ref.Key, ref.Version)
	}
	if hollow = oerr == nil && objstore.Hollow(obj); oerr != nil || obj.DeleteMarker || hollow {
		return nil, 0, hollow, nil
	}
	if obj.Inline != nil {
		return io.NopCloser(bytes.NewReader(obj.Inline)), obj.Size, false, nil
	}
	body, err = n.store.ReadExtents(ctx, obj.Bucket, obj.Key, obj.Version, obj.Extents, obj.Size)
	return body, obj.Size, false, err
}

// errNotYet: the peer has not applied the command, or holds its record
// without the bytes (restored hollow, or declared lost and not yet removed).
var errNotYet = errors.New("does not hold them (not yet)")

// localFault is a failure of this node's own disk while it wrote bytes a
// peer gave (full: within the reserve; or an I/O error). It says nothing
// of the peer except that it holds the bytes: it is never reported, or
// counted, as the peer's answer.
type localFault struct{ err error }

func (e *localFault) Error() string {
	return "it holds them; this node could not write them: " + e.err.Error()
}

func (e *localFault) Unwrap() error { return e.err }

// fetch gets the bytes of ref from a peer into this node's segments,
// asking the leader first, then the others, until one has them, one says
// they are gone, or ctx ends. It runs inside the log's apply, so it keeps
// trying: the apply of later commands waits for it.
func (n *Node) fetch(ctx context.Context, ref bytesRef) (*objstore.Staged, error) {
	return n.fetchWatched(ctx, ref, nil)
}

// fetchWatched is fetch; after each round in which no peer gave the
// bytes it calls missed (if not nil) with every peer's answer.
func (n *Node) fetchWatched(ctx context.Context, ref bytesRef, missed func([]peerAnswer)) (*objstore.Staged, error) {
	backoff := 50 * time.Millisecond
	for attempt := 0; ; attempt++ {
		var answers []peerAnswer
		for _, peer := range n.peersLeaderFirst() {
			st, err := n.fetchFrom(ctx, peer, ref, nil)
			if err == nil || errors.Is(err, errGone) {
				return st, err
			}
			answers = append(answers, peerAnswer{Address: peer, Err: err})
			if attempt%20 == 0 {
				n.log.Info("fetch missed bytes", "peer", peer, "stage", ref.Stage, "bucket", ref.Bucket, "key", ref.Key, "err", err)
			}
			var local *localFault
			if errors.As(err, &local) {
				// The bytes are there; this disk is what fails. Another
				// peer's copy would land no better: wait, and retry.
				break
			}
		}
		if missed != nil && ctx.Err() == nil {
			missed(answers)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, 2*time.Second)
	}
}

// fetchFrom gets the bytes of ref from peer, counting what arrives into e
// (if not nil: a prefetch an apply may be waiting for).
func (n *Node) fetchFrom(ctx context.Context, peer string, ref bytesRef, e *stageEntry) (*objstore.Staged, error) {
	q, prio := refQuery(ref), fetchPriority(ctx)
	if prio == iolimit.Foreground {
		q.Set("client", "1") // a client waits: the peer reads as for one
	}
	u := "http://" + peer + "/_b3/v1/bytes?" + q.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	resp, err := n.peerClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusGone:
		return nil, errGone
	case http.StatusNotFound:
		return nil, fmt.Errorf("peer %s: %w", peer, errNotYet)
	case http.StatusConflict:
		return nil, fmt.Errorf("peer %s: %w", peer, errScanning)
	default:
		return nil, fmt.Errorf("peer %s: %s", peer, resp.Status)
	}
	bg := iolimit.WithPriority(ctx, prio)
	var body io.Reader = resp.Body
	var sum hash.Hash
	if ref.want != nil && ref.want.md5 != nil {
		sum = md5.New()
		body = io.TeeReader(body, sum)
	}
	if e != nil {
		body = countingReader{body, e}
	}
	st, err := n.store.Stage(bg, ref.Bucket, ref.Key, ref.Version, body)
	if err != nil {
		if ctx.Err() == nil && isLocalFault(err) {
			return nil, fmt.Errorf("peer %s: %w", peer, &localFault{err})
		}
		return nil, err
	}
	if resp.ContentLength >= 0 && st.Size != resp.ContentLength {
		st.Discard()
		return nil, fmt.Errorf("peer %s: %d bytes of %d", peer, st.Size, resp.ContentLength)
	}
	// A record never references bytes other than its command's: a peer
	// that serves another version's, or corrupted ones, is refused, and
	// the fetch asks the next.
	var got []byte
	if sum != nil {
		got = sum.Sum(nil)
	}
	if err := ref.want.verify(st.Size, got); err != nil {
		st.Discard()
		n.log.Warn("refused bytes a peer gave", "peer", peer, "bucket", ref.Bucket, "key", ref.Key, "version", ref.Version, "index", ref.Index, "err", err)
		return nil, fmt.Errorf("peer %s: %w", peer, err)
	}
	return st, nil
}

// push sends staged bytes to the followers and returns once need of them
// have them durable (or fewer can: then an error). The pushes to the
// others go on in the background.
func (n *Node) push(ctx context.Context, ref bytesRef, st *objstore.Staged, need int) error {
	peers := n.followers()
	results := make(chan error, len(peers))
	for _, peer := range peers {
		if !n.pushes.add() {
			results <- errClosed
			continue
		}
		n.pending.Add(st.Size)
		go func() {
			defer n.pushes.done()
			defer n.pending.Add(-st.Size)
			// Detached from the request (a push the client no longer
			// waits for still spares the follower a fetch), not from the
			// node: closing ends it.
			pctx, cancel := context.WithTimeout(n.closing, pushTimeout(st.Size))
			defer cancel()
			results <- n.pushTo(pctx, peer, ref, st)
		}()
	}
	return n.awaitAcks(ctx, results, len(peers), need)
}

// pushTimeout allows a slow disk 5 MB/s plus a fixed margin.
func pushTimeout(size int64) time.Duration {
	return 10*time.Second + time.Duration(size/(5<<20))*time.Second
}

func (n *Node) pushTo(ctx context.Context, peer string, ref bytesRef, st *objstore.Staged) error {
	body, err := n.store.ReadExtents(ctx, ref.Bucket, ref.Key, ref.Version, st.Extents, st.Size)
	if err != nil {
		return err
	}
	defer body.Close()
	return n.sendStage(ctx, peer, ref, body, st.Size)
}

// tracker counts background pushes so that the store closes only after
// the last one stopped reading from it.
type tracker struct {
	mu     sync.Mutex
	n      int
	closed bool
	idle   chan struct{} // closed when closed and n reaches 0
}

func (t *tracker) add() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return false
	}
	t.n++
	return true
}

func (t *tracker) done() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.n--
	if t.closed && t.n == 0 {
		close(t.idle)
	}
}

// closeAndWait refuses new work and waits for the running.
func (t *tracker) closeAndWait() {
	t.mu.Lock()
	t.closed = true
	t.idle = make(chan struct{})
	if t.n == 0 {
		close(t.idle)
	}
	idle := t.idle
	t.mu.Unlock()
	<-idle
}

// isLocalFault reports whether err is this node's disk failing it — full
// (the reserve, or the file system itself), read-only, or an I/O error —
// rather than an outcome every replica reaches alike or a peer's doing.
func isLocalFault(err error) bool {
	if errors.Is(err, objstore.ErrStorageFull) {
		return true
	}
	for _, errno := range []syscall.Errno{syscall.ENOSPC, syscall.EDQUOT, syscall.EIO, syscall.EROFS} {
		if errors.Is(err, errno) {
			return true
		}
	}
	return false
}
