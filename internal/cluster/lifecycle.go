package cluster

import (
	"time"

	"github.com/b3-storage/b3/internal/meta"
	"github.com/b3-storage/b3/internal/objstore"
)

// Lifecycle expiry is decided once, by the leader, and replicated as
// commands: only the leader runs the sweeper (started when it becomes
// ready in a term, stopped as soon as it does not lead; a new leader's
// first pass starts at once), and carries its decisions out through the
// log (leaderLifecycle). The replicas never sweep: they apply the
// expire, update and abort commands in log order like any other, so every
// node deletes the same objects and vacuum reclaims their bytes on each
// under its own limits. Expiry instants themselves are computed on every
// node at apply time from the record and the bucket's rules (no clock),
// so they agree everywhere; only "has it passed" reads a clock, the
// leader's.
//
// Invariant: an expire command names the version the leader found due,
// under the key's lock on the leader; applying it deletes the key (in a
// bucket with versioning: adds the delete marker the command carries) only
// if that version is still current, so a write ordered after the decision
// always wins. NoncurrentVersionExpiration and ExpiredObjectDeleteMarker
// go the same way (expire-version commands naming the version), their
// conditions checked again by the apply.
type leaderLifecycle struct{ s *Store }

var _ objstore.LifecycleActions = leaderLifecycle{}

func (l leaderLifecycle) Settle(seen *meta.Object) (objstore.LifecycleOutcome, error) {
	s := l.s
	unlock := s.lockKey(seen.Bucket, seen.Key)
	defer unlock()
	cur, err := s.current(seen.Bucket, seen.Key)
	if err != nil || cur == nil || cur.Version != seen.Version {
		return objstore.LifecycleUnchanged, err
	}
	want, due := s.LifecycleDue(cur)
	if due {
		// In a bucket with versioning (when the command applies) the
		// expiry adds a delete marker: its version and time are decided
		// here, the version above the current one's (which another
		// group may have numbered, before a move).
		marker, err := s.node.nextID()
		if err != nil {
			return objstore.LifecycleUnchanged, err
		}
		marker = max(marker, cur.Version+1)
		now := time.Now().UTC()
		d := &objstore.Deletion{Marker: marker, Modified: now, At: now}
		gone, err := s.node.propose(&command{Op: opExpire, Name: cur.Bucket, Key: cur.Key, Version: cur.Version, Delete: d})
		if err != nil || gone == nil {
			return objstore.LifecycleUnchanged, err
		}
		return objstore.LifecycleExpired, nil
	}
	if want.Equal(cur.Expiry) {
		return objstore.LifecycleUnchanged, nil
	}
	// An update of the same version: every node recomputes the instant
	// from the rules in force at that point of the log.
	rec := *cur
	rec.Extents, rec.Inline = nil, nil
	if _, err := s.node.propose(&command{Op: opUpdateObject, Object: &rec}); err != nil {
		return objstore.LifecycleUnchanged, err
	}
	return objstore.LifecycleReevaluated, nil
}

// ExpireVersion removes a noncurrent version (or a lone delete marker)
// through the log. Whether it still qualifies is decided again by the
// apply, on the records of that point of the log; the Object Lock check
// takes the leader's now, carried in the command.
func (l leaderLifecycle) ExpireVersion(seen *meta.Object, onlyMarker bool) (bool, error) {
	s := l.s
	unlock := s.lockKey(seen.Bucket, seen.Key)
	defer unlock()
	d := &objstore.Deletion{At: time.Now().UTC()}
	removed, err := s.node.propose(&command{Op: opExpireVersion, Name: seen.Bucket, Key: seen.Key, Version: seen.Version, OnlyMarker: onlyMarker, Delete: d})
	return removed != nil, err
}

func (l leaderLifecycle) Abort(up *meta.Upload) error {
	return l.s.AbortUpload(up.Bucket, up.Key, up.UploadID)
}

// lifecycleLeading starts the sweeper when this node becomes ready to
// lead and stops it when it no longer leads.
func (n *Node) lifecycleLeading(leading bool) {
	if leading == n.sweeping {
		return
	}
	n.sweeping = leading
	if leading {
		n.store.StartLifecycle(n.cfg.LifecycleInterval, n.cfg.LifecycleRate)
		n.store.KickLifecycle()
		return
	}
	n.store.StopLifecycle()
}
