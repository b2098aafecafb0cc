package objstore

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strconv"
	"time"

	"github.com/b3-storage/b3/internal/meta"
)

// Versioning.
//
// A key's current version is its "o" record, as in a bucket that never had
// versions; every other version, delete markers included, is a record of
// meta's version table (see meta/versions.go). What a write does depends
// on the bucket's versioning state, read under the bucket lock:
//
//	state      PUT                           DELETE (no version ID)
//	""         replaces the null version     removes the null version
//	Enabled    current moves to the table;   current moves to the table;
//	           new versioned current         a versioned delete marker
//	Suspended  replaces the null version      replaces the null version
//	           wherever it is; a versioned   wherever it is with a null
//	           current moves to the table    delete marker
//
// A DELETE with a version ID removes exactly that version; if it was the
// current one, the newest remaining version becomes current when it is an
// object (a delete marker stays in the table as the latest version).
// Every such change is one meta batch under the key lock: a version moves
// between "o" and the table whole, so vacuum, which looks for an owner's
// references in both on one meta.View, always finds it.
//
// Object Lock: a version under a legal hold, or under a retention whose
// date has not passed (COMPLIANCE; GOVERNANCE unless the caller may
// bypass it), is never removed or replaced — by DELETE, by a suspended
// bucket's null write, by lifecycle (which never bypasses) or by any
// other path. checkRemovable is the one test, made under the key lock on
// the record about to go.

// Errors of versioned operations.
var (
	ErrNoSuchVersion      = errors.New("objstore: no such version")
	ErrInvalidVersionID   = errors.New("objstore: invalid version id")
	ErrObjectLocked       = errors.New("objstore: object version is locked")
	ErrDeleteMarker       = errors.New("objstore: the version is a delete marker")
	ErrInvalidBucketState = errors.New("objstore: invalid bucket state")
)

// NullVersionID is the version ID of the null version.
const NullVersionID = "null"

// VersionID is the engine's version ID of a record: "null" for the null
// version, else its version as 16 hex digits. It is guessable and is not
// what S3 clients see: the S3 API seals it (s3api's versionids.go).
func VersionID(o *meta.Object) string {
	if !o.Versioned {
		return NullVersionID
	}
	return fmt.Sprintf("%016x", o.Version)
}

// ParseVersionID parses an engine version ID (VersionID): null is true
// for "null"; anything but "null" and 16 hex digits is
// ErrInvalidVersionID.
func ParseVersionID(id string) (version uint64, null bool, err error) {
	if id == NullVersionID {
		return 0, true, nil
	}
	if len(id) != 16 {
		return 0, false, ErrInvalidVersionID
	}
	if _, err := hex.DecodeString(id); err != nil {
		return 0, false, ErrInvalidVersionID
	}
	v, err := strconv.ParseUint(id, 16, 64)
	if err != nil || v == 0 {
		return 0, false, ErrInvalidVersionID
	}
	return v, false, nil
}

func isVersion(o *meta.Object, version uint64, null bool) bool {
	if null {
		return !o.Versioned
	}
	return o.Versioned && o.Version == version
}

// checkRemovable refuses to remove or replace a version under Object Lock
// at the instant at: a local write's now, a replicated command's instant
// decided by whoever ordered it (so every replica reaches the same
// outcome).
func checkRemovable(o *meta.Object, bypassGovernance bool, at time.Time) error {
	if o.DeleteMarker {
		return nil
	}
	if o.LegalHold {
		return ErrObjectLocked
	}
	if o.LockMode != "" && at.Before(o.RetainUntil) && (o.LockMode == meta.LockCompliance || !bypassGovernance) {
		return ErrObjectLocked
	}
	return nil
}

// replaceCurrent adds to b what installing obj as the key's current record
// does to the record it replaces (cur, nil if none), under the bucket's
// versioning state: it sets obj.Versioned, moves cur to the version table
// or counts it dead, and drops a null version that obj replaces. The
// caller holds the bucket lock shared and the key lock.
func (s *Store) replaceCurrent(b *meta.Batch, obj, cur *meta.Object, counts map[uint64]int64, at time.Time) error {
	bk, err := s.GetBucket(obj.Bucket)
	if err != nil {
		return err
	}
	switch bk.Versioning {
	case meta.VersioningEnabled:
		obj.Versioned = true
		if cur != nil {
			b.PutVersion(cur)
		}
		return nil
	case meta.VersioningSuspended:
		obj.Versioned = false
		return s.replaceNull(b, obj.Bucket, obj.Key, cur, counts, at)
	}
	obj.Versioned = false
	if cur != nil {
		if err := checkRemovable(cur, false, at); err != nil {
			return err
		}
		addDead(b, cur.Extents, counts)
	}
	return nil
}

