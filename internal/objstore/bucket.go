package objstore

import (
	"errors"
	"fmt"
	"time"

	"github.com/b3-storage/b3/internal/meta"
)

// CreateBucket creates b. It returns ErrBucketExists (with the existing
// bucket) if the name is taken; the caller tells owners apart.
func (s *Store) CreateBucket(b *meta.Bucket) (*meta.Bucket, error) {
	mu := s.bucketMutex(b.Name)
	mu.Lock()
	defer mu.Unlock()
	cur, err := s.meta.GetBucket(b.Name)
	switch {
	case err == nil:
		return cur, ErrBucketExists
	case !errors.Is(err, meta.ErrNotFound):
		return nil, err
	}
	if b.Created.IsZero() {
		b.Created = time.Now().UTC()
	}
	batch := s.meta.NewBatch()
	defer batch.Close()
	batch.PutBucket(b)
	if err := batch.Commit(); err != nil {
		return nil, fmt.Errorf("create bucket %s: %w", b.Name, err)
	}
	cached := *b // the caller keeps b; the cache holds its own copy
	s.buckets.Store(b.Name, &cached)
	return b, nil
}

// GetBucket returns the bucket record or ErrNoSuchBucket. Records are
// cached in memory (every request needs its bucket's); the returned record
// is shared and must not be modified.
//
// GetBucket takes no lock, so it may be called with a key lock held (the
// lock order is bucket lock, then key lock; never the reverse). The cache
// stays exact without one: every change of a bucket record stores the new
// record (or, for a delete, bucketGone) after its commit, while a fill only
// adds a record where none is cached (LoadOrStore), so a fill that read an
// older record cannot replace a newer one, nor bring back a deleted bucket.
func (s *Store) GetBucket(name string) (*meta.Bucket, error) {
	if v, ok := s.buckets.Load(name); ok {
		return cachedBucket(v)
	}
	b, err := s.meta.GetBucket(name)
	if errors.Is(err, meta.ErrNotFound) {
		return nil, ErrNoSuchBucket
	}
	if err != nil {
		return nil, err
	}
	v, _ := s.buckets.LoadOrStore(name, b)
	return cachedBucket(v)
}

// bucketGone is the cache entry of a deleted bucket.
var bucketGone = &meta.Bucket{}

func cachedBucket(v any) (*meta.Bucket, error) {
	if b := v.(*meta.Bucket); b != bucketGone {
		return b, nil
	}
	return nil, ErrNoSuchBucket
}

// UpdateBucket applies fn to the bucket record and saves it atomically with
// respect to other bucket changes.
func (s *Store) UpdateBucket(name string, fn func(*meta.Bucket) error) error {
	mu := s.bucketMutex(name)
	mu.Lock()
	defer mu.Unlock()
	cur, err := s.GetBucket(name)
	if err != nil {
		return err
	}
	b := *cur // the cached record is shared: change a copy
	if err := fn(&b); err != nil {
		return err
	}
	batch := s.meta.NewBatch()
	defer batch.Close()
	batch.PutBucket(&b)
	if err := batch.Commit(); err != nil {
		return err
	}
	s.buckets.Store(name, &b)
	return nil
}

// DeleteBucket removes an empty bucket. Object writes hold the bucket's
// lock shared while they commit, so none can land between the emptiness
// check and the delete.
func (s *Store) DeleteBucket(name string) error { return s.ApplyDeleteBucket(name, 0) }

// ListBuckets returns every bucket, ordered by name.
func (s *Store) ListBuckets() ([]meta.Bucket, error) { return s.meta.ListBuckets() }

// withBucket runs fn holding the bucket's lock shared, with the bucket's
// record: while fn runs, the record (its lifecycle rules, say) cannot
// change and the bucket cannot be deleted.
func (s *Store) withBucket(name string, fn func(b *meta.Bucket) error) error {
	mu := s.bucketMutex(name)
	mu.RLock()
	defer mu.RUnlock()
	b, err := s.GetBucket(name)
	if err != nil {
		return err
	}
	return fn(b)
}
