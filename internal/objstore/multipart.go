package objstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/b3-storage/b3/internal/blob"
	"github.com/b3-storage/b3/internal/meta"
)

// CreateUpload starts a multipart upload. The upload reserves the version
// the completed object will carry: every part's records are owned by
// (bucket/key, that version), so vacuum can find what references them.
// The upload ID is always meta.NewUploadID(version): vacuum finds the
// upload by the version its ID begins with (meta.View.UploadOf).
func (s *Store) CreateUpload(up *meta.Upload) (*meta.Upload, error) {
	version, err := s.meta.NextVersion()
	if err != nil {
		return nil, fmt.Errorf("reserve version: %w", err)
	}
	up.Version = version
	up.UploadID = meta.NewUploadID(version)
	if up.Initiated.IsZero() {
		up.Initiated = time.Now().UTC()
	}
	err = s.withBucket(up.Bucket, func(*meta.Bucket) error {
		b := s.meta.NewBatch()
		defer b.Close()
		b.PutUpload(up)
		return b.Commit()
	})
	if err != nil {
		return nil, err
	}
	return up, nil
}

// ListUploads lists a bucket's multipart uploads (meta.DB.ListUploads).
func (s *Store) ListUploads(bucket string, o meta.UploadListOptions) (*meta.UploadListResult, error) {
	return s.meta.ListUploads(bucket, o)
}

// GetUpload returns the upload or ErrNoSuchUpload.
func (s *Store) GetUpload(bucket, key, uploadID string) (*meta.Upload, error) {
	up, err := s.meta.GetUpload(bucket, key, uploadID)
	if errors.Is(err, meta.ErrNotFound) {
		if _, berr := s.GetBucket(bucket); berr != nil {
			return nil, berr
		}
		return nil, ErrNoSuchUpload
	}
	return up, err
}

// PutPart stores one part of an upload; a part with the same number is
// replaced. finish, as in PutInput, sets the ETag and checksum or rejects
// the body.
func (s *Store) PutPart(ctx context.Context, bucket, key, uploadID string, number int, body io.Reader, finish func(*meta.Part) error) (*meta.Part, error) {
	up, err := s.GetUpload(bucket, key, uploadID)
	if err != nil {
		return nil, err
	}
	if err := s.admitWrite(); err != nil {
		return nil, err
	}
	write := s.inflight.register(s.activeSegment)
	defer s.inflight.done(write)
	owner := blob.Owner{Key: ownerKey(bucket, key), Version: up.Version}
	exts, size, err := s.blob.Append(ctx, owner, body)
	if err != nil {
		s.discard(exts)
		return nil, err
	}
	part := &meta.Part{UploadID: uploadID, Number: number, Size: size, Extents: toMeta(exts), Modified: time.Now().UTC()}
	if finish != nil {
		if err := finish(part); err != nil {
			s.discard(exts)
			return nil, err
		}
	}
	if err := s.commitPart(bucket, key, part); err != nil {
		s.discard(exts)
		return nil, err
	}
	return part, nil
}

func (s *Store) commitPart(bucket, key string, part *meta.Part) error {
	// The upload may have been completed or aborted while the body
	// streamed: ApplyPutPart checks it under the key lock.
	return s.ApplyPutPart(bucket, key, part, 0)
}

// CompleteFunc builds the object from the upload and the parts the client
// listed (already looked up, in the client's order); it validates them (ETag
// match, minimum sizes) and returns the object record to install, whose
// Extents the store fills in.
type CompleteFunc func(up *meta.Upload, parts []*meta.Part) (*meta.Object, error)

// CompleteUpload turns an upload into an object. It writes metadata only:
// the chosen parts' extents become the object's, in part order; the bytes
// are not copied. Parts not chosen are counted dead.
func (s *Store) CompleteUpload(bucket, key, uploadID string, numbers []int, build CompleteFunc, precondition func(*meta.Object) error) (*meta.Object, error) {
	var obj *meta.Object
	err := s.withBucket(bucket, func(b *meta.Bucket) error {
		unlock := s.lockKey(bucket, key)
		defer unlock()
		up, err := s.GetUpload(bucket, key, uploadID)
		if err != nil {
			return err
		}
		all, err := s.allParts(uploadID)
		if err != nil {
			return err
		}
		chosen := make([]*meta.Part, len(numbers))
		for i, n := range numbers {
			chosen[i] = all[n] // nil if missing; build reports InvalidPart
		}
		if obj, err = build(up, chosen); err != nil {
			return err
		}
		obj.Bucket, obj.Key, obj.Version = bucket, key, up.Version
		obj.Extents, obj.Size = nil, 0
		used := map[int]bool{}
		for _, p := range chosen {
			obj.Extents = append(obj.Extents, p.Extents...)
			obj.Size += p.Size
			used[p.Number] = true
		}
		if obj.Modified.IsZero() {
			obj.Modified = time.Now().UTC()
		}
		obj.Expiry = s.expiryOf(s.rulesOf(b), obj)
		// One batch: the object, the upload's removal, and the dead bytes
		// of the replaced object and of the parts left out.
		return s.commitObjectLocked(obj, precondition, func(b *meta.Batch, counts map[uint64]int64) {
			b.DeleteUpload(bucket, key, uploadID)
			for n, p := range all {
				if !used[n] {
					addDead(b, p.Extents, counts)
				}
			}
		}, s.now())
	})
	if err != nil {
		return nil, err
	}
	return obj, nil
}

// AbortUpload drops an upload and counts its parts dead.
func (s *Store) AbortUpload(bucket, key, uploadID string) error {
	return s.ApplyAbortUpload(bucket, key, uploadID, 0)
}

// allParts returns every part of an upload by number.
func (s *Store) allParts(uploadID string) (map[int]*meta.Part, error) {
	out := map[int]*meta.Part{}
	marker := 0
	for {
		parts, truncated, err := s.meta.ListParts(uploadID, marker, 1000)
		if err != nil {
			return nil, err
		}
		for _, p := range parts {
			out[p.Number] = p
			marker = p.Number
		}
		if !truncated || len(parts) == 0 {
			return out, nil
		}
	}
}
