package meta

import (
	"errors"
	"math/rand/v2"
	"reflect"
	"sync"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

func TestBucketCRUD(t *testing.T) {
	db := openMem(t)
	commit(t, db, func(b *Batch) {
		b.PutBucket(fullBucket())
		b.PutBucket(&Bucket{Name: "a", ACL: ACLPrivate})
		b.PutBucket(&Bucket{Name: "media0", ACL: ACLPublicReadWrite})
	})
	got, err := db.GetBucket("media")
	if err != nil || !reflect.DeepEqual(got, fullBucket()) {
		t.Fatalf("GetBucket = %+v, %v", got, err)
	}
	list, err := db.ListBuckets()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, b := range list {
		names = append(names, b.Name)
	}
	if !reflect.DeepEqual(names, []string{"a", "media", "media0"}) {
		t.Fatalf("ListBuckets = %q", names)
	}
	commit(t, db, func(b *Batch) { b.DeleteBucket("media") })
	if _, err := db.GetBucket("media"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("deleted bucket: err = %v", err)
	}
}

func TestObjectPutGetDelete(t *testing.T) {
	db := openMem(t)
	want := fullObject()
	commit(t, db, func(b *Batch) { b.PutObject(want) })
	got, err := db.GetObject(want.Bucket, want.Key)
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("GetObject = %+v, %v", got, err)
	}
	if _, err := db.GetObject(want.Bucket, want.Key+"x"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("missing key: err = %v", err)
	}
	if _, err := db.GetObject(want.Bucket+"x", want.Key); !errors.Is(err, ErrNotFound) {
		t.Fatalf("other bucket: err = %v", err)
	}
	commit(t, db, func(b *Batch) { b.DeleteObject(want.Bucket, want.Key) })
	if _, err := db.GetObject(want.Bucket, want.Key); !errors.Is(err, ErrNotFound) {
		t.Fatalf("deleted: err = %v", err)
	}
}

// A batch is all or nothing: an invalid write poisons it, and an
// uncommitted batch leaves no trace.
func TestBatchAtomicity(t *testing.T) {
	db := openMem(t)
	for _, tc := range []struct {
		name   string
		poison func(b *Batch)
	}{
		{"bucket name with NUL", func(b *Batch) { b.PutBucket(&Bucket{Name: "a\x00b"}) }},
		{"object in empty bucket name", func(b *Batch) { b.PutObject(&Object{Key: "k"}) }},
		{"part number 0", func(b *Batch) { b.PutPart(&Part{UploadID: NewUploadID(1), Number: 0}) }},
		{"part number 10001", func(b *Batch) { b.PutPart(&Part{UploadID: NewUploadID(1), Number: 10001}) }},
		{"malformed upload ID", func(b *Batch) { b.PutUpload(&Upload{Bucket: "b", UploadID: "xyz"}) }},
		{"delete malformed upload", func(b *Batch) { b.DeleteUpload("b", "k", "../x") }},
	} {
		b := db.NewBatch()
		b.PutObject(sampleObject("bk", "before-"+tc.name))
		b.AddDead(1, 10)
		tc.poison(b)
		b.PutObject(sampleObject("bk", "after-"+tc.name))
		if err := b.Commit(); err == nil {
			t.Errorf("%s: Commit succeeded", tc.name)
		}
		b.Close()
	}
	b := db.NewBatch()
	b.PutObject(sampleObject("bk", "never committed"))
	b.Close()

	res, err := db.ListObjects("bk", ListOptions{MaxKeys: -1})
	if err != nil || len(res.Objects) != 0 {
		t.Fatalf("after failed batches: %d objects, %v", len(res.Objects), err)
	}
	if dead, _ := db.DeadBytes(); len(dead) != 0 {
		t.Fatalf("after failed batches: dead bytes %v", dead)
	}
}

// A synced batch survives a crash whole; one committed without sync on a
// crash either survives whole or not at all.
func TestBatchCrash(t *testing.T) {
	mem := vfs.NewCrashableMem()
	db := openOn(t, mem, true)
	commit(t, db, func(b *Batch) {
		for _, k := range []string{"a", "b", "c"} {
			b.PutObject(sampleObject("bk", k))
		}
		b.AddDead(5, 100)
	})
	crashed := mem.CrashClone(vfs.CrashCloneCfg{})
	db2 := openOn(t, crashed, true)
	res, err := db2.ListObjects("bk", ListOptions{MaxKeys: -1})
	if err != nil || !reflect.DeepEqual(objectKeys(res), []string{"a", "b", "c"}) {
		t.Fatalf("after crash: %v, %v", objectKeys(res), err)
	}
	if dead, _ := db2.DeadBytes(); dead[5] != 100 {
		t.Fatalf("after crash: dead = %v", dead)
	}

	mem = vfs.NewCrashableMem()
	db = openOn(t, mem, false)
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range 20 {
		commit(t, db, func(b *Batch) {
			for j := range 50 {
				b.PutObject(sampleObject("bk", string(rune('a'+i))+string(rune('a'+j%26))+string(rune('0'+j/26))))
			}
		})
		crashed := mem.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 50, RNG: rng})
		db2 := openOn(t, crashed, false)
		n := 0
		if err := db2.ScanObjects("bk", "", func(*Object) error { n++; return nil }); err != nil {
			t.Fatal(err)
		}
		if n%50 != 0 {
			t.Fatalf("crash after batch %d: %d objects survived, not a multiple of the batch size", i, n)
		}
		_ = db2.Close()
	}
}

