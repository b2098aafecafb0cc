package objstore

import (
	"context"
	"errors"
	"time"

	"github.com/b3-storage/b3/internal/lifecycle"
	"github.com/b3-storage/b3/internal/meta"
)

// Lifecycle of versions: NoncurrentVersionExpiration and
// ExpiredObjectDeleteMarker.
//
// The sweeper scans a versioned bucket's version table key by key. A
// version became noncurrent when the next newer version was written (its
// Modified time); NoncurrentDays counts from there, and
// NewerNoncurrentVersions keeps that many newer noncurrent versions. A
// delete marker that is a key's only version is removed under
// ExpiredObjectDeleteMarker. Each removal is decided again under the
// bucket and key locks, on the records of that moment, and never bypasses
// Object Lock: a locked version stays until its retention ends.

// sweepVersions applies conf's version actions to bucket.
func (s *Store) sweepVersions(ctx context.Context, bucket string, conf *lifecycle.Configuration, res *LifecycleResult) error {
	var group []*meta.Object
	flush := func() error {
		if len(group) == 0 {
			return nil
		}
		g := group
		group = nil
		return s.sweepKeyVersions(ctx, conf, g, res)
	}
	err := s.meta.ScanVersions(bucket, func(o *meta.Object) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		if len(group) > 0 && group[0].Key != o.Key {
			if err := flush(); err != nil {
				return err
			}
		}
		group = append(group, o)
		return nil
	})
	if err != nil {
		return err
	}
	return flush()
}

// sweepKeyVersions handles one key's version-table records (newest first).
func (s *Store) sweepKeyVersions(ctx context.Context, conf *lifecycle.Configuration, versions []*meta.Object, res *LifecycleResult) error {
	first := versions[0]
	cur, err := s.currentObject(first.Bucket, first.Key)
	if err != nil {
		return err
	}
	if cur == nil && len(versions) == 1 && first.DeleteMarker {
		if conf.ExpiresDeleteMarker(first.Key) {
			return s.sweepRemove(ctx, first, time.Time{}, res)
		}
		return nil
	}
	newer := cur
	noncurrent := 0
	for i, v := range versions {
		if i == 0 && cur == nil {
			newer = v // the latest version (a delete marker) is not noncurrent
			continue
		}
		since := newer.Modified
		obj := lifecycle.Object{Key: v.Key, Tags: v.Tags, Size: v.Size, Created: v.Modified}
		at := conf.NoncurrentExpiry(obj, since, noncurrent, s.lifecycleDay())
		if !at.IsZero() && !s.now().Before(at) {
			if err := s.sweepRemove(ctx, v, since, res); err != nil {
				return err
			}
		}
		noncurrent++
		newer = v
	}
	return nil
}

// sweepRemove removes seen from the version table if, under the locks, it
// is still there and still what the scan saw: noncurrent (since not zero),
// or the only version, a delete marker (since zero).
func (s *Store) sweepRemove(ctx context.Context, seen *meta.Object, since time.Time, res *LifecycleResult) error {
	if err := s.sweepWait(ctx); err != nil {
		return err
	}
	err := s.withBucket(seen.Bucket, func(*meta.Bucket) error {
		unlock := s.lockKey(seen.Bucket, seen.Key)
		defer unlock()
		cur, err := s.currentObject(seen.Bucket, seen.Key)
		if err != nil {
			return err
		}
		var newest *meta.Object
		count := 0
		err = s.meta.KeyVersions(seen.Bucket, seen.Key, func(o *meta.Object) (bool, error) {
			if newest == nil {
				newest = o
			}
			count++
			return count < 2, nil
		})
		if err != nil || newest == nil {
			return err
		}
		if since.IsZero() {
			if cur != nil || count != 1 || !newest.DeleteMarker || newest.Version != seen.Version {
				return nil
			}
		} else if cur == nil && newest.Version == seen.Version {
			return nil // it became the latest version meanwhile
		}
		if _, err := s.meta.GetVersion(seen.Bucket, seen.Key, seen.Version); err != nil {
			if errors.Is(err, meta.ErrNotFound) {
				return nil
			}
			return err
		}
		_, err = s.removeVersion(seen.Bucket, seen.Key, VersionID(seen), false)
		if errors.Is(err, ErrObjectLocked) {
			return nil
		}
		if err == nil {
			res.Expired++
			s.lc.expired.Add(1)
		}
		return err
	})
	if errors.Is(err, ErrNoSuchBucket) {
		return nil
	}
	return err
}
