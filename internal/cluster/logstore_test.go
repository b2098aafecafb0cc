package cluster

import (
	"bytes"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"golang.org/x/sys/unix"
)

func TestLogStore(t *testing.T) {
	dir := t.TempDir()
	s, err := openLogStore(dir, slog.Default())
	if err != nil {
		t.Fatal(err)
	}
	if first, err := s.FirstIndex(); err != nil || first != 0 {
		t.Fatalf("empty FirstIndex = %d, %v", first, err)
	}
	at := time.Unix(1700000000, 123)
	var logs []*raft.Log
	for i := uint64(1); i <= 10; i++ {
		logs = append(logs, &raft.Log{Index: i, Term: i / 4, Type: raft.LogCommand, Data: bytes.Repeat([]byte{byte(i)}, int(i)), AppendedAt: at})
	}
	logs[3].Extensions = []byte("ext")
	if err := s.StoreLogs(logs); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteRange(1, 3); err != nil {
		t.Fatal(err)
	}
	if err := s.SetUint64([]byte("CurrentTerm"), 7); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get([]byte("LastVoteCand")); err == nil || err.Error() != "not found" {
		t.Fatalf("missing stable key: %v, want the error \"not found\"", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s, err = openLogStore(dir, slog.Default()) // everything above was synced
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	first, _ := s.FirstIndex()
	last, _ := s.LastIndex()
	if first != 4 || last != 10 {
		t.Fatalf("after DeleteRange(1,3): first %d last %d, want 4 and 10", first, last)
	}
	var got raft.Log
	if err := s.GetLog(2, &got); !errors.Is(err, raft.ErrLogNotFound) {
		t.Fatalf("deleted entry: %v", err)
	}
	for _, want := range logs[3:] {
		if err := s.GetLog(want.Index, &got); err != nil {
			t.Fatal(err)
		}
		if got.Index != want.Index || got.Term != want.Term || got.Type != want.Type || !bytes.Equal(got.Data, want.Data) ||
			!bytes.Equal(got.Extensions, want.Extensions) || !got.AppendedAt.Equal(want.AppendedAt) {
			t.Fatalf("entry %d read back as %+v, want %+v", want.Index, got, *want)
		}
	}
	if term, err := s.GetUint64([]byte("CurrentTerm")); err != nil || term != 7 {
		t.Fatalf("CurrentTerm = %d, %v", term, err)
	}
	for _, bad := range [][]byte{nil, make([]byte, 20), append(encodeLog(logs[5]), 0)} {
		if err := decodeLog(1, bad, &got); err == nil {
			t.Fatalf("decodeLog accepted %d corrupt bytes", len(bad))
		}
	}
}

// BenchmarkLogStore times what a small PUT's commit waits for on each node:
// one StoreLogs, synced, of a batch as raft's leader writes it under 4 KiB
// PUTs at c64 (6 entries of 4.3 KiB), in the test's temporary directory (on
// the real disk unless TMPDIR says otherwise). Beside it, the file system's
// own price of a synced write of the same 26 KiB, one after the other into
// one file (sub-benchmarks fdatasync/*):
//
//	append     the file grows with every write (as a fresh WAL does)
//	fallocate  into space reserved beforehand with fallocate (unwritten
//	           extents: each write converts some)
//	overwrite  over bytes written and synced before (a recycled file)
//
// "x3" runs three writers at once, each on its own store or file, as the
// three nodes of a group on one machine do; ns/op is then the time of one
// write while two others run beside it.
func BenchmarkLogStore(b *testing.B) {
	const entries, entrySize = 6, 4400
	for _, writers := range []int{1, 3} {
		name := map[int]string{1: "", 3: "x3"}[writers]
		b.Run("pebble"+name, func(b *testing.B) {
			stores := make([]*logStore, writers)
			for i := range stores {
				s, err := openLogStore(b.TempDir(), slog.Default())
				if err != nil {
					b.Fatal(err)
				}
				defer s.Close()
				stores[i] = s
			}
			parallelLoop(b, writers, func(w, n int) error {
				batch := make([]*raft.Log, entries)
				index := uint64(0)
				for range n {
					for i := range batch {
						index++
						batch[i] = &raft.Log{Index: index, Term: 1, Type: raft.LogCommand, Data: bytes.Repeat([]byte{byte(index)}, entrySize)}
					}
					if err := stores[w].StoreLogs(batch); err != nil {
						return err
					}
				}
				return nil
			})
		})
		for _, mode := range []string{"append", "fallocate", "overwrite"} {
			b.Run("fdatasync/"+mode+name, func(b *testing.B) {
				const size = 64 << 20
				files := make([]*os.File, writers)
				for i := range files {
					f, err := os.Create(filepath.Join(b.TempDir(), "f"))
					if err != nil {
						b.Fatal(err)
					}
					defer f.Close()
					switch mode {
					case "fallocate":
						err = unix.Fallocate(int(f.Fd()), 0, 0, size)
					case "overwrite":
						_, err = f.WriteAt(make([]byte, size), 0)
						if err == nil {
							err = f.Sync()
						}
					}
					if err != nil {
						b.Fatal(err)
					}
					files[i] = f
				}
				parallelLoop(b, writers, func(w, n int) error {
					buf := bytes.Repeat([]byte{1}, entries*entrySize)
					off := int64(0)
					for range n {
						if mode != "append" && off+int64(len(buf)) > size {
							off = 0
						}
						if _, err := files[w].WriteAt(buf, off); err != nil {
							return err
						}
						off += int64(len(buf))
						if err := unix.Fdatasync(int(files[w].Fd())); err != nil {
							return err
						}
					}
					return nil
				})
			})
		}
	}
}

// parallelLoop runs b.N iterations of each of writers goroutines at once.
func parallelLoop(b *testing.B, writers int, loop func(w, n int) error) {
	b.ResetTimer()
	errs := make(chan error, writers)
	for w := range writers {
		go func() { errs <- loop(w, b.N) }()
	}
	for range writers {
		if err := <-errs; err != nil {
			b.Fatal(err)
		}
	}
}