// replaceNull removes the key's null version wherever it is (a suspended
// bucket's write replaces it), moving a versioned current record to the
// version table. The caller then installs the new null version.
func (s *Store) replaceNull(b *meta.Batch, bucket, key string, cur *meta.Object, counts map[uint64]int64, at time.Time) error {
	if cur != nil && !cur.Versioned {
		if err := checkRemovable(cur, false, at); err != nil {
			return err
		}
		addDead(b, cur.Extents, counts)
		return nil // at most one null version: none in the table
	}
	if cur != nil {
		b.PutVersion(cur)
	}
	var null *meta.Object
	err := s.meta.KeyVersions(bucket, key, func(o *meta.Object) (bool, error) {
		if !o.Versioned {
			null = o
		}
		return null == nil, nil
	})
	if err != nil || null == nil {
		return err
	}
	if err := checkRemovable(null, false, at); err != nil {
		return err
	}
	b.DeleteVersion(bucket, key, null.Version)
	addDead(b, null.Extents, counts)
	return nil
}

// findVersion returns the key's version (from "o" or the version table,
// read on one view), and whether it is the "o" record; ErrNoSuchVersion
// if there is none.
func (s *Store) findVersion(bucket, key, versionID string) (obj *meta.Object, current bool, err error) {
	version, null, err := ParseVersionID(versionID)
	if err != nil {
		return nil, false, err
	}
	view := s.meta.NewView()
	defer view.Close()
	cur, err := view.GetObject(bucket, key)
	switch {
	case errors.Is(err, meta.ErrNotFound):
	case err != nil:
		return nil, false, err
	case isVersion(cur, version, null):
		return cur, true, nil
	}
	if null {
		err = view.KeyVersions(bucket, key, func(o *meta.Object) (bool, error) {
			if !o.Versioned {
				obj = o
			}
			return obj == nil, nil
		})
	} else {
		obj, err = view.GetVersion(bucket, key, version)
		if err == nil && !obj.Versioned {
			obj = nil
		}
	}
	if errors.Is(err, meta.ErrNotFound) || (err == nil && obj == nil) {
		return nil, false, ErrNoSuchVersion
	}
	if err != nil {
		return nil, false, err
	}
	return obj, false, nil
}

// HeadVersion returns one version of a key (delete markers included;
// lifecycle expiry does not hide a version asked for by ID), or
// ErrNoSuchVersion.
func (s *Store) HeadVersion(bucket, key, versionID string) (*meta.Object, error) {
	if _, err := s.GetBucket(bucket); err != nil {
		return nil, err
	}
	obj, _, err := s.findVersion(bucket, key, versionID)
	return obj, err
}

// OpenVersion is OpenObject for one version. A delete marker is returned
// with ErrDeleteMarker. The cache is not used.
func (s *Store) OpenVersion(ctx context.Context, bucket, key, versionID string, rng RangeFunc) (*meta.Object, io.ReadCloser, error) {
	for attempt := 0; ; attempt++ {
		obj, err := s.HeadVersion(bucket, key, versionID)
		if err != nil {
			return nil, nil, err
		}
		if obj.DeleteMarker {
			return obj, nil, ErrDeleteMarker
		}
		if Hollow(obj) {
			return obj, nil, ErrHollow
		}
		off, n, err := rng(obj)
		if err != nil {
			return obj, nil, err
		}
		if obj.Inline != nil {
			return obj, io.NopCloser(bytes.NewReader(obj.Inline[off : off+n])), nil
		}
		r, err := s.blob.NewReader(ctx, recordOwner(obj), toBlob(obj.Extents), off, n)
		if errors.Is(err, fs.ErrNotExist) && attempt < 5 {
			continue // moved by vacuum meanwhile: read the record again
		}
		if err != nil {
			return nil, nil, fmt.Errorf("open %s/%s version %s: %w", bucket, key, versionID, err)
		}
		return obj, r, nil
	}
}

