package blob

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"testing"

	"golang.org/x/sys/unix"
)

// Benchmarks run on the real disk (b.TempDir), with O_DIRECT where the
// filesystem allows it, and the default group commit.

func benchStore(b *testing.B) *Store {
	s, err := Open(Options{Dir: b.TempDir(), DirectIO: true, Sync: SyncBatch, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	return s
}

// BenchmarkAppendLarge appends 64 MiB values one after another: the
// sequential write bandwidth of the store.
func BenchmarkAppendLarge(b *testing.B) {
	const size = 64 << 20
	s := benchStore(b)
	data := value(1, size)
	b.SetBytes(size)
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if _, _, err := s.Append(context.Background(), Owner{Key: fmt.Appendf(nil, "large/%d", i)}, bytes.NewReader(data)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAppendSmall appends 4 KiB values from 64 concurrent writers:
// what group commit makes of many small durable writes. One op is a round
// of 64 appends by each writer, so that -benchtime Nx still measures
// thousands of appends.
func BenchmarkAppendSmall(b *testing.B) {
	const size, writers, perRound = 4 << 10, 64, 64
	s := benchStore(b)
	data := value(2, size)
	b.SetBytes(size * writers * perRound)
	before := s.Stats()
	b.ResetTimer()
	for b.Loop() {
		var wg sync.WaitGroup
		for g := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				key := fmt.Appendf(nil, "small/%d", g)
				for range perRound {
					if _, _, err := s.Append(context.Background(), Owner{Key: key}, bytes.NewReader(data)); err != nil {
						b.Error(err)
						return
					}
				}
			}()
		}
		wg.Wait()
	}
	b.StopTimer()
	after := s.Stats()
	b.ReportMetric(float64(b.N*writers*perRound)/b.Elapsed().Seconds(), "appends/s")
	if commits := after.GroupCommits - before.GroupCommits; commits > 0 {
		b.ReportMetric(float64(after.GroupWaiters-before.GroupWaiters)/float64(commits), "appends/fsync")
		b.ReportMetric(float64(after.FsyncNanos-before.FsyncNanos)/float64(after.Fsyncs-before.Fsyncs)/1e3, "µs/fsync")
	}
}

// BenchmarkReadCold reads 64 MiB values back from the disk, one stream, with
// the page cache dropped before each read (needs root): the single-stream
// read bandwidth of the store, to compare with a direct sequential read of
// the same disk (fio --rw=read --bs=1M --direct=1).
func BenchmarkReadCold(b *testing.B) {
	const size, values = 64 << 20, 8
	s := benchStore(b)
	data := value(3, size)
	var exts [values][]Extent
	for i := range exts {
		e, _, err := s.Append(context.Background(), Owner{Key: fmt.Appendf(nil, "read/%d", i)}, bytes.NewReader(data))
		if err != nil {
			b.Fatal(err)
		}
		exts[i] = e
	}
	b.SetBytes(size)
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		b.StopTimer()
		unix.Sync()
		if err := os.WriteFile("/proc/sys/vm/drop_caches", []byte("3\n"), 0); err != nil {
			b.Fatalf("drop the page cache (run as root): %v", err)
		}
		b.StartTimer()
		r, err := s.NewReader(context.Background(), Owner{Key: fmt.Appendf(nil, "read/%d", i%values)}, exts[i%values], 0, size)
		if err != nil {
			b.Fatal(err)
		}
		if n, err := r.WriteTo(io.Discard); err != nil || n != size {
			b.Fatalf("read %d bytes: %v", n, err)
		}
		r.Close()
	}
}
