package blob

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"sync"
	"testing"
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
