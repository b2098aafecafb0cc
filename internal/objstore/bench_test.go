package objstore

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/b3-storage/b3/internal/blob"
)

// BenchmarkVacuum measures one vacuum pass on the real disk over segments
// whose objects (64 KiB, above the inline limit) were half deleted: the live
// half is copied forward and the segments removed. One op is one pass over
// 64 MiB segments holding 256 MiB of objects.
func BenchmarkVacuum(b *testing.B) {
	const size, objects = 64 << 10, 4096
	data := bytes.Repeat([]byte("v"), size)
	var copied int64
	for b.Loop() {
		b.StopTimer()
		dir := b.TempDir()
		s, err := Open(Options{
			DataDir: filepath.Join(dir, "data"), MetaDir: filepath.Join(dir, "meta"),
			Sync: blob.SyncBatch, DirectIO: true, SegmentSize: 64 << 20, VacuumThreshold: 0.4,
			Logger: slog.New(slog.DiscardHandler),
		})
		if err != nil {
			b.Fatal(err)
		}
		ensureBucket(b, s, "b")
		for i := range objects {
			put(b, s, "b", fmt.Sprint(i), data)
		}
		for i := 0; i < objects; i += 2 {
			if _, err := s.DeleteObject("b", fmt.Sprint(i)); err != nil {
				b.Fatal(err)
			}
		}
		b.StartTimer()
		res, err := s.Vacuum(context.Background(), 0)
		b.StopTimer()
		if err != nil || res.SegmentsRemoved == 0 {
			b.Fatalf("vacuum: %+v %v", res, err)
		}
		copied += res.BytesCopied
		s.Close()
		b.StartTimer()
	}
	b.ReportMetric(float64(copied)/b.Elapsed().Seconds()/1e6, "copied-MB/s")
}

// BenchmarkPutRead measures the engine alone (no HTTP): a PUT replacing
// one of 100 keys, then a whole read of it, on a temporary directory
// without fsync, in a bucket that never had versioning: the CPU the write
// and read paths cost, which versioning must not raise.
func BenchmarkPutRead(b *testing.B) {
	for _, size := range []int{4 << 10, 1 << 20} {
		b.Run(fmt.Sprintf("%dKiB", size>>10), func(b *testing.B) {
			dir := b.TempDir()
			s := openStore(b, Options{DataDir: filepath.Join(dir, "data"), MetaDir: filepath.Join(dir, "meta"),
				Sync: blob.SyncNone, InlineMax: 4 << 10, Logger: slog.New(slog.DiscardHandler)})
			defer s.Close()
			ensureBucket(b, s, "b")
			data := value("k", 1, size)
			b.SetBytes(int64(2 * size))
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				key := fmt.Sprint("k", i%100)
				i++
				put(b, s, "b", key, data)
				obj, r, err := s.OpenObject(context.Background(), "b", key, WholeObject)
				if err != nil {
					b.Fatal(err)
				}
				n, err := io.Copy(io.Discard, r)
				r.Close()
				if err != nil || n != obj.Size {
					b.Fatal(n, err)
				}
			}
		})
	}
}
