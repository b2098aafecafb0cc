package objstore

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/b3-storage/b3/internal/blob"
	"github.com/b3-storage/b3/internal/iolimit"
	"github.com/b3-storage/b3/internal/meta"
)

// VacuumStatus is what an operator sees of vacuum.
type VacuumStatus struct {
	Running          bool      // a pass is under way
	Auto             bool      // the background loop is on
	CurrentSegment   uint64    // segment being rewritten (0: none)
	SegmentsRemoved  int64     // since start
	BytesReclaimed   int64     // segment bytes freed, since start
	BytesCopied      int64     // live bytes copied forward, since start
	LastPass         time.Time // end of the last pass
	LastError        string
	DeadBytes        int64 // dead bytes counted over all segments now
	TotalBytes       int64 // size of all segments now
	ThresholdPercent float64
	// Held is set while the segments an unclean end left are held for the
	// node that looks for staged bytes in them (objstore.Found): vacuum
	// neither audits them nor rewrites them or any later segment.
	Held bool
	// Pace is the background pacing in force: the rate vacuum (and every
	// other background job) may use now, and why.
	Pace iolimit.PaceStatus
}

type vacuumState struct {
	pass sync.Mutex // one pass at a time

	mu         sync.Mutex
	cancelPass context.CancelFunc
	stopLoop   context.CancelFunc
	loopDone   chan struct{}
	lastPass   time.Time
	lastErr    string

	running         atomic.Bool
	current         atomic.Uint64
	segmentsRemoved atomic.Int64
	bytesReclaimed  atomic.Int64
	bytesCopied     atomic.Int64
}

// VacuumResult reports one pass.
type VacuumResult struct {
	SegmentsRemoved int
	BytesReclaimed  int64
	BytesCopied     int64
}

// Vacuum runs one pass: every sealed segment whose dead ratio is at least
// threshold (<= 0: the store's configured threshold) is rewritten and
// removed. It returns ErrVacuumInProgress if a pass is already running.
func (s *Store) Vacuum(ctx context.Context, threshold float64) (VacuumResult, error) {
	ctx, end, err := s.beginPass(ctx)
	if err != nil {
		return VacuumResult{}, err
	}
	defer end()
	return s.vacuumPass(ctx, threshold)
}

// VacuumInBackground starts one pass (see Vacuum) and returns once it is
// under way: VacuumStatus reports it Running from then until it ends, so
// a caller that starts a pass and then waits for Running to clear waits
// for this one. done receives its result.
func (s *Store) VacuumInBackground(ctx context.Context, threshold float64, done func(VacuumResult, error)) error {
	ctx, end, err := s.beginPass(ctx)
	if err != nil {
		return err
	}
	go func() {
		defer end()
		done(s.vacuumPass(ctx, threshold))
	}()
	return nil
}

// beginPass takes the one pass there may be at a time and marks it
// running; end gives it back.
func (s *Store) beginPass(ctx context.Context) (_ context.Context, end func(), _ error) {
	if !s.vacuum.pass.TryLock() {
		return nil, nil, ErrVacuumInProgress
	}
	ctx, cancel := context.WithCancel(ctx)
	s.vacuum.mu.Lock()
	s.vacuum.cancelPass = cancel
	s.vacuum.mu.Unlock()
	s.vacuum.running.Store(true)
	return ctx, func() {
		cancel()
		s.vacuum.running.Store(false)
		s.vacuum.current.Store(0)
		s.vacuum.pass.Unlock()
	}, nil
}

