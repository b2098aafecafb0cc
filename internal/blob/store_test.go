package blob

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/b3-storage/b3/internal/iolimit"
)

func TestAppendReadRoundTrip(t *testing.T) {
	opts := testOptions(memFS())
	s := mustOpen(t, opts)
	defer s.Close()
	cs := opts.ChunkSize
	for _, n := range []int{0, 1, cs - 1, cs, cs + 1, 3*cs + 7, 3<<20 + 5} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			data := value(uint64(n), n)
			ext := mustAppend(t, s, fmt.Sprint("k", n), data)
			if totalSize(ext) != int64(n) {
				t.Fatalf("extents hold %d bytes, want %d", totalSize(ext), n)
			}
			if n == 0 && len(ext) != 0 {
				t.Fatalf("empty value got extents %v", ext)
			}
			checkRead(t, s, ext, data)
			// WriterTo path.
			r, err := s.NewReader(context.Background(), Owner{Key: fmt.Append(nil, "k", n), Version: 1}, ext, 0, int64(n))
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			if _, err := r.WriteTo(&buf); err != nil || !bytes.Equal(buf.Bytes(), data) {
				t.Fatalf("WriteTo: %v, equal=%v", err, bytes.Equal(buf.Bytes(), data))
			}
			r.Close()
		})
	}
}

func TestReadRanges(t *testing.T) {
	opts := testOptions(memFS())
	s := mustOpen(t, opts)
	defer s.Close()
	cs := int64(opts.ChunkSize)
	size := 5*cs + 123
	data := value(42, int(size))
	// Interleave with another appender's value so the extents are split.
	var ext []Extent
	for part := int64(0); part < size; part += 2 * cs {
		end := min(part+2*cs, size)
		mustAppend(t, s, "other", value(uint64(part), 100))
		e := mustAppend(t, s, "v", data[part:end])
		ext = append(ext, e...) // parts: chunk offsets restart per Append, as for multipart
	}
	for _, tc := range []struct {
		name   string
		off, n int64
	}{
		{"all", 0, size},
		{"start", 0, 10},
		{"middle", 2*cs + 5, 100},
		{"suffix", size - 77, 77},
		{"across record", cs - 10, 20},
		{"across extent", 2*cs - 3, 6},
		{"from extent start", 2 * cs, cs},
		{"last byte", size - 1, 1},
		{"empty", 17, 0},
		{"empty at end", size, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := readRange(s, ext, tc.off, tc.n)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, data[tc.off:tc.off+tc.n]) {
				t.Fatalf("range [%d,+%d) differs", tc.off, tc.n)
			}
		})
	}
	if _, err := s.NewReader(context.Background(), ownerAt(s, ext), ext, size-1, 2); err == nil {
		t.Fatal("range past the end accepted")
	}
}

