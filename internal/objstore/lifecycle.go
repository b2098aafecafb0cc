package objstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"

	"github.com/b3-storage/b3/internal/lifecycle"
	"github.com/b3-storage/b3/internal/meta"
)

// Lifecycle expiry.
//
// An object's expiry instant is computed when it is written (PutObject,
// CompleteUpload, a tag change) from its bucket's rules, and stored in its
// record (meta.Object.Expiry). From that instant HeadObject, OpenObject and
// ListObjects no longer show it. The sweeper then deletes it for real, at a
// bounded rate, and vacuum later reclaims its bytes.
//
// When a bucket's rules change, records already written carry instants
// from the old rules: the sweeper's next pass (kicked at once by
// SetBucketLifecycle) recomputes every object's instant from the current
// rules and rewrites those that differ, so the current rules always decide
// what the sweeper deletes. Between the change and that pass, visibility
// follows the old instants.
//
// Invariant: the sweeper deletes an object only under its key lock, only
// if the record is still the version it examined, and only if that
// record's instant, recomputed from the rules of that moment, has passed.
//
// A pass decides; LifecycleActions carry the decisions out. A single
// server's store acts on itself (localLifecycle). A replicated store's
// leader sets its own actions (SetLifecycleActions), which replicate each
// delete, rewrite and abort as a command, so that the replicas, which
// never sweep, apply the same changes in the same order; there the
// invariant above holds under the leader's key lock.

// LifecycleActions carry out a sweeper pass's decisions.
type LifecycleActions interface {
	// Settle acts on seen, an object a pass found due or carrying a
	// stale instant: if seen is still the current version of its key, it
	// deletes it when LifecycleDue says so, or rewrites its stored
	// instant when that differs from the rules of now.
	Settle(seen *meta.Object) (LifecycleOutcome, error)
	// Abort aborts an upload the rules say is stale (ErrNoSuchUpload if
	// it is gone).
	Abort(up *meta.Upload) error
	// ExpireVersion removes seen, a version-table record a pass found
	// due (NoncurrentVersionExpiration, or ExpiredObjectDeleteMarker when
	// onlyMarker), if it still is what the pass saw (ApplyExpireVersion
	// says what that is); it reports whether it removed it.
	ExpireVersion(seen *meta.Object, onlyMarker bool) (bool, error)
}

// LifecycleOutcome is what Settle did.
type LifecycleOutcome int

// The outcomes of Settle.
const (
	LifecycleUnchanged   LifecycleOutcome = iota // rewritten, deleted or current since the scan
	LifecycleExpired                             // deleted
	LifecycleReevaluated                         // stored instant rewritten
)

// SetLifecycleActions makes every later pass carry out its decisions
// through a (nil: on this store itself).
func (s *Store) SetLifecycleActions(a LifecycleActions) {
	s.lc.mu.Lock()
	defer s.lc.mu.Unlock()
	s.lc.actions = a
}

func (s *Store) lifecycleActions() LifecycleActions {
	s.lc.mu.Lock()
	defer s.lc.mu.Unlock()
	if s.lc.actions == nil {
		return localLifecycle{s}
	}
	return s.lc.actions
}

// LifecycleDue returns cur's expiry instant under its bucket's rules of
// now, and whether it has passed.
func (s *Store) LifecycleDue(cur *meta.Object) (want time.Time, due bool) {
	b, err := s.GetBucket(cur.Bucket)
	if err != nil {
		return time.Time{}, false
	}
	want = s.expiryOf(s.rulesOf(b), cur)
	return want, !want.IsZero() && !s.now().Before(want)
}

// LifecycleStatus is what an operator sees of the sweeper.
type LifecycleStatus struct {
	Running        bool // a pass is under way
	Auto           bool // the background loop is on
	Passes         int64
	Expired        int64 // objects deleted by the sweeper, since start
	Aborted        int64 // uploads aborted, since start
	Reevaluated    int64 // records whose expiry was recomputed and rewritten
	LastPass       time.Time
	LastPassTook   time.Duration
	LastError      string
	Day            time.Duration // length of a lifecycle day
	DeletesPerSec  float64       // sweeper rate limit (0: unlimited)
	ScannedObjects int64         // objects examined, since start
}

