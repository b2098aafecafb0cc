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
func (s *Store) sweepVersions(ctx context.Context, act LifecycleActions, bucket string, conf *lifecycle.Configuration, res *LifecycleResult) error {
	var group []*meta.Object
	flush := func() error {
		if len(group) == 0 {
			return nil
		}
		g := group
		group = nil
		return s.sweepKeyVersions(ctx, act, conf, g, res)
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
func (s *Store) sweepKeyVersions(ctx context.Context, act LifecycleActions, conf *lifecycle.Configuration, versions []*meta.Object, res *LifecycleResult) error {
	first := versions[0]
	cur, err := s.currentObject(first.Bucket, first.Key)
	if err != nil {
		return err
	}
	if cur == nil && len(versions) == 1 && first.DeleteMarker {
		if conf.ExpiresDeleteMarker(first.Key) {
			return s.sweepRemove(ctx, act, first, true, res)
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
			if err := s.sweepRemove(ctx, act, v, false, res); err != nil {
				return err
			}
		}
		noncurrent++
		newer = v
	}
	return nil
}

// sweepRemove has act remove seen from the version table if, under the
// locks, it is still there and still what the scan saw: noncurrent, or
// (onlyMarker) the only version, a delete marker.
func (s *Store) sweepRemove(ctx context.Context, act LifecycleActions, seen *meta.Object, onlyMarker bool, res *LifecycleResult) error {
	if err := s.sweepWait(ctx); err != nil {
		return err
	}
	removed, err := act.ExpireVersion(seen, onlyMarker)
	if removed {
		res.Expired++
		s.lc.expired.Add(1)
	}
	return err
}

// ExpireVersion is LifecycleActions.ExpireVersion on the store itself.
func (l localLifecycle) ExpireVersion(seen *meta.Object, onlyMarker bool) (bool, error) {
	return l.s.ApplyExpireVersion(seen.Bucket, seen.Key, seen.Version, onlyMarker, l.s.now(), 0)
}

// ApplyExpireVersion removes version from bucket/key's version table if it
// is still there and still what a lifecycle pass decided on: noncurrent,
// or (onlyMarker) a delete marker that is the key's only version. The
// Object Lock check takes at as its instant and never bypasses: a locked
// version stays. It reports whether it removed the version.
func (s *Store) ApplyExpireVersion(bucket, key string, version uint64, onlyMarker bool, at time.Time, stamp uint64) (bool, error) {
	removed := false
	err := s.withBucket(bucket, func(*meta.Bucket) error {
		unlock := s.lockKey(bucket, key)
		defer unlock()
		cur, err := s.currentObject(bucket, key)
		if err != nil {
			return err
		}
		var newest *meta.Object
		count := 0
		err = s.meta.KeyVersions(bucket, key, func(o *meta.Object) (bool, error) {
			if newest == nil {
				newest = o
			}
			count++
			return count < 2, nil
		})
		if err != nil || newest == nil {
			return err
		}
		if onlyMarker {
			if cur != nil || count != 1 || !newest.DeleteMarker || newest.Version != version {
				return nil
			}
		} else if cur == nil && newest.Version == version {
			return nil // it became the latest version meanwhile
		}
		target, err := s.meta.GetVersion(bucket, key, version)
		if err != nil {
			if errors.Is(err, meta.ErrNotFound) {
				return nil
			}
			return err
		}
		_, err = s.removeVersion(bucket, key, VersionID(target), false, at, stamp)
		if errors.Is(err, ErrObjectLocked) {
			return nil
		}
		removed = err == nil
		return err
	})
	if errors.Is(err, ErrNoSuchBucket) {
		return false, nil
	}
	return removed, err
}
