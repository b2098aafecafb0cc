package objstore

import (
	"bytes"
	"context"
	"crypto/md5"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"slices"
	"sync"
	"time"

	"github.com/b3-storage/b3/internal/blob"
	"github.com/b3-storage/b3/internal/iolimit"
	"github.com/b3-storage/b3/internal/meta"
)

// Replicated writes.
//
// A replicated store splits every write in two: the bytes are staged
// (Stage: written and synced into the segments under their owner, not yet
// referenced), and later a command installs the record that references them
// (the Apply* functions). Each replica stages its own copy of the bytes, so
// extents differ from replica to replica; the records name the same bucket,
// key and version everywhere.
//
// The Apply* functions take the record as decided by whoever ordered the
// command (version, times, attributes, upload IDs): they never allocate a
// version or read a clock that matters, so every replica that applies the
// same commands in the same order holds the same records. Each commits its
// changes together with the command's position (stamp, see
// meta.Batch.SetApplied); Applied returns the last one, so a caller that
// replays its log after a restart skips what the store already holds.
//
// objstore knows nothing of how the commands are ordered or replicated.

// Staged is an object's or a part's bytes in the segments, owned by
// (bucket/key, version) and referenced by nothing yet. While a Staged is
// held, vacuum leaves the segments it may lie in alone (it is an in-flight
// write). Exactly one of Release (a record now references the bytes) or
// Discard (none ever will) must be called.
type Staged struct {
	Extents []meta.Extent
	Size    int64
	// MD5 is the bytes' MD5 sum where the stager computed it as they
	// arrived (a replica's staging of pushed bytes), else nil.
	MD5 []byte

	store   *Store
	write   uint64
	claimed bool // Found.Take's: its extents are kept from the audit until released
	once    sync.Once
}

// Stage writes body into the segments as (bucket/key, version) and
// returns once the bytes are synced under the store's policy.
func (s *Store) Stage(ctx context.Context, bucket, key string, version uint64, body io.Reader) (*Staged, error) {
	if err := s.admitWrite(); err != nil {
		return nil, err
	}
	write := s.inflight.register(s.activeSegment)
	exts, size, err := s.blob.AppendTagged(ctx, blob.Owner{Key: ownerKey(bucket, key), Version: version}, s.nextStageTag(), body)
	if err != nil {
		s.discard(exts)
		s.inflight.done(write)
		return nil, err
	}
	return &Staged{Extents: toMeta(exts), Size: size, store: s, write: write}, nil
}

// nextStageTag returns the tag of the next stage's records: the stages
// of one owner staged at once (an upload's parts) get different tags, so
// that ScanStaged tells their records apart however they interleave. Tags
// follow each other from a random start, skipping 0 (untagged): two stages
// share one only if 65,535 others began between them, or, across a
// restart, by a chance of 1 in 65,535.
func (s *Store) nextStageTag() uint16 {
	for {
		if tag := uint16(s.stageTag.Add(1)); tag != 0 {
			return tag
		}
	}
}

// Release ends the in-flight pin: the bytes are referenced by a committed
// record (or, after a failed apply, will be counted dead by Discard).
func (st *Staged) Release() {
	st.once.Do(func() {
		st.unclaim()
		st.store.inflight.done(st.write)
	})
}

// Discard counts the bytes dead and releases them.
func (st *Staged) Discard() {
	st.once.Do(func() {
		st.store.discard(toBlob(st.Extents))
		st.unclaim()
		st.store.inflight.done(st.write)
	})
}

func (st *Staged) unclaim() {
	if st.claimed {
		st.store.orphans.unclaim(st.Extents)
	}
}

// StagedID names the bytes of one object version.
type StagedID struct {
	Bucket, Key string
	Version     uint64
}

// Found is what ScanStaged finds: the runs of records that Stage wrote
// and synced before the last unclean end, by owner. A replica keeps its
// staging table in memory; after such an end, the bytes it staged are in
// its segments, referenced by nothing, and only their owner, size and
// checksum (the command's) say which they are: Take hands them out by
// those.
//
// From ScanStaged to Close the segments it scans stay as they are: vacuum
// neither audits them (a run no command took yet would be counted dead)
// nor rewrites them, nor any segment after the first of them. Close ends
// that; the next audit counts what nobody took. Exactly one Close must be
// called.
type Found struct {
	store  *Store
	pin    uint64 // the in-flight registration that keeps vacuum away
	cancel context.CancelFunc
	done   chan struct{} // closed when the scan has ended
	err    error         // the scan's, set before done is closed

	mu     sync.Mutex
	runs   map[ownerID][]*foundRun // every run, all ways of chaining, oldest first
	used   map[recordAt]bool       // records referenced, or handed out
	closed bool
}

