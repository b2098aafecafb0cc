package meta

import (
	"fmt"

	"github.com/cockroachdb/pebble/v2"
)

// Batch collects writes that commit atomically: all or nothing, also
// across a crash. It is not safe for concurrent use; build one per
// operation. The first invalid write (a bucket name with 0x00, a malformed
// upload ID, a part number out of range) poisons the batch: Commit then
// returns that error and writes nothing.
//
// Writes are not visible to reads until Commit. Always Close a batch, also
// after Commit.
type Batch struct {
	db  *DB
	b   *pebble.Batch
	err error
	// stamped: SetApplied or Unsynced was called; Commit then does not
	// wait for a sync (see SetApplied).
	stamped bool
}

// NewBatch starts an empty batch.
func (db *DB) NewBatch() *Batch {
	return &Batch{db: db, b: db.pdb.NewBatch()}
}

func (b *Batch) fail(err error) {
	if b.err == nil {
		b.err = err
	}
}

// set and friends record pebble errors; pebble batch writes fail only on
// a closed or read-only batch, which is a caller bug worth reporting at
// Commit rather than a panic.
func (b *Batch) set(k, v []byte) { b.note(b.b.Set(k, v, nil)) }
func (b *Batch) del(k []byte)    { b.note(b.b.Delete(k, nil)) }
func (b *Batch) note(err error) {
	if err != nil {
		b.fail(fmt.Errorf("meta batch: %w", err))
	}
}

// PutBucket creates or replaces a bucket record.
func (b *Batch) PutBucket(bk *Bucket) {
	if !validBucketName(bk.Name) {
		b.fail(fmt.Errorf("put bucket %q: invalid name", bk.Name))
		return
	}
	b.set(bucketKey(bk.Name), encodeBucket(bk))
}

// DeleteBucket removes a bucket record. It does not check that the bucket
// is empty (see DB.BucketEmpty).
func (b *Batch) DeleteBucket(name string) {
	b.del(bucketKey(name))
}

// PutObject creates or replaces the record of o.Bucket/o.Key.
func (b *Batch) PutObject(o *Object) {
	if !validBucketName(o.Bucket) {
		b.fail(fmt.Errorf("put object %q/%q: invalid bucket name", o.Bucket, o.Key))
		return
	}
	if o.payloadOmitted {
		b.fail(fmt.Errorf("put object %q/%q: the record was listed without its inline payload; write one read by GetObject", o.Bucket, o.Key))
		return
	}
	b.set(objectKey(o.Bucket, o.Key), encodeObject(o))
}

// DeleteObject removes the record of bucket/key, if any.
func (b *Batch) DeleteObject(bucket, key string) {
	b.del(objectKey(bucket, key))
}

// PutUpload creates or replaces a multipart upload record.
func (b *Batch) PutUpload(u *Upload) {
	if !validBucketName(u.Bucket) || !ValidUploadID(u.UploadID) {
		b.fail(fmt.Errorf("put upload %q/%q %q: invalid bucket name or upload ID", u.Bucket, u.Key, u.UploadID))
		return
	}
	b.set(uploadKey(u.Bucket, u.Key, u.UploadID), encodeUpload(u))
}

// DeleteUpload removes an upload record and all of its parts (one range
// tombstone, whatever the number of parts).
func (b *Batch) DeleteUpload(bucket, key, uploadID string) {
	if !ValidUploadID(uploadID) {
		b.fail(fmt.Errorf("delete upload %q: malformed ID", uploadID))
		return
	}
	b.del(uploadKey(bucket, key, uploadID))
	prefix := partPrefix(uploadID)
	b.note(b.b.DeleteRange(prefix, successor(prefix), nil))
}

// PutPart creates or replaces part p.Number of upload p.UploadID.
func (b *Batch) PutPart(p *Part) {
	if !ValidUploadID(p.UploadID) || p.Number < 1 || p.Number > MaxPartNumber {
		b.fail(fmt.Errorf("put part %q #%d: invalid upload ID or part number", p.UploadID, p.Number))
		return
	}
	b.set(partKey(p.UploadID, p.Number), encodePart(p))
}

// AddDead adds bytes (negative to subtract) to segment's dead-byte counter.
func (b *Batch) AddDead(segment uint64, bytes int64) {
	b.note(b.b.Merge(segmentKey(segment), encodeCounter(bytes), nil))
}

// DeleteSegmentCounter drops segment's counter, once vacuum removed the
// segment. A later AddDead starts again from zero.
func (b *Batch) DeleteSegmentCounter(segment uint64) {
	b.del(segmentKey(segment))
}

// Unsynced makes Commit not wait for a sync, as a stamped batch does,
// without stamping it: for a caller that redoes the whole series of
// batches after a crash (a replica restoring a snapshot stamps only its
// last batch, synced).
func (b *Batch) Unsynced() { b.stamped = true }

// Commit applies the batch atomically; with Options.Sync it returns after
// the batch is durable. After a failed Commit nothing of the batch was
// applied (pebble applies a batch whole or not at all).
func (b *Batch) Commit() error {
	write := b.db.write
	if b.stamped {
		write = pebble.NoSync
	}
	return b.commit(write)
}

// CommitSync is Commit, durable on return whatever Options.Sync says: the
// WAL is fsynced, and with it every batch committed before. Writes that
// must never be lost, not even under a "none" policy (vacuum moving old
// objects), commit this way.
func (b *Batch) CommitSync() error {
	return b.commit(pebble.Sync)
}

func (b *Batch) commit(opts *pebble.WriteOptions) error {
	if b.err != nil {
		return b.err
	}
	if err := b.b.Commit(opts); err != nil {
		return fmt.Errorf("commit meta batch: %w", err)
	}
	return nil
}

// Close releases the batch; an uncommitted batch is discarded.
func (b *Batch) Close() {
	_ = b.b.Close()
}