// LatestMarker returns the key's latest version if it is a delete marker
// (the key has no current record), else nil. It answers the headers of a
// GET or HEAD that found no object in a versioned bucket.
func (s *Store) LatestMarker(bucket, key string) (*meta.Object, error) {
	var latest *meta.Object
	err := s.meta.KeyVersions(bucket, key, func(o *meta.Object) (bool, error) {
		latest = o
		return false, nil
	})
	if err != nil || latest == nil || !latest.DeleteMarker {
		return nil, err
	}
	if cur, err := s.currentObject(bucket, key); err != nil || cur != nil {
		return nil, err
	}
	return latest, nil
}

// DeleteResult is what a versioned delete did.
type DeleteResult struct {
	// VersionID is the version removed, or the delete marker created; ""
	// in a bucket that never had versioning.
	VersionID string
	// DeleteMarker: the version removed, or the one created, is a marker.
	DeleteMarker bool
}

// Deletion is a delete as decided by whoever orders writes: every value
// that reads a clock or a counter is decided once and carried here, so
// that replicas applying the same deletion reach the same outcome.
type Deletion struct {
	// VersionID: "" deletes the key's latest version (a delete marker in a
	// bucket with versioning), else exactly that version.
	VersionID string
	// Marker is the version of the delete marker that a deletion without
	// VersionID adds in a bucket with versioning.
	Marker uint64
	// Modified is the delete marker's time.
	Modified time.Time
	// At is the instant of the Object Lock check.
	At time.Time
	// BypassGovernance lets the deletion remove a version under
	// GOVERNANCE retention.
	BypassGovernance bool
}

// DeleteVersioned deletes as S3 does in a bucket of any versioning state:
// without versionID the key's latest version (a delete marker in a
// versioned bucket), with one exactly that version. Deleting a missing
// key or version succeeds. bypassGovernance lets the caller remove a
// version under GOVERNANCE retention.
func (s *Store) DeleteVersioned(bucket, key, versionID string, bypassGovernance bool) (DeleteResult, error) {
	d := Deletion{VersionID: versionID, BypassGovernance: bypassGovernance}
	if versionID == "" {
		bk, err := s.GetBucket(bucket)
		if err != nil {
			return DeleteResult{}, err
		}
		if bk.Versioning == "" {
			_, err := s.DeleteObject(bucket, key)
			return DeleteResult{}, err
		}
		if d.Marker, err = s.meta.NextVersion(); err != nil {
			return DeleteResult{}, fmt.Errorf("reserve version: %w", err)
		}
	} else if _, _, err := ParseVersionID(versionID); err != nil {
		return DeleteResult{}, err
	}
	d.Modified, d.At = time.Now().UTC(), s.now()
	var res DeleteResult
	err := s.withBucket(bucket, func(bk *meta.Bucket) error {
		unlock := s.lockKey(bucket, key)
		defer unlock()
		var err error
		res, err = s.deleteLocked(bk, key, d, 0)
		return err
	})
	return res, err
}

// ApplyDelete carries out a deletion decided elsewhere (see Deletion), by
// the bucket's versioning state at this point of the command order: in a
// bucket that never had versioning a deletion without VersionID removes
// the key's record, which it returns; otherwise it does what
// DeleteVersioned does.
func (s *Store) ApplyDelete(bucket, key string, d Deletion, stamp uint64) (DeleteResult, *meta.Object, error) {
	var res DeleteResult
	var removed *meta.Object
	err := s.withBucket(bucket, func(bk *meta.Bucket) error {
		unlock := s.lockKey(bucket, key)
		defer unlock()
		var err error
		if d.VersionID == "" && bk.Versioning == "" {
			removed, err = s.applyDeleteLocked(bucket, key, 0, d.At, stamp)
			return err
		}
		res, err = s.deleteLocked(bk, key, d, stamp)
		return err
	})
	return res, removed, err
}

