package objstore

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"log/slog"
	"math/rand/v2"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	pvfs "github.com/cockroachdb/pebble/v2/vfs"

	"github.com/b3-storage/b3/internal/blob"
	"github.com/b3-storage/b3/internal/cache"
	"github.com/b3-storage/b3/internal/iolimit"
	"github.com/b3-storage/b3/internal/keylock"
	"github.com/b3-storage/b3/internal/meta"
	"github.com/b3-storage/b3/internal/vfs"
)

// Errors returned by the store. The S3 layer maps them to S3 error codes.
var (
	ErrNoSuchBucket     = errors.New("objstore: no such bucket")
	ErrBucketExists     = errors.New("objstore: bucket already exists")
	ErrBucketNotEmpty   = errors.New("objstore: bucket not empty")
	ErrNoSuchKey        = errors.New("objstore: no such key")
	ErrNoSuchUpload     = errors.New("objstore: no such upload")
	ErrVacuumInProgress = errors.New("objstore: vacuum already running")
)

// Options configure a Store. Zero values pick the defaults noted.
type Options struct {
	// MetaDir holds the pebble metadata store (put it on SSD); DataDir holds
	// the segment files (HDD is fine: they are written sequentially).
	MetaDir, DataDir string
	// FS and MetaFS are the disks for segments and metadata. Default: the
	// real disk, with files and directories private to the user (0600,
	// 0700). Tests pass one crashable in-memory filesystem for both.
	FS     vfs.FS
	MetaFS pvfs.FS
	// Sync is the durability policy (blob.SyncBatch by default).
	Sync blob.SyncPolicy
	// SegmentSize, ChunkSize and DirectIO are passed to blob.
	SegmentSize int64
	ChunkSize   int
	DirectIO    bool
	// Limiter throttles disk I/O; nil means unlimited.
	Limiter *iolimit.Limiter
	// VacuumThreshold is the dead/size ratio from which a sealed segment is
	// vacuumed. Default 0.5.
	VacuumThreshold float64
	Logger          *slog.Logger
	// LifecycleDay is the length of a lifecycle "day" (default 24h). A
	// short one (say 1s) is a debug and test aid: rules then count days in
	// it, exactly, without rounding to midnight.
	LifecycleDay time.Duration
	// Cache, if set, serves small objects from memory (see package cache).
	Cache *ObjectCache
	// Now is the clock of expiry decisions (default time.Now).
	Now func() time.Time
	// InlineMax is the largest object kept inside its metadata record
	// instead of the segments: one durable write (the metadata WAL's)
	// instead of two, and no segment space to vacuum later. 0 keeps every
	// object in the segments; at most MaxInline.
	InlineMax int64
	// MinFreeBytes is the free-space reserve: uploads are refused with
	// ErrStorageFull when they would leave less free on the data or the
	// metadata disk (see spaceGuard). 0 disables the check.
	MinFreeBytes int64
}

// MaxInline bounds Options.InlineMax: every PUT buffers up to InlineMax
// bytes, and pebble is made for small values.
const MaxInline = 1 << 20

// ObjectCache caches small objects: the record and the whole payload,
// keyed by bucket/key.
type ObjectCache = cache.Cache[CachedObject]

// CachedObject is one cache entry.
type CachedObject struct {
	Obj  *meta.Object
	Data []byte
}

// Store is an object store over one metadata index and one segment store.
// It is safe for concurrent use.
type Store struct {
	opts Options
	log  *slog.Logger
	blob *blob.Store
	meta *meta.DB

	seed       maphash.Seed
	keys       *keylock.Locks   // a key's lock: every change of its records
	bucketLock [64]sync.RWMutex // striped by bucket: writers share, DeleteBucket excludes
	buckets    sync.Map         // name -> *meta.Bucket; see GetBucket

	deadMu sync.Mutex
	dead   map[uint64]int64 // segment -> dead bytes; mirrors the persisted counters

	// closing is cancelled by Close, ending background and manual passes.
	closing     context.Context
	stopClosing context.CancelFunc

	inflight    inflightWrites
	orphans     orphanBooks
	stageTag    atomic.Uint32 // the last tag Stage gave (see nextStageTag)
	vacuum      vacuumState
	lc          lifecycleState
	cache       *ObjectCache
	space       *spaceGuard
	lastRecover atomic.Int64 // unix nanos of the last blob.Recover attempt (admitWrite)
}

