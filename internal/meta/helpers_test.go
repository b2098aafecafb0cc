package meta

import (
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

var quietLogger = slog.New(slog.NewTextHandler(io.Discard, nil))

// openMem opens a store on a fresh in-memory filesystem.
func openMem(t testing.TB) *DB {
	t.Helper()
	return openOn(t, vfs.NewMem(), true)
}

func openOn(t testing.TB, fs vfs.FS, sync bool) *DB {
	t.Helper()
	db, err := Open(Options{FS: fs, Dir: "meta", Sync: sync, Logger: quietLogger, CacheBytes: 8 << 20})
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// commit runs fill on a new batch and commits it, failing the test on error.
func commit(t testing.TB, db *DB, fill func(b *Batch)) {
	t.Helper()
	b := db.NewBatch()
	defer b.Close()
	fill(b)
	if err := b.Commit(); err != nil {
		t.Fatalf("commit: %v", err)
	}
}

// ts is a fixed UTC time with nanoseconds, as decoded records carry.
func ts(sec int64) time.Time { return time.Unix(sec, 123456789).UTC() }

func sampleObject(bucket, key string) *Object {
	return &Object{
		Bucket: bucket, Key: key, Version: 7, Size: 1 << 20,
		ETag:     `"9e107d9d372bb6826bd81d3542a419d6"`,
		Modified: ts(1_700_000_000), ContentType: "video/mp2t",
		Extents: []Extent{{Segment: 3, Offset: 4096, Length: 1<<20 + 64, Size: 1 << 20}},
		Owner:   "AKIDEXAMPLE",
	}
}
