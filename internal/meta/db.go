package meta

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
	"github.com/cockroachdb/pebble/v2/vfs"

	b3vfs "github.com/b3-storage/b3/internal/vfs"
)

// ErrNotFound is wrapped by Get* errors when the record does not exist.
var ErrNotFound = errors.New("meta: not found")

// schemaVersion is stored under "mformat": the key layout of doc.go and
// the record formats this build may write. A directory written by a future
// version is refused rather than misread. Version 2 added object records
// with an inline payload (format 2); a version-1 directory is valid version
// 2 and is restamped on open, after which older builds refuse it cleanly
// instead of failing on the first inline record they meet. Version 3 added
// the version table ("v") and object and bucket records with versioning
// and Object Lock fields (object format 3, bucket format 2); version-2
// directories are valid version 3 and are restamped the same way. Version
// 4 marks the segments beside it as possibly holding records with a stage
// tag (blob's record format: the top 16 bits of the chunk offset, which
// older builds read as a misplaced record); version-3 directories are
// valid version 4.
const schemaVersion = 4

// DefaultCacheBytes is the block cache size when Options.CacheBytes is 0.
const DefaultCacheBytes = 64 << 20

// Options configures Open.
type Options struct {
	// FS is the filesystem; nil means the real disk, with files 0600 and
	// directories 0700 (b3vfs.PrivateDisk). Tests
	// pass vfs.NewCrashableMem() to cut power at an exact instant.
	FS vfs.FS
	// Dir is the pebble directory; created if missing.
	Dir string
	// Sync commits every batch with pebble.Sync: Commit returns only after
	// the WAL is fsynced (concurrent commits share one fsync). b3's
	// "batch" and "always" durability policies set it.
	Sync bool
	// CacheBytes sizes pebble's block cache; 0 means DefaultCacheBytes.
	CacheBytes int64
	// Logger receives pebble's log lines; nil means slog.Default().
	Logger *slog.Logger
}

// DB is the metadata store. It is safe for concurrent use; there is no
// global lock: reads run on pebble snapshots and batches commit
// concurrently (pebble orders them).
type DB struct {
	pdb   *pebble.DB
	write *pebble.WriteOptions
	log   *slog.Logger

	versions versionAllocator
	closed   atomic.Bool
}

// Open opens or creates the store in o.Dir.
func Open(o Options) (*DB, error) {
	if o.FS == nil {
		o.FS = b3vfs.PrivateDisk()
	}
	if o.CacheBytes <= 0 {
		o.CacheBytes = DefaultCacheBytes
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	log := o.Logger.With("component", "meta")
	cache := pebble.NewCache(o.CacheBytes)
	defer cache.Unref() // the DB holds its own reference
	popts := &pebble.Options{
		FS:                 o.FS,
		Cache:              cache,
		Logger:             pebbleLogger{log},
		Merger:             addMerger,
		FormatMajorVersion: pebble.FormatNewest,
		// Larger memtables absorb write bursts (a PUT is a ~200-byte
		// record) with fewer, larger flushes.
		MemTableSize: 32 << 20,
	}
	// Bloom filters make GetObject on a missing key (a PUT of a new key
	// checks the old version) skip most sstables. Later levels inherit.
	popts.Levels[0].FilterPolicy = bloom.FilterPolicy(10)
	pdb, err := pebble.Open(o.Dir, popts)
	if err != nil {
		return nil, fmt.Errorf("open meta %s: %w", o.Dir, err)
	}
	db := &DB{pdb: pdb, write: pebble.NoSync, log: log}
	if o.Sync {
		db.write = pebble.Sync
	}
	if err := db.checkSchema(); err != nil {
		_ = pdb.Close()
		return nil, err
	}
	if err := db.versions.init(pdb); err != nil {
		_ = pdb.Close()
		return nil, err
	}
	return db, nil
}

// checkSchema stamps a new or older directory with schemaVersion, or
// refuses one stamped by an unknown version.
func (db *DB) checkSchema() error {
	v, closer, err := db.pdb.Get(formatKey)
	switch {
	case errors.Is(err, pebble.ErrNotFound):
	case err != nil:
		return fmt.Errorf("read meta schema version: %w", err)
	default:
		stamp := slices.Clone(v)
		closer.Close()
		if len(stamp) != 1 || stamp[0] < 1 || stamp[0] > schemaVersion {
			return fmt.Errorf("%w: meta schema version %v, this build reads 1 to %d", ErrCorrupt, stamp, schemaVersion)
		}
		if stamp[0] == schemaVersion {
			return nil
		}
	}
	if err := db.pdb.Set(formatKey, []byte{schemaVersion}, pebble.Sync); err != nil {
		return fmt.Errorf("write meta schema version: %w", err)
	}
	return nil
}

// Close releases the store; committed batches are already in the WAL.
// The DB must not be used afterwards; a second Close does nothing.
func (db *DB) Close() error {
	if db.closed.Swap(true) {
		return nil
	}
	if err := db.pdb.Close(); err != nil {
		return fmt.Errorf("close meta: %w", err)
	}
	return nil
}

// get calls decode with the value stored under key, or returns ErrNotFound.
func (db *DB) get(key []byte, decode func(value []byte) error) error {
	return getFrom(db.pdb, key, decode)
}

// getFrom is get on a reader: the DB, or a View's snapshot.
func getFrom(r pebble.Reader, key []byte, decode func(value []byte) error) error {
	v, closer, err := r.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return ErrNotFound
	}
	if err != nil {
		return err
	}
	defer closer.Close()
	return decode(v)
}

