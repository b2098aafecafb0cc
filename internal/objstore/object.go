package objstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"time"

	"github.com/b3-storage/b3/internal/blob"
	"github.com/b3-storage/b3/internal/cache"
	"github.com/b3-storage/b3/internal/meta"
	"github.com/b3-storage/b3/internal/sse"
)

// PutInput describes an object write.
type PutInput struct {
	Bucket, Key string
	Body        io.Reader
	// Object holds the attributes known before the body is read (content
	// headers, user metadata, tags, expiry). Bucket, Key, Version, Size,
	// Modified and Extents are set by the store.
	Object *meta.Object
	// Finish runs once the body has been consumed and its records synced,
	// before anything is committed: it sets the ETag and checksums and may
	// reject the body (wrong digest) by returning an error.
	Finish func(o *meta.Object) error
	// Precondition runs under the key's lock with the current record (nil
	// if none) and may refuse the write (If-Match, If-None-Match).
	Precondition func(cur *meta.Object) error
}

// PutObject stores an object. It returns once the object is durable under
// the store's sync policy. The data path, in order: body -> synced records
// -> Finish -> (key lock) precondition -> one meta batch -> acknowledge.
// A body of at most Options.InlineMax bytes skips the segments: it is kept
// in the object's record, made durable by that one meta batch.
func (s *Store) PutObject(ctx context.Context, in PutInput) (*meta.Object, error) {
	if _, err := s.GetBucket(in.Bucket); err != nil {
		return nil, err
	}
	if err := s.admitWrite(); err != nil {
		return nil, err
	}
	version, err := s.meta.NextVersion()
	if err != nil {
		return nil, fmt.Errorf("reserve version: %w", err)
	}
	obj := in.Object
	if obj == nil {
		obj = &meta.Object{}
	}
	small, body, err := s.peekSmall(in.Body, InlineLimit(s.opts.InlineMax, obj))
	if err != nil {
		return nil, err
	}
	var exts []blob.Extent
	if small != nil {
		obj.Size, obj.Inline, obj.Extents = int64(len(small)), small, nil
	} else {
		write := s.inflight.register(s.activeSegment)
		defer s.inflight.done(write)
		owner := blob.Owner{Key: ownerKey(in.Bucket, in.Key), Version: version}
		var size int64
		exts, size, err = s.blob.Append(ctx, owner, body)
		if err != nil {
			s.discard(exts)
			return nil, err
		}
		obj.Size, obj.Extents, obj.Inline = size, toMeta(exts), nil
	}
	obj.Bucket, obj.Key, obj.Version = in.Bucket, in.Key, version
	obj.Modified = time.Now().UTC()
	if in.Finish != nil {
		if err := in.Finish(obj); err != nil {
			s.discard(exts)
			return nil, err
		}
	}
	err = s.withBucket(in.Bucket, func(b *meta.Bucket) error {
		// The rules of the commit's moment, not of the upload's start: they
		// cannot change while the bucket lock is held.
		obj.Expiry = s.expiryOf(s.rulesOf(b), obj)
		return s.commitObject(obj, in.Precondition, nil, s.now())
	})
	if err != nil {
		s.discard(exts)
		return nil, err
	}
	return obj, nil
}

// peekSmall reads up to max+1 bytes of body. If the body ends within
// max bytes it returns them as small (not nil, possibly empty);
// otherwise it returns a reader of the whole body, the bytes read included.
// A read error other than the body's end is returned as is (a wrong digest
// surfaces here for a small body, as it does from Append for a large one).
func (s *Store) peekSmall(body io.Reader, max int64) (small []byte, whole io.Reader, err error) {
	if max <= 0 {
		return nil, body, nil
	}
	buf := make([]byte, max+1)
	n := 0
	for n < len(buf) {
		m, err := body.Read(buf[n:])
		n += m
		if err == io.EOF && n <= int(max) {
			return buf[:n:n], nil, nil
		}
		if err == io.EOF {
			break // one byte too many, and the end with it
		}
		if err != nil {
			return nil, nil, err
		}
	}
	return nil, io.MultiReader(bytes.NewReader(buf[:n]), body), nil
}

// InlineLimit is the largest stored body of obj kept inline under the
// setting inlineMax: for an encrypted object (obj.SSE set, its body the
// ciphertext) inlineMax of plaintext and its packages' overhead, so that
// encryption does not move a small object out of its record.
func InlineLimit(inlineMax int64, obj *meta.Object) int64 {
	if inlineMax <= 0 || obj == nil || obj.SSE == nil {
		return inlineMax
	}
	return sse.EncryptedSize(inlineMax)
}

