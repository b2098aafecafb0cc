package objstore

import (
	"errors"
	"fmt"

	"github.com/b3-storage/b3/internal/meta"
)

// Restoring a replica's state.
//
// A replica brought to a state decided elsewhere (a snapshot) installs
// records as they are, without the versioning rules of a write: a version
// that was current here and is not current in the snapshot may be one of
// its noncurrent versions, so it is set aside in the version table rather
// than counted dead, and the restore's pass over the version table then
// keeps it (with its bytes) or drops it. Every change commits unstamped
// and unsynced (see Restoring); the caller ends the series with
// StampApplied.

// RestoreObject installs obj (Extents or Inline set by the caller) as its
// key's current record. A current record of another version moves to the
// version table; a version-table record of obj's version (it was
// noncurrent here) is removed, obj taking its place.
func (s *Store) RestoreObject(obj *meta.Object) error {
	unlock := s.lockKey(obj.Bucket, obj.Key)
	defer unlock()
	if err := s.setExpiry(obj); err != nil {
		return err
	}
	cur, err := s.currentObject(obj.Bucket, obj.Key)
	if err != nil {
		return err
	}
	b := s.meta.NewBatch()
	defer b.Close()
	if cur != nil && cur.Version != obj.Version {
		b.PutVersion(cur)
	}
	b.DeleteVersion(obj.Bucket, obj.Key, obj.Version)
	b.PutObject(obj)
	b.Unsynced()
	if err := b.Commit(); err != nil {
		return fmt.Errorf("restore %s/%s: %w", obj.Bucket, obj.Key, err)
	}
	s.invalidate(obj.Bucket, obj.Key)
	return nil
}

// RestoreSetAside moves the key's current record, if any, to the version
// table (the key has no current record in the state being restored).
func (s *Store) RestoreSetAside(bucket, key string) error {
	unlock := s.lockKey(bucket, key)
	defer unlock()
	cur, err := s.currentObject(bucket, key)
	if err != nil || cur == nil {
		return err
	}
	b := s.meta.NewBatch()
	defer b.Close()
	b.DeleteObject(bucket, key)
	b.PutVersion(cur)
	b.Unsynced()
	if err := b.Commit(); err != nil {
		return fmt.Errorf("restore %s/%s: %w", bucket, key, err)
	}
	s.invalidate(bucket, key)
	return nil
}

// RestoreVersion stores obj (Extents or Inline set by the caller; none
// for a delete marker) in the version table, replacing a record of the
// same version.
func (s *Store) RestoreVersion(obj *meta.Object) error {
	unlock := s.lockKey(obj.Bucket, obj.Key)
	defer unlock()
	b := s.meta.NewBatch()
	defer b.Close()
	b.PutVersion(obj)
	b.Unsynced()
	if err := b.Commit(); err != nil {
		return fmt.Errorf("restore %s/%s version %d: %w", obj.Bucket, obj.Key, obj.Version, err)
	}
	return nil
}

