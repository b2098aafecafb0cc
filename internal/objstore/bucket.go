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
	return b, nil
}

// GetBucket returns the bucket record or ErrNoSuchBucket.
func (s *Store) GetBucket(name string) (*meta.Bucket, error) {
	b, err := s.meta.GetBucket(name)
	if errors.Is(err, meta.ErrNotFound) {
		return nil, ErrNoSuchBucket
	}
	return b, err
}

// UpdateBucket applies fn to the bucket record and saves it atomically with
// respect to other bucket changes.
func (s *Store) UpdateBucket(name string, fn func(*meta.Bucket) error) error {
	mu := s.bucketMutex(name)
	mu.Lock()
	defer mu.Unlock()
	b, err := s.GetBucket(name)
	if err != nil {
		return err
	}
	if err := fn(b); err != nil {
		return err
	}
	batch := s.meta.NewBatch()
	defer batch.Close()
	batch.PutBucket(b)
	return batch.Commit()
}

// DeleteBucket removes an empty bucket. Object writes hold the bucket's
// lock shared while they commit, so none can land between the emptiness
// check and the delete.
func (s *Store) DeleteBucket(name string) error {
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
	batch := s.meta.NewBatch()
	defer batch.Close()
	batch.DeleteBucket(name)
	return batch.Commit()
}

// ListBuckets returns every bucket, ordered by name.
func (s *Store) ListBuckets() ([]meta.Bucket, error) { return s.meta.ListBuckets() }

// withBucket runs fn holding the bucket's lock shared, after checking the
// bucket exists.
func (s *Store) withBucket(name string, fn func() error) error {
	mu := s.bucketMutex(name)
	mu.RLock()
	defer mu.RUnlock()
	if _, err := s.GetBucket(name); err != nil {
		return err
	}
	return fn()
}