func (s *Store) vacuumPass(ctx context.Context, threshold float64) (VacuumResult, error) {
	if threshold <= 0 {
		threshold = s.opts.VacuumThreshold
	}
	var res VacuumResult
	var err error
	s.recoverBlob()
	if aerr := s.auditOrphans(ctx); aerr != nil && ctx.Err() == nil {
		s.log.Warn("vacuum: orphan audit", "err", aerr)
	}
	for _, seg := range s.vacuumCandidates(threshold) {
		if err = ctx.Err(); err != nil {
			break
		}
		s.vacuum.current.Store(seg.ID)
		var removed bool
		var reclaimed, copied int64
		removed, reclaimed, copied, err = s.vacuumSegment(ctx, seg)
		res.BytesCopied += copied
		s.vacuum.bytesCopied.Add(copied)
		if removed {
			res.SegmentsRemoved++
			res.BytesReclaimed += reclaimed
			s.vacuum.segmentsRemoved.Add(1)
			s.vacuum.bytesReclaimed.Add(reclaimed)
		}
		if err != nil {
			err = fmt.Errorf("vacuum segment %d: %w", seg.ID, err)
			break
		}
	}
	s.vacuum.mu.Lock()
	s.vacuum.lastPass = time.Now()
	s.vacuum.lastErr = ""
	if err != nil {
		s.vacuum.lastErr = err.Error()
	}
	s.vacuum.mu.Unlock()
	return res, err
}

// vacuumCandidates lists sealed segments at or past the threshold, most
// dead first, leaving out any an in-flight write may still reference.
func (s *Store) vacuumCandidates(threshold float64) []blob.SegmentInfo {
	floor := s.inflight.floor(s.activeSegment)
	s.deadMu.Lock()
	defer s.deadMu.Unlock()
	// An empty sealed segment (a full disk's recovery cut one back to
	// nothing and went on in the next) is all dead.
	ratio := func(seg blob.SegmentInfo) float64 {
		if seg.Size == 0 {
			return 1
		}
		return float64(s.dead[seg.ID]) / float64(seg.Size)
	}
	var out []blob.SegmentInfo
	for _, seg := range s.blob.Segments() {
		if seg.Active || seg.ID >= floor {
			continue
		}
		if ratio(seg) >= threshold {
			out = append(out, seg)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return ratio(out[i]) > ratio(out[j]) })
	return out
}

type ownerID struct {
	key     string
	version uint64
}

// vacuumSegment rewrites one sealed segment:
//  1. scan its records, grouped by owner;
//  2. for each owner, copy the records still referenced forward and switch
//     the reference to the copies if it still points at the originals;
//  3. if every referenced record was moved, remove the segment.
func (s *Store) vacuumSegment(ctx context.Context, seg blob.SegmentInfo) (removed bool, reclaimed, copied int64, err error) {
	bg := iolimit.WithPriority(ctx, iolimit.Background)

	groups := map[ownerID][]blob.Record{}
	var order []ownerID
	err = s.blob.ScanSegment(bg, seg.ID, func(r blob.Record) error {
		id := ownerID{string(r.Owner.Key), r.Owner.Version}
		if _, seen := groups[id]; !seen {
			order = append(order, id)
		}
		r.Owner.Key = nil // the scan may reuse the buffer; id holds a copy
		groups[id] = append(groups[id], r)
		return nil
	})
	if err != nil {
		return false, 0, 0, err
	}

	copied, complete, err := s.moveOwners(bg, seg.ID, order, groups)
	if err != nil {
		return false, 0, copied, err
	}
	if !complete {
		s.log.Warn("vacuum left a segment in place: some live records could not be moved", "segment", seg.ID)
		return false, 0, copied, nil
	}

	if err := s.blob.RemoveSegment(seg.ID); err != nil {
		return false, 0, copied, err
	}
	b := s.meta.NewBatch()
	defer b.Close()
	b.DeleteSegmentCounter(seg.ID)
	if err := b.Commit(); err != nil {
		// The file is gone; Open drops counters of missing segments.
		s.log.Warn("delete counter of removed segment", "segment", seg.ID, "err", err)
	}
	s.deadMu.Lock()
	delete(s.dead, seg.ID)
	s.deadMu.Unlock()
	return true, seg.Size, copied, nil
}