// recordAt locates one record.
type recordAt struct {
	segment uint64
	offset  int64
}

// foundRun is a run of records of one owner and tag: chunk offsets 0, then each
// where the last ended, in the order the scan met them. It is its last
// record and the run it extends (nil for a run's first record), so runs
// that share a beginning share it.
type foundRun struct {
	parent   *foundRun
	rec      blob.Extent
	size     int64  // the chunk offset the run needs next: its length so far
	extended bool   // a later record extends it (in its own chaining)
	sum      []byte // its MD5 sum, once a Take has read it

	// In the scan's order of records: the run's first and last record,
	// and how many it has.
	start, last uint64
	depth       int
}

// extents returns the run's records in order, merged where they touch.
func (rn *foundRun) extents() []blob.Extent {
	var recs []blob.Extent
	for r := rn; r != nil; r = r.parent {
		recs = append(recs, r.rec)
	}
	slices.Reverse(recs)
	var out []blob.Extent
	for _, e := range recs {
		out = blob.MergeExtent(out, e)
	}
	return out
}

// chaining builds runs in one of three ways. A run chains records of one
// owner and one tag (stageKey): Stage gives each stage its own tag, so
// however the records of stages written at the same moment interleave,
// each tag's records are one stage's, and each chaining builds its run.
// Where tags do not tell stages apart (records written before tags, or
// two stages whose tags collided), a record at chunk offset c may extend
// any run of its stage key that needs c next:
//   - the oldest such run (first) is right when stages take turns, as
//     concurrent stages of one size do, a record or a burst of them each;
//   - the oldest that has not stalled (first, skipStalled) is right when a
//     stage torn short (or one that ended) at c precedes stages taking
//     turns: a run has stalled when another run waiting for c began after
//     its last record and has two records or more;
//   - the newest (last) is right when one stage follows another that ended
//     or was torn at c.
//
// The scan chains all three ways; Take's checksum picks.
type chaining struct {
	first, skipStalled bool
	next               map[stageKey]map[int64][]*foundRun // runs not extended, by the offset they need
	seq                uint64                             // records added
}

// stageKey is what a run's records share: their owner and their tag.
type stageKey struct {
	owner ownerID
	tag   uint16
}

// chainings returns one chaining of each way.
func chainings() []*chaining {
	return []*chaining{
		{first: true, next: map[stageKey]map[int64][]*foundRun{}},
		{first: true, skipStalled: true, next: map[stageKey]map[int64][]*foundRun{}},
		{next: map[stageKey]map[int64][]*foundRun{}},
	}
}

// stalled reports whether another run of waiting began after w's last
// record and has two records or more: it wrote them all while w wrote
// none, which stages taking turns do not do.
func stalled(w *foundRun, waiting []*foundRun) bool {
	for _, o := range waiting {
		if o.start > w.last && o.depth >= 2 {
			return true
		}
	}
	return false
}

func (ch *chaining) add(id stageKey, r blob.Record) *foundRun {
	byNext := ch.next[id]
	if byNext == nil {
		byNext = map[int64][]*foundRun{}
		ch.next[id] = byNext
	}
	var parent *foundRun
	if r.ChunkOffset != 0 {
		waiting := byNext[r.ChunkOffset]
		if len(waiting) == 0 {
			return nil // a fragment of a torn write
		}
		i := len(waiting) - 1
		if ch.first {
			i = 0
		}
		if ch.skipStalled {
			for j, w := range waiting {
				if !stalled(w, waiting) {
					i = j
					break
				}
			}
		}
		parent = waiting[i]
		parent.extended = true
		byNext[r.ChunkOffset] = slices.Delete(waiting, i, i+1)
	}
	ch.seq++
	rn := &foundRun{parent: parent, rec: r.Extent, size: r.ChunkOffset + r.Extent.Size, start: ch.seq, last: ch.seq, depth: 1}
	if parent != nil {
		rn.start, rn.depth = parent.start, parent.depth+1
	}
	byNext[rn.size] = append(byNext[rn.size], rn)
	return rn
}

