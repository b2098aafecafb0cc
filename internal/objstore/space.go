package objstore

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	pvfs "github.com/cockroachdb/pebble/v2/vfs"

	"github.com/b3-storage/b3/internal/blob"
	"github.com/b3-storage/b3/internal/vfs"
)

// ErrStorageFull refuses a write because a disk the store writes to has less
// free space than the reserve (Options.MinFreeBytes).
var ErrStorageFull = errors.New("objstore: not enough free disk space")

// spaceRefresh is how old the free-space figure may grow before a write
// asks the filesystems again (one statfs per disk: cheap).
const spaceRefresh = 100 * time.Millisecond

// spaceGuard keeps a reserve of free space on the data and metadata disks.
// New writes are refused with ErrStorageFull once their size would cut into
// it, so that a full disk does not fail a write half way: a failed segment
// write stops the blob store until space is back (admitWrite), and a full metadata disk stops
// pebble. Deletes and vacuum are never refused; they need a little space to
// free a lot, and the reserve is theirs.
//
// Invariant: free - pending is what the guard believes is left, where
// pending counts every byte admitted (Reserve) to a write still running.
// Admitted writes are thus counted twice while their bytes land (once in
// pending, once as used space in the next statfs): the guard errs on the
// side of refusing.
type spaceGuard struct {
	reserve int64
	probes  []*spaceProbe
	log     *slog.Logger
	epoch   time.Time // monotonic base of checked

	mu      sync.Mutex   // serialises refreshes; guards probe.failing
	checked atomic.Int64 // time of the last refresh, in nanoseconds since epoch
	free    atomic.Int64 // least free bytes over the probes, at the last refresh
	pending atomic.Int64 // bytes admitted to writes still running
	full    atomic.Bool  // the last refresh found less than the reserve (for logging)
}

type spaceProbe struct {
	dir     string
	free    func() (int64, error)
	failing bool
}

// newSpaceGuard returns a guard over the disks that report their free space
// (the real disk does; in-memory test filesystems do not), or nil when
// reserve is 0 or no disk reports.
func newSpaceGuard(opts Options, log *slog.Logger) *spaceGuard {
	if opts.MinFreeBytes <= 0 {
		return nil
	}
	g := &spaceGuard{reserve: opts.MinFreeBytes, log: log, epoch: time.Now()}
	var probes []*spaceProbe
	if r, ok := opts.FS.(vfs.SpaceReporter); ok {
		dir := opts.DataDir
		probes = append(probes, &spaceProbe{dir: dir, free: func() (int64, error) { return r.FreeSpace(dir) }})
	}
	dir := opts.MetaDir
	probes = append(probes, &spaceProbe{dir: dir, free: func() (int64, error) {
		u, err := opts.MetaFS.GetDiskUsage(dir)
		return int64(u.AvailBytes), err
	}})
	for _, p := range probes {
		_, err := p.free()
		switch {
		case err == nil:
			g.probes = append(g.probes, p)
		case !errors.Is(err, pvfs.ErrUnsupported):
			log.Warn("cannot read free disk space: the free-space reserve is not enforced there", "dir", p.dir, "err", err)
		}
	}
	if len(g.probes) == 0 {
		return nil
	}
	g.refresh()
	return g
}

// admit returns ErrStorageFull if writing size more bytes (0 when unknown)
// would leave less than the reserve free. A nil guard admits everything.
func (g *spaceGuard) admit(size int64) error {
	if g == nil {
		return nil
	}
	if time.Since(g.epoch).Nanoseconds()-g.checked.Load() > int64(spaceRefresh) {
		g.refresh()
	}
	size = max(size, 0)
	if left := g.free.Load() - g.pending.Load(); left-size < g.reserve {
		return fmt.Errorf("%w: %d bytes free after writes in progress, %d requested, reserve %d",
			ErrStorageFull, left, size, g.reserve)
	}
	return nil
}

