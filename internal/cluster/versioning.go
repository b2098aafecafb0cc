package cluster

import (
	"time"

	"github.com/b3-storage/b3/internal/meta"
	"github.com/b3-storage/b3/internal/objstore"
)

// Versioning and Object Lock.
//
// A write in a bucket with versioning is decided on the leader and
// applied on every node by objstore's Apply* functions, as any other
// write. What the apply needs and cannot read from the replicated state
// rides in the command, decided once by the leader:
//
//   - a put's version and time (as for any put);
//   - a deletion's delete-marker version and time, the instant of its
//     Object Lock check and whether it may bypass GOVERNANCE retention
//     (objstore.Deletion);
//   - a lifecycle expiry's marker and instant.
//
// What depends on the bucket's state (Enabled, Suspended, never enabled:
// whether a put makes a new version or replaces the null one, whether a
// delete adds a marker) is decided by the apply from the bucket record at
// that point of the log, the same on every node, so a PutBucketVersioning
// ordered between a write's decision and its commit cannot make replicas
// differ. Object Lock's check compares a version's retain-until date with
// the command's instant, never a node's clock: every node reaches the
// same outcome, and a refused deletion (ErrObjectLocked) changes nothing
// anywhere and is the client's answer.

// applyVersioned applies the commands of versioning (ok false: not one).
func (f *fsm) applyVersioned(c *command, index uint64) (res applyResult, ok bool) {
	switch {
	case c.Op == opDeleteVersion && c.Delete != nil:
		res.del, res.obj, res.err = f.store.ApplyDelete(c.Name, c.Key, *c.Delete, index)
	case c.Op == opExpire && c.Delete != nil:
		res.obj, res.err = f.store.ApplyExpireCurrent(c.Name, c.Key, c.Version, *c.Delete, index)
	case c.Op == opExpireVersion && c.Delete != nil:
		var removed bool
		removed, res.err = f.store.ApplyExpireVersion(c.Name, c.Key, c.Version, c.OnlyMarker, c.Delete.At, index)
		if removed {
			res.obj = &meta.Object{Bucket: c.Name, Key: c.Key, Version: c.Version}
		}
	case c.Op == opUpdateVersion && c.Object != nil:
		res.obj, res.err = c.Object, f.store.ApplyUpdateVersion(c.Object, index)
	default:
		return res, false
	}
	return res, true
}

// deletion decides a deletion on the leader: a delete without a version
// ID gets a marker version (used if the bucket has versioning when the
// command applies), and the deletion takes the leader's now as its
// marker's time and its lock check's instant.
func (s *Store) deletion(versionID string, bypassGovernance bool) (objstore.Deletion, error) {
	d := objstore.Deletion{VersionID: versionID, BypassGovernance: bypassGovernance}
	if versionID == "" {
		marker, err := s.node.nextID()
		if err != nil {
			return d, err
		}
		d.Marker = marker
	} else if _, _, err := objstore.ParseVersionID(versionID); err != nil {
		return d, err
	}
	return d, nil
}

// proposeDeletion proposes d under the key lock, its instant taken there.
func (s *Store) proposeDeletion(bucket, key string, d objstore.Deletion) applyResult {
	unlock := s.lockKey(bucket, key)
	defer unlock()
	d.At = time.Now().UTC()
	d.Modified = d.At
	if d.Marker != 0 {
		d.Marker = s.above(bucket, key, d.Marker)
	}
	return s.node.proposeResult(&command{Op: opDeleteVersion, Name: bucket, Key: key, Delete: &d})
}

// DeleteObject deletes the key's latest version through the log: its
// record in a bucket that never had versioning (returned), a delete
// marker otherwise.
func (s *Store) DeleteObject(bucket, key string) (*meta.Object, error) {
	if s.ownerElsewhere(bucket, key) != "" {
		if _, err := s.GetBucket(bucket); err != nil {
			return nil, err
		}
		ans, err := s.deleteElsewhere(s.node.closing, remoteDelete{Bucket: bucket, Key: key, Plain: true})
		return ans.Object, err
	}
	return s.deleteObjectHere(bucket, key)
}

// deleteObjectHere is DeleteObject of a key this group owns.
func (s *Store) deleteObjectHere(bucket, key string) (*meta.Object, error) {
	if _, err := s.GetBucket(bucket); err != nil {
		return nil, err
	}
	d, err := s.deletion("", false)
	if err != nil {
		return nil, err
	}
	res := s.proposeDeletion(bucket, key, d)
	return res.obj, res.err
}

// DeleteVersioned is objstore's DeleteVersioned through the log.
func (s *Store) DeleteVersioned(bucket, key, versionID string, bypassGovernance bool) (objstore.DeleteResult, error) {
	if s.ownerElsewhere(bucket, key) != "" {
		if _, err := s.GetBucket(bucket); err != nil {
			return objstore.DeleteResult{}, err
		}
		ans, err := s.deleteElsewhere(s.node.closing, remoteDelete{Bucket: bucket, Key: key, VersionID: versionID, Bypass: bypassGovernance})
		return ans.Result, err
	}
	return s.deleteVersionedHere(bucket, key, versionID, bypassGovernance)
}

// deleteVersionedHere is DeleteVersioned of a key this group owns.
func (s *Store) deleteVersionedHere(bucket, key, versionID string, bypassGovernance bool) (objstore.DeleteResult, error) {
	if _, err := s.GetBucket(bucket); err != nil {
		return objstore.DeleteResult{}, err
	}
	d, err := s.deletion(versionID, bypassGovernance)
	if err != nil {
		return objstore.DeleteResult{}, err
	}
	res := s.proposeDeletion(bucket, key, d)
	return res.del, res.err
}

// UpdateVersion changes one version's attributes (tags, retention, legal
// hold) through the log: fn decides on the leader, under the key lock,
// and the command carries the record it made.
func (s *Store) UpdateVersion(bucket, key, versionID string, fn func(*meta.Object) error) (*meta.Object, error) {
	if _, err := s.GetBucket(bucket); err != nil {
		return nil, err
	}
	unlock := s.lockKey(bucket, key)
	defer unlock()
	obj, err := s.HeadVersion(bucket, key, versionID)
	if err != nil {
		return nil, err
	}
	if obj.DeleteMarker {
		return obj, objstore.ErrDeleteMarker
	}
	if err := fn(obj); err != nil {
		return nil, err
	}
	rec := *obj
	rec.Extents, rec.Inline = nil, nil // each replica keeps its own
	if _, err := s.node.propose(&command{Op: opUpdateVersion, Object: &rec}); err != nil {
		return nil, err
	}
	return obj, nil
}

// SetBucketVersioning sets a bucket's versioning state through the log.
func (s *Store) SetBucketVersioning(bucket, state string) error {
	return s.UpdateBucket(bucket, func(b *meta.Bucket) error { return objstore.SetVersioning(b, state) })
}