// GetBucket returns the bucket record.
func (db *DB) GetBucket(name string) (*Bucket, error) {
	var b *Bucket
	err := db.get(bucketKey(name), func(v []byte) (err error) {
		b, err = decodeBucket(name, v)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("get bucket %q: %w", name, err)
	}
	return b, nil
}

// ListBuckets returns every bucket, ordered by name.
func (db *DB) ListBuckets() ([]Bucket, error) {
	var buckets []Bucket
	err := db.scan([]byte{tableBucket}, func(k, v []byte) error {
		b, err := decodeBucket(string(k[1:]), v)
		if err != nil {
			return err
		}
		buckets = append(buckets, *b)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list buckets: %w", err)
	}
	return buckets, nil
}

// GetObject returns the object record of bucket/key.
func (db *DB) GetObject(bucket, key string) (*Object, error) {
	return getObject(db.pdb, bucket, key)
}

func getObject(r pebble.Reader, bucket, key string) (*Object, error) {
	var o *Object
	err := getFrom(r, objectKey(bucket, key), func(v []byte) (err error) {
		o, err = decodeObject(bucket, key, v, true)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("get object %q/%q: %w", bucket, key, err)
	}
	return o, nil
}

// GetUpload returns the multipart upload record. A malformed uploadID is
// reported as ErrNotFound (S3's NoSuchUpload).
func (db *DB) GetUpload(bucket, key, uploadID string) (*Upload, error) {
	if !ValidUploadID(uploadID) {
		return nil, fmt.Errorf("get upload %q: malformed ID: %w", uploadID, ErrNotFound)
	}
	var u *Upload
	err := db.get(uploadKey(bucket, key, uploadID), func(v []byte) (err error) {
		u, err = decodeUpload(bucket, key, uploadID, v)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("get upload %q/%q %s: %w", bucket, key, uploadID, err)
	}
	return u, nil
}

// GetPart returns part n of an upload.
func (db *DB) GetPart(uploadID string, n int) (*Part, error) {
	if !ValidUploadID(uploadID) || n < 1 || n > MaxPartNumber {
		return nil, fmt.Errorf("get part %s #%d: out of range: %w", uploadID, n, ErrNotFound)
	}
	var p *Part
	err := db.get(partKey(uploadID, n), func(v []byte) (err error) {
		p, err = decodePart(uploadID, n, v)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("get part %s #%d: %w", uploadID, n, err)
	}
	return p, nil
}

// DeadBytes returns the dead-byte counter of every segment that has one.
func (db *DB) DeadBytes() (map[uint64]int64, error) {
	dead := make(map[uint64]int64)
	err := db.scan([]byte{tableSegment}, func(k, v []byte) error {
		if len(k) != 9 {
			return fmt.Errorf("%w: segment counter key %x", ErrCorrupt, k)
		}
		n, err := decodeCounter(v)
		if err != nil {
			return err
		}
		dead[beUint64(k[1:])] = n
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read dead bytes: %w", err)
	}
	return dead, nil
}

// scan calls fn for every key with the given prefix, in order, on one
// snapshot. k and v are valid only during the call.
func (db *DB) scan(prefix []byte, fn func(k, v []byte) error) error {
	return scanReader(db.pdb, prefix, fn)
}

// scanReader is scan on a reader: the DB, or a View's snapshot.
func scanReader(r pebble.Reader, prefix []byte, fn func(k, v []byte) error) error {
	return scanRange(r, prefix, successor(prefix), fn)
}

// pebbleLogger routes pebble's log lines to slog.
type pebbleLogger struct{ log *slog.Logger }

// Infof lines are pebble's routine chatter (WAL replay, compactions): debug
// level, so an operator's log shows b3's own events.
func (l pebbleLogger) Infof(format string, args ...any) {
	if l.log.Enabled(context.Background(), slog.LevelDebug) {
		l.log.Debug(fmt.Sprintf(format, args...))
	}
}

func (l pebbleLogger) Errorf(format string, args ...any) {
	l.log.Error(fmt.Sprintf(format, args...))
}

// Fatalf is called by pebble on an error it cannot go on from (corruption,
// a failed write of its log: the disk failing or full); pebble expects it
// not to return, and the store must not be used again. The process stops
// at once, as if killed: a panic could be recovered by a request handler
// and leave the server answering from a broken store. What was synced
// survives, as after any crash; the next start recovers from it (and a
// cluster member catches up from its peers).
func (l pebbleLogger) Fatalf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	l.log.Error("the metadata store failed and cannot go on; stopping the process (restart once the disk is sound)", "err", msg, "fatal", true)
	fmt.Fprintln(os.Stderr, "b3: meta: pebble fatal: "+msg)
	os.Exit(3)
}

// Metrics returns pebble's own metrics (compactions, WAL, read
// amplification) for export.
func (db *DB) Metrics() *pebble.Metrics { return db.pdb.Metrics() }
