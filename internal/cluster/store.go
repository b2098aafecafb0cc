package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/b3-storage/b3/internal/keylock"
	"github.com/b3-storage/b3/internal/lifecycle"
	"github.com/b3-storage/b3/internal/meta"
	"github.com/b3-storage/b3/internal/objstore"
	"github.com/b3-storage/b3/internal/s3api"
)

// Store is the S3 API's backend on the leader: reads come from the local
// store (the leader has applied every committed command, see
// Node.watchLeadership), writes are decided here and replicated as
// commands.
//
// The PUT path, in order:
//  1. allocate the version (Node.nextID: unique across leaders)
//  2. small body: keep it for the command (it rides in the log entry);
//     larger: stage it in the local segments (synced)
//  3. Finish (ETag, checksums; may reject the body)
//  4. push the staged bytes to the followers; sync mode waits until a
//     majority of the group, this node included, holds them durable
//  5. under the key lock: check the precondition against the current
//     record, propose the command, wait until it is committed and applied
//     here (applying installs the record on every node)
//  6. acknowledge
//
// Invariant: every write of one key is decided under that key's lock, from
// start of step 5 until its command is applied here, so a precondition
// sees every earlier write of the key.
type Store struct {
	*objstore.Store
	node *Node

	keys    *keylock.Locks // by bucket and key
	buckets *keylock.Locks // by bucket name (key "")
	// deleting: buckets this leader is deleting (bucketdelete.go).
	deleting deletions
}

var _ s3api.Backend = (*Store)(nil)

// Errors that end as 503 SlowDown with Retry-After: the client should
// retry, through any node.
var (
	errNoQuorum  = &s3api.APIError{Code: "SlowDown", Status: 503, Message: "The replica group has no quorum or no leader right now; retry."}
	errNotLeader = &s3api.APIError{Code: "SlowDown", Status: 503, Message: "This node no longer leads its replica group; retry."}
	// errWrongGroup: the request reached a group that does not own it (the
	// sender's map is behind).
	errWrongGroup = &s3api.APIError{Code: "SlowDown", Status: 503, Message: "This replica group does not own the request; retry."}
	// errRacedWrite: a write of the same key committed a newer version
	// while this one's bytes were being staged.
	errRacedWrite = &s3api.APIError{Code: "SlowDown", Status: 503, Message: "Another write of the key committed meanwhile; retry."}
)

func newStore(n *Node) *Store {
	return &Store{Store: n.store, node: n, keys: keylock.New(), buckets: keylock.New()}
}

func (s *Store) lockKey(bucket, key string) func() { return s.keys.Lock(bucket, key) }

func (s *Store) lockBucket(name string) func() { return s.buckets.Lock(name, "") }

// current returns the stored record, expired or not, or nil.
func (s *Store) current(bucket, key string) (*meta.Object, error) {
	cur, err := s.Meta().GetObject(bucket, key)
	if errors.Is(err, meta.ErrNotFound) {
		return nil, nil
	}
	return cur, err
}

// above returns version, or the version after the key's current record's
// if that is not below it: versions a group numbers by its own terms may
// be below those of records another group wrote before the key's
// partition moved here (move.go), and a key's new version must be its
// newest. A version whose bytes are staged is final (the segments' record
// owner carries it: PutObject).
func (s *Store) above(bucket, key string, version uint64) uint64 {
	if cur, err := s.current(bucket, key); err == nil && cur != nil && cur.Version >= version {
		return cur.Version + 1
	}
	return version
}

// stageAndPush writes body beside the log here and on the followers (step
// 2 and 4 of the PUT path); finish runs in between with the size. Sync
// mode streams the body to the followers as it is written here; async
// mode writes it here, and pushes it after the client is answered.
func (s *Store) stageAndPush(ctx context.Context, bucket, key string, version uint64, body io.Reader, finish func(size int64) error) (stage uint64, size int64, err error) {
	n := s.node
	if stage, err = n.nextID(); err != nil {
		return 0, 0, err
	}
	ref := bytesRef{Stage: stage, Bucket: bucket, Key: key, Version: version}
	var st *objstore.Staged
	need := n.quorumPeers()
	if need > 0 {
		st, err = n.stream(ctx, ref, body, need, finish)
	} else {
		st, err = n.store.Stage(ctx, bucket, key, version, body)
		if err == nil {
			if err = finish(st.Size); err != nil {
				st.Discard()
			}
		}
	}
	if err != nil {
		return 0, 0, n.ownDiskFailed(err)
	}
	e := n.stages.begin(stage)
	if e == nil { // ids are unique: cannot happen
		st.Discard()
		return 0, 0, fmt.Errorf("cluster: stage id %d reused", stage)
	}
	n.stages.finish(stage, e, st, nil)
	if need == 0 {
		_ = n.push(ctx, ref, st, 0) // in the background
	}
	return stage, st.Size, nil
}