// ApplyExpireCurrent carries out a lifecycle expiry of the key's current
// version, if it is still version: in a bucket with versioning it adds
// the delete marker d.Marker (none if d.Marker is 0), otherwise it removes
// the record, which it returns (nil if nothing changed).
func (s *Store) ApplyExpireCurrent(bucket, key string, version uint64, d Deletion, stamp uint64) (*meta.Object, error) {
	var removed *meta.Object
	err := s.withBucket(bucket, func(bk *meta.Bucket) error {
		unlock := s.lockKey(bucket, key)
		defer unlock()
		if bk.Versioning == "" {
			var err error
			removed, err = s.applyDeleteLocked(bucket, key, version, d.At, stamp)
			return err
		}
		cur, err := s.currentObject(bucket, key)
		if err != nil || cur == nil || cur.Version != version || d.Marker == 0 {
			return err
		}
		d.VersionID = ""
		if _, err := s.addDeleteMarker(bk, key, d, stamp); err != nil {
			return err
		}
		removed = cur
		return nil
	})
	return removed, err
}

// deleteLocked is a deletion in a bucket with versioning, or of one
// version; the caller holds the bucket lock shared and the key lock.
func (s *Store) deleteLocked(bk *meta.Bucket, key string, d Deletion, stamp uint64) (DeleteResult, error) {
	if d.VersionID == "" {
		return s.addDeleteMarker(bk, key, d, stamp)
	}
	return s.removeVersion(bk.Name, key, d.VersionID, d.BypassGovernance, d.At, stamp)
}

// addDeleteMarker makes the delete marker d.Marker the key's latest
// version.
func (s *Store) addDeleteMarker(bk *meta.Bucket, key string, d Deletion, stamp uint64) (DeleteResult, error) {
	cur, err := s.currentObject(bk.Name, key)
	if err != nil {
		return DeleteResult{}, err
	}
	marker := &meta.Object{Bucket: bk.Name, Key: key, Version: d.Marker, DeleteMarker: true, Modified: d.Modified}
	if cur != nil {
		marker.Owner = cur.Owner
	}
	b := s.meta.NewBatch()
	defer b.Close()
	counts := map[uint64]int64{}
	if bk.Versioning == meta.VersioningEnabled {
		marker.Versioned = true
		if cur != nil {
			b.PutVersion(cur)
		}
	} else if err := s.replaceNull(b, bk.Name, key, cur, counts, d.At); err != nil {
		return DeleteResult{}, err
	}
	if cur != nil {
		b.DeleteObject(bk.Name, key)
	}
	b.PutVersion(marker)
	stampIf(b, stamp)
	if err := b.Commit(); err != nil {
		return DeleteResult{}, fmt.Errorf("delete %s/%s: %w", bk.Name, key, err)
	}
	s.noteDead(counts)
	s.invalidate(bk.Name, key)
	return DeleteResult{VersionID: VersionID(marker), DeleteMarker: true}, nil
}

// removeVersion removes one version for good, then promotes the newest
// remaining version to current if the key has no current record and that
// version is an object. The caller holds the key lock.
func (s *Store) removeVersion(bucket, key, versionID string, bypassGovernance bool, at time.Time, stamp uint64) (DeleteResult, error) {
	target, current, err := s.findVersion(bucket, key, versionID)
	if errors.Is(err, ErrNoSuchVersion) {
		return DeleteResult{VersionID: versionID}, nil
	}
	if err != nil {
		return DeleteResult{}, err
	}
	if err := checkRemovable(target, bypassGovernance, at); err != nil {
		return DeleteResult{}, err
	}
	return s.dropVersion(bucket, key, target, current, stamp)
}

