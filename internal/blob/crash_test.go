package blob

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/b3-storage/b3/internal/vfs"
	pvfs "github.com/cockroachdb/pebble/v2/vfs"
)

type ackedValue struct {
	seed    uint64
	size    int
	extents []Extent
}

// TestCrashRecovery crashes a crashable MemFS at random instants while
// concurrent appenders run with SyncBatch, then reopens the crash clone:
// every acknowledged Append must read back byte-identical, the torn tail
// must be cut, and the store must take and return new appends.
func TestCrashRecovery(t *testing.T) {
	iterations := 12
	if testing.Short() {
		iterations = 4
	}
	for _, unsynced := range []int{0, 30, 80} {
		t.Run(fmt.Sprintf("unsynced=%d", unsynced), func(t *testing.T) {
			for iter := range iterations {
				crashOnce(t, uint64(unsynced*1000+iter), unsynced)
			}
		})
	}
}

func crashOnce(t *testing.T, seed uint64, unsyncedPercent int) {
	rng := rand.New(rand.NewPCG(seed, 7))
	mem := vfs.NewCrashableMem()
	opts := testOptions(vfs.Pebble(mem))
	opts.SegmentSize = int64(32<<10 + rng.IntN(96<<10))
	opts.CheckpointBytes = int64(8<<10 + rng.IntN(32<<10))
	s := mustOpen(t, opts)

	var (
		mu    sync.Mutex
		acked []ackedValue
		wg    sync.WaitGroup
	)
	target := 5 + rng.IntN(60)
	reached := make(chan struct{})
	stop := make(chan struct{})
	var reachedOnce sync.Once
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				vseed := seed<<20 | uint64(g)<<16 | uint64(i)
				size := int(vseed*2654435761%(20<<10)) + i%2 // includes tiny and multi-chunk values
				ext, _, err := s.Append(context.Background(), Owner{Key: fmt.Appendf(nil, "%d", vseed), Version: vseed},
					bytes.NewReader(value(vseed, size)))
				if err != nil {
					t.Errorf("Append: %v", err)
					return
				}
				mu.Lock()
				acked = append(acked, ackedValue{vseed, size, ext})
				if len(acked) >= target {
					reachedOnce.Do(func() { close(reached) })
				}
				mu.Unlock()
			}
		}()
	}
	<-reached
	mu.Lock()
	durable := append([]ackedValue(nil), acked...)
	mu.Unlock()
	// Everything acknowledged before this instant must survive.
	clone := mem.CrashClone(pvfs.CrashCloneCfg{UnsyncedDataPercent: unsyncedPercent, RNG: rng})
	close(stop)
	wg.Wait()
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}

	opts.FS = vfs.Pebble(clone)
	s = mustOpen(t, opts)
	defer s.Close()
	for _, v := range durable {
		got, err := readRange(s, v.extents, 0, int64(v.size))
		if err != nil {
			t.Fatalf("seed %d: acknowledged value %d (%d bytes, %+v) after crash: %v", seed, v.seed, v.size, v.extents, err)
		}
		if !bytes.Equal(got, value(v.seed, v.size)) {
			t.Fatalf("seed %d: acknowledged value %d differs after crash", seed, v.seed)
		}
	}
	// The recovered store scans clean: the tail was cut at a record boundary.
	segs := s.Segments()
	for _, seg := range segs {
		if err := s.ScanSegment(context.Background(), seg.ID, func(Record) error { return nil }); err != nil {
			t.Fatalf("seed %d: scan of segment %d after recovery: %v", seed, seg.ID, err)
		}
	}
	last := segs[len(segs)-1]
	if size, err := opts.FS.Stat(s.segmentPath(last.ID)); err != nil || size != last.Size {
		t.Fatalf("seed %d: last segment file %d bytes (%v), recovered end %d", seed, size, err, last.Size)
	}
	// New appends work and read back, also after another reopen.
	var more []ackedValue
	for i := range 5 {
		vseed := seed<<20 | 0xF000 | uint64(i)
		data := value(vseed, 3000*i+1)
		more = append(more, ackedValue{vseed, len(data), mustAppend(t, s, "after", data)})
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = mustOpen(t, opts)
	for _, v := range append(durable, more...) {
		checkRead(t, s, v.extents, value(v.seed, v.size))
	}
}