// commitObject installs obj under the key lock: it checks the precondition
// against the current record, then commits obj and the replaced record's
// dead bytes in one batch. extra, if set, adds to the same batch. at is
// the instant of the Object Lock check on what obj replaces.
func (s *Store) commitObject(obj *meta.Object, precondition func(*meta.Object) error, extra func(*meta.Batch, map[uint64]int64), at time.Time) error {
	unlock := s.lockKey(obj.Bucket, obj.Key)
	defer unlock()
	return s.commitObjectLocked(obj, precondition, extra, at)
}

// commitObjectLocked is commitObject for a caller holding the key lock.
func (s *Store) commitObjectLocked(obj *meta.Object, precondition func(*meta.Object) error, extra func(*meta.Batch, map[uint64]int64), at time.Time) error {
	cur, err := s.currentObject(obj.Bucket, obj.Key)
	if err != nil {
		return err
	}
	if precondition != nil {
		if err := precondition(cur); err != nil {
			return err
		}
	}
	b := s.meta.NewBatch()
	defer b.Close()
	counts := map[uint64]int64{}
	// What happens to the replaced record depends on the bucket's
	// versioning state (versions.go); it also sets obj.Versioned.
	if err := s.replaceCurrent(b, obj, cur, counts, at); err != nil {
		return err
	}
	b.PutObject(obj)
	if extra != nil {
		extra(b, counts)
	}
	if err := b.Commit(); err != nil {
		return fmt.Errorf("commit %s/%s: %w", obj.Bucket, obj.Key, err)
	}
	s.noteDead(counts)
	s.invalidate(obj.Bucket, obj.Key)
	return nil
}

// currentObject returns the stored record, expired or not, or nil.
func (s *Store) currentObject(bucket, key string) (*meta.Object, error) {
	cur, err := s.meta.GetObject(bucket, key)
	if errors.Is(err, meta.ErrNotFound) {
		return nil, nil
	}
	return cur, err
}

// HeadObject returns the object's record, or ErrNoSuchKey. An object past
// its expiry time is invisible even before the lifecycle sweeper deletes it.
func (s *Store) HeadObject(bucket, key string) (*meta.Object, error) {
	obj, err := s.meta.GetObject(bucket, key)
	if errors.Is(err, meta.ErrNotFound) {
		if _, berr := s.GetBucket(bucket); berr != nil {
			return nil, berr
		}
		return nil, ErrNoSuchKey
	}
	if err != nil {
		return nil, err
	}
	if s.expired(obj) {
		return nil, ErrNoSuchKey
	}
	return obj, nil
}

// RangeFunc chooses, from the object's record, which bytes to read. It may
// also refuse (a failed precondition, an unsatisfiable range).
type RangeFunc func(obj *meta.Object) (off, n int64, err error)

// WholeObject reads every byte.
func WholeObject(obj *meta.Object) (int64, int64, error) { return 0, obj.Size, nil }

// OpenObject returns the object's record and a reader of the bytes rng
// selects. The reader streams from the segment files, verifying record CRCs;
// the caller must Close it. Small objects come from, and go to, the cache
// when there is one; the returned record must then not be modified.
func (s *Store) OpenObject(ctx context.Context, bucket, key string, rng RangeFunc) (*meta.Object, io.ReadCloser, error) {
	cacheKey := string(ownerKey(bucket, key))
	if hit, ok := s.cache.Get(cacheKey); ok && !s.expired(hit.Obj) {
		off, n, err := rng(hit.Obj)
		if err != nil {
			return hit.Obj, nil, err
		}
		return hit.Obj, io.NopCloser(bytes.NewReader(hit.Data[off : off+n])), nil
	}
	// Taken before the record is read: see package cache on freshness.
	token := s.cache.Token(cacheKey)
	for attempt := 0; ; attempt++ {
		obj, err := s.HeadObject(bucket, key)
		if err != nil {
			return nil, nil, err
		}
		if Hollow(obj) {
			return obj, nil, ErrHollow
		}
		off, n, err := rng(obj)
		if err != nil {
			return obj, nil, err
		}
		if s.cache.Admits(obj.Size + cacheOverhead) {
			data, err := s.readAll(ctx, obj)
			if errors.Is(err, fs.ErrNotExist) && attempt < 5 {
				continue
			}
			if err != nil {
				return nil, nil, fmt.Errorf("open %s/%s: %w", bucket, key, err)
			}
			s.cache.PutIf(cacheKey, CachedObject{Obj: obj, Data: data}, obj.Size+cacheOverhead, token)
			return obj, io.NopCloser(bytes.NewReader(data[off : off+n])), nil
		}
		if obj.Inline != nil {
			return obj, io.NopCloser(bytes.NewReader(obj.Inline[off : off+n])), nil
		}
		r, err := s.blob.NewReader(ctx, recordOwner(obj), toBlob(obj.Extents), off, n)
		// Vacuum may have moved the object and removed the segment between
		// reading the record and opening the reader: read the record again.
		if errors.Is(err, fs.ErrNotExist) && attempt < 5 {
			continue
		}
		if err != nil {
			return nil, nil, fmt.Errorf("open %s/%s: %w", bucket, key, err)
		}
		return obj, r, nil
	}
}