func TestConcurrentAppenders(t *testing.T) {
	opts := testOptions(memFS())
	s := mustOpen(t, opts)
	defer s.Close()
	const writers, perWriter = 16, 12
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for g := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perWriter {
				seed := uint64(g*1000 + i)
				data := value(seed, int(seed*7919%(3*uint64(opts.ChunkSize))))
				ext, _, err := s.Append(context.Background(), Owner{Key: fmt.Appendf(nil, "g%d/%d", g, i)}, bytes.NewReader(data))
				if err != nil {
					errs <- err
					return
				}
				got, err := readRange(s, ext, 0, int64(len(data)))
				if err != nil || !bytes.Equal(got, data) {
					errs <- fmt.Errorf("writer %d value %d: err %v, equal %v", g, i, err, bytes.Equal(got, data))
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	st := s.Stats()
	if st.GroupCommits == 0 || st.GroupWaiters == 0 || st.Fsyncs < st.GroupCommits {
		t.Fatalf("group commit stats %+v", st)
	}
	if len(s.Segments()) < 2 {
		t.Fatalf("expected rollover, segments %v", s.Segments())
	}
}

func TestSyncPolicies(t *testing.T) {
	for _, policy := range []SyncPolicy{SyncBatch, SyncAlways, SyncNone} {
		t.Run(policy.String(), func(t *testing.T) {
			opts := testOptions(memFS())
			opts.Sync = policy
			s := mustOpen(t, opts)
			const n = 10
			var exts [][]Extent
			for i := range n {
				ext := mustAppend(t, s, fmt.Sprint(i), value(uint64(i), 3000))
				exts = append(exts, ext)
				// Readable at once under every policy (SyncNone forces a flush).
				checkRead(t, s, ext, value(uint64(i), 3000))
			}
			fsyncs := s.Stats().Fsyncs
			switch policy {
			case SyncAlways:
				if fsyncs < n {
					t.Fatalf("SyncAlways: %d fsyncs for %d appends", fsyncs, n)
				}
			case SyncNone:
				if fsyncs != 0 {
					t.Fatalf("SyncNone: %d fsyncs", fsyncs)
				}
			case SyncBatch:
				if fsyncs == 0 {
					t.Fatal("SyncBatch: no fsync")
				}
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			s = mustOpen(t, opts)
			defer s.Close()
			for i, ext := range exts {
				checkRead(t, s, ext, value(uint64(i), 3000))
			}
		})
	}
}

func TestParseSyncPolicy(t *testing.T) {
	for _, p := range []SyncPolicy{SyncBatch, SyncAlways, SyncNone} {
		got, err := ParseSyncPolicy(p.String())
		if err != nil || got != p {
			t.Fatalf("ParseSyncPolicy(%q) = %v, %v", p.String(), got, err)
		}
	}
	if _, err := ParseSyncPolicy("sometimes"); err == nil {
		t.Fatal("accepted an unknown policy")
	}
}

func TestRolloverAndReopen(t *testing.T) {
	opts := testOptions(memFS())
	opts.SegmentSize = 64 << 10
	s := mustOpen(t, opts)
	var exts [][]Extent
	for i := range 30 {
		exts = append(exts, mustAppend(t, s, fmt.Sprint(i), value(uint64(i), 10000)))
	}
	segs := s.Segments()
	if len(segs) < 4 || !segs[len(segs)-1].Active {
		t.Fatalf("segments %+v", segs)
	}
	for i, seg := range segs {
		if seg.ID != uint64(i+1) || seg.Size > opts.SegmentSize || (seg.Active != (i == len(segs)-1)) {
			t.Fatalf("segment %d: %+v", i, seg)
		}
	}
	for i, ext := range exts {
		checkRead(t, s, ext, value(uint64(i), 10000))
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, _, err := s.Append(context.Background(), Owner{}, bytes.NewReader([]byte("x"))); !errors.Is(err, ErrClosed) {
		t.Fatalf("Append after Close: %v", err)
	}

	s = mustOpen(t, opts)
	defer s.Close()
	if got := s.Segments(); len(got) != len(segs) {
		t.Fatalf("reopened with %d segments, want %d", len(got), len(segs))
	}
	for i := 30; i < 40; i++ {
		exts = append(exts, mustAppend(t, s, fmt.Sprint(i), value(uint64(i), 10000)))
	}
	for i, ext := range exts {
		checkRead(t, s, ext, value(uint64(i), 10000))
	}
}

func TestRemoveSegmentWithReader(t *testing.T) {
	fsys := memFS()
	opts := testOptions(fsys)
	opts.SegmentSize = 32 << 10
	s := mustOpen(t, opts)
	defer s.Close()
	data := value(1, 20000)
	ext := mustAppend(t, s, "a", data)
	mustAppend(t, s, "b", value(2, 20000)) // rolls over: segment 1 sealed
	seg := ext[0].Segment
	if err := s.RemoveSegment(s.Segments()[len(s.Segments())-1].ID); err == nil {
		t.Fatal("removed the active segment")
	}

	r, err := s.NewReader(context.Background(), Owner{Key: []byte("a"), Version: 1}, ext, 0, int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	first := make([]byte, 100)
	if _, err := io.ReadFull(r, first); err != nil {
		t.Fatal(err)
	}
	if err := s.RemoveSegment(seg); err != nil {
		t.Fatal(err)
	}
	if _, err := fsys.Stat(s.segmentPath(seg)); err != nil {
		t.Fatalf("file gone while a reader pins it: %v", err)
	}
	if _, err := s.NewReader(context.Background(), Owner{Key: []byte("a"), Version: 1}, ext, 0, 1); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("new reader of removed segment: %v", err)
	}
	for _, info := range s.Segments() {
		if info.ID == seg {
			t.Fatal("removed segment still listed")
		}
	}
	rest, err := io.ReadAll(r)
	if err != nil || !bytes.Equal(append(first, rest...), data) {
		t.Fatalf("read across removal: %v", err)
	}
	r.Close()
	if _, err := fsys.Stat(s.segmentPath(seg)); err == nil {
		t.Fatal("file still there after the last reader closed")
	}
	if st := s.Stats(); st.SegmentsRemoved != 1 {
		t.Fatalf("SegmentsRemoved = %d", st.SegmentsRemoved)
	}
	if err := s.RemoveSegment(seg); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("second removal: %v", err)
	}
}

func TestScanAndCopyRecords(t *testing.T) {
	opts := testOptions(memFS())
	opts.SegmentSize = 64 << 10
	s := mustOpen(t, opts)
	defer s.Close()
	values := map[string][]byte{}
	for i := range 5 {
		key := fmt.Sprint("key", i)
		values[key] = value(uint64(i), 5000*(i+1))
		mustAppend(t, s, key, values[key])
	}
	var recs []Record
	err := s.ScanSegment(context.Background(), 1, func(r Record) error {
		recs = append(recs, r)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) == 0 {
		t.Fatal("no records scanned")
	}
	// Copy every record of segment 1 (vacuum) and read the values back
	// from the copies, per owner.
	for i := 0; i < len(recs); {
		j := i
		for j < len(recs) && bytes.Equal(recs[j].Owner.Key, recs[i].Owner.Key) {
			j++
		}
		ext, err := s.CopyRecords(context.Background(), recs[i:j])
		if err != nil {
			t.Fatal(err)
		}
		if len(ext) == 0 || ext[0].Segment == 1 {
			t.Fatalf("copied %d records into %+v", j-i, ext)
		}
		key := string(recs[i].Owner.Key)
		off := recs[i].ChunkOffset
		got, err := readRange(s, ext, 0, totalSize(ext))
		if err != nil || !bytes.Equal(got, values[key][off:off+totalSize(ext)]) {
			t.Fatalf("copy of %s: %v", key, err)
		}
		i = j
	}
	if st := s.Stats(); st.RecordsCopied != int64(len(recs)) {
		t.Fatalf("RecordsCopied = %d, want %d", st.RecordsCopied, len(recs))
	}
	// A record described with the wrong owner is refused.
	bad := recs[0]
	bad.Owner.Version++
	if _, err := s.CopyRecords(context.Background(), []Record{bad}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("copy with wrong owner: %v", err)
	}
}

type countingLimiter struct {
	mu            sync.Mutex
	reads, writes int
}

func (l *countingLimiter) WaitRead(ctx context.Context, n int) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.reads += n
	return ctx.Err()
}

func (l *countingLimiter) WaitWrite(ctx context.Context, n int) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.writes += n
	return ctx.Err()
}

func TestLimiter(t *testing.T) {
	opts := testOptions(memFS())
	lim := &countingLimiter{}
	opts.Limiter = lim
	s := mustOpen(t, opts)
	defer s.Close()
	data := value(9, 20000)
	ext := mustAppend(t, s, "k", data)
	checkRead(t, s, ext, data)
	if lim.writes != int(ext[0].Length) || lim.reads < len(data) {
		t.Fatalf("limiter saw %d written, %d read; extent %+v", lim.writes, lim.reads, ext)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := s.Append(ctx, Owner{}, bytes.NewReader(data)); !errors.Is(err, context.Canceled) {
		t.Fatalf("Append with cancelled ctx: %v", err)
	}
}

// TestAppendPassesOnSourceErrors: a body cut short (net/http reports
// io.ErrUnexpectedEOF) must fail the append, not store a shorter value.
func TestAppendPassesOnSourceErrors(t *testing.T) {
	opts := testOptions(memFS())
	s := mustOpen(t, opts)
	defer s.Close()
	for _, cut := range []int{0, 10, opts.ChunkSize, opts.ChunkSize + 10} {
		src := io.MultiReader(bytes.NewReader(value(1, cut)), errReader{io.ErrUnexpectedEOF})
		_, _, err := s.Append(context.Background(), Owner{Key: []byte("k"), Version: 1}, src)
		if !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Fatalf("cut at %d: Append returned %v, want io.ErrUnexpectedEOF", cut, err)
		}
	}
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// stallingReader yields its first part, then blocks until released: a
// client that stops sending in the middle of an upload.
type stallingReader struct {
	first   []byte
	release chan struct{}
	rest    io.Reader
}

func (r *stallingReader) Read(p []byte) (int, error) {
	if len(r.first) > 0 {
		n := copy(p, r.first)
		r.first = r.first[n:]
		return n, nil
	}
	<-r.release
	return r.rest.Read(p)
}

// TestSlowAppenderDoesNotBlockOthers: while one append waits on its body in
// the middle of a value, other appends complete, are durable and read back.
func TestSlowAppenderDoesNotBlockOthers(t *testing.T) {
	opts := testOptions(memFS())
	s := mustOpen(t, opts)
	defer s.Close()
	slow := value(7, 3*opts.ChunkSize)
	src := &stallingReader{first: slow[:opts.ChunkSize+10], release: make(chan struct{}), rest: bytes.NewReader(slow[opts.ChunkSize+10:])}
	type result struct {
		ext []Extent
		err error
	}
	done := make(chan result, 1)
	go func() {
		ext, _, err := s.Append(context.Background(), Owner{Key: []byte("slow")}, src)
		done <- result{ext, err}
	}()
	// These must finish although the slow append is stalled half way.
	for i := range 20 {
		data := value(uint64(100+i), opts.ChunkSize/2+i)
		checkRead(t, s, mustAppend(t, s, fmt.Sprint("fast", i), data), data)
	}
	select {
	case r := <-done:
		t.Fatalf("slow append finished before its body did: %v", r.err)
	default:
	}
	close(src.release)
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	checkRead(t, s, r.ext, slow)
}

// TestBackgroundSyncRidesOnClientCommits: a background append made while a
// client append is in progress does not ask for an fsync of its own within
// BackgroundSyncDelay; the client's group commit covers it, so both are
// served by one fsync and the background never puts one ahead of the
// client's. With no client appending, background syncs at once.
func TestBackgroundSyncRidesOnClientCommits(t *testing.T) {
	opts := testOptions(memFS())
	opts.BackgroundSyncDelay = time.Hour // only a client commit can serve it
	s := mustOpen(t, opts)
	defer s.Close()
	bg := iolimit.WithPriority(context.Background(), iolimit.Background)

	// Alone, background does not wait for a client that is not there.
	before := s.Stats().Fsyncs
	if _, _, err := s.Append(bg, Owner{Key: []byte("alone"), Version: 1}, bytes.NewReader(value(1, 3000))); err != nil {
		t.Fatal(err)
	}
	if got := s.Stats().Fsyncs - before; got != 1 {
		t.Fatalf("background append alone: %d fsyncs, want 1", got)
	}

	// A client append in progress: its body arrives in two parts.
	before = s.Stats().Fsyncs
	body, feed := io.Pipe()
	clientDone := make(chan error, 1)
	go func() {
		_, _, err := s.Append(context.Background(), Owner{Key: []byte("client"), Version: 1}, body)
		clientDone <- err
	}()
	if _, err := feed.Write(value(2, 1000)); err != nil {
		t.Fatal(err)
	}
	bgDone := make(chan error, 1)
	go func() {
		_, _, err := s.Append(bg, Owner{Key: []byte("vacuum-copy"), Version: 1}, bytes.NewReader(value(3, 3000)))
		bgDone <- err
	}()
	// Until the background append waits for durability (or, if it asked
	// for an fsync at once, has been served).
	for {
		s.commit.mu.Lock()
		waiting := len(s.commit.waiters)
		s.commit.mu.Unlock()
		if waiting > 0 || len(bgDone) > 0 {
			break
		}
		runtime.Gosched()
	}
	if _, err := feed.Write(value(4, 2000)); err != nil {
		t.Fatal(err)
	}
	feed.Close()
	if err := <-clientDone; err != nil {
		t.Fatalf("client append: %v", err)
	}
	if err := <-bgDone; err != nil {
		t.Fatalf("background append: %v", err)
	}
	if got := s.Stats().Fsyncs - before; got != 1 {
		t.Errorf("%d fsyncs for a background and a client append, want 1 (the client's, covering both)", got)
	}
}

// TestAppendTagged: a scan reports each record's tag, 0 for Append;
// readers ignore tags, and CopyRecords keeps them.
func TestAppendTagged(t *testing.T) {
	ctx := context.Background()
	opts := testOptions(memFS())
	s := mustOpen(t, opts)
	defer s.Close()
	owner := Owner{Key: []byte("k"), Version: 1}
	a, b := value(1, 3*opts.ChunkSize), value(2, 2*opts.ChunkSize)
	extA, _, err := s.AppendTagged(ctx, owner, 0xA, bytes.NewReader(a))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.AppendTagged(ctx, owner, 0xFFFF, bytes.NewReader(b)); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, s, "plain", value(3, 10))
	var recs []Record
	if err := s.ScanSegment(ctx, 1, func(r Record) error { recs = append(recs, r); return nil }); err != nil {
		t.Fatal(err)
	}
	var tags []uint16
	for _, r := range recs {
		tags = append(tags, r.Tag)
	}
	if want := []uint16{0xA, 0xA, 0xA, 0xFFFF, 0xFFFF, 0}; !slices.Equal(tags, want) {
		t.Fatalf("tags %x, want %x", tags, want)
	}
	if recs[1].ChunkOffset != int64(opts.ChunkSize) {
		t.Fatalf("second record's chunk offset %d, want %d", recs[1].ChunkOffset, opts.ChunkSize)
	}
	r, err := s.NewReader(ctx, owner, extA, 0, int64(len(a)))
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(r)
	r.Close()
	if err != nil || !bytes.Equal(got, a) {
		t.Fatalf("tagged value read back: %v", err)
	}
	copied, err := s.CopyRecords(ctx, recs[3:5])
	if err != nil {
		t.Fatal(err)
	}
	var again []Record
	if err := s.ScanSegment(ctx, copied[0].Segment, func(r Record) error {
		if r.Extent.Offset >= copied[0].Offset {
			again = append(again, r)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(again) != 2 || again[0].Tag != 0xFFFF || again[1].Tag != 0xFFFF {
		t.Fatalf("copied records: %+v", again)
	}
}