// Open opens (creating if needed) the store described by opts, recovering
// from a crash if the last run did not close cleanly.
func Open(opts Options) (*Store, error) {
	if opts.FS == nil {
		opts.FS = vfs.Default
	}
	if opts.MetaFS == nil {
		opts.MetaFS = vfs.PrivateDisk()
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.VacuumThreshold <= 0 {
		opts.VacuumThreshold = 0.5
	}
	if opts.InlineMax > MaxInline {
		return nil, fmt.Errorf("objstore: inline maximum %d above %d", opts.InlineMax, MaxInline)
	}
	s := &Store{opts: opts, log: opts.Logger, seed: maphash.MakeSeed(), keys: keylock.New(), dead: map[uint64]int64{}, cache: opts.Cache}
	s.stageTag.Store(rand.Uint32())
	s.closing, s.stopClosing = context.WithCancel(context.Background())
	var limiter blob.IOLimiter
	if opts.Limiter != nil {
		limiter = opts.Limiter
	}
	var err error
	s.blob, err = blob.Open(blob.Options{
		FS:          opts.FS,
		Dir:         opts.DataDir,
		SegmentSize: opts.SegmentSize,
		ChunkSize:   opts.ChunkSize,
		Sync:        opts.Sync,
		DirectIO:    opts.DirectIO,
		Limiter:     limiter,
		Logger:      opts.Logger,
	})
	if err != nil {
		return nil, fmt.Errorf("open segments in %s: %w", opts.DataDir, err)
	}
	// Pebble syncs what it creates inside its directory, not the entries
	// of a freshly created path leading to it.
	if err := vfs.MkdirAllDurable(vfs.Pebble(opts.MetaFS), opts.MetaDir); err != nil {
		s.blob.Close()
		return nil, fmt.Errorf("create metadata directory %s: %w", opts.MetaDir, err)
	}
	s.meta, err = meta.Open(meta.Options{
		FS:     opts.MetaFS,
		Dir:    opts.MetaDir,
		Sync:   opts.Sync != blob.SyncNone,
		Logger: opts.Logger,
	})
	if err != nil {
		s.blob.Close()
		return nil, fmt.Errorf("open metadata in %s: %w", opts.MetaDir, err)
	}
	if err := s.loadDeadCounters(); err != nil {
		s.Close()
		return nil, err
	}
	if err := s.openOrphanBooks(); err != nil {
		s.Close()
		return nil, err
	}
	s.space = newSpaceGuard(opts, opts.Logger)
	return s, nil
}

// loadDeadCounters reads the persisted dead-byte counters and drops those of
// segments that no longer exist (a crash between removing a segment file and
// deleting its counter leaves one behind).
func (s *Store) loadDeadCounters() error {
	dead, err := s.meta.DeadBytes()
	if err != nil {
		return fmt.Errorf("load dead-byte counters: %w", err)
	}
	exists := map[uint64]bool{}
	for _, seg := range s.blob.Segments() {
		exists[seg.ID] = true
	}
	b := s.meta.NewBatch()
	defer b.Close()
	stale := false
	for id, n := range dead {
		if !exists[id] {
			b.DeleteSegmentCounter(id)
			stale = true
			continue
		}
		s.dead[id] = n
	}
	if stale {
		return b.Commit()
	}
	return nil
}

// Close stops vacuum and closes both stores. Every acknowledged write is
// already durable; Close makes the rest so too.
func (s *Store) Close() error {
	s.stopClosing()
	s.StopLifecycle()
	s.StopVacuum()
	var errs []error
	if s.meta != nil {
		if s.orphans.floor > 0 { // Open got that far
			errs = append(errs, s.closeOrphanBooks())
		}
		errs = append(errs, s.meta.Close())
	}
	if s.blob != nil {
		errs = append(errs, s.blob.Close())
	}
	return errors.Join(errs...)
}

// Meta exposes the metadata index for read-only queries (listing).
func (s *Store) Meta() *meta.DB { return s.meta }

// Blob exposes the segment store for statistics.
func (s *Store) Blob() *blob.Store { return s.blob }

// ownerKey names the owner of a key's records: bucket, 0x00, key. Bucket
// names never contain 0x00, so the split is unambiguous.
func ownerKey(bucket, key string) []byte {
	k := make([]byte, 0, len(bucket)+1+len(key))
	k = append(k, bucket...)
	k = append(k, 0)
	return append(k, key...)
}

func splitOwnerKey(k []byte) (bucket, key string, ok bool) {
	for i, c := range k {
		if c == 0 {
			return string(k[:i]), string(k[i+1:]), true
		}
	}
	return "", "", false
}

// lockKey takes the lock that serialises every change of one key's records.
func (s *Store) lockKey(bucket, key string) func() { return s.keys.Lock(bucket, key) }

func (s *Store) bucketMutex(bucket string) *sync.RWMutex {
	return &s.bucketLock[maphash.String(s.seed, bucket)%uint64(len(s.bucketLock))]
}

// addDead counts extents' bytes dead in b; noteDead mirrors a committed
// batch's counts in memory.
func addDead(b *meta.Batch, exts []meta.Extent, into map[uint64]int64) {
	for _, e := range exts {
		b.AddDead(e.Segment, e.Length)
		into[e.Segment] += e.Length
	}
}

func (s *Store) noteDead(counts map[uint64]int64) {
	s.deadMu.Lock()
	for id, n := range counts {
		s.dead[id] += n
	}
	s.deadMu.Unlock()
}

// discard counts the extents of a write that will never be referenced
// (failed upload, rejected checksum, lost precondition) as dead.
func (s *Store) discard(exts []blob.Extent) {
	if len(exts) == 0 {
		return
	}
	// Only bytes that stay: a full disk's recovery cuts the rest
	// (blob.Store.Surviving).
	if exts = s.blob.Surviving(exts); len(exts) == 0 {
		return
	}
	b := s.meta.NewBatch()
	defer b.Close()
	counts := map[uint64]int64{}
	addDead(b, toMeta(exts), counts)
	if err := b.Commit(); err != nil {
		// Not fatal: the bytes are unreferenced, so vacuum never copies
		// them; they count dead only once vacuum rewrites the segment for
		// its other dead bytes (a failed metadata commit usually ends the
		// run uncleanly, and the next run's audit counts them).
		s.log.Warn("count discarded extents dead", "err", err)
		return
	}
	s.noteDead(counts)
}

func toMeta(exts []blob.Extent) []meta.Extent {
	out := make([]meta.Extent, len(exts))
	for i, e := range exts {
		out[i] = meta.Extent{Segment: e.Segment, Offset: e.Offset, Length: e.Length, Size: e.Size}
	}
	return out
}

func toBlob(exts []meta.Extent) []blob.Extent {
	out := make([]blob.Extent, len(exts))
	for i, e := range exts {
		out[i] = blob.Extent{Segment: e.Segment, Offset: e.Offset, Length: e.Length, Size: e.Size}
	}
	return out
}

// DefaultDirs returns the default metadata and data directories under root.
func DefaultDirs(root string) (metaDir, dataDir string) {
	return filepath.Join(root, "meta"), filepath.Join(root, "segments")
}