// PutObject stores an object through the log (see Store).
func (s *Store) PutObject(ctx context.Context, in objstore.PutInput) (*meta.Object, error) {
	if _, err := s.GetBucket(in.Bucket); err != nil {
		return nil, err
	}
	version, err := s.node.nextID()
	if err != nil {
		return nil, err
	}
	// Above the key's current version now: the staged bytes carry the
	// version (the segments' record owner, which reads and vacuum check),
	// so it cannot change once they are written.
	version = s.above(in.Bucket, in.Key, version)
	obj := in.Object
	if obj == nil {
		obj = &meta.Object{}
	}
	obj.Bucket, obj.Key, obj.Version = in.Bucket, in.Key, version
	obj.Modified = time.Now().UTC()
	small, body, err := peekSmall(in.Body, objstore.InlineLimit(s.node.cfg.InlineMax, obj))
	if err != nil {
		return nil, err
	}
	finish := func(size int64) error {
		obj.Size = size
		if in.Finish != nil {
			return in.Finish(obj)
		}
		return nil
	}
	var stage uint64
	if small != nil {
		obj.Inline = small
		if err := finish(int64(len(small))); err != nil {
			return nil, err
		}
	} else if stage, _, err = s.stageAndPush(ctx, in.Bucket, in.Key, version, body, finish); err != nil {
		return nil, err
	}
	obj.Extents = nil // each replica has its own
	unlock := s.lockKey(in.Bucket, in.Key)
	defer unlock()
	if stage == 0 {
		obj.Version = s.above(in.Bucket, in.Key, obj.Version) // inline: no bytes carry it
	} else if s.above(in.Bucket, in.Key, obj.Version) != obj.Version {
		// Another write of the key committed a version at or above this
		// one meanwhile; the bytes are staged under this version, which
		// must not be renumbered: the client retries.
		s.node.dropStage(stage)
		return nil, errRacedWrite
	}
	if in.Precondition != nil {
		cur, err := s.current(in.Bucket, in.Key)
		if err == nil {
			err = in.Precondition(cur)
		}
		if err != nil {
			s.node.dropStage(stage)
			return nil, err
		}
	}
	return s.node.propose(&command{Op: opPutObject, Object: obj, Stage: stage})
}

// peekSmall reads up to max+1 bytes: a body that ends within max bytes is
// returned whole as small (not nil); otherwise whole reads all of it.
func peekSmall(body io.Reader, max int64) (small []byte, whole io.Reader, err error) {
	if max <= 0 {
		return nil, body, nil
	}
	buf := make([]byte, max+1)
	n, err := io.ReadFull(body, buf)
	switch {
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		return buf[:n:n], nil, nil
	case err != nil:
		return nil, nil, err
	}
	return nil, io.MultiReader(bytes.NewReader(buf[:n]), body), nil
}

// dropStage discards the leader's own staged bytes of a write that will
// not be proposed (the followers' copies expire).
func (n *Node) dropStage(stage uint64) {
	if stage == 0 {
		return
	}
	if st := n.stages.take(n.closing, stage, 0); st != nil {
		st.Discard()
	}
}

// UpdateObject changes an object's attributes through the log.
func (s *Store) UpdateObject(bucket, key string, fn func(*meta.Object) error) (*meta.Object, error) {
	unlock := s.lockKey(bucket, key)
	defer unlock()
	cur, err := s.current(bucket, key)
	if err != nil {
		return nil, err
	}
	if cur == nil {
		return nil, objstore.ErrNoSuchKey
	}
	if err := fn(cur); err != nil {
		return nil, err
	}
	rec := *cur
	rec.Extents, rec.Inline = nil, nil // the apply keeps each replica's own
	if _, err := s.node.propose(&command{Op: opUpdateObject, Object: &rec}); err != nil {
		return nil, err
	}
	return cur, nil
}

// CreateBucket creates a bucket through the log.
func (s *Store) CreateBucket(b *meta.Bucket) (*meta.Bucket, error) {
	unlock := s.lockBucket(b.Name)
	defer unlock()
	if cur, err := s.GetBucket(b.Name); err == nil {
		// A retry of a create whose wait for the other groups timed out
		// waits for them as well.
		if err := s.node.awaitCatalog(s.node.closing, s.node.catalogVersion()); err != nil {
			return nil, err
		}
		return cur, objstore.ErrBucketExists
	}
	if b.Created.IsZero() {
		b.Created = time.Now().UTC()
	}
	if err := s.catalogWrite(); err != nil {
		return nil, err
	}
	if _, err := s.node.propose(&command{Op: opCreateBucket, Bucket: b}); err != nil {
		if errors.Is(err, objstore.ErrBucketExists) {
			cur, _ := s.GetBucket(b.Name)
			return cur, err
		}
		return nil, err
	}
	return b, s.node.awaitCatalog(s.node.closing, s.node.catalogVersion())
}

// catalogWrite refuses a bucket change on a group other than the first:
// buckets are the first group's (catalog.go), and a request reaches
// another group's leader only on a stale map.
func (s *Store) catalogWrite() error {
	if s.node.firstGroup() {
		return nil
	}
	return errWrongGroup
}

