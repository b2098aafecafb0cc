package blob

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"path"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/b3-storage/b3/internal/iolimit"
	"github.com/b3-storage/b3/internal/vfs"
)

// ErrClosed is returned by operations on a closed Store.
var ErrClosed = errors.New("blob: store closed")

// Owner identifies whose value a record belongs to. blob treats it as
// opaque.
type Owner struct {
	Key     []byte
	Version uint64
}

// Extent is a run of consecutive records of one owner in one segment, in
// payload order.
type Extent struct {
	Segment uint64
	Offset  int64 // file offset of the run's first record
	Length  int64 // bytes on disk of the run, headers included
	Size    int64 // payload bytes in the run
}

// Record describes one record found by ScanSegment.
type Record struct {
	Owner       Owner
	ChunkOffset int64
	Tag         uint16 // the tag of the Append that wrote it (see AppendTagged)
	Extent      Extent // exactly this one record
}

// SegmentInfo describes a segment file.
type SegmentInfo struct {
	ID     uint64
	Size   int64 // bytes of records; for segments found at Open, the file size (may include zero padding)
	Active bool
}

// segment is the Store's view of one segment file. Guarded by Store.segMu.
type segment struct {
	id       uint64
	size     int64      // sealed segments only
	writer   *segWriter // non-nil while the segment is active
	refs     int        // open Readers, scans and copies pinning it
	removed  bool       // RemoveSegment called; file goes when refs drops to 0
	readFile vfs.File   // shared read-only handle, opened on first pin
}

// Store is a directory of segment files. All methods are safe for
// concurrent use.
type Store struct {
	opts      Options
	fs        vfs.FS
	log       *slog.Logger
	pool      *bufPool
	chunkPool sync.Pool // *[]byte of ChunkSize, for Append's payloads
	readPool  sync.Pool // *[]byte of readBufSize, for Readers

	// copyMu serialises CopyRecords' copying (not its wait for
	// durability), so that concurrent copies do not interleave their
	// records with each other (client appends and rollover still may).
	copyMu sync.Mutex

	// mu is the segment mutex: it serialises copying records into the
	// active segment's buffer, cuts and rollover. It is never held while
	// reading from an appender's io.Reader.
	mu     sync.Mutex
	active *segWriter
	// activeID is active's ID, published after the switch (setActive):
	// a rollover seals the old segment before it creates the next, and in
	// between Segments shows no active one, while activeID still holds
	// the old ID. It is never above the segment the next record goes to.
	activeID atomic.Uint64

	segMu      sync.Mutex
	segments   map[uint64]*segment
	segsClosed bool // Close ran: no new pins; handles close when unpinned

	commit groupCommit
	ckpt   checkpointer

	failure atomic.Pointer[error] // first write/fsync error: the store stops accepting writes
	epoch   atomic.Uint64         // Recovers so far: a write spanning one fails (sameEpoch)

	cutMu sync.Mutex
	cuts  map[uint64]int64 // segment -> where Recover cut and sealed it (Surviving)

	stateMu   sync.Mutex
	closed    bool
	inflight  sync.WaitGroup
	closeOnce sync.Once
	closeErr  error

	stats counters

	// clientAppends counts Appends in progress not at background
	// priority: while there are any, background waits for durability
	// defer to the group commits they will start (waitDurable).
	clientAppends atomic.Int64
}

func segmentName(id uint64) string { return fmt.Sprintf("%016x.seg", id) }

func (s *Store) segmentPath(id uint64) string { return path.Join(s.opts.Dir, segmentName(id)) }

func (s *Store) readBufSize() int { return s.opts.ChunkSize + headerSize + 1024 }

// begin registers an in-flight operation; Close waits for them.
func (s *Store) begin() error {
	s.stateMu.Lock()
	defer s.stateMu.Unlock()
	if s.closed {
		return ErrClosed
	}
	s.inflight.Add(1)
	return nil
}

func (s *Store) setFailed(err error) {
	if s.failure.CompareAndSwap(nil, &err) {
		s.log.Error("blob: store failed, refusing further writes", "err", err)
	}
}

