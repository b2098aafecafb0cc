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
	s.buckets.Store(b.Name, b)
	return b, nil
}

// GetBucket returns the bucket record or ErrNoSuchBucket. Records are
// cached in memory (every request needs its bucket's); the returned record
// is shared and must not be modified.
func (s *Store) GetBucket(name string) (*meta.Bucket, error) {
	if b, ok := s.buckets.Load(name); ok {
		return b.(*meta.Bucket), nil
	}
	mu := s.bucketMutex(name)
	mu.RLock()
	defer mu.RUnlock()
	return s.getBucketLocked(name)
}

// getBucketLocked is GetBucket for a caller holding the bucket's lock,
// shared or exclusive. Filling the cache under the lock keeps it exact:
// every change of a bucket record holds the lock exclusively and updates
// the cache before releasing it, so a fill cannot put back a stale record.
func (s *Store) getBucketLocked(name string) (*meta.Bucket, error) {
	if b, ok := s.buckets.Load(name); ok {
		return b.(*meta.Bucket), nil
	}
	b, err := s.meta.GetBucket(name)
	if errors.Is(err, meta.ErrNotFound) {
		return nil, ErrNoSuchBucket
	}
	if err != nil {
		return nil, err
	}
	s.buckets.Store(name, b)
	return b, nil
}

// UpdateBucket applies fn to the bucket record and saves it atomically with
// respect to other bucket changes.
func (s *Store) UpdateBucket(name string, fn func(*meta.Bucket) error) error {
	mu := s.bucketMutex(name)
	mu.Lock()
	defer mu.Unlock()
	cur, err := s.getBucketLocked(name)
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
func (s *Store) DeleteBucket(name string) error {
	mu := s.bucketMutex(name)
	mu.Lock()
	defer mu.Unlock()
	if _, err := s.getBucketLocked(name); err != nil {
		return err
	}
	empty, err := s.meta.BucketEmpty(name)
	if err != nil {
		return err
	}
	if !empty {
		return ErrBucketNotEmpty
	}
	batch := s.meta.NewBatch()
	defer batch.Close()
	batch.DeleteBucket(name)
	if err := batch.Commit(); err != nil {
		return err
	}
	s.buckets.Delete(name)
	return nil
}

// ListBuckets returns every bucket, ordered by name.
func (s *Store) ListBuckets() ([]meta.Bucket, error) { return s.meta.ListBuckets() }

// withBucket runs fn holding the bucket's lock shared, after checking the
// bucket exists.
func (s *Store) withBucket(name string, fn func() error) error {
	mu := s.bucketMutex(name)
	mu.RLock()
	defer mu.RUnlock()
	if _, err := s.getBucketLocked(name); err != nil {
		return err
	}
	return fn()
}