// DeleteBucket removes an empty bucket through the log: empty in every
// group.
func (s *Store) DeleteBucket(name string) error {
	unlock := s.lockBucket(name)
	defer unlock()
	if err := s.catalogWrite(); err != nil {
		return err
	}
	if m := s.node.cmap.load(); m != nil && len(m.Groups) > 1 {
		return s.deleteBucketEverywhere(name)
	}
	// One group: the delete's apply checks that the bucket is empty, in
	// the log's order with every write.
	if _, err := s.node.propose(&command{Op: opDeleteBucket, Name: name}); err != nil {
		return err
	}
	return s.node.awaitCatalog(s.node.closing, s.node.catalogVersion())
}

// UpdateBucket changes a bucket's settings through the log.
func (s *Store) UpdateBucket(name string, fn func(*meta.Bucket) error) error {
	unlock := s.lockBucket(name)
	defer unlock()
	return s.updateBucketLocked(name, fn)
}

// updateBucketLocked is UpdateBucket under the bucket's lock.
func (s *Store) updateBucketLocked(name string, fn func(*meta.Bucket) error) error {
	cur, err := s.GetBucket(name)
	if err != nil {
		return err
	}
	b := *cur
	if err := fn(&b); err != nil {
		return err
	}
	if err := s.catalogWrite(); err != nil {
		return err
	}
	if _, err = s.node.propose(&command{Op: opPutBucket, Bucket: &b}); err != nil {
		return err
	}
	return s.node.awaitCatalog(s.node.closing, s.node.catalogVersion())
}

// SetBucketLifecycle validates and stores a lifecycle document.
func (s *Store) SetBucketLifecycle(bucket string, doc []byte) error {
	if doc != nil {
		if _, err := lifecycle.Parse(doc); err != nil {
			return err
		}
	}
	return s.UpdateBucket(bucket, func(b *meta.Bucket) error { b.Lifecycle = doc; return nil })
}

// CreateUpload starts a multipart upload through the log.
func (s *Store) CreateUpload(up *meta.Upload) (*meta.Upload, error) {
	if _, err := s.GetBucket(up.Bucket); err != nil {
		return nil, err
	}
	version, err := s.node.nextID()
	if err != nil {
		return nil, err
	}
	up.Version = version
	if up.UploadID == "" {
		up.UploadID = meta.NewUploadID(version)
	}
	if up.Initiated.IsZero() {
		up.Initiated = time.Now().UTC()
	}
	if _, err := s.node.propose(&command{Op: opCreateUpload, Upload: up}); err != nil {
		return nil, err
	}
	return up, nil
}

// PutPart stores one part: staged and pushed like an object's bytes, then
// installed through the log.
func (s *Store) PutPart(ctx context.Context, bucket, key, uploadID string, number int, body io.Reader, finish func(*meta.Part) error) (*meta.Part, error) {
	up, err := s.GetUpload(bucket, key, uploadID)
	if err != nil {
		return nil, err
	}
	part := &meta.Part{UploadID: uploadID, Number: number, Modified: time.Now().UTC()}
	stage, _, err := s.stageAndPush(ctx, bucket, key, up.Version, body, func(size int64) error {
		part.Size = size
		if finish != nil {
			return finish(part)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if _, err := s.node.propose(&command{Op: opPutPart, Name: bucket, Key: key, Version: up.Version, Part: part, Stage: stage, Encrypted: up.SSE != nil}); err != nil {
		return nil, err
	}
	return part, nil
}

// CompleteUpload turns an upload into an object through the log: the
// leader builds the record from the parts it holds; every replica then
// joins its own copies of the parts.
func (s *Store) CompleteUpload(bucket, key, uploadID string, numbers []int, build objstore.CompleteFunc, precondition func(*meta.Object) error) (*meta.Object, error) {
	if _, err := s.GetBucket(bucket); err != nil {
		return nil, err
	}
	unlock := s.lockKey(bucket, key)
	defer unlock()
	up, err := s.GetUpload(bucket, key, uploadID)
	if err != nil {
		return nil, err
	}
	chosen := make([]*meta.Part, len(numbers))
	for i, num := range numbers {
		p, err := s.Meta().GetPart(uploadID, num)
		switch {
		case err == nil:
			chosen[i] = p
		case !errors.Is(err, meta.ErrNotFound):
			return nil, err
		}
	}
	obj, err := build(up, chosen)
	if err != nil {
		return nil, err
	}
	obj.Bucket, obj.Key, obj.Version = bucket, key, up.Version
	obj.Extents, obj.Inline = nil, nil
	if obj.Modified.IsZero() {
		obj.Modified = time.Now().UTC()
	}
	if precondition != nil {
		cur, err := s.current(bucket, key)
		if err == nil {
			err = precondition(cur)
		}
		if err != nil {
			return nil, err
		}
	}
	return s.node.propose(&command{Op: opComplete, Object: obj, UploadID: uploadID, Numbers: numbers})
}

// AbortUpload drops an upload through the log.
func (s *Store) AbortUpload(bucket, key, uploadID string) error {
	unlock := s.lockKey(bucket, key)
	defer unlock()
	_, err := s.node.propose(&command{Op: opAbort, Name: bucket, Key: key, UploadID: uploadID})
	return err
}