// LifecycleResult reports one sweeper pass.
type LifecycleResult struct {
	Scanned, Expired, Aborted, Reevaluated int
}

type lifecycleState struct {
	rules sync.Map // bucket name -> *cachedRules

	pass    sync.Mutex
	mu      sync.Mutex
	stop    context.CancelFunc
	done    chan struct{}
	kick    chan struct{}
	limit   *rate.Limiter
	actions LifecycleActions // nil: localLifecycle
	last    time.Time
	took    time.Duration
	lastErr string

	running                                     atomic.Bool
	passes, expired, aborted, reevaluated, seen atomic.Int64
}

type cachedRules struct {
	raw  []byte
	conf *lifecycle.Configuration // nil: no (valid) rules
}

func (s *Store) now() time.Time {
	if s.opts.Now != nil {
		return s.opts.Now()
	}
	return time.Now()
}

func (s *Store) lifecycleDay() time.Duration {
	if s.opts.LifecycleDay > 0 {
		return s.opts.LifecycleDay
	}
	return lifecycle.Day
}

// rulesOf returns the parsed rules of a bucket record (nil if none),
// parsing each distinct document once.
func (s *Store) rulesOf(b *meta.Bucket) *lifecycle.Configuration {
	if b == nil || len(b.Lifecycle) == 0 {
		return nil
	}
	if v, ok := s.lc.rules.Load(b.Name); ok {
		if c := v.(*cachedRules); bytes.Equal(c.raw, b.Lifecycle) {
			return c.conf
		}
	}
	conf, err := lifecycle.Parse(b.Lifecycle)
	if err != nil {
		// Documents are validated before they are stored; one that no longer
		// parses (a stricter release) expires nothing rather than guessing.
		s.log.Warn("bucket lifecycle configuration no longer parses; ignoring it", "bucket", b.Name, "err", err)
		conf = nil
	}
	s.lc.rules.Store(b.Name, &cachedRules{raw: bytes.Clone(b.Lifecycle), conf: conf})
	return conf
}

// expiryOf computes obj's expiry instant under conf.
func (s *Store) expiryOf(conf *lifecycle.Configuration, obj *meta.Object) time.Time {
	return conf.Expiry(lifecycle.Object{Key: obj.Key, Tags: obj.Tags, Size: obj.Size, Created: obj.Modified}, s.lifecycleDay())
}

// setExpiry stamps obj with its expiry under its bucket's current rules.
func (s *Store) setExpiry(obj *meta.Object) error {
	b, err := s.GetBucket(obj.Bucket)
	if err != nil {
		return err
	}
	obj.Expiry = s.expiryOf(s.rulesOf(b), obj)
	return nil
}

func (s *Store) expired(obj *meta.Object) bool {
	return !obj.Expiry.IsZero() && !s.now().Before(obj.Expiry)
}

// SetBucketLifecycle validates and stores a bucket's lifecycle document
// (nil removes it), then asks the sweeper to re-evaluate. Validation errors
// are *lifecycle.Error.
func (s *Store) SetBucketLifecycle(bucket string, doc []byte) error {
	if doc != nil {
		if _, err := lifecycle.Parse(doc); err != nil {
			return err
		}
	}
	err := s.UpdateBucket(bucket, func(b *meta.Bucket) error { b.Lifecycle = doc; return nil })
	if err != nil {
		return err
	}
	s.kickLifecycle()
	return nil
}

// KickLifecycle starts a pass of the running sweeper loop at once (a
// replicated store's new leader resumes the sweeping this way).
func (s *Store) KickLifecycle() { s.kickLifecycle() }

func (s *Store) kickLifecycle() {
	s.lc.mu.Lock()
	kick := s.lc.kick
	s.lc.mu.Unlock()
	if kick != nil {
		select {
		case kick <- struct{}{}:
		default:
		}
	}
}