// ScanStaged starts reading, once and in order, the segments the last
// unclean end left to audit (see orphanBooks), as background I/O, and
// keeps every run of records (see chaining) that no record references.
// Scanned records have valid checksums, header and payload. It returns
// nil when there is nothing to scan; Wait waits for the scan. A segment
// that cannot be read (a corrupt header ends its scan) is named in Wait's
// error, and what the others hold counts.
func (s *Store) ScanStaged(ctx context.Context) *Found {
	s.orphans.mu.Lock()
	defer s.orphans.mu.Unlock()
	if len(s.orphans.pending) == 0 {
		return nil
	}
	// The hold keeps the audit from taking segments off pending, and the
	// pin keeps vacuum from rewriting them: the list stays valid unlocked.
	segments := slices.Clone(s.orphans.pending)
	ctx, cancel := context.WithCancel(iolimit.WithPriority(ctx, iolimit.Background))
	f := &Found{store: s, cancel: cancel, done: make(chan struct{})}
	f.pin = s.inflight.register(func() uint64 { return segments[0] })
	s.orphans.held.Add(1)
	go f.scan(ctx, segments)
	return f
}

func (f *Found) scan(ctx context.Context, segments []uint64) {
	defer close(f.done)
	runs := map[ownerID][]*foundRun{}
	ways := chainings()
	var errs error // segments that could not be read; the others count
	for _, seg := range segments {
		if ctx.Err() != nil {
			f.err = ctx.Err()
			return
		}
		err := f.store.blob.ScanSegment(ctx, seg, func(r blob.Record) error {
			id := ownerID{string(r.Owner.Key), r.Owner.Version}
			for _, ch := range ways {
				if rn := ch.add(stageKey{id, r.Tag}, r); rn != nil {
					runs[id] = append(runs[id], rn)
				}
			}
			return nil
		})
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = errors.Join(errs, fmt.Errorf("look for staged bytes in segment %d: %w", seg, err))
		}
	}
	// Records a record references are not staged bytes: a retried command
	// with the same bytes must not get them, nor a failed apply count them
	// dead.
	used := map[recordAt]bool{}
	view := f.store.meta.NewView()
	for id, rs := range runs {
		if ctx.Err() != nil {
			break
		}
		bucket, key, ok := splitOwnerKey([]byte(id.key))
		if !ok {
			continue
		}
		refs, err := f.store.referencesIn(view, bucket, key, id.version)
		if err != nil {
			errs = errors.Join(errs, err)
			delete(runs, id)
			continue
		}
		refd := referencedBy(refs)
		for _, rn := range rs {
			if refd.covers(rn.rec.Segment, rn.rec.Offset) {
				used[recordAt{rn.rec.Segment, rn.rec.Offset}] = true
			}
		}
	}
	view.Close()
	for id, rs := range runs {
		rs = dedupe(rs)
		rs = slices.DeleteFunc(rs, func(rn *foundRun) bool { return anyUsed(used, rn) })
		if len(rs) == 0 {
			delete(runs, id)
		} else {
			runs[id] = rs
		}
	}
	if ctx.Err() != nil {
		errs = ctx.Err()
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.closed {
		f.runs, f.used = runs, used
	}
	f.err = errs
}

// dedupe keeps one of the runs the chainings built alike (the same
// records in the same order), in the order given: parents before children.
func dedupe(rs []*foundRun) []*foundRun {
	type node struct {
		parent *foundRun
		rec    recordAt
	}
	canon := map[node]*foundRun{}
	same := map[*foundRun]*foundRun{}
	out := rs[:0]
	for _, rn := range rs {
		if p, ok := same[rn.parent]; ok {
			rn.parent = p
		}
		k := node{rn.parent, recordAt{rn.rec.Segment, rn.rec.Offset}}
		if c, ok := canon[k]; ok {
			same[rn] = c
			c.extended = c.extended || rn.extended
			continue
		}
		canon[k] = rn
		out = append(out, rn)
	}
	return out
}