// vacuumMovers is how many owners vacuum moves at once. Each move ends in
// a segment fsync and a metadata fsync; moved one at a time, those
// dominate a segment of small objects (BenchmarkVacuum). Concurrent moves
// share them through group commit, in the segments and in pebble. The
// owners of one segment are independent: each move swaps its own key's
// references under that key's lock.
const vacuumMovers = 16

// moveOwners moves every owner's records out of segment, vacuumMovers at a
// time. complete is false if any referenced record could not be moved. It
// stops at the first error.
func (s *Store) moveOwners(ctx context.Context, segment uint64, order []ownerID, groups map[ownerID][]blob.Record) (copied int64, complete bool, err error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		mu       sync.Mutex
		firstErr error
		wg       sync.WaitGroup
	)
	complete = true
	next := make(chan ownerID)
	for range min(vacuumMovers, len(order)) {
		wg.Go(func() {
			for id := range next {
				var n int64
				var ok bool
				err := s.pace(ctx, vacuumMoveCost)
				if err == nil {
					n, ok, err = s.moveOwner(ctx, segment, id, groups[id])
				}
				mu.Lock()
				copied += n
				complete = complete && ok
				// Keep the first error, but let a real one replace a
				// cancellation that other movers saw because of it.
				if err != nil && (firstErr == nil || isCancel(firstErr) && !isCancel(err)) {
					firstErr = err
					cancel()
				}
				mu.Unlock()
			}
		})
	}
	fed := 0