// StartLifecycle runs a sweeper pass every interval (and at once when rules
// change) until StopLifecycle or Close. deletesPerSec bounds the deletes
// and aborts it issues (0: unlimited).
func (s *Store) StartLifecycle(interval time.Duration, deletesPerSec float64) {
	s.lc.mu.Lock()
	defer s.lc.mu.Unlock()
	if s.lc.stop != nil {
		return
	}
	s.lc.limit = rate.NewLimiter(rate.Inf, 1)
	if deletesPerSec > 0 {
		s.lc.limit = rate.NewLimiter(rate.Limit(deletesPerSec), max(1, int(deletesPerSec/10)))
	}
	ctx, cancel := context.WithCancel(context.Background())
	done, kick := make(chan struct{}), make(chan struct{}, 1)
	s.lc.stop, s.lc.done, s.lc.kick = cancel, done, kick
	go func() {
		defer close(done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			case <-kick:
			}
			if _, err := s.SweepLifecycle(ctx); err != nil && ctx.Err() == nil {
				s.log.Error("lifecycle pass failed", "err", err)
			}
		}
	}()
}

// StopLifecycle stops the sweeper loop and waits for a running pass.
func (s *Store) StopLifecycle() {
	s.lc.mu.Lock()
	stop, done := s.lc.stop, s.lc.done
	s.lc.stop, s.lc.done, s.lc.kick = nil, nil, nil
	s.lc.mu.Unlock()
	if stop != nil {
		stop()
		<-done
	}
	// Wait for a pass started by SweepLifecycle directly (the admin API's):
	// Close cancels it through s.closing.
	s.lc.pass.Lock()
	//lint:ignore SA2001 an empty critical section waits for a running pass
	s.lc.pass.Unlock()
}

// SweepLifecycle runs one pass over every bucket: it recomputes each
// object's expiry from the current rules (rewriting records whose instant
// changed), deletes the expired objects and aborts stale uploads.
func (s *Store) SweepLifecycle(ctx context.Context) (LifecycleResult, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(s.closing, cancel)() // Close ends every pass
	s.lc.pass.Lock()
	defer s.lc.pass.Unlock()
	s.lc.running.Store(true)
	defer s.lc.running.Store(false)
	start := time.Now()
	var res LifecycleResult
	err := s.sweep(ctx, &res)
	s.lc.passes.Add(1)
	s.lc.mu.Lock()
	s.lc.last, s.lc.took, s.lc.lastErr = s.now(), time.Since(start), ""
	if err != nil {
		s.lc.lastErr = err.Error()
	}
	s.lc.mu.Unlock()
	return res, err
}

func (s *Store) sweep(ctx context.Context, res *LifecycleResult) error {
	act := s.lifecycleActions()
	buckets, err := s.ListBuckets()
	if err != nil {
		return err
	}
	for i := range buckets {
		b := &buckets[i]
		conf := s.rulesOf(b)
		err := s.meta.ScanObjects(b.Name, "", func(obj *meta.Object) error {
			if err := ctx.Err(); err != nil {
				return err
			}
			res.Scanned++
			s.lc.seen.Add(1)
			return s.sweepObject(ctx, act, conf, obj, res)
		})
		if err != nil {
			return fmt.Errorf("lifecycle sweep of bucket %s: %w", b.Name, err)
		}
		if b.Versioning != "" && conf.HasVersionActions() {
			if err := s.sweepVersions(ctx, act, b.Name, conf, res); err != nil {
				return fmt.Errorf("lifecycle sweep of versions in bucket %s: %w", b.Name, err)
			}
		}
		if !conf.HasActions() {
			continue
		}
		err = s.meta.ScanUploads(b.Name, func(up *meta.Upload) error {
			at := conf.AbortAt(lifecycle.Upload{Key: up.Key, Initiated: up.Initiated}, s.lifecycleDay())
			if at.IsZero() || s.now().Before(at) {
				return nil
			}
			if err := s.sweepWait(ctx); err != nil {
				return err
			}
			// The pass may have waited long on its rate limit: decide by the
			// rules of now, not of the pass's start.
			cur, err := s.GetBucket(up.Bucket)
			if err != nil {
				return nil
			}
			at = s.rulesOf(cur).AbortAt(lifecycle.Upload{Key: up.Key, Initiated: up.Initiated}, s.lifecycleDay())
			if at.IsZero() || s.now().Before(at) {
				return nil
			}
			err = act.Abort(up)
			if errors.Is(err, ErrNoSuchUpload) {
				return nil
			}
			if err == nil {
				res.Aborted++
				s.lc.aborted.Add(1)
			}
			return err
		})
		if err != nil {
			return fmt.Errorf("lifecycle abort in bucket %s: %w", b.Name, err)
		}
	}
	return nil
}

