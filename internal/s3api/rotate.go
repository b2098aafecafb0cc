package s3api

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/b3-storage/b3/internal/meta"
	"github.com/b3-storage/b3/internal/objstore"
	"github.com/b3-storage/b3/internal/sse"
)

// Key rotation: a background job re-seals data keys under another master
// key (b3 admin kms rotate). It rewrites records only (one metadata
// update per version, through the store, so through the log on a
// cluster); no object byte is read or written. Objects stay readable
// throughout: a record holds one sealed key at every instant, and both
// the old and the new master key are in the ring while the job runs.

// ErrRotationRunning refuses a second job while one runs.
var ErrRotationRunning = errors.New("a key rotation is already running")

// KMSStatus reports the key ring (names only) and the re-wrap job.
func (s *Server) KMSStatus() sse.KMSStatus {
	s.rotationMu.Lock()
	defer s.rotationMu.Unlock()
	st := sse.KMSStatus{Keys: []string{}, Rotation: s.rotation}
	if s.cfg.Keys != nil {
		st.DefaultKey, st.Keys = s.cfg.Keys.Default(), s.cfg.Keys.Names()
	}
	return st
}

// StartRotation starts re-sealing, under master key to ("" the default
// key), the data keys sealed under from ("": every SSE-S3 data key not
// sealed under to). Both keys must be in the ring. It returns at once;
// KMSStatus follows the job, which ctx ends.
func (s *Server) StartRotation(ctx context.Context, from, to string) error {
	if s.cfg.Keys == nil {
		return errors.New("no master keys: start the server with --kms-keys or --kms-keys-file")
	}
	_, to, err := s.cfg.Keys.Key(to)
	if err != nil {
		return err
	}
	if from != "" {
		if _, _, err := s.cfg.Keys.Key(from); err != nil {
			return err
		}
		if from == to {
			return fmt.Errorf("rotation from %q to itself", from)
		}
	}
	s.rotationMu.Lock()
	defer s.rotationMu.Unlock()
	if s.rotation.Running {
		return ErrRotationRunning
	}
	now := time.Now().UTC()
	s.rotation = sse.RotationStatus{Running: true, From: from, To: to, Started: &now}
	go s.rotate(ctx, from, to)
	return nil
}

// needsRewrap says whether a record's key is one the job re-seals.
func needsRewrap(rec *meta.Encryption, from, to string) bool {
	if rec == nil || rec.Algorithm == meta.SSEAlgorithmCustomer || rec.KeyID == to {
		return false
	}
	if from == "" {
		return rec.Algorithm == meta.SSEAlgorithmS3
	}
	return rec.KeyID == from
}

func (s *Server) rotate(ctx context.Context, from, to string) {
	err := s.rotateAll(ctx, from, to)
	s.rotationMu.Lock()
	defer s.rotationMu.Unlock()
	now := time.Now().UTC()
	s.rotation.Running, s.rotation.Finished = false, &now
	if err != nil {
		s.rotation.LastError = err.Error()
	}
	s.log.Info("key rotation ended", "from", from, "to", to, "scanned", s.rotation.Scanned,
		"rewrapped", s.rotation.Rewrapped, "failed", s.rotation.Failed, "err", err)
}

// rotateAll walks every version of every bucket.
func (s *Server) rotateAll(ctx context.Context, from, to string) error {
	buckets, err := s.store.ListBuckets()
	if err != nil {
		return err
	}
	for _, b := range buckets {
		opts := objstore.VersionListOptions{MaxKeys: 1000}
		for {
			if err := ctx.Err(); err != nil {
				return err
			}
			page, err := s.store.ListVersions(b.Name, opts)
			if err != nil {
				return fmt.Errorf("list %s: %w", b.Name, err)
			}
			for _, v := range page.Versions {
				s.rewrapVersion(b.Name, v, from, to)
			}
			if !page.IsTruncated || len(page.Versions) == 0 {
				break
			}
			last := page.Versions[len(page.Versions)-1]
			opts.KeyMarker, opts.VersionIDMarker = last.Key, objstore.VersionID(last)
		}
	}
	return nil
}

// rewrapVersion re-seals one version's data key, deciding again on the
// record under its key lock (a write may have replaced it since the
// listing).
func (s *Server) rewrapVersion(bucket string, v *meta.Object, from, to string) {
	s.noteRotation(func(st *sse.RotationStatus) { st.Scanned++ })
	if !needsRewrap(v.SSE, from, to) {
		return
	}
	done := false
	_, err := s.store.UpdateVersion(bucket, v.Key, objstore.VersionID(v), func(o *meta.Object) error {
		if !needsRewrap(o.SSE, from, to) {
			return nil
		}
		rec, err := s.reseal(o.SSE, bucket, o.Key, to)
		if err != nil {
			return err
		}
		o.SSE, done = rec, true
		return nil
	})
	s.noteRotation(func(st *sse.RotationStatus) {
		switch {
		case err != nil && !errors.Is(err, objstore.ErrNoSuchKey) && !errors.Is(err, objstore.ErrNoSuchVersion):
			st.Failed++
			st.LastError = fmt.Sprintf("%s/%s: %v", bucket, v.Key, err)
		case err == nil && done:
			st.Rewrapped++
		}
	})
}

// reseal opens rec's data key and seals it under master key to.
func (s *Server) reseal(rec *meta.Encryption, bucket, key, to string) (*meta.Encryption, error) {
	old, _, err := s.cfg.Keys.Key(rec.KeyID)
	if err != nil {
		return nil, err
	}
	dk, err := sse.Unseal(old, rec.SealedKey, sealContext(bucket, key))
	if err != nil {
		return nil, fmt.Errorf("open the data key sealed under %q: %w", rec.KeyID, err)
	}
	kek, _, err := s.cfg.Keys.Key(to)
	if err != nil {
		return nil, err
	}
	sealed, err := sse.Seal(kek, dk, sealContext(bucket, key))
	if err != nil {
		return nil, err
	}
	return &meta.Encryption{Algorithm: rec.Algorithm, KeyID: to, SealedKey: sealed}, nil
}

func (s *Server) noteRotation(fn func(*sse.RotationStatus)) {
	s.rotationMu.Lock()
	defer s.rotationMu.Unlock()
	fn(&s.rotation)
}
