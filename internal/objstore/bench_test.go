package objstore

import (
	"bytes"
	"context"
	"fmt"
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