// sweepWait holds the sweeper to its own rate and to the background pace
// before each delete or abort.
func (s *Store) sweepWait(ctx context.Context) error {
	if err := s.sweepLimiter().Wait(ctx); err != nil {
		return err
	}
	return s.pace(ctx, lifecycleDeleteCost)
}

func (s *Store) sweepLimiter() *rate.Limiter {
	s.lc.mu.Lock()
	defer s.lc.mu.Unlock()
	if s.lc.limit == nil {
		s.lc.limit = rate.NewLimiter(rate.Inf, 1)
	}
	return s.lc.limit
}

// sweepObject re-evaluates one object seen by the scan and has it deleted
// if it has expired.
func (s *Store) sweepObject(ctx context.Context, act LifecycleActions, conf *lifecycle.Configuration, seen *meta.Object, res *LifecycleResult) error {
	want := s.expiryOf(conf, seen)
	due := !want.IsZero() && !s.now().Before(want)
	if want.Equal(seen.Expiry) && !due {
		return nil
	}
	if due {
		if err := s.sweepWait(ctx); err != nil {
			return err
		}
	}
	out, err := act.Settle(seen)
	switch out {
	case LifecycleExpired:
		res.Expired++
		s.lc.expired.Add(1)
	case LifecycleReevaluated:
		res.Reevaluated++
		s.lc.reevaluated.Add(1)
	}
	return err
}

// localLifecycle carries a pass's decisions out on the store itself.
type localLifecycle struct{ s *Store }

func (l localLifecycle) Abort(up *meta.Upload) error {
	return l.s.AbortUpload(up.Bucket, up.Key, up.UploadID)
}

func (l localLifecycle) Settle(seen *meta.Object) (LifecycleOutcome, error) {
	s := l.s
	// A versioned bucket expires its current version with a delete marker,
	// whose version is reserved before any lock is taken.
	var marker uint64
	if bk, err := s.GetBucket(seen.Bucket); err == nil && bk.Versioning != "" {
		if want := s.expiryOf(s.rulesOf(bk), seen); !want.IsZero() && !s.now().Before(want) {
			if marker, err = s.meta.NextVersion(); err != nil {
				return LifecycleUnchanged, fmt.Errorf("reserve version: %w", err)
			}
		}
	}
	out := LifecycleUnchanged
	err := s.withBucket(seen.Bucket, func(b *meta.Bucket) error {
		unlock := s.lockKey(seen.Bucket, seen.Key)
		defer unlock()
		var err error
		out, err = s.settleLocked(b, seen, marker)
		return err
	})
	if errors.Is(err, ErrNoSuchBucket) {
		return LifecycleUnchanged, nil
	}
	return out, err
}