// DeleteObject removes the object if present and returns the removed record
// (nil if there was none: deleting a missing key succeeds, as in S3).
//
// In a bucket with versioning (Enabled or Suspended) it deletes as
// DeleteVersioned does without a version ID (a delete marker), and
// returns no record.
func (s *Store) DeleteObject(bucket, key string) (*meta.Object, error) {
	bk, err := s.GetBucket(bucket)
	if err != nil {
		return nil, err
	}
	if bk.Versioning != "" {
		_, err := s.DeleteVersioned(bucket, key, "", false)
		return nil, err
	}
	unlock := s.lockKey(bucket, key)
	defer unlock()
	cur, err := s.currentObject(bucket, key)
	if err != nil || cur == nil {
		return nil, err
	}
	if err := checkRemovable(cur, false, s.now()); err != nil {
		return nil, err
	}
	b := s.meta.NewBatch()
	defer b.Close()
	counts := map[uint64]int64{}
	b.DeleteObject(bucket, key)
	addDead(b, cur.Extents, counts)
	if err := b.Commit(); err != nil {
		return nil, fmt.Errorf("delete %s/%s: %w", bucket, key, err)
	}
	s.noteDead(counts)
	s.invalidate(bucket, key)
	return cur, nil
}

// UpdateObject rewrites an object's attributes (tags, for instance) without
// touching its data. fn sees the current record; the version must not
// change.
func (s *Store) UpdateObject(bucket, key string, fn func(*meta.Object) error) (*meta.Object, error) {
	unlock := s.lockKey(bucket, key)
	defer unlock()
	cur, err := s.currentObject(bucket, key)
	if err != nil {
		return nil, err
	}
	if cur == nil {
		return nil, ErrNoSuchKey
	}
	if err := fn(cur); err != nil {
		return nil, err
	}
	// Tags may have changed, and with them what the rules say.
	if err := s.setExpiry(cur); err != nil {
		return nil, err
	}
	b := s.meta.NewBatch()
	defer b.Close()
	b.PutObject(cur)
	if err := b.Commit(); err != nil {
		return nil, fmt.Errorf("update %s/%s: %w", bucket, key, err)
	}
	s.invalidate(bucket, key)
	return cur, nil
}

// recordOwner is the owner every segment record of obj carries: its key
// and version (a multipart object's parts were written under the version
// the upload reserved, which the object took).
func recordOwner(obj *meta.Object) blob.Owner {
	return blob.Owner{Key: ownerKey(obj.Bucket, obj.Key), Version: obj.Version}
}

// cacheOverhead is what a cache entry costs beyond its payload: the record
// and the bookkeeping, roughly.
const cacheOverhead = 256

// readAll reads a whole object into memory (for the cache).
func (s *Store) readAll(ctx context.Context, obj *meta.Object) ([]byte, error) {
	if obj.Inline != nil {
		return obj.Inline, nil
	}
	r, err := s.blob.NewReader(ctx, recordOwner(obj), toBlob(obj.Extents), 0, obj.Size)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	data := make([]byte, obj.Size)
	if _, err := io.ReadFull(r, data); err != nil {
		return nil, err
	}
	return data, nil
}

// invalidate drops a key from the cache. Every change of a key's record
// calls it after the commit, before the change is acknowledged.
func (s *Store) invalidate(bucket, key string) {
	if s.cache != nil {
		s.cache.Invalidate(string(ownerKey(bucket, key)))
	}
}

// CacheStats reports the object cache (zero without one).
func (s *Store) CacheStats() cache.Stats { return s.cache.Stats() }

// SetCacheSize changes the object cache's bound (cache.SetMaxBytes); it
// reports false for a store opened without a cache.
func (s *Store) SetCacheSize(maxBytes int64) bool {
	s.cache.SetMaxBytes(maxBytes)
	return s.cache != nil
}

// activeSegment is the segment a write starting now appends to first, or
// one before it (blob.Store.ActiveSegment): never 0, not even while a
// rollover has sealed one segment and not yet created the next, which
// would hold every segment back from vacuum for a whole write.
func (s *Store) activeSegment() uint64 { return s.blob.ActiveSegment() }