// Done reports whether the scan has ended.
func (f *Found) Done() bool {
	select {
	case <-f.done:
		return true
	default:
		return false
	}
}

// Wait waits for the scan to end and returns its error.
func (f *Found) Wait(ctx context.Context) error {
	select {
	case <-f.done:
		return f.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Runs returns how many runs f holds that no later record extends, no
// record references and no Take handed out (runs chained alike are one
// since dedupe), for logs and tests.
func (f *Found) Runs() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, rs := range f.runs {
		for _, rn := range rs {
			if !rn.extended && !anyUsed(f.used, rn) {
				n++
			}
		}
	}
	return n
}

// MayHold reports whether f may hold the bytes of id, size bytes long
// with MD5 sum md5sum (nil: not known): its scan has not ended (it may yet
// find them), or it found a run of that owner and size whose sum is
// md5sum (or cannot be read to tell), handed out by Take or not. A node
// whose Found may hold bytes must not tell a peer it lacks them
// (cluster's declare-lost); one that matches neither size nor sum may.
func (f *Found) MayHold(ctx context.Context, id StagedID, size int64, md5sum []byte) bool {
	if !f.Done() {
		return true
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return false
	}
	for _, rn := range f.runs[ownerID{string(ownerKey(id.Bucket, id.Key)), id.Version}] {
		if rn.size != size {
			continue
		}
		if len(md5sum) == 0 {
			return true // nothing to tell them by
		}
		if rn.sum == nil {
			if rn.sum = f.store.md5Of(ctx, id, toMeta(rn.extents()), size); rn.sum == nil {
				return true // unreadable now: they may be these
			}
		}
		if bytes.Equal(rn.sum, md5sum) {
			return true
		}
	}
	return false
}

// Take returns the bytes of id, size bytes long, whose MD5 sum is md5sum,
// or nil if f holds none (or its scan has not ended): a run of the owner
// of exactly that length, none of whose records is referenced or handed
// out, with that sum. The bytes are claimed: the audit leaves them alone,
// and vacuum their segments, until Release or Discard.
func (f *Found) Take(ctx context.Context, id StagedID, size int64, md5sum []byte) *Staged {
	if !f.Done() {
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed || size <= 0 || len(md5sum) == 0 {
		return nil
	}
	s := f.store
	// Newest first: of two stages of the same bytes (a retry), the later
	// one is the more likely to be counted nowhere yet.
	runs := f.runs[ownerID{string(ownerKey(id.Bucket, id.Key)), id.Version}]
	for i := len(runs) - 1; i >= 0; i-- {
		rn := runs[i]
		if rn.size != size || anyUsed(f.used, rn) {
			continue
		}
		exts := toMeta(rn.extents())
		if rn.sum == nil {
			if rn.sum = s.md5Of(ctx, id, exts, size); rn.sum == nil {
				continue // unreadable now; another Take tries again
			}
		}
		if !bytes.Equal(rn.sum, md5sum) {
			continue
		}
		for r := rn; r != nil; r = r.parent {
			f.used[recordAt{r.rec.Segment, r.rec.Offset}] = true
		}
		low := exts[0].Segment
		for _, e := range exts {
			low = min(low, e.Segment)
		}
		s.orphans.claim(exts)
		write := s.inflight.register(func() uint64 { return low })
		return &Staged{Extents: exts, Size: size, store: s, write: write, claimed: true}
	}
	return nil
}

// anyUsed reports whether a record of rn is in used.
func anyUsed(used map[recordAt]bool, rn *foundRun) bool {
	for r := rn; r != nil; r = r.parent {
		if used[recordAt{r.rec.Segment, r.rec.Offset}] {
			return true
		}
	}
	return false
}

// md5Of returns the MD5 sum of the bytes of exts, or nil if they cannot be
// read.
func (s *Store) md5Of(ctx context.Context, id StagedID, exts []meta.Extent, size int64) []byte {
	r, err := s.ReadExtents(ctx, id.Bucket, id.Key, id.Version, exts, size)
	if err != nil {
		return nil
	}
	defer r.Close()
	h := md5.New()
	if _, err := io.Copy(h, r); err != nil {
		return nil
	}
	return h.Sum(nil)
}

// Close stops the scan if it still runs and lets vacuum audit and rewrite
// the scanned segments again. Runs taken stay claimed until their Release
// or Discard; the others are counted dead by the next audit, if nothing
// references them.
func (f *Found) Close() {
	f.cancel()
	<-f.done
	f.mu.Lock()
	closed := f.closed
	f.closed, f.runs, f.used = true, nil, nil
	f.mu.Unlock()
	if closed {
		return
	}
	s := f.store
	s.orphans.mu.Lock()
	defer s.orphans.mu.Unlock()
	s.orphans.held.Add(-1)
	s.inflight.done(f.pin)
}

// ReadExtents streams size bytes of the given extents (a staged write's,
// or a record's), owned by (bucket/key, version): the reader checks every
// record's owner. The caller closes the reader.
func (s *Store) ReadExtents(ctx context.Context, bucket, key string, version uint64, exts []meta.Extent, size int64) (io.ReadCloser, error) {
	return s.blob.NewReader(ctx, blob.Owner{Key: ownerKey(bucket, key), Version: version}, toBlob(exts), 0, size)
}

// Applied returns the stamp of the last applied command (0: none). Every
// Apply* function takes stamp 0 for a local write (the single server's
// paths share them).
func (s *Store) Applied() (uint64, error) { return s.meta.Applied() }

// ApplyPutObject installs obj (Version, Modified, Size and either Extents
// or Inline set by the caller) as the current record of its key. What
// happens to the record it replaces follows the bucket's versioning state
// at this point of the command order, as does its expiry; the Object Lock
// check on what it replaces takes obj.Modified, decided by the caller, as
// its instant.
func (s *Store) ApplyPutObject(obj *meta.Object, stamp uint64) error {
	return s.withBucket(obj.Bucket, func(b *meta.Bucket) error {
		obj.Expiry = s.expiryOf(s.rulesOf(b), obj)
		return s.commitObject(obj, nil, stampBatch(stamp), obj.Modified)
	})
}

// ApplyPutObjects is ApplyPutObject for several objects of one bucket,
// each of another key (consecutive commands of a replica's log), in one
// meta batch stamped with stamp, the position of the last: one commit
// instead of one each. It installs all of them or, on an error, none;
// the caller then applies them one at a time to learn which failed.
func (s *Store) ApplyPutObjects(objs []*meta.Object, stamp uint64) error {
	if len(objs) == 0 {
		return nil
	}
	bucket := objs[0].Bucket
	stripes := make([]int, 0, len(objs))
	for _, obj := range objs {
		if obj.Bucket != bucket {
			return fmt.Errorf("objstore: put objects of buckets %q and %q in one batch", bucket, obj.Bucket)
		}
		stripes = append(stripes, s.keys.Stripe(obj.Bucket, obj.Key))
	}
	// The bucket's lock, then each key lock once (keys may share a
	// stripe) in one order, as ApplyPutObject takes them; any other
	// writer holds at most one key lock.
	return s.withBucket(bucket, func(bk *meta.Bucket) error {
		defer s.keys.LockStripes(stripes)()
		rules := s.rulesOf(bk)
		b := s.meta.NewBatch()
		defer b.Close()
		counts := map[uint64]int64{}
		seen := make(map[string]bool, len(objs))
		for _, obj := range objs {
			if seen[obj.Key] {
				return fmt.Errorf("objstore: key %s/%s twice in one batch", bucket, obj.Key)
			}
			seen[obj.Key] = true
			obj.Expiry = s.expiryOf(rules, obj)
			cur, err := s.currentObject(obj.Bucket, obj.Key)
			if err != nil {
				return err
			}
			if err := s.replaceCurrent(b, obj, cur, counts, obj.Modified); err != nil {
				return err
			}
			b.PutObject(obj)
		}
		stampIf(b, stamp)
		if err := b.Commit(); err != nil {
			return fmt.Errorf("commit %d objects of %s: %w", len(objs), bucket, err)
		}
		s.noteDead(counts)
		for _, obj := range objs {
			s.invalidate(obj.Bucket, obj.Key)
		}
		return nil
	})
}

func stampBatch(stamp uint64) func(*meta.Batch, map[uint64]int64) {
	return func(b *meta.Batch, _ map[uint64]int64) { stampIf(b, stamp) }
}

// stampIf stamps b with a command's position; 0 is a local (not
// replicated) write, which commits unstamped and synced as any other;
// Restoring commits unstamped and unsynced.
func stampIf(b *meta.Batch, stamp uint64) {
	switch stamp {
	case 0:
	case Restoring:
		b.Unsynced()
	default:
		b.SetApplied(stamp)
	}
}

// Restoring, given as the stamp of an Apply* call, makes it one change of
// a series that brings the store to a state decided elsewhere (a replica
// restoring a snapshot): it commits unstamped and without a sync of its
// own. Applied does not move until the caller ends the series with
// StampApplied, so a crash in between leaves the old stamp, and the caller
// redoes the series.
const Restoring = ^uint64(0)

// StampApplied sets the applied position to stamp and syncs: every change
// committed before it is durable when it returns.
func (s *Store) StampApplied(stamp uint64) error {
	b := s.meta.NewBatch()
	defer b.Close()
	b.SetApplied(stamp)
	return b.CommitSync()
}

// ApplyUpdateObject replaces the record of obj's key with obj if the
// current record is the same version (attribute changes: tags); otherwise
// it returns ErrNoSuchKey and changes nothing.
func (s *Store) ApplyUpdateObject(obj *meta.Object, stamp uint64) error {
	unlock := s.lockKey(obj.Bucket, obj.Key)
	defer unlock()
	cur, err := s.currentObject(obj.Bucket, obj.Key)
	if err != nil {
		return err
	}
	if cur == nil || cur.Version != obj.Version {
		return ErrNoSuchKey
	}
	next := *obj
	next.Extents, next.Inline, next.Size = cur.Extents, cur.Inline, cur.Size
	if err := s.setExpiry(&next); err != nil {
		return err
	}
	b := s.meta.NewBatch()
	defer b.Close()
	b.PutObject(&next)
	stampIf(b, stamp)
	if err := b.Commit(); err != nil {
		return fmt.Errorf("update %s/%s: %w", obj.Bucket, obj.Key, err)
	}
	s.invalidate(obj.Bucket, obj.Key)
	return nil
}

// ApplyDeleteObject removes the key's record, if any, and returns it,
// whatever the bucket's versioning state (the commands of clusters that
// had no versioning, and a restore). A record under Object Lock stays
// (ErrObjectLocked): the check has no instant, so retention never ends.
func (s *Store) ApplyDeleteObject(bucket, key string, stamp uint64) (*meta.Object, error) {
	if _, err := s.GetBucket(bucket); err != nil {
		return nil, err
	}
	unlock := s.lockKey(bucket, key)
	defer unlock()
	return s.applyDeleteLocked(bucket, key, 0, time.Time{}, stamp)
}

// ApplyExpireObject is ApplyExpireCurrent with no delete marker and no
// instant (commands written before versioning was replicated).
func (s *Store) ApplyExpireObject(bucket, key string, version, stamp uint64) (*meta.Object, error) {
	return s.ApplyExpireCurrent(bucket, key, version, Deletion{}, stamp)
}

// applyDeleteLocked removes the key's record if it is version (0: any),
// checking Object Lock at the instant at. The caller holds the key lock.
func (s *Store) applyDeleteLocked(bucket, key string, version uint64, at time.Time, stamp uint64) (*meta.Object, error) {
	cur, err := s.currentObject(bucket, key)
	if err != nil {
		return nil, err
	}
	if cur != nil && version != 0 && cur.Version != version {
		cur = nil
	}
	b := s.meta.NewBatch()
	defer b.Close()
	counts := map[uint64]int64{}
	if cur != nil {
		if err := checkRemovable(cur, false, at); err != nil {
			return nil, err
		}
		b.DeleteObject(bucket, key)
		addDead(b, cur.Extents, counts)
	}
	stampIf(b, stamp)
	if err := b.Commit(); err != nil {
		return nil, fmt.Errorf("delete %s/%s: %w", bucket, key, err)
	}
	s.noteDead(counts)
	s.invalidate(bucket, key)
	return cur, nil
}

// ApplyPutBucket stores a bucket record. With create it refuses, returning
// ErrBucketExists, if the name is taken; without, it replaces an existing
// record and returns ErrNoSuchBucket if there is none.
func (s *Store) ApplyPutBucket(bk *meta.Bucket, create bool, stamp uint64) error {
	mu := s.bucketMutex(bk.Name)
	mu.Lock()
	defer mu.Unlock()
	_, err := s.meta.GetBucket(bk.Name)
	exists := err == nil
	switch {
	case err != nil && !errors.Is(err, meta.ErrNotFound):
		return err
	case create && exists:
		return ErrBucketExists
	case !create && !exists:
		return ErrNoSuchBucket
	}
	batch := s.meta.NewBatch()
	defer batch.Close()
	batch.PutBucket(bk)
	stampIf(batch, stamp)
	if err := batch.Commit(); err != nil {
		return fmt.Errorf("put bucket %s: %w", bk.Name, err)
	}
	cached := *bk
	s.buckets.Store(bk.Name, &cached)
	if !create {
		s.kickLifecycle()
	}
	return nil
}

// ApplyDeleteBucket removes a bucket without objects, versions or delete
// markers (ErrBucketNotEmpty if not). Its multipart uploads in progress
// go with it, parts and all, as on AWS, in the same batch.
//
// The bucket's lock (exclusive) keeps new uploads out; the key locks of
// the uploads' keys, held to the commit, keep parts from being added to
// an upload being removed, whose bytes would then never count dead.
func (s *Store) ApplyDeleteBucket(name string, stamp uint64) error {
	mu := s.bucketMutex(name)
	mu.Lock()
	defer mu.Unlock()
	if _, err := s.GetBucket(name); err != nil {
		return err
	}
	empty, err := s.meta.BucketEmpty(name)
	if err != nil {
		return err
	}
	if !empty {
		return ErrBucketNotEmpty
	}
	var uploads []*meta.Upload
	var stripes []int
	if err := s.meta.ScanUploads(name, func(up *meta.Upload) error {
		uploads = append(uploads, up)
		stripes = append(stripes, s.keys.Stripe(name, up.Key))
		return nil
	}); err != nil {
		return err
	}
	unlock := s.keys.LockStripes(stripes)
	defer unlock()
	batch := s.meta.NewBatch()
	defer batch.Close()
	counts := map[uint64]int64{}
	for _, up := range uploads {
		if err := s.dropUpload(batch, name, up.Key, up.UploadID, counts); err != nil {
			return err
		}
	}
	batch.DeleteBucket(name)
	stampIf(batch, stamp)
	if err := batch.Commit(); err != nil {
		return err
	}
	s.noteDead(counts)
	s.buckets.Store(name, bucketGone)
	return nil
}

// ApplyCreateUpload stores a new upload (UploadID, Version and Initiated
// set by the caller).
func (s *Store) ApplyCreateUpload(up *meta.Upload, stamp uint64) error {
	return s.withBucket(up.Bucket, func(*meta.Bucket) error {
		b := s.meta.NewBatch()
		defer b.Close()
		b.PutUpload(up)
		stampIf(b, stamp)
		return b.Commit()
	})
}

// ApplyPutPart installs a part whose bytes are staged (Extents set by the
// caller), replacing a part with the same number.
func (s *Store) ApplyPutPart(bucket, key string, part *meta.Part, stamp uint64) error {
	unlock := s.lockKey(bucket, key)
	defer unlock()
	if _, err := s.GetUpload(bucket, key, part.UploadID); err != nil {
		return err
	}
	old, err := s.meta.GetPart(part.UploadID, part.Number)
	if err != nil && !errors.Is(err, meta.ErrNotFound) {
		return err
	}
	b := s.meta.NewBatch()
	defer b.Close()
	counts := map[uint64]int64{}
	b.PutPart(part)
	if old != nil {
		addDead(b, old.Extents, counts)
	}
	stampIf(b, stamp)
	if err := b.Commit(); err != nil {
		return fmt.Errorf("commit part %d of %s: %w", part.Number, part.UploadID, err)
	}
	s.noteDead(counts)
	return nil
}

// HasParts reports whether every listed part of the upload is stored with
// its bytes (none is hollow, see FillPart).
func (s *Store) HasParts(uploadID string, numbers []int) (bool, error) {
	all, err := s.allParts(uploadID)
	if err != nil {
		return false, err
	}
	for _, n := range numbers {
		if all[n] == nil || HollowPart(all[n]) {
			return false, nil
		}
	}
	return true, nil
}

// ApplyCompleteUpload turns the upload into obj (attributes, Parts and
// Modified decided by the caller): the listed parts' extents become the
// object's, in order, and the parts left out are counted dead. If whole is
// not nil, the object's bytes were staged in one piece instead (a replica
// that missed parts fetched the completed object) and every part is
// counted dead.
func (s *Store) ApplyCompleteUpload(obj *meta.Object, uploadID string, numbers []int, whole *Staged, stamp uint64) error {
	return s.withBucket(obj.Bucket, func(bk *meta.Bucket) error {
		unlock := s.lockKey(obj.Bucket, obj.Key)
		defer unlock()
		up, err := s.GetUpload(obj.Bucket, obj.Key, uploadID)
		if err != nil {
			return err
		}
		all, err := s.allParts(uploadID)
		if err != nil {
			return err
		}
		obj.Version = up.Version
		obj.Extents, obj.Size, obj.Inline = nil, 0, nil
		used := map[int]bool{}
		if whole != nil {
			obj.Extents, obj.Size = whole.Extents, whole.Size
		} else {
			for _, n := range numbers {
				p := all[n]
				if p == nil {
					return fmt.Errorf("complete %s/%s: part %d missing", obj.Bucket, obj.Key, n)
				}
				obj.Extents = append(obj.Extents, p.Extents...)
				obj.Size += p.Size
				used[n] = true
			}
		}
		obj.Expiry = s.expiryOf(s.rulesOf(bk), obj)
		return s.commitObjectLocked(obj, nil, func(b *meta.Batch, counts map[uint64]int64) {
			b.DeleteUpload(obj.Bucket, obj.Key, uploadID)
			for n, p := range all {
				if !used[n] {
					addDead(b, p.Extents, counts)
				}
			}
			stampIf(b, stamp)
		}, obj.Modified)
	})
}

// ApplyAbortUpload drops an upload and counts its parts dead.
func (s *Store) ApplyAbortUpload(bucket, key, uploadID string, stamp uint64) error {
	unlock := s.lockKey(bucket, key)
	defer unlock()
	if _, err := s.GetUpload(bucket, key, uploadID); err != nil {
		return err
	}
	b := s.meta.NewBatch()
	defer b.Close()
	counts := map[uint64]int64{}
	if err := s.dropUpload(b, bucket, key, uploadID, counts); err != nil {
		return err
	}
	stampIf(b, stamp)
	if err := b.Commit(); err != nil {
		return fmt.Errorf("abort upload %s: %w", uploadID, err)
	}
	s.noteDead(counts)
	return nil
}

// dropUpload removes an upload and its parts in b, their bytes counted
// dead into counts. The caller holds the key's lock.
func (s *Store) dropUpload(b *meta.Batch, bucket, key, uploadID string, counts map[uint64]int64) error {
	parts, err := s.allParts(uploadID)
	if err != nil {
		return err
	}
	b.DeleteUpload(bucket, key, uploadID)
	for _, p := range parts {
		addDead(b, p.Extents, counts)
	}
	return nil
}

// ApplyRemoveLost removes the record of bucket/key at version, current or
// in the version table, whatever its retention or legal hold: the replica
// group declared its bytes lost (no member holds them), so no client may
// read it again. Removing the current record makes the newest remaining
// version current, as deleting that version by its ID does. It returns the
// record removed, or nil, changing nothing, if the key has no such
// version (or it is a delete marker).
func (s *Store) ApplyRemoveLost(bucket, key string, version, stamp uint64) (*meta.Object, error) {
	var removed *meta.Object
	err := s.withBucket(bucket, func(*meta.Bucket) error {
		unlock := s.lockKey(bucket, key)
		defer unlock()
		target, current := (*meta.Object)(nil), true
		cur, err := s.currentObject(bucket, key)
		switch {
		case err != nil:
			return err
		case cur != nil && cur.Version == version:
			target = cur
		default:
			current = false
			target, err = s.meta.GetVersion(bucket, key, version)
			if errors.Is(err, meta.ErrNotFound) {
				return nil
			}
			if err != nil {
				return err
			}
		}
		if target.DeleteMarker {
			return nil
		}
		if _, err := s.dropVersion(bucket, key, target, current, stamp); err != nil {
			return err
		}
		removed = target
		return nil
	})
	return removed, err
}
