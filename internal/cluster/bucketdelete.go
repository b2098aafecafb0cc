package cluster

import (
	"errors"
	"net/http"
	"sync"

	"github.com/b3-storage/b3/internal/meta"
	"github.com/b3-storage/b3/internal/s3api"
)

// Deleting a bucket in a cluster of several groups.
//
// A bucket's objects may lie in every group, and the first group decides
// the deletion. Asking the others "do you hold an object of it?" and then
// deleting leaves a window in which another group takes a write of it
// (the write and the question are in different logs): that object would
// stay in its group, and a user who creates the name again would be made
// owner of that group's copy of the bucket, object included. So the
// deletion runs in three steps, as a move's fence does:
//
//  1. the first group marks the bucket Deleting (a catalogue change) and
//     waits until every group holds the mark; a group confirms a
//     catalogue only once every write it checked against the older one
//     has committed (followCatalog: fenceMu);
//  2. every group refuses writes that add data to a marked bucket, checked
//     under fenceMu up to their commit (proposeResult: addsData): 503
//     SlowDown, which clients retry — and then find the bucket gone, or
//     there again if the deletion failed;
//  3. it asks every group whether it holds an object of the bucket, and
//     deletes it (or, if one does, clears the mark: BucketNotEmpty).
//
// Invariant: when the question is asked, every write of the bucket that
// any group acknowledged has committed there, and none can commit later.
//
// A mark whose deletion ended with its leader (a crash, a lost election)
// is cleared by the first group's next leader (clearStaleMarks); the
// deletion command carries Marked, so a deletion of an earlier leader that
// commits after the clear is refused (a write may have been taken since).
// A switch of partitions waits while a bucket is marked, and the groups
// are asked again if the map changed while they were (askEmptyStable):
// no object moves past the question.

// errMarkCleared: a deletion's mark was cleared (by a later first-group
// leader, as stale) before its deletion committed; the deletion is not
// made, since a write may have been taken meanwhile.
var errMarkCleared = &s3api.APIError{Code: "SlowDown", Status: http.StatusServiceUnavailable,
	Message: "The bucket's deletion was interrupted; retry."}

// errBucketMoving: a switch waits while a bucket's deletion runs.
var errBucketMoving = errors.New("a bucket's deletion is under way: the switch waits for it")

// errEmptinessMoved: the map kept changing while the groups were asked
// whether they hold objects of a bucket being deleted.
var errEmptinessMoved = &s3api.APIError{Code: "SlowDown", Status: http.StatusServiceUnavailable,
	Message: "Partitions moved while the bucket's deletion asked the groups; retry."}

// errBucketDeleting answers a write to a bucket being deleted.
var errBucketDeleting = &s3api.APIError{Code: "SlowDown", Status: http.StatusServiceUnavailable,
	Message: "The bucket is being deleted; retry."}

// addsData reports whether a client's command adds a record to its
// bucket. Deletions that remove are let through; a deletion that adds a
// delete marker (a DELETE without a version ID, or a lifecycle expiry, in
// a bucket with versioning) adds a version record, which keeps the bucket
// non-empty in its group as an object does.
func addsData(c *command) bool {
	switch c.Op {
	case opPutObject, opUpdateObject, opUpdateVersion, opComplete, opCreateUpload, opPutPart:
		return true
	case opDeleteVersion:
		return c.Delete == nil || c.Delete.VersionID == ""
	case opExpire:
		return c.Delete == nil || c.Delete.Marker != 0
	}
	return false
}

// checkBucketWrite refuses a client's command that adds data to a bucket
// being deleted. The caller holds fenceMu (read) up to the commit.
func (n *Node) checkBucketWrite(c *command, bucket string) error {
	if !addsData(c) {
		return nil
	}
	if b, err := n.store.GetBucket(bucket); err == nil && b.Deleting {
		return errBucketDeleting
	}
	return nil
}

// deletions are the buckets this leader is deleting (step 1 to 3).
type deletions struct {
	mu sync.Mutex
	m  map[string]bool
}

func (d *deletions) start(name string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.m == nil {
		d.m = map[string]bool{}
	}
	d.m[name] = true
}

func (d *deletions) end(name string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.m, name)
}

func (d *deletions) running(name string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.m[name]
}

// deleteBucketEverywhere is DeleteBucket with several groups (steps 1 to
// 3); the caller holds the bucket's lock.
func (s *Store) deleteBucketEverywhere(name string) error {
	s.deleting.start(name)
	defer s.deleting.end(name)
	mark := func(on bool) error {
		return s.updateBucketLocked(name, func(b *meta.Bucket) error { b.Deleting = on; return nil })
	}
	if err := mark(true); err != nil {
		if cerr := mark(false); cerr != nil {
			s.node.log.Warn("clear the deletion mark of a bucket", "bucket", name, "err", cerr)
		}
		return err
	}
	if err := s.askEmptyStable(name); err != nil {
		if cerr := mark(false); cerr != nil {
			s.node.log.Warn("clear the deletion mark of a bucket", "bucket", name, "err", cerr)
		}
		return err
	}
	if _, err := s.node.propose(&command{Op: opDeleteBucket, Name: name, Marked: true}); err != nil {
		return err
	}
	return s.node.awaitCatalog(s.node.closing, s.node.catalogVersion())
}

// askEmptyStable asks the groups owning partitions whether they hold an
// object of the bucket, by one map: a switch decided just before the mark
// (switches wait while a bucket is marked: handleMoveChange) may move a
// partition's records to a group that owned nothing when the map was
// read, and its source may sweep them: then it asks again.
func (s *Store) askEmptyStable(name string) error {
	for range 5 {
		epoch := s.node.cmap.load().Epoch
		if err := s.node.othersHoldNothing(name); err != nil {
			return err
		}
		if s.node.cmap.load().Epoch == epoch {
			return nil
		}
	}
	return errEmptinessMoved
}

// anyBucketDeleting reports whether a bucket carries a deletion mark.
func (s *Store) anyBucketDeleting() bool {
	buckets, err := s.ListBuckets()
	if err != nil {
		return true // unknown: the switch waits
	}
	for _, b := range buckets {
		if b.Deleting {
			return true
		}
	}
	return false
}

// clearStaleMarks clears the deletion marks no deletion of this leader
// runs: their deletion ended with an earlier leader. Run by the first
// group's leader.
func (s *Store) clearStaleMarks() error {
	buckets, err := s.ListBuckets()
	if err != nil {
		return err
	}
	for _, b := range buckets {
		if !b.Deleting || s.deleting.running(b.Name) {
			continue
		}
		unlock := s.lockBucket(b.Name)
		if cur, gerr := s.GetBucket(b.Name); gerr == nil && cur.Deleting && !s.deleting.running(b.Name) {
			err = s.updateBucketLocked(b.Name, func(b *meta.Bucket) error { b.Deleting = false; return nil })
			if err == nil {
				s.node.log.Info("cleared the mark of a bucket deletion an earlier leader left", "bucket", b.Name)
			}
		}
		unlock()
		if err != nil {
			return err
		}
	}
	return nil
}
