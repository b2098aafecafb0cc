package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/b3-storage/b3/internal/iolimit"
	"github.com/b3-storage/b3/internal/meta"
	"github.com/b3-storage/b3/internal/objstore"
	"github.com/b3-storage/b3/internal/server"
)

// Filling records restored without their bytes.
//
// Raft calls the state machine's Restore on its main loop when it
// installs a snapshot sent by the leader (and inside NewRaft at a start):
// while Restore runs, the node answers no AppendEntries, applies nothing
// and the leader's replication to it waits. A snapshot holds records, not
// bytes, and the bytes may be gigabytes, so Restore installs the records
// only: one whose bytes the node lacks is hollow (objstore.Hollow: no
// extents, a size). The filler then fetches those bytes from the peers,
// outside raft, restoreParallel at a time, each fetch background I/O
// (Node.fetch: the limiter and the pacer of both nodes), and fills each
// record in (objstore.FillObject, FillPart: only if it is still hollow,
// at that version and size).
//
// Invariants:
//   - No record references bytes the node lacks: a hollow record
//     references none, and says so. A read of a hollow record on the
//     leader fetches its bytes first (Store.OpenObject), a peer asking
//     for them is told "not yet" (404, never "gone"), and a Complete
//     whose parts are hollow fetches the whole object instead
//     (objstore.HasParts counts a hollow part missing).
//   - A node acknowledges a write (a push, sync mode's quorum) only once
//     the write's own bytes are durable here, hollow records or not: the
//     records it restored hollow are older writes, whose bytes were
//     durable on a majority when they were acknowledged, and still are
//     (a node keeps a write's bytes until a later command replaces them).
//   - The fill mark (DATA/restore-fill) exists, synced, from before a
//     restore installs its first record until a pass finds no hollow
//     record left, every fill synced: a node that crashes (or stops)
//     meanwhile resumes the fill at its next start.
//   - A record whose bytes every peer past it no longer holds ("gone")
//     was replaced by a later command, which this node applies next; the
//     filler leaves it hollow and looks again at its next pass.
//   - A member restoring as a non-voter is promoted to voter only once its
//     fill is done (watchMembers): a voter holds the bytes of what it
//     applied, except for the window in which it was a voter already.

// fillMarkFile is the fill mark, in the data directory.
const fillMarkFile = "restore-fill"

// fillRetry is how long the filler waits before another pass when the
// last left records hollow.
const fillRetry = 2 * time.Second

// fetchFunc gets the bytes of ref from a peer into this node's segments
// (Node.fetch); errGone: no peer past ref.Index holds them.
type fetchFunc func(ctx context.Context, ref bytesRef) (*objstore.Staged, error)

// restoreParallel is how many fetches a fill pass runs at once (the
// catch-up prefetcher's bound).
const restoreParallel = prefetchParallel

// filler fetches the bytes of hollow records (see above).
type filler struct {
	store *objstore.Store
	fetch fetchFunc
	// index is the index a fetch asks peers for: this node's last
	// applied (a peer that got past it and no longer holds the bytes
	// answers gone).
	index    func() uint64
	markPath string // "": no mark (tests)
	log      *slog.Logger

	kicked  chan struct{}
	pending atomic.Bool // the mark exists
	fetched atomic.Int64
	// mu orders mark and done: gen counts the marks, and a pass removes
	// the mark only if no restore marked it again since the pass began
	// (its view may predate that restore's hollow records).
	mu  sync.Mutex
	gen uint64
}

func newFiller(store *objstore.Store, fetch fetchFunc, index func() uint64, root string, log *slog.Logger) *filler {
	fl := &filler{store: store, fetch: fetch, index: index, log: log, kicked: make(chan struct{}, 1)}
	if root != "" {
		fl.markPath = filepath.Join(root, fillMarkFile)
		if _, err := os.Stat(fl.markPath); err == nil {
			fl.pending.Store(true)
			fl.kick()
		}
	}
	return fl
}

// mark records, synced, that records may be hollow.
func (fl *filler) mark() error {
	fl.mu.Lock()
	defer fl.mu.Unlock()
	fl.gen++
	fl.pending.Store(true)
	if fl.markPath == "" {
		return nil
	}
	if err := server.WriteFileSync(fl.markPath, []byte("records restored from a snapshot wait for their bytes\n"), 0o600); err != nil {
		return fmt.Errorf("cluster: write the fill mark: %w", err)
	}
	return nil
}

// kick starts a pass soon.
func (fl *filler) kick() {
	select {
	case fl.kicked <- struct{}{}:
	default:
	}
}