// RestoreDropVersion removes a version-table record the restored state
// does not have, counting its bytes dead.
func (s *Store) RestoreDropVersion(bucket, key string, version uint64) error {
	unlock := s.lockKey(bucket, key)
	defer unlock()
	old, err := s.meta.GetVersion(bucket, key, version)
	if errors.Is(err, meta.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	b := s.meta.NewBatch()
	defer b.Close()
	counts := map[uint64]int64{}
	b.DeleteVersion(bucket, key, version)
	addDead(b, old.Extents, counts)
	b.Unsynced()
	if err := b.Commit(); err != nil {
		return fmt.Errorf("restore %s/%s version %d: %w", bucket, key, version, err)
	}
	s.noteDead(counts)
	return nil
}

// ApplyUpdateVersion replaces the attributes (tags, retention, legal hold)
// of obj's version, current or in the version table, keeping its bytes;
// ErrNoSuchVersion, changing nothing, if the key has no such version or
// it is a delete marker.
func (s *Store) ApplyUpdateVersion(obj *meta.Object, stamp uint64) error {
	unlock := s.lockKey(obj.Bucket, obj.Key)
	defer unlock()
	cur, err := s.currentObject(obj.Bucket, obj.Key)
	if err != nil {
		return err
	}
	current := cur != nil && cur.Version == obj.Version
	old := cur
	if !current {
		old, err = s.meta.GetVersion(obj.Bucket, obj.Key, obj.Version)
		if errors.Is(err, meta.ErrNotFound) {
			return ErrNoSuchVersion
		}
		if err != nil {
			return err
		}
	}
	if old.DeleteMarker {
		return ErrNoSuchVersion
	}
	next := *obj
	next.Extents, next.Inline, next.Size = old.Extents, old.Inline, old.Size
	next.Versioned, next.DeleteMarker = old.Versioned, false
	b := s.meta.NewBatch()
	defer b.Close()
	if current {
		if err := s.setExpiry(&next); err != nil {
			return err
		}
		b.PutObject(&next)
	} else {
		b.PutVersion(&next)
	}
	stampIf(b, stamp)
	if err := b.Commit(); err != nil {
		return fmt.Errorf("update %s/%s version %d: %w", obj.Bucket, obj.Key, obj.Version, err)
	}
	s.invalidate(obj.Bucket, obj.Key)
	return nil
}

// Records restored without their bytes.
//
// A replica restoring a snapshot installs every record at once, and a
// record whose bytes it does not hold yet is hollow: no extents, no inline
// payload, and a size above zero (a delete marker is never hollow). The
// replica fetches those bytes afterwards and fills the record in (Fill*);
// until then the record is not to be read (OpenObject on it fails) but
// is, for every other purpose (listings, attributes, versioning, the
// commands that replace it), the record the snapshot holds.

// ErrHollow: the record's bytes are not here yet (a hollow record).
var ErrHollow = errors.New("objstore: the object's bytes are not here yet")

// Hollow reports whether obj is a record waiting for its bytes.
func Hollow(obj *meta.Object) bool {
	return obj != nil && !obj.DeleteMarker && obj.Inline == nil && len(obj.Extents) == 0 && obj.Size > 0
}

// HollowPart reports whether p is a part waiting for its bytes.
func HollowPart(p *meta.Part) bool {
	return p != nil && len(p.Extents) == 0 && p.Size > 0
}

// FillObject gives the hollow record of bucket/key at version, current or
// in the version table, the bytes staged in st. It reports whether it did:
// false, changing nothing, if no hollow record of that version and size
// is left (a command replaced it, or another fill got there first). A
// fill is durable on return, whatever the sync policy. The caller
// releases st if filled, else discards it.
func (s *Store) FillObject(bucket, key string, version uint64, st *Staged) (bool, error) {
	unlock := s.lockKey(bucket, key)
	defer unlock()
	b := s.meta.NewBatch()
	defer b.Close()
	cur, err := s.currentObject(bucket, key)
	if err != nil {
		return false, err
	}
	switch {
	case cur != nil && cur.Version == version:
		if !Hollow(cur) || cur.Size != st.Size {
			return false, nil
		}
		cur.Extents = st.Extents
		b.PutObject(cur)
	default:
		old, err := s.meta.GetVersion(bucket, key, version)
		if errors.Is(err, meta.ErrNotFound) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		if !Hollow(old) || old.Size != st.Size {
			return false, nil
		}
		old.Extents = st.Extents
		b.PutVersion(old)
	}
	if err := b.CommitSync(); err != nil {
		return false, fmt.Errorf("fill %s/%s version %d: %w", bucket, key, version, err)
	}
	s.invalidate(bucket, key)
	return true, nil
}

// FillPart is FillObject for a hollow part of an upload of bucket/key.
func (s *Store) FillPart(bucket, key, uploadID string, number int, st *Staged) (bool, error) {
	unlock := s.lockKey(bucket, key)
	defer unlock()
	p, err := s.meta.GetPart(uploadID, number)
	if errors.Is(err, meta.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if !HollowPart(p) || p.Size != st.Size {
		return false, nil
	}
	p.Extents = st.Extents
	b := s.meta.NewBatch()
	defer b.Close()
	b.PutPart(p)
	if err := b.CommitSync(); err != nil {
		return false, fmt.Errorf("fill part %d of %s: %w", number, uploadID, err)
	}
	return true, nil
}
