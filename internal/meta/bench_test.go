package meta

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// benchObject is a realistic HLS-chunk record: about 150-200 bytes encoded.
func benchObject(bucket string, i int) *Object {
	return &Object{
		Bucket: bucket, Key: benchKey(i), Version: uint64(i) + 1, Size: 400_000 + int64(i%1000),
		ETag:        fmt.Sprintf(`"%032x"`, uint64(i)*0x9e3779b97f4a7c15),
		Modified:    time.Unix(1_700_000_000+int64(i), 0).UTC(),
		ContentType: "video/mp2t", CacheControl: "max-age=31536000",
		UserMeta:          map[string]string{"camera": fmt.Sprint(i % 5000), "stream": "main"},
		ChecksumAlgorithm: "CRC32C", ChecksumType: "FULL_OBJECT", Checksum: "yZRlqg==",
		Expiry:  time.Unix(1_702_592_000+int64(i), 0).UTC(),
		Extents: []Extent{{Segment: uint64(i / 2500), Offset: int64(i%2500) * 400_064, Length: 400_064, Size: 400_000}},
		Owner:   "AKIAIOSFODNN7EXAMPLE",
	}
}

// benchKey spreads objects over 5,000 camera directories of chunks.
func benchKey(i int) string {
	return fmt.Sprintf("cam%04d/2024-05-01/chunk-%09d.ts", i%5000, i)
}

func loadBench(b *testing.B, db *DB, n int) {
	for start := 0; start < n; start += 10_000 {
		batch := db.NewBatch()
		for i := start; i < min(n, start+10_000); i++ {
			batch.PutObject(benchObject("bench", i))
		}
		if err := batch.Commit(); err != nil {
			b.Fatal(err)
		}
		batch.Close()
	}
}

func benchDB(b *testing.B) *DB {
	db, err := Open(Options{FS: vfs.Default, Dir: b.TempDir(), Sync: false, Logger: quietLogger})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = db.Close() })
	return db
}

// BenchmarkPutObjectBatch commits one object per batch, synced, as a PUT
// does (concurrent PUTs share the fsync; this one is alone).
func BenchmarkPutObjectBatch(b *testing.B) {
	for _, sync := range []bool{false, true} {
		b.Run(fmt.Sprintf("sync=%v", sync), func(b *testing.B) {
			db := benchDB(b)
			if sync {
				db.write = pebble.Sync
			}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				batch := db.NewBatch()
				batch.PutObject(benchObject("bench", i))
				batch.AddDead(uint64(i%64), 100)
				if err := batch.Commit(); err != nil {
					b.Fatal(err)
				}
				batch.Close()
				i++
			}
		})
	}
}

func BenchmarkGetObject(b *testing.B) {
	const n = 200_000
	db := benchDB(b)
	loadBench(b, db, n)
	rng := rand.New(rand.NewPCG(1, 1))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := db.GetObject("bench", benchKey(rng.IntN(n))); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkListObjectsPage(b *testing.B) {
	const n = 200_000
	db := benchDB(b)
	loadBench(b, db, n)
	rng := rand.New(rand.NewPCG(1, 1))
	for _, tc := range []struct {
		name string
		opts func() ListOptions
	}{
		{"flat", func() ListOptions { return ListOptions{StartAfter: benchKey(rng.IntN(n)), MaxKeys: 1000} }},
		{"delimiter", func() ListOptions { return ListOptions{Delimiter: "/", MaxKeys: 1000} }},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				res, err := db.ListObjects("bench", tc.opts())
				if err != nil || len(res.Objects)+len(res.CommonPrefixes) == 0 {
					b.Fatal(err)
				}
			}
		})
	}
	// Small objects kept inline (4 KiB payloads in their records): a page
	// must not pay for copying the payloads.
	const inline = 20_000
	for start := 0; start < inline; start += 5_000 {
		batch := db.NewBatch()
		for i := start; i < start+5_000; i++ {
			o := benchObject("small", i)
			o.Size, o.Extents, o.Inline = 4096, nil, make([]byte, 4096)
			batch.PutObject(o)
		}
		if err := batch.Commit(); err != nil {
			b.Fatal(err)
		}
		batch.Close()
	}
	for _, name := range []string{"inline-4KiB"} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				res, err := db.ListObjects("small", ListOptions{StartAfter: benchKey(rng.IntN(inline - 1000)), MaxKeys: 1000})
				if err != nil || len(res.Objects)+len(res.CommonPrefixes) == 0 {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkListVersionsPage lists a page of 1000 versions out of 10^5 and
// 10^6: keys of 5 versions each (one current in "o", four noncurrent or
// delete markers in "v"), from a random key marker, from inside a key
// (version marker), and with a delimiter over the 5,000 camera prefixes
// (1000 common prefixes: a seek in each table per prefix). A page must
// cost about the same whatever the bucket's size.
func BenchmarkListVersionsPage(b *testing.B) {
	for _, versions := range []int{100_000, 1_000_000} {
		b.Run(fmt.Sprintf("versions=%d", versions), func(b *testing.B) {
			benchListVersions(b, versions/5, 5)
		})
	}
}

func benchListVersions(b *testing.B, keys, perKey int) {
	db := benchDB(b)
	for start := 0; start < keys; start += 2_000 {
		batch := db.NewBatch()
		for i := start; i < min(keys, start+2_000); i++ {
			for v := range perKey {
				o := benchObject("versions", i)
				o.Version, o.Versioned = uint64(i*perKey+v+1), true
				switch {
				case v == perKey-1:
					batch.PutObject(o)
				case v == 2:
					o.DeleteMarker, o.Extents, o.Size = true, nil, 0
					batch.PutVersion(o)
				default:
					batch.PutVersion(o)
				}
			}
		}
		if err := batch.Commit(); err != nil {
			b.Fatal(err)
		}
		batch.Close()
	}
	// Measured on a settled LSM (a long-lived store's state), not on the
	// pile of L0 files a bulk load leaves.
	if err := db.pdb.Compact(b.Context(), []byte{tableObject}, []byte{tableVersion + 1}, true); err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 1))
	for _, tc := range []struct {
		name string
		opts func() VersionListOptions
	}{
		{"key-marker", func() VersionListOptions {
			return VersionListOptions{KeyMarker: benchKey(rng.IntN(keys)), MaxKeys: 1000}
		}},
		{"version-marker", func() VersionListOptions {
			i := rng.IntN(keys)
			return VersionListOptions{KeyMarker: benchKey(i), VersionMarker: uint64(i*perKey + 3), MaxKeys: 1000}
		}},
		{"delimiter", func() VersionListOptions {
			return VersionListOptions{Delimiter: "/", KeyMarker: fmt.Sprintf("cam%04d/", rng.IntN(4000)), MaxKeys: 1000}
		}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				res, err := db.ListVersions("versions", tc.opts())
				if err != nil || len(res.Versions)+len(res.CommonPrefixes) == 0 {
					b.Fatalf("%v: %d entries", err, len(res.Versions)+len(res.CommonPrefixes))
				}
			}
		})
	}
}