feed:
	for _, id := range order {
		select {
		case next <- id:
			fed++
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	if firstErr == nil && fed < len(order) {
		firstErr = ctx.Err() // the caller's cancellation stopped the feed
	}
	return copied, complete, firstErr
}

func isCancel(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// referencer is a metadata record that references an owner's records: the
// object itself (current, or a version in the version table), or one part
// of an upload in progress.
type referencer struct {
	obj        *meta.Object
	noncurrent bool // obj lives in the version table
	part       *meta.Part
	extents    []meta.Extent
}

// testHookReferences, set by tests, runs inside references after the
// object's record was read.
var testHookReferences func(bucket, key string)

// references finds the records of (bucket/key, version) that reference
// anything. At most one object, or the parts of at most one upload, do.
//
// Every read is made on one meta.View, so the answer is true of one
// instant: a part handed to its object by a CompleteMultipartUpload
// committed between two reads cannot escape both. An empty answer is
// therefore final, without the key lock: once no record references a
// segment record none ever will again (see doc.go).
func (s *Store) references(bucket, key string, version uint64) ([]referencer, error) {
	view := s.meta.NewView()
	defer view.Close()
	return s.referencesIn(view, bucket, key, version)
}

// referencesIn is references as of view.
func (s *Store) referencesIn(view *meta.View, bucket, key string, version uint64) ([]referencer, error) {
	obj, err := view.GetObject(bucket, key)
	if err != nil && !errors.Is(err, meta.ErrNotFound) {
		return nil, err
	}
	if testHookReferences != nil {
		testHookReferences(bucket, key)
	}
	if obj != nil && obj.Version == version {
		return []referencer{{obj: obj, extents: obj.Extents}}, nil
	}
	// A noncurrent version (versions move between "o" and the version
	// table whole, in one batch: on one view it is in exactly one).
	ver, err := view.GetVersion(bucket, key, version)
	if err == nil {
		return []referencer{{obj: ver, noncurrent: true, extents: ver.Extents}}, nil
	}
	if !errors.Is(err, meta.ErrNotFound) {
		return nil, err
	}
	up, err := view.UploadOf(bucket, key, version)
	if errors.Is(err, meta.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	parts, err := view.AllParts(up.UploadID)
	if err != nil {
		return nil, err
	}
	refs := make([]referencer, 0, len(parts))
	for _, p := range parts {
		refs = append(refs, referencer{part: p, extents: p.Extents})
	}
	return refs, nil
}

// moveOwner moves the referenced records of one owner out of segment. ok
// is false if a referenced record could not be moved (it was corrupt, or
// the reference changed in an unexpected way); the segment must then stay.
func (s *Store) moveOwner(ctx context.Context, segment uint64, id ownerID, recs []blob.Record) (copied int64, ok bool, err error) {
	bucket, key, valid := splitOwnerKey([]byte(id.key))
	if !valid {
		return 0, false, fmt.Errorf("record owner %q is not bucket/key", id.key)
	}
	// A look without the key lock, on one consistent view: references only
	// disappear, or move intact from a part to the object, so records it
	// finds unreferenced are dead for good, and swap rechecks the ones it
	// finds under the lock.
	refs, err := s.references(bucket, key, id.version)
	if err != nil {
		return 0, false, err
	}
	byOffset := make(map[int64]blob.Record, len(recs))
	for _, r := range recs {
		byOffset[r.Extent.Offset] = r
	}
	ok = true
	for _, ref := range refs {
		for _, span := range spansIn(ref.extents, segment) {
			spanRecs, whole := recordsOf(span, byOffset)
			if !whole {
				ok = false // a referenced record is missing from the scan: corrupt
				continue
			}
			for i := range spanRecs {
				spanRecs[i].Owner = blob.Owner{Key: []byte(id.key), Version: id.version}
			}
			newExts, err := s.blob.CopyRecords(ctx, spanRecs)
			if err != nil {
				s.discard(newExts)
				return copied, false, err
			}
			swapped, err := s.swap(bucket, key, id.version, span, toMeta(newExts))
			if err != nil || !swapped {
				s.discard(newExts)
			}
			if err != nil {
				return copied, false, err
			}
			if swapped {
				copied += spanLength(span)
			}
		}
	}
	return copied, ok, nil
}

// swap replaces span with repl in whichever record of the owner references
// it now. It reports false if none does (deleted or overwritten meanwhile):
// the span is then dead and the copies are garbage.
func (s *Store) swap(bucket, key string, version uint64, span, repl []meta.Extent) (bool, error) {
	unlock := s.lockKey(bucket, key)
	defer unlock()
	refs, err := s.references(bucket, key, version)
	if err != nil {
		return false, err
	}
	for _, ref := range refs {
		at := indexSpan(ref.extents, span)
		if at < 0 {
			continue
		}
		exts := make([]meta.Extent, 0, len(ref.extents)-len(span)+len(repl))
		exts = append(exts, ref.extents[:at]...)
		exts = append(exts, repl...)
		exts = append(exts, ref.extents[at+len(span):]...)
		b := s.meta.NewBatch()
		defer b.Close()
		switch {
		case ref.obj != nil && ref.noncurrent:
			ref.obj.Extents = exts
			b.PutVersion(ref.obj)
		case ref.obj != nil:
			ref.obj.Extents = exts
			b.PutObject(ref.obj)
		default:
			ref.part.Extents = exts
			b.PutPart(ref.part)
		}
		// The originals are dead now: if a crash comes before the segment
		// is removed, the next pass finds it fully dead and removes it.
		counts := map[uint64]int64{}
		addDead(b, span, counts)
		// Synced whatever the policy: the segment is removed once every
		// swap committed, and a swap lost in a crash would leave the
		// reference pointing into the removed file.
		if err := b.CommitSync(); err != nil {
			return false, err
		}
		s.noteDead(counts)
		return true, nil
	}
	return false, nil
}

// spansIn returns the maximal runs of consecutive extents lying in segment.
func spansIn(exts []meta.Extent, segment uint64) [][]meta.Extent {
	var spans [][]meta.Extent
	start := -1
	for i, e := range exts {
		switch {
		case e.Segment == segment && start < 0:
			start = i
		case e.Segment != segment && start >= 0:
			spans = append(spans, exts[start:i])
			start = -1
		}
	}
	if start >= 0 {
		spans = append(spans, exts[start:])
	}
	return spans
}

// recordsOf returns the records making up span, in order, and whether they
// cover it exactly.
func recordsOf(span []meta.Extent, byOffset map[int64]blob.Record) ([]blob.Record, bool) {
	var out []blob.Record
	for _, e := range span {
		for off := e.Offset; off < e.Offset+e.Length; {
			r, found := byOffset[off]
			if !found || r.Extent.Length <= 0 {
				return nil, false
			}
			out = append(out, r)
			off += r.Extent.Length
		}
	}
	return out, true
}

func indexSpan(exts, span []meta.Extent) int {
	for i := 0; i+len(span) <= len(exts); i++ {
		match := true
		for j := range span {
			if exts[i+j] != span[j] {
				match = false
				break
			}
		}
		if match {
			return i
		}
	}
	return -1
}

func spanLength(span []meta.Extent) int64 {
	var n int64
	for _, e := range span {
		n += e.Length
	}
	return n
}

// StartVacuum runs a pass every interval in the background until
// StopVacuum or Close.
func (s *Store) StartVacuum(interval time.Duration) {
	s.vacuum.mu.Lock()
	defer s.vacuum.mu.Unlock()
	if s.vacuum.stopLoop != nil {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	s.vacuum.stopLoop, s.vacuum.loopDone = cancel, done
	go func() {
		defer close(done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if _, err := s.Vacuum(ctx, 0); err != nil && !errors.Is(err, ErrVacuumInProgress) && ctx.Err() == nil {
					s.log.Error("vacuum pass failed", "err", err)
				}
			}
		}
	}()
}

// StopVacuum stops the background loop and cancels a running pass. A pass
// stopped half way loses nothing: moved objects point at their copies, the
// others still at the original segment, which stays.
func (s *Store) StopVacuum() {
	s.vacuum.mu.Lock()
	stop, done, cancelPass := s.vacuum.stopLoop, s.vacuum.loopDone, s.vacuum.cancelPass
	s.vacuum.stopLoop, s.vacuum.loopDone = nil, nil
	s.vacuum.mu.Unlock()
	if stop != nil {
		stop()
		<-done
	}
	if cancelPass != nil {
		cancelPass()
	}
	// Wait for a pass started by Vacuum directly to notice.
	s.vacuum.pass.Lock()
	//lint:ignore SA2001 an empty critical section waits for a running pass
	s.vacuum.pass.Unlock()
}

// VacuumStatus reports progress and the current dead-byte totals.
func (s *Store) VacuumStatus() VacuumStatus {
	st := VacuumStatus{
		Running:          s.vacuum.running.Load(),
		CurrentSegment:   s.vacuum.current.Load(),
		SegmentsRemoved:  s.vacuum.segmentsRemoved.Load(),
		BytesReclaimed:   s.vacuum.bytesReclaimed.Load(),
		BytesCopied:      s.vacuum.bytesCopied.Load(),
		ThresholdPercent: s.opts.VacuumThreshold * 100,
		Pace:             s.opts.Limiter.Pacer().Status(),
		Held:             s.orphans.held.Load() > 0,
	}
	s.vacuum.mu.Lock()
	st.Auto = s.vacuum.stopLoop != nil
	st.LastPass, st.LastError = s.vacuum.lastPass, s.vacuum.lastErr
	s.vacuum.mu.Unlock()
	s.deadMu.Lock()
	for _, seg := range s.blob.Segments() {
		st.TotalBytes += seg.Size
		st.DeadBytes += s.dead[seg.ID]
	}
	s.deadMu.Unlock()
	return st
}

// SegmentStat is one segment's size and dead bytes.
type SegmentStat struct {
	ID              uint64
	Size, DeadBytes int64
	Active          bool
}

// Segments reports every segment with its dead bytes.
func (s *Store) Segments() []SegmentStat {
	s.deadMu.Lock()
	defer s.deadMu.Unlock()
	var out []SegmentStat
	for _, seg := range s.blob.Segments() {
		out = append(out, SegmentStat{ID: seg.ID, Size: seg.Size, DeadBytes: s.dead[seg.ID], Active: seg.Active})
	}
	return out
}