// run fills until ctx ends: a pass when kicked, and again every
// fillRetry while records are left.
func (fl *filler) run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-fl.kicked:
		}
		for fl.pending.Load() {
			start, before, gen := time.Now(), fl.fetched.Load(), fl.generation()
			left, err := fl.pass(ctx)
			if ctx.Err() != nil {
				return
			}
			switch {
			case err != nil:
				fl.log.Warn("fill restored records", "err", err)
			case left == 0:
				if ok, err := fl.done(gen); err != nil || !ok {
					if err != nil {
						fl.log.Warn("fill restored records", "err", err)
						break
					}
					continue // restored again meanwhile: another pass
				}
				fl.log.Info("snapshot: every restored record has its bytes", "fetched_bytes", fl.fetched.Load()-before, "took", time.Since(start).Round(time.Millisecond))
				continue
			default:
				fl.log.Info("snapshot: restored records still wait for their bytes (superseded: their replacement is applied next)", "records", left)
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(fillRetry):
			}
		}
	}
}

func (fl *filler) generation() uint64 {
	fl.mu.Lock()
	defer fl.mu.Unlock()
	return fl.gen
}

// done removes the mark after a pass, begun at generation gen, found no
// record hollow; ok false (nothing removed) if a restore marked it since.
func (fl *filler) done(gen uint64) (ok bool, err error) {
	fl.mu.Lock()
	defer fl.mu.Unlock()
	if fl.gen != gen {
		return false, nil
	}
	if fl.markPath != "" {
		if err := os.Remove(fl.markPath); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return false, err
		}
	}
	fl.pending.Store(false)
	return true, nil
}

// pass fetches and fills the bytes of every hollow record it finds (in one
// meta View taken at its start) and returns how many it left hollow.
func (fl *filler) pass(ctx context.Context) (left int, err error) {
	// At most restoreParallel fetches at once; the first error cancels
	// the rest and ends the scan.
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(restoreParallel)
	var gone atomic.Int64 // records left hollow
	fill := func(ref bytesRef, install func(*objstore.Staged) (bool, error)) error {
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		g.Go(func() error {
			if !fl.hollow(ref) {
				return nil // filled (by a read) or replaced since the view
			}
			st, err := fl.fetch(ctx, ref)
			if errors.Is(err, errGone) {
				gone.Add(1)
				return nil
			}
			if err != nil {
				return err
			}
			filled, err := install(st)
			if err != nil || !filled {
				st.Discard() // replaced meanwhile, or another fill was first
				if err == nil && fl.hollow(ref) {
					gone.Add(1) // still hollow (bytes of another size?): left
				}
				return err
			}
			st.Release()
			fl.fetched.Add(st.Size)
			return nil
		})
		return nil
	}
	view := fl.store.Meta().NewView()
	defer view.Close()
	index := fl.index()
	object := func(o *meta.Object) error {
		if !objstore.Hollow(o) {
			return nil
		}
		return fill(bytesRef{Bucket: o.Bucket, Key: o.Key, Version: o.Version, Index: index, want: wantBody(o.Size, o.ETag, o.SSE != nil)}, func(st *objstore.Staged) (bool, error) {
			return fl.store.FillObject(o.Bucket, o.Key, o.Version, st)
		})
	}
	uploads := map[string]*meta.Upload{}
	err = view.ScanObjects(object)
	if err == nil {
		err = view.ScanVersions(object)
	}
	if err == nil {
		err = view.ScanUploads(func(u *meta.Upload) error { uploads[u.UploadID] = u; return nil })
	}
	if err == nil {
		err = view.ScanParts(func(p *meta.Part) error {
			up := uploads[p.UploadID]
			if !objstore.HollowPart(p) || up == nil {
				return nil
			}
			ref := bytesRef{Bucket: up.Bucket, Key: up.Key, Version: up.Version, UploadID: p.UploadID, Part: p.Number, Index: index,
				want: wantBody(p.Size, p.ETag, up.SSE != nil)}
			return fill(ref, func(st *objstore.Staged) (bool, error) {
				return fl.store.FillPart(up.Bucket, up.Key, p.UploadID, p.Number, st)
			})
		})
	}
	if werr := g.Wait(); err == nil {
		err = werr
	}
	return int(gone.Load()), err
}

// OpenObject is objstore's, except that a record restored without its
// bytes is filled first (fetched from a peer), and damaged bytes are
// fetched again (scrub.go): a read never fails for want of bytes a peer
// holds, nor serves other bytes.
// A key of a partition another group owns (a copy's source) is read from
// that group's leader (remote.go), never from records a move left here.
func (s *Store) OpenObject(ctx context.Context, bucket, key string, rng objstore.RangeFunc) (*meta.Object, io.ReadCloser, error) {
	if s.ownerElsewhere(bucket, key) != "" {
		return s.openElsewhere(ctx, bucket, key, "", rng)
	}
	if err := s.node.ownsRead(bucket, key); err != nil {
		return nil, nil, err
	}
	return s.filled(ctx, func() (*meta.Object, io.ReadCloser, error) {
		return s.node.openRepaired(ctx, func() (*meta.Object, error) { return s.Store.HeadObject(bucket, key) },
			func(rng objstore.RangeFunc) (*meta.Object, io.ReadCloser, error) {
				return s.Store.OpenObject(ctx, bucket, key, rng)
			}, rng)
	})
}