// dropVersion removes target, the key's current record if current, else
// one of its versions, and promotes the newest remaining version to
// current if the key is left without one and that version is an object.
// The caller holds the key lock and has checked that target may go.
func (s *Store) dropVersion(bucket, key string, target *meta.Object, current bool, stamp uint64) (DeleteResult, error) {
	versionID := VersionID(target)
	b := s.meta.NewBatch()
	defer b.Close()
	counts := map[uint64]int64{}
	addDead(b, target.Extents, counts)
	hasCurrent := !current
	if current {
		b.DeleteObject(bucket, key)
	} else {
		b.DeleteVersion(bucket, key, target.Version)
		cur, err := s.currentObject(bucket, key)
		if err != nil {
			return DeleteResult{}, err
		}
		hasCurrent = cur != nil
	}
	if !hasCurrent {
		// The newest version left, if an object, becomes current.
		err := s.meta.KeyVersions(bucket, key, func(o *meta.Object) (bool, error) {
			if o.Version == target.Version && !current {
				return true, nil // the one being removed
			}
			if !o.DeleteMarker {
				b.DeleteVersion(bucket, key, o.Version)
				b.PutObject(o)
			}
			return false, nil
		})
		if err != nil {
			return DeleteResult{}, err
		}
	}
	stampIf(b, stamp)
	if err := b.Commit(); err != nil {
		return DeleteResult{}, fmt.Errorf("delete %s/%s version %s: %w", bucket, key, versionID, err)
	}
	s.noteDead(counts)
	s.invalidate(bucket, key)
	return DeleteResult{VersionID: VersionID(target), DeleteMarker: target.DeleteMarker}, nil
}

// UpdateVersion is UpdateObject for one version (tags, retention, legal
// hold); a delete marker has no attributes (ErrDeleteMarker).
func (s *Store) UpdateVersion(bucket, key, versionID string, fn func(*meta.Object) error) (*meta.Object, error) {
	if _, err := s.GetBucket(bucket); err != nil {
		return nil, err
	}
	unlock := s.lockKey(bucket, key)
	defer unlock()
	obj, current, err := s.findVersion(bucket, key, versionID)
	if err != nil {
		return nil, err
	}
	if obj.DeleteMarker {
		return obj, ErrDeleteMarker
	}
	if err := fn(obj); err != nil {
		return nil, err
	}
	b := s.meta.NewBatch()
	defer b.Close()
	if current {
		if err := s.setExpiry(obj); err != nil {
			return nil, err
		}
		b.PutObject(obj)
	} else {
		b.PutVersion(obj)
	}
	if err := b.Commit(); err != nil {
		return nil, fmt.Errorf("update %s/%s version %s: %w", bucket, key, versionID, err)
	}
	s.invalidate(bucket, key)
	return obj, nil
}

// VersionListOptions is meta.VersionListOptions with S3's version-id-marker.
type VersionListOptions struct {
	Prefix, Delimiter, KeyMarker string
	// VersionIDMarker, with KeyMarker: resume after this version of it.
	VersionIDMarker string
	MaxKeys         int
	// Keep as in meta.ListOptions.
	Keep func(key string) bool `json:"-"`
}

// ListVersions returns a page of the bucket's versions (see
// meta.DB.ListVersions). A VersionIDMarker of a version that no longer
// exists resumes after where it was; "null" resumes after the key's null
// version, or after the whole key if it has none.
func (s *Store) ListVersions(bucket string, o VersionListOptions) (*meta.VersionListResult, error) {
	if _, err := s.GetBucket(bucket); err != nil {
		return nil, err
	}
	opts := meta.VersionListOptions{Prefix: o.Prefix, Delimiter: o.Delimiter, KeyMarker: o.KeyMarker, MaxKeys: o.MaxKeys, Keep: o.Keep}
	if o.VersionIDMarker != "" {
		version, null, err := ParseVersionID(o.VersionIDMarker)
		if err != nil {
			return nil, err
		}
		opts.VersionMarker = version
		if null {
			obj, _, err := s.findVersion(bucket, o.KeyMarker, NullVersionID)
			switch {
			case err == nil:
				opts.VersionMarker = obj.Version
			case !errors.Is(err, ErrNoSuchVersion):
				return nil, err
			}
		}
	}
	return s.meta.ListVersions(bucket, opts)
}

// SetBucketVersioning sets a bucket's versioning state (Enabled or
// Suspended). A bucket with Object Lock cannot be suspended
// (ErrInvalidBucketState).
func (s *Store) SetBucketVersioning(bucket, state string) error {
	return s.UpdateBucket(bucket, func(b *meta.Bucket) error { return SetVersioning(b, state) })
}

// SetVersioning sets b's versioning state, refusing to suspend a bucket
// with Object Lock (ErrInvalidBucketState).
func SetVersioning(b *meta.Bucket, state string) error {
	if b.ObjectLock && state != meta.VersioningEnabled {
		return ErrInvalidBucketState
	}
	b.Versioning = state
	return nil
}