// settleLocked is Settle's decision, made under the bucket lock (shared)
// and the key lock.
func (s *Store) settleLocked(b *meta.Bucket, seen *meta.Object, marker uint64) (LifecycleOutcome, error) {
	cur, err := s.currentObject(seen.Bucket, seen.Key)
	if err != nil || cur == nil || cur.Version != seen.Version {
		return LifecycleUnchanged, err // gone or rewritten since the scan: the writer stamped it
	}
	// The rules may have changed since the scan read them.
	want := s.expiryOf(s.rulesOf(b), cur)
	due := !want.IsZero() && !s.now().Before(want)
	batch := s.meta.NewBatch()
	defer batch.Close()
	counts := map[uint64]int64{}
	if due && b.Versioning != "" {
		if marker == 0 {
			return LifecycleUnchanged, nil // the rules changed since the scan; the next pass decides
		}
		if _, err := s.addDeleteMarker(b, cur.Key, Deletion{Marker: marker, Modified: time.Now().UTC(), At: s.now()}, 0); err != nil {
			if errors.Is(err, ErrObjectLocked) {
				return LifecycleUnchanged, nil // a locked null version stays until its retention ends
			}
			return LifecycleUnchanged, fmt.Errorf("expire %s/%s: %w", cur.Bucket, cur.Key, err)
		}
		return LifecycleExpired, nil
	}
	if due {
		if checkRemovable(cur, false, s.now()) != nil {
			return LifecycleUnchanged, nil // locked: lifecycle never removes it before its time
		}
		batch.DeleteObject(cur.Bucket, cur.Key)
		addDead(batch, cur.Extents, counts)
		if err := batch.Commit(); err != nil {
			return LifecycleUnchanged, fmt.Errorf("expire %s/%s: %w", cur.Bucket, cur.Key, err)
		}
		s.noteDead(counts)
		s.invalidate(cur.Bucket, cur.Key)
		return LifecycleExpired, nil
	}
	if want.Equal(cur.Expiry) {
		return LifecycleUnchanged, nil
	}
	cur.Expiry = want
	batch.PutObject(cur)
	if err := batch.Commit(); err != nil {
		return LifecycleUnchanged, fmt.Errorf("re-evaluate expiry of %s/%s: %w", cur.Bucket, cur.Key, err)
	}
	s.invalidate(cur.Bucket, cur.Key)
	return LifecycleReevaluated, nil
}

// LifecycleStatus reports the sweeper's counters.
func (s *Store) LifecycleStatus() LifecycleStatus {
	st := LifecycleStatus{
		Running:        s.lc.running.Load(),
		Passes:         s.lc.passes.Load(),
		Expired:        s.lc.expired.Load(),
		Aborted:        s.lc.aborted.Load(),
		Reevaluated:    s.lc.reevaluated.Load(),
		ScannedObjects: s.lc.seen.Load(),
		Day:            s.lifecycleDay(),
	}
	s.lc.mu.Lock()
	st.Auto = s.lc.stop != nil
	st.LastPass, st.LastPassTook, st.LastError = s.lc.last, s.lc.took, s.lc.lastErr
	if s.lc.limit != nil && s.lc.limit.Limit() != rate.Inf {
		st.DeletesPerSec = float64(s.lc.limit.Limit())
	}
	s.lc.mu.Unlock()
	return st
}

// ListObjects is meta.ListObjects without the objects past their expiry
// instant. When expired objects thin a page, it reads on to fill it, so a
// page is short only at the end of the listing. (A common prefix whose
// objects have all expired is still listed until the sweeper deletes them.)
func (s *Store) ListObjects(bucket string, o meta.ListOptions) (*meta.ListResult, error) {
	want := o.MaxKeys
	if want < 0 || want > meta.DefaultMaxKeys {
		want = meta.DefaultMaxKeys
	}
	out := &meta.ListResult{}
	if want == 0 {
		return out, nil
	}
	for {
		o.MaxKeys = want - len(out.Objects) - len(out.CommonPrefixes)
		page, err := s.meta.ListObjects(bucket, o)
		if err != nil {
			return nil, err
		}
		for _, obj := range page.Objects {
			if !s.expired(obj) {
				out.Objects = append(out.Objects, obj)
			}
		}
		out.CommonPrefixes = append(out.CommonPrefixes, page.CommonPrefixes...)
		out.IsTruncated, out.NextMarker = page.IsTruncated, page.NextMarker
		if !page.IsTruncated || len(out.Objects)+len(out.CommonPrefixes) >= want {
			return out, nil
		}
		o.StartAfter = page.NextMarker
	}
}