// flipByte XORs one byte of a segment file.
func flipByte(t *testing.T, fsys vfs.FS, name string, off int64) {
	t.Helper()
	f, err := fsys.OpenReadWrite(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, 1)
	if _, err := f.ReadAt(b, off); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0x5A
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
}

func TestCorruption(t *testing.T) {
	fsys := memFS()
	opts := testOptions(fsys)
	opts.SegmentSize = 64 << 10
	s := mustOpen(t, opts)
	defer s.Close()
	var exts [][]Extent
	for i := range 6 {
		exts = append(exts, mustAppend(t, s, fmt.Sprint(i), value(uint64(i), 5000)))
	}
	mustAppend(t, s, "filler", value(99, 64<<10)) // seals segment 1
	victim := exts[2][0]
	if victim.Segment != 1 {
		t.Fatalf("victim in segment %d", victim.Segment)
	}
	name := s.segmentPath(1)
	flipByte(t, fsys, name, victim.Offset+victim.Length-10) // payload byte

	before := s.Stats().CorruptRecords
	if _, err := readRange(s, exts[2], 0, 5000); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("read of corrupt record: %v", err)
	}
	// Even a range that starts and ends inside the corrupt record's intact
	// part is refused: the whole record is verified before release.
	if _, err := readRange(s, exts[2], 0, 10); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("partial read of corrupt record: %v", err)
	}
	for i, ext := range exts {
		if i != 2 {
			checkRead(t, s, ext, value(uint64(i), 5000))
		}
	}
	var scanned int
	if err := s.ScanSegment(context.Background(), 1, func(r Record) error {
		if r.Extent.Offset == victim.Offset {
			t.Fatal("scan reported the corrupt record")
		}
		if string(r.Owner.Key) != "filler" {
			scanned++
		}
		return nil
	}); err != nil {
		t.Fatalf("scan with a corrupt payload: %v", err)
	}
	if scanned != 5 {
		t.Fatalf("scanned %d records, want 5", scanned)
	}
	if got := s.Stats().CorruptRecords - before; got != 3 {
		t.Fatalf("corrupt records counted %d, want 3", got)
	}

	// A corrupt header: the scan stops with the offset.
	hdrVictim := exts[4][0]
	flipByte(t, fsys, name, hdrVictim.Offset+20)
	err := s.ScanSegment(context.Background(), 1, func(Record) error { return nil })
	var ce *CorruptError
	if !errors.As(err, &ce) || !errors.Is(err, ErrCorrupt) || ce.Offset != hdrVictim.Offset || ce.Segment != 1 {
		t.Fatalf("scan with a corrupt header: %v", err)
	}
	if _, err := readRange(s, exts[4], 0, 5000); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("read of record with corrupt header: %v", err)
	}
}

// TestTornTailIsCut appends garbage of several kinds after the last record
// and checks that Open cuts exactly it.
func TestTornTailIsCut(t *testing.T) {
	half := appendRecordBytes(nil, []byte("k"), 1, 0, 0, value(5, 3000))
	badPayload := append([]byte(nil), half...)
	badPayload[len(badPayload)-1] ^= 1
	for _, tc := range []struct {
		name string
		tail []byte
	}{
		{"half record", half[:len(half)/2]},
		{"half header", half[:headerSize/2]},
		{"bad payload", badPayload},
		{"garbage", bytes.Repeat([]byte{0xEE}, 5000)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fsys := memFS()
			opts := testOptions(fsys)
			s := mustOpen(t, opts)
			data := value(1, 10000)
			ext := mustAppend(t, s, "v", data)
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			end := ext[0].Offset + ext[0].Length
			f, err := fsys.OpenReadWrite(s.segmentPath(1))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.WriteAt(tc.tail, end); err != nil {
				t.Fatal(err)
			}
			f.Close()

			s = mustOpen(t, opts)
			defer s.Close()
			if segs := s.Segments(); len(segs) != 1 || segs[0].Size != end {
				t.Fatalf("segments after reopen %+v, want one of %d bytes", segs, end)
			}
			if size, _ := fsys.Stat(s.segmentPath(1)); size != end {
				t.Fatalf("file is %d bytes, want %d", size, end)
			}
			checkRead(t, s, ext, data)
			ext2 := mustAppend(t, s, "w", data)
			if ext2[0].Offset != end {
				t.Fatalf("next record at %d, want %d", ext2[0].Offset, end)
			}
			checkRead(t, s, ext2, data)
		})
	}
}
