package objstore

import (
	"context"
	"fmt"
	"io"

	"github.com/b3-storage/b3/internal/blob"
	"github.com/b3-storage/b3/internal/meta"
)

// Repair of damaged bytes from another copy (a replica's: package
// cluster fetches them and stages them here with Stage).
//
// Invariant: a repair changes only where a version's bytes are, never
// what they are: the staged bytes must have the version's size (and the
// fetch checked them as it checks any fetched bytes), and they replace
// the extents only if the version still references exactly those (a
// write, delete or vacuum move since wins, as against vacuum's swap).

// RepairExtents puts the bytes staged in st in place of damaged, the
// extents of bucket/key's version (current or noncurrent) that were
// found damaged. It reports whether it did: false, changing nothing, if
// no record of that version references damaged any more. The old extents
// are counted dead; the change is durable on return. The caller releases
// st if repaired, else discards it.
func (s *Store) RepairExtents(bucket, key string, version uint64, damaged []meta.Extent, st *Staged) (bool, error) {
	var size int64
	for _, e := range damaged {
		size += e.Size
	}
	if len(damaged) == 0 || size != st.Size {
		return false, fmt.Errorf("repair %s/%s version %d: %d bytes staged for extents of %d", bucket, key, version, st.Size, size)
	}
	ok, err := s.swap(bucket, key, version, damaged, st.Extents)
	if err != nil {
		return false, fmt.Errorf("repair %s/%s version %d: %w", bucket, key, version, err)
	}
	if ok {
		s.invalidate(bucket, key)
	}
	return ok, nil
}

// ReadRange reads bytes [off, off+n) of the value whose records are exts
// (bucket/key's version), verifying every record as OpenObject's reader
// does.
func (s *Store) ReadRange(ctx context.Context, bucket, key string, version uint64, exts []meta.Extent, off, n int64) (io.ReadCloser, error) {
	return s.blob.NewReader(ctx, blob.Owner{Key: ownerKey(bucket, key), Version: version}, toBlob(exts), off, n)
}

// Record returns bucket/key's record of version: the current one, else
// the version table's; meta.ErrNotFound when neither holds it.
func (s *Store) Record(bucket, key string, version uint64) (*meta.Object, error) {
	view := s.meta.NewView()
	defer view.Close()
	obj, err := view.GetObject(bucket, key)
	if err == nil && obj.Version == version {
		return obj, nil
	}
	return view.GetVersion(bucket, key, version)
}