func (s *Store) failed() error {
	if p := s.failure.Load(); p != nil {
		return *p
	}
	return nil
}

// Append streams r into records of at most ChunkSize payload and returns
// their extents in payload order and the payload size. It returns once the
// records are durable according to Options.Sync. On error the extents
// written so far are returned too, so the caller can count them dead. An
// empty value writes no record and returns no extent.
func (s *Store) Append(ctx context.Context, owner Owner, r io.Reader) ([]Extent, int64, error) {
	return s.AppendTagged(ctx, owner, 0, r)
}

// AppendTagged is Append with every record marked with tag. The records of
// appends of one owner running at once interleave in the segment; a
// caller that must later tell them apart by scanning alone (its own
// record of the extents lost in a crash) gives each a different tag.
// blob gives tags no other meaning: readers ignore them, CopyRecords
// keeps them.
func (s *Store) AppendTagged(ctx context.Context, owner Owner, tag uint16, r io.Reader) ([]Extent, int64, error) {
	if err := s.begin(); err != nil {
		return nil, 0, err
	}
	defer s.inflight.Done()
	epoch := s.epoch.Load()
	if iolimit.PriorityFrom(ctx) != iolimit.Background {
		s.clientAppends.Add(1)
		defer s.clientAppends.Add(-1)
	}
	if len(owner.Key) > MaxKeyLen {
		return nil, 0, fmt.Errorf("blob: owner key of %d bytes exceeds %d", len(owner.Key), MaxKeyLen)
	}
	bp := s.chunkPool.Get().(*[]byte)
	defer s.chunkPool.Put(bp)
	chunk := *bp

	var (
		extents []Extent
		size    int64
		last    position
		hdr     [headerSize]byte
	)
	for {
		if err := ctx.Err(); err != nil {
			return extents, size, err
		}
		// Read outside any lock: a slow client stalls only itself.
		n, rerr := fillChunk(r, chunk)
		if rerr != nil && rerr != io.EOF {
			return extents, size, fmt.Errorf("blob: read value: %w", rerr)
		}
		if n == 0 {
			break
		}
		if size+int64(n) > MaxValueSize {
			return extents, size, fmt.Errorf("blob: value exceeds %d bytes", int64(MaxValueSize))
		}
		payload := chunk[:n]
		encodeHeader(hdr[:], owner.Key, owner.Version, uint64(size), tag, payload)
		ext, err := s.appendRecord(ctx, hdr[:], owner.Key, payload)
		if err != nil {
			return extents, size, err
		}
		extents = MergeExtent(extents, ext)
		size += int64(n)
		last = position{ext.Segment, ext.Offset + ext.Length}
		if rerr != nil {
			break
		}
	}
	if len(extents) == 0 {
		return nil, 0, nil
	}
	return extents, size, s.sameEpoch(epoch, s.waitDurable(ctx, epoch, last))
}

