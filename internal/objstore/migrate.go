package objstore

import (
	"errors"
	"fmt"

	"github.com/b3-storage/b3/internal/meta"
)

// Moving a partition between replica groups (package cluster).
//
// The group a partition moves to installs the records of the group it
// leaves exactly as they are there — current records, noncurrent
// versions and delete markers with their versions, times and attributes —
// and removes the records the leaving group no longer has; each change is
// one command of its log, stamped with the command's position as every
// apply is. No versioning rule runs: the records were decided by the
// other group's writes.

// ApplyInstall installs obj (Extents or Inline set by the caller; none
// for a delete marker) as the other group holds it: as its key's current
// record (current), whatever record of the key was current here counting
// dead unless it is obj's version, or in the version table, replacing a
// record of the same version.
func (s *Store) ApplyInstall(obj *meta.Object, current bool, stamp uint64) error {
	unlock := s.lockKey(obj.Bucket, obj.Key)
	defer unlock()
	b := s.meta.NewBatch()
	defer b.Close()
	counts := map[uint64]int64{}
	if current {
		if err := s.setExpiry(obj); err != nil {
			return err
		}
		cur, err := s.currentObject(obj.Bucket, obj.Key)
		if err != nil {
			return err
		}
		if cur != nil && !sameBytes(cur, obj) {
			addDead(b, cur.Extents, counts)
		}
		if old, err := s.meta.GetVersion(obj.Bucket, obj.Key, obj.Version); err == nil {
			if !sameBytes(old, obj) {
				addDead(b, old.Extents, counts)
			}
			b.DeleteVersion(obj.Bucket, obj.Key, obj.Version)
		} else if !errors.Is(err, meta.ErrNotFound) {
			return err
		}
		b.PutObject(obj)
	} else {
		old, err := s.meta.GetVersion(obj.Bucket, obj.Key, obj.Version)
		switch {
		case err == nil:
			if !sameBytes(old, obj) {
				addDead(b, old.Extents, counts)
			}
		case !errors.Is(err, meta.ErrNotFound):
			return err
		}
		if cur, err := s.currentObject(obj.Bucket, obj.Key); err != nil {
			return err
		} else if cur != nil && cur.Version == obj.Version {
			// It was current here; it is noncurrent there.
			b.DeleteObject(obj.Bucket, obj.Key)
		}
		b.PutVersion(obj)
	}
	stampIf(b, stamp)
	if err := b.Commit(); err != nil {
		return fmt.Errorf("install %s/%s version %d: %w", obj.Bucket, obj.Key, obj.Version, err)
	}
	s.noteDead(counts)
	s.invalidate(obj.Bucket, obj.Key)
	return nil
}

// sameBytes reports whether a and b reference the same extents.
func sameBytes(a, b *meta.Object) bool {
	if len(a.Extents) != len(b.Extents) {
		return false
	}
	for i := range a.Extents {
		if a.Extents[i] != b.Extents[i] {
			return false
		}
	}
	return true
}

// ApplyDrop removes the record of bucket/key version (the current one if
// current, else the version table's) the other group no longer has,
// counting its bytes dead; no record, no change (but the stamp).
func (s *Store) ApplyDrop(bucket, key string, version uint64, current bool, stamp uint64) error {
	unlock := s.lockKey(bucket, key)
	defer unlock()
	b := s.meta.NewBatch()
	defer b.Close()
	counts := map[uint64]int64{}
	if current {
		cur, err := s.currentObject(bucket, key)
		if err != nil {
			return err
		}
		if cur != nil && cur.Version == version {
			addDead(b, cur.Extents, counts)
			b.DeleteObject(bucket, key)
		}
	} else {
		old, err := s.meta.GetVersion(bucket, key, version)
		switch {
		case err == nil:
			addDead(b, old.Extents, counts)
			b.DeleteVersion(bucket, key, version)
		case !errors.Is(err, meta.ErrNotFound):
			return err
		}
	}
	stampIf(b, stamp)
	if err := b.Commit(); err != nil {
		return fmt.Errorf("drop %s/%s version %d: %w", bucket, key, version, err)
	}
	s.noteDead(counts)
	s.invalidate(bucket, key)
	return nil
}