// OpenVersion is objstore's, filling a hollow record first (OpenObject).
func (s *Store) OpenVersion(ctx context.Context, bucket, key, versionID string, rng objstore.RangeFunc) (*meta.Object, io.ReadCloser, error) {
	if s.ownerElsewhere(bucket, key) != "" {
		return s.openElsewhere(ctx, bucket, key, versionID, rng)
	}
	if err := s.node.ownsRead(bucket, key); err != nil {
		return nil, nil, err
	}
	return s.filled(ctx, func() (*meta.Object, io.ReadCloser, error) {
		return s.node.openRepaired(ctx, func() (*meta.Object, error) { return s.Store.HeadVersion(bucket, key, versionID) },
			func(rng objstore.RangeFunc) (*meta.Object, io.ReadCloser, error) {
				return s.Store.OpenVersion(ctx, bucket, key, versionID, rng)
			}, rng)
	})
}

// HeadObject is objstore's; a key another group owns is asked of its
// leader (a copy's source, an authorization reading its tags).
func (s *Store) HeadObject(bucket, key string) (*meta.Object, error) {
	if s.ownerElsewhere(bucket, key) != "" {
		return s.recordElsewhere(s.node.closing, remoteRead{Op: "head", Bucket: bucket, Key: key})
	}
	if err := s.node.ownsRead(bucket, key); err != nil {
		return nil, err
	}
	return s.Store.HeadObject(bucket, key)
}

// HeadVersion is objstore's, asking another group's leader as HeadObject.
func (s *Store) HeadVersion(bucket, key, versionID string) (*meta.Object, error) {
	if s.ownerElsewhere(bucket, key) != "" {
		return s.recordElsewhere(s.node.closing, remoteRead{Op: "head", Bucket: bucket, Key: key, VersionID: versionID})
	}
	if err := s.node.ownsRead(bucket, key); err != nil {
		return nil, err
	}
	return s.Store.HeadVersion(bucket, key, versionID)
}

// filled runs open, and while it finds the record hollow fills it and
// runs it again (a few times: the record may be replaced meanwhile).
func (s *Store) filled(ctx context.Context, open func() (*meta.Object, io.ReadCloser, error)) (*meta.Object, io.ReadCloser, error) {
	for attempt := 0; ; attempt++ {
		obj, rc, err := open()
		if !errors.Is(err, objstore.ErrHollow) {
			return obj, rc, err
		}
		if attempt == 3 {
			return nil, nil, fmt.Errorf("%w: %s/%s: restored without its bytes, not filled", errNoQuorum, obj.Bucket, obj.Key)
		}
		fctx, cancel := context.WithTimeout(ctx, applyTimeout)
		err = s.node.fillNow(fctx, obj)
		cancel()
		if err != nil {
			return nil, nil, err
		}
	}
}

// hollow reports whether the record ref names is still hollow (true on
// an error: the fetch and the fill find out).
func (fl *filler) hollow(ref bytesRef) bool {
	db := fl.store.Meta()
	if ref.UploadID != "" {
		p, err := db.GetPart(ref.UploadID, ref.Part)
		return err != nil && !errors.Is(err, meta.ErrNotFound) || err == nil && objstore.HollowPart(p)
	}
	o, err := db.GetObject(ref.Bucket, ref.Key)
	if err == nil && o.Version == ref.Version {
		return objstore.Hollow(o)
	}
	o, err = db.GetVersion(ref.Bucket, ref.Key, ref.Version)
	return err != nil && !errors.Is(err, meta.ErrNotFound) || err == nil && objstore.Hollow(o)
}

// clientFetch marks a fetch's context: a client's read waits for it.
type clientFetch struct{}

// fetchPriority is the I/O class of a fetch on both nodes: background
// (catch-up, fills), or foreground for a fetch a client's read waits for.
func fetchPriority(ctx context.Context) iolimit.Priority {
	if ctx.Value(clientFetch{}) != nil {
		return iolimit.Foreground
	}
	return iolimit.Background
}

// fillNow fills the hollow record obj before a read serves it (on the
// leader, which has applied every committed command: the bytes are on
// the peers that applied obj and are not gone). The fetch is a client's
// I/O on both nodes, not background work: the client waits for it.
func (n *Node) fillNow(ctx context.Context, obj *meta.Object) error {
	ctx = context.WithValue(ctx, clientFetch{}, true)
	st, err := n.fetch(ctx, bytesRef{Bucket: obj.Bucket, Key: obj.Key, Version: obj.Version, Index: n.fsm.applied.Load(), want: wantBody(obj.Size, obj.ETag, obj.SSE != nil)})
	if err != nil {
		return fmt.Errorf("%w: fetch the bytes of %s/%s, restored without them: %v", errNoQuorum, obj.Bucket, obj.Key, err)
	}
	filled, err := n.store.FillObject(obj.Bucket, obj.Key, obj.Version, st)
	if err != nil || !filled {
		st.Discard()
		return err
	}
	st.Release()
	return nil
}