func TestDeadBytesMerge(t *testing.T) {
	mem := vfs.NewMem()
	db := openOn(t, mem, false)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 100 {
				b := db.NewBatch()
				b.AddDead(uint64(i%4), int64(g+1))
				b.AddDead(1<<63, -1)
				if err := b.Commit(); err != nil {
					t.Error(err)
				}
				b.Close()
			}
		})
	}
	wg.Wait()
	want := map[uint64]int64{0: 900, 1: 900, 2: 900, 3: 900, 1 << 63: -800} // 25 adds of 1..8 per segment
	check := func(when string) {
		t.Helper()
		got, err := db.DeadBytes()
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: DeadBytes = %v, %v; want %v", when, got, err, want)
		}
	}
	check("concurrent adds")
	if err := db.pdb.Compact(t.Context(), []byte("s"), []byte("t"), false); err != nil {
		t.Fatal(err)
	}
	check("after compaction")
	commit(t, db, func(b *Batch) {
		b.DeleteSegmentCounter(2)
		b.AddDead(3, 5)
	})
	delete(want, 2)
	want[3] += 5
	check("after delete")
	commit(t, db, func(b *Batch) { b.AddDead(2, 7) })
	want[2] = 7
	check("add after delete starts from zero")
	_ = db.Close()
	db = openOn(t, mem, false)
	check("after reopen")
}

func TestVersionsMonotonic(t *testing.T) {
	mem := vfs.NewCrashableMem()
	db := openOn(t, mem, false)
	last := uint64(0)
	next := func(db *DB) uint64 {
		t.Helper()
		v, err := db.NextVersion()
		if err != nil {
			t.Fatal(err)
		}
		if v <= last {
			t.Fatalf("version %d after %d", v, last)
		}
		last = v
		return v
	}
	if v := next(db); v != 1 {
		t.Fatalf("first version %d, want 1", v)
	}
	for range versionBlock + 10 { // crosses a block reservation
		next(db)
	}
	_ = db.Close()
	db = openOn(t, mem, false)
	next(db)
	// Crash with no Close: versions handed out before must not repeat.
	for range 100 {
		next(db)
	}
	crashed := mem.CrashClone(vfs.CrashCloneCfg{})
	db = openOn(t, crashed, false)
	next(db)

	// Concurrent callers all get distinct versions.
	var mu sync.Mutex
	seen := map[uint64]bool{}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 1000 {
				v, err := db.NextVersion()
				mu.Lock()
				if err != nil || seen[v] || v <= last {
					t.Errorf("version %d (err %v) repeated or not above %d", v, err, last)
				}
				seen[v] = true
				mu.Unlock()
			}
		})
	}
	wg.Wait()
}

func TestOpenRefusesOtherSchema(t *testing.T) {
	mem := vfs.NewMem()
	db := openOn(t, mem, true)
	if err := db.pdb.Set(formatKey, []byte{99}, nil); err != nil {
		t.Fatal(err)
	}
	_ = db.Close()
	_, err := Open(Options{FS: mem, Dir: "meta", Logger: quietLogger})
	if !errors.Is(err, ErrCorrupt) {
		t.Fatalf("open with schema 99: err = %v", err)
	}
}

// TestSchemaStamp: a directory stamped by the previous schema opens and is
// restamped; one stamped by an unknown (future) schema is refused.
func TestSchemaStamp(t *testing.T) {
	for _, c := range []struct {
		stamp   byte
		refused bool
	}{{1, false}, {schemaVersion, false}, {schemaVersion + 1, true}, {0, true}} {
		fs := vfs.NewMem()
		db := openOn(t, fs, true)
		if err := db.pdb.Set(formatKey, []byte{c.stamp}, pebble.Sync); err != nil {
			t.Fatal(err)
		}
		db.Close()
		db, err := Open(Options{FS: fs, Dir: "meta", Sync: true, Logger: quietLogger})
		if c.refused {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("stamp %d: open %v, want ErrCorrupt", c.stamp, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("stamp %d: %v", c.stamp, err)
		}
		v, closer, err := db.pdb.Get(formatKey)
		if err != nil || len(v) != 1 || v[0] != schemaVersion {
			t.Fatalf("stamp %d: after open %v %v, want %d", c.stamp, v, err, schemaVersion)
		}
		closer.Close()
		db.Close()
	}
}