// fillChunk reads from r until chunk is full or r reports io.EOF. Unlike
// io.ReadFull it passes on every other error unchanged, io.ErrUnexpectedEOF
// included: that is how net/http reports a client body cut short, and a
// short body must fail the write, not be stored as a shorter value.
func fillChunk(r io.Reader, chunk []byte) (int, error) {
	n := 0
	for n < len(chunk) {
		m, err := r.Read(chunk[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// MergeExtent appends ext to extents, extending the last extent when ext
// follows it directly in the same segment.
func MergeExtent(extents []Extent, ext Extent) []Extent {
	if n := len(extents); n > 0 {
		prev := &extents[n-1]
		if prev.Segment == ext.Segment && prev.Offset+prev.Length == ext.Offset {
			prev.Length += ext.Length
			prev.Size += ext.Size
			return extents
		}
	}
	return append(extents, ext)
}

// appendRecord copies one encoded record (given in parts) into the active
// segment and returns its extent. The limiter is waited on before the
// segment mutex is taken.
func (s *Store) appendRecord(ctx context.Context, hdr, key, payload []byte) (Extent, error) {
	n := len(hdr) + len(key) + len(payload)
	if lim := s.opts.Limiter; lim != nil {
		if err := lim.WaitWrite(ctx, n); err != nil {
			return Extent{}, err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.failed(); err != nil {
		return Extent{}, err
	}
	w := s.active
	if end := w.end.Load(); end > 0 && end+int64(n) > s.opts.SegmentSize {
		var err error
		if w, err = s.rolloverLocked(); err != nil {
			return Extent{}, err
		}
	}
	off := w.end.Load()
	w.write(hdr)
	w.write(key)
	w.write(payload)
	s.stats.bytesAppended.Add(int64(n))
	s.stats.payloadAppended.Add(int64(len(payload)))
	s.stats.records.Add(1)
	return Extent{Segment: w.id, Offset: off, Length: int64(n), Size: int64(len(payload))}, nil
}

// CopyRecords re-appends recs, in order, as new records of the same owner
// and chunk offset, verifying each record (owner, offset and both CRCs)
// while copying. It returns the new extents, durable (fsynced) under every
// policy, SyncNone included: a copy stands in for a record that may be old
// and durable, and SyncNone may lose recent writes, never old ones. In the
// extents, consecutive records of one owner with contiguous chunk offsets that land
// next to each other are merged into one extent, so each returned extent
// covers a run of consecutive entries of recs. A record that fails
// verification stops the copy with an error wrapping ErrCorrupt; the
// extents copied so far are returned with it.
//
// Concurrent calls copy one after another (copyMu) and only wait for
// durability together: their fsyncs are shared, and their records do not
// interleave with each other's, so a vacuumed object keeps about one
// extent per span rather than one per record. Client appends and segment
// rollover may still fall between two records; extents then split there.
func (s *Store) CopyRecords(ctx context.Context, recs []Record) ([]Extent, error) {
	if err := s.begin(); err != nil {
		return nil, err
	}
	defer s.inflight.Done()
	epoch := s.epoch.Load()
	out, last, err := s.copyRecords(ctx, recs)
	if err != nil || len(out) == 0 {
		return out, s.sameEpoch(epoch, err)
	}
	if s.opts.Sync == SyncNone {
		// Copies stand in for records that are durable: they are made
		// durable too before anyone points at them, whatever the policy.
		return out, s.sameEpoch(epoch, s.syncThrough(epoch, last))
	}
	return out, s.sameEpoch(epoch, s.waitDurable(ctx, epoch, last))
}

// copyRecords is CopyRecords without the wait for durability; it returns
// the position the caller must wait for.
func (s *Store) copyRecords(ctx context.Context, recs []Record) ([]Extent, position, error) {
	s.copyMu.Lock()
	defer s.copyMu.Unlock()
	pins := map[uint64]vfs.File{}
	defer func() {
		for id := range pins {
			s.unpin(id)
		}
	}()
	var (
		out      []Extent
		last     position
		buf      []byte
		prevOwn  Owner
		prevNext int64 // chunk offset following the previous copied record
	)
	for i, rec := range recs {
		if err := ctx.Err(); err != nil {
			return out, last, err
		}
		f, ok := pins[rec.Extent.Segment]
		if !ok {
			var err error
			if f, err = s.pin(rec.Extent.Segment); err != nil {
				return out, last, fmt.Errorf("blob: copy record %d: %w", i, err)
			}
			pins[rec.Extent.Segment] = f
		}
		want := headerSize + int64(len(rec.Owner.Key)) + rec.Extent.Size
		if rec.Extent.Length != want || rec.Extent.Size < 0 || rec.Extent.Size > MaxChunkSize {
			return out, last, fmt.Errorf("blob: copy record %d: extent %+v is not one record of key length %d", i, rec.Extent, len(rec.Owner.Key))
		}
		if err := s.ensureFlushed(rec.Extent.Segment, rec.Extent.Offset+rec.Extent.Length); err != nil {
			return out, last, err
		}
		if cap(buf) < int(want) {
			buf = make([]byte, want)
		}
		buf = buf[:want]
		if err := s.readAt(ctx, f, rec.Extent.Segment, buf, rec.Extent.Offset); err != nil {
			return out, last, err
		}
		d, _, err := decodeRecord(buf)
		if err == nil && (string(d.key) != string(rec.Owner.Key) || d.header.version != rec.Owner.Version ||
			d.header.chunkOff != uint64(rec.ChunkOffset) || int64(d.header.payloadLen) != rec.Extent.Size) {
			err = errors.New("record does not match the owner, version or chunk offset given")
		}
		if err != nil {
			s.stats.corrupt.Add(1)
			return out, last, &CorruptError{Segment: rec.Extent.Segment, Offset: rec.Extent.Offset, Reason: err.Error()}
		}
		// Same owner, chunk offset and payload: the record bytes are
		// unchanged, header CRCs included.
		keyEnd := headerSize + len(d.key)
		ext, err := s.appendRecord(ctx, buf[:headerSize], buf[headerSize:keyEnd], buf[keyEnd:])
		if err != nil {
			return out, last, err
		}
		s.stats.recordsCopied.Add(1)
		contiguous := i > 0 && string(prevOwn.Key) == string(rec.Owner.Key) &&
			prevOwn.Version == rec.Owner.Version && prevNext == rec.ChunkOffset
		if contiguous {
			out = MergeExtent(out, ext)
		} else {
			out = append(out, ext)
		}
		prevOwn, prevNext = rec.Owner, rec.ChunkOffset+rec.Extent.Size
		last = position{ext.Segment, ext.Offset + ext.Length}
	}
	return out, last, nil
}

// readAt reads exactly len(p) bytes at off, through the limiter. A short
// read means the data the caller expects is not there: ErrCorrupt.
func (s *Store) readAt(ctx context.Context, f vfs.File, seg uint64, p []byte, off int64) error {
	if lim := s.opts.Limiter; lim != nil {
		if err := lim.WaitRead(ctx, len(p)); err != nil {
			return err
		}
	}
	n, err := f.ReadAt(p, off)
	s.stats.bytesRead.Add(int64(n))
	if n == len(p) {
		return nil
	}
	if err == nil || err == io.EOF {
		return &CorruptError{Segment: seg, Offset: off, Reason: fmt.Sprintf("file ends after %d of %d bytes", n, len(p))}
	}
	return fmt.Errorf("blob: read segment %016x at %d: %w", seg, off, err)
}

// ensureFlushed makes sure the file of segment id holds the bytes below
// end: under SyncNone a reader may ask for bytes still in the write buffer.
func (s *Store) ensureFlushed(id uint64, end int64) error {
	s.mu.Lock()
	w := s.active
	if w == nil || w.id != id || w.sealed {
		s.mu.Unlock()
		return nil // a sealed segment was flushed entirely before sealing
	}
	if w.flushedFast.Load() >= end {
		s.mu.Unlock()
		return nil
	}
	if end > w.end.Load() {
		s.mu.Unlock()
		return fmt.Errorf("blob: segment %016x: offset %d is past the end of the data", id, end)
	}
	w.cut()
	s.mu.Unlock()
	return w.waitFlushed(end)
}

// pin returns the shared read handle of a segment and keeps the file from
// being deleted until unpin.
func (s *Store) pin(id uint64) (vfs.File, error) {
	s.segMu.Lock()
	defer s.segMu.Unlock()
	if s.segsClosed {
		return nil, ErrClosed
	}
	seg := s.segments[id]
	if seg == nil || seg.removed {
		return nil, fmt.Errorf("blob: segment %016x: %w", id, fs.ErrNotExist)
	}
	if seg.readFile == nil {
		f, err := s.fs.Open(s.segmentPath(id))
		if err != nil {
			return nil, fmt.Errorf("blob: open segment %016x for reading: %w", id, err)
		}
		seg.readFile = f
	}
	seg.refs++
	return seg.readFile, nil
}

func (s *Store) unpin(id uint64) {
	s.segMu.Lock()
	seg := s.segments[id]
	seg.refs--
	last := seg.removed && seg.refs == 0
	if last {
		delete(s.segments, id)
	} else if s.segsClosed && seg.refs == 0 && seg.readFile != nil {
		seg.readFile.Close()
		seg.readFile = nil
	}
	s.segMu.Unlock()
	if last {
		if err := s.deleteSegmentFile(seg); err != nil {
			s.log.Warn("blob: deferred segment removal failed", "segment", id, "err", err)
		}
	}
}

func (s *Store) deleteSegmentFile(seg *segment) error {
	if seg.readFile != nil {
		seg.readFile.Close()
	}
	if err := s.fs.Remove(s.segmentPath(seg.id)); err != nil {
		return fmt.Errorf("blob: remove segment %016x: %w", seg.id, err)
	}
	s.stats.segmentsRemoved.Add(1)
	if err := s.fs.SyncDir(s.opts.Dir); err != nil {
		return fmt.Errorf("blob: sync dir after removing segment %016x: %w", seg.id, err)
	}
	return nil
}

// RemoveSegment deletes a sealed segment. The file goes when the last
// Reader (or scan, or copy) pinning it finishes; new readers of the segment
// fail at once. The active segment cannot be removed.
func (s *Store) RemoveSegment(id uint64) error {
	s.segMu.Lock()
	seg := s.segments[id]
	switch {
	case seg == nil || seg.removed:
		s.segMu.Unlock()
		return fmt.Errorf("blob: remove segment %016x: %w", id, fs.ErrNotExist)
	case seg.writer != nil:
		s.segMu.Unlock()
		return fmt.Errorf("blob: remove segment %016x: it is the active segment", id)
	}
	seg.removed = true
	now := seg.refs == 0
	if now {
		delete(s.segments, id)
	}
	s.segMu.Unlock()
	if now {
		return s.deleteSegmentFile(seg)
	}
	return nil
}

// Segments lists the segments not removed, in ID order; the last one is
// the active segment, except during a rollover, when the segment just
// sealed is the last and none is active (see ActiveSegment).
func (s *Store) Segments() []SegmentInfo {
	s.segMu.Lock()
	out := make([]SegmentInfo, 0, len(s.segments))
	for _, seg := range s.segments {
		if seg.removed {
			continue
		}
		info := SegmentInfo{ID: seg.id, Size: seg.size}
		if seg.writer != nil {
			info.Size, info.Active = seg.writer.end.Load(), true
		}
		out = append(out, info)
	}
	s.segMu.Unlock()
	slices.SortFunc(out, func(a, b SegmentInfo) int {
		switch {
		case a.ID < b.ID:
			return -1
		case a.ID > b.ID:
			return 1
		}
		return 0
	})
	return out
}

// ActiveSegment returns the ID of the segment appends go to, or, while a
// rollover creates the next segment, of the one it just sealed. Every
// record appended after ActiveSegment returns lies in that segment or a
// later one.
func (s *Store) ActiveSegment() uint64 { return s.activeID.Load() }

// setActive makes w the segment appends go to. Called with s.mu held (or
// by Open, before the store is shared).
func (s *Store) setActive(w *segWriter) {
	s.active = w
	s.activeID.Store(w.id)
}

// Close flushes and fsyncs the active segment, waits for in-flight Appends
// and CopyRecords, writes a final checkpoint and releases the files. Open
// Readers keep working on the data already written until they are closed.
// Close is idempotent.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.stateMu.Lock()
		s.closed = true
		s.stateMu.Unlock()
		s.inflight.Wait()

		s.commit.stopSyncer()
		s.ckpt.stop()

		s.mu.Lock()
		w := s.active
		end := w.end.Load()
		err := s.sealLocked(w)
		s.mu.Unlock()
		if err == nil {
			err = s.failed() // after a failed fsync, checkpoint nothing new
		}
		if err == nil {
			s.commit.advance(position{w.id, end})
			err = s.writeCheckpoint(position{w.id, end})
		} else {
			s.commit.fail(err)
		}
		if ferr := s.failed(); err == nil && ferr != nil {
			err = ferr
		}
		s.segMu.Lock()
		s.segsClosed = true
		for _, seg := range s.segments {
			if seg.readFile != nil && seg.refs == 0 {
				seg.readFile.Close()
				seg.readFile = nil
			}
		}
		s.segMu.Unlock()
		s.closeErr = err
	})
	return s.closeErr
}
