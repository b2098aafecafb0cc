package objstore

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

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
// it, so the disk never fills under a write in progress: a failed segment
// write stops the blob store until restart, and a full metadata disk stops
// pebble. Deletes and vacuum are never refused; they need a little space to
// free a lot, and the reserve is theirs.
type spaceGuard struct {
	reserve int64
	probes  []spaceProbe
	log     *slog.Logger

	mu      sync.Mutex   // serialises refreshes
	checked atomic.Int64 // unix nanoseconds of the last refresh
	free    atomic.Int64 // least free bytes over the probes, at the last refresh
	full    atomic.Bool  // last refresh found less than the reserve (for logging)
}

type spaceProbe struct {
	dir  string
	free func() (int64, error)
}

// newSpaceGuard returns a guard over the disks that report their free space
// (the real disk does; in-memory test filesystems do not), or nil when
// reserve is 0 or no disk reports.
func newSpaceGuard(opts Options, log *slog.Logger) *spaceGuard {
	if opts.MinFreeBytes <= 0 {
		return nil
	}
	g := &spaceGuard{reserve: opts.MinFreeBytes, log: log}
	var probes []spaceProbe
	if r, ok := opts.FS.(vfs.SpaceReporter); ok {
		dir := opts.DataDir
		probes = append(probes, spaceProbe{dir, func() (int64, error) { return r.FreeSpace(dir) }})
	}
	dir := opts.MetaDir
	probes = append(probes, spaceProbe{dir, func() (int64, error) {
		u, err := opts.MetaFS.GetDiskUsage(dir)
		return int64(u.AvailBytes), err
	}})
	for _, p := range probes {
		if _, err := p.free(); err == nil {
			g.probes = append(g.probes, p)
		}
	}
	if len(g.probes) == 0 {
		return nil
	}
	g.refresh(time.Now())
	return g
}

// admit returns ErrStorageFull if writing size more bytes (0 when unknown)
// would leave less than the reserve free. A nil guard admits everything.
func (g *spaceGuard) admit(size int64) error {
	if g == nil {
		return nil
	}
	if now := time.Now(); now.UnixNano()-g.checked.Load() > int64(spaceRefresh) {
		g.refresh(now)
	}
	if free := g.free.Load(); free-max(size, 0) < g.reserve {
		return fmt.Errorf("%w: %d bytes free, %d requested, reserve %d", ErrStorageFull, free, max(size, 0), g.reserve)
	}
	return nil
}

// refresh asks every disk for its free space. Concurrent callers skip it
// while one runs and use the previous figure. A disk that cannot answer is
// left out: the guard protects, it does not fail writes on its own errors.
func (g *spaceGuard) refresh(now time.Time) {
	if !g.mu.TryLock() {
		return
	}
	defer g.mu.Unlock()
	least, lowDir := int64(1<<62), ""
	for _, p := range g.probes {
		free, err := p.free()
		if err != nil {
			g.log.Warn("cannot read free disk space", "dir", p.dir, "err", err)
			continue
		}
		if free < least {
			least, lowDir = free, p.dir
		}
	}
	g.free.Store(least)
	g.checked.Store(now.UnixNano())
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

// Admit returns ErrStorageFull when a write of size bytes (0 if unknown)
// would cut into the free-space reserve. The S3 layer calls it with the
// declared length before reading a body; PutObject and PutPart check it
// again (size unknown) for every caller.
func (s *Store) Admit(size int64) error { return s.space.admit(size) }

// FreeBytes reports the least free space over the data and metadata disks
// as last measured, or -1 when no reserve is configured.
func (s *Store) FreeBytes() int64 { return s.space.freeBytes() }