// take admits size bytes and counts them as pending until release is
// called (once, when the write has ended, stored or not).
func (g *spaceGuard) take(size int64) (release func(), err error) {
	if g == nil || size <= 0 {
		return func() {}, g.admit(0)
	}
	if err := g.admit(size); err != nil {
		return nil, err
	}
	g.pending.Add(size)
	var once sync.Once
	return func() { once.Do(func() { g.pending.Add(-size) }) }, nil
}

// refresh asks every disk for its free space. Concurrent callers skip it
// while one runs and use the previous figure. A disk that cannot answer
// keeps its last figure out of the minimum (logged when it starts and stops
// failing); if none answers, the previous figure stays.
func (g *spaceGuard) refresh() {
	if !g.mu.TryLock() {
		return
	}
	defer g.mu.Unlock()
	least, lowDir, answered := int64(0), "", false
	for _, p := range g.probes {
		free, err := p.free()
		if err != nil {
			if !p.failing {
				g.log.Warn("cannot read free disk space", "dir", p.dir, "err", err)
			}
			p.failing = true
			continue
		}
		if p.failing {
			g.log.Info("free disk space readable again", "dir", p.dir)
			p.failing = false
		}
		if !answered || free < least {
			least, lowDir, answered = free, p.dir, true
		}
	}
	g.checked.Store(time.Since(g.epoch).Nanoseconds())
	if !answered {
		return
	}
	g.free.Store(least)
	full := least < g.reserve
	if g.full.Swap(full) != full {
		if full {
			g.log.Error("disk below its free-space reserve: refusing uploads until space is freed",
				"dir", lowDir, "free_bytes", least, "reserve_bytes", g.reserve)
		} else {
			g.log.Info("disk back above its free-space reserve: accepting uploads", "free_bytes", least, "reserve_bytes", g.reserve)
		}
	}
}

// freeBytes is the least free space over the guarded disks at the last
// refresh, or -1 without a guard.
func (g *spaceGuard) freeBytes() int64 {
	if g == nil {
		return -1
	}
	return g.free.Load()
}

// Reserve admits a write of size bytes (0 or less if unknown) against the
// free-space reserve, counting them as taken until release is called: the
// S3 layer calls it with the declared length before reading a body, and
// releases when the request ends. It returns ErrStorageFull when the write
// would cut into the reserve. PutObject and PutPart check the reserve
// again (size unknown) for every caller.
func (s *Store) Reserve(size int64) (release func(), err error) { return s.space.take(size) }

// admitWrite admits a write of unknown size against the reserve (see
// spaceGuard) and, once there is room, brings back a blob store that a
// full disk stopped (blob.Store.Recover): a store recovers from ENOSPC
// without a restart as soon as space is freed, by deletes and vacuum or
// by an operator. The write itself then fails or succeeds on its own.
func (s *Store) admitWrite() error {
	if err := s.space.admit(0); err != nil {
		return err
	}
	s.recoverBlob()
	return nil
}

// recoverBlob calls blob.Store.Recover if a full disk stopped the blob
// store, at most once per recoverEvery. Vacuum calls it too, before the
// reserve allows writes again: the reserve is its (see spaceGuard).
func (s *Store) recoverBlob() {
	if f := s.blob.Failure(); f == nil || !blob.IsNoSpace(f) {
		return
	}
	now := time.Now().UnixNano()
	last := s.lastRecover.Load()
	if now-last < int64(recoverEvery) || !s.lastRecover.CompareAndSwap(last, now) {
		return
	}
	if err := s.blob.Recover(); err != nil {
		s.log.Warn("the data disk is still full: writes stay refused", "err", err)
		return
	}
	s.log.Info("the data disk has room again: accepting writes")
}

// recoverEvery spaces attempts to bring back a blob store a full disk
// stopped: each cuts and syncs a segment.
const recoverEvery = time.Second

// FreeBytes reports the least free space over the data and metadata disks
// as last measured, or -1 when no reserve is configured.
func (s *Store) FreeBytes() int64 { return s.space.freeBytes() }
