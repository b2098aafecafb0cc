package meta

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
)

// View is a consistent point-in-time view of the index: every read through
// it sees exactly the batches committed before NewView, none committed
// after. A decision that combines several reads ("no record references
// this") must be made on one View, or a batch committed between two reads
// (a part handed to its object) can hide the record from both.
//
// A View pins pebble's files until Close; keep it for one decision.
type View struct {
	snap *pebble.Snapshot
}

// NewView opens a view of the index as of now.
func (db *DB) NewView() *View {
	return &View{snap: db.pdb.NewSnapshot()}
}

// Close releases the view.
func (v *View) Close() error {
	if err := v.snap.Close(); err != nil {
		return fmt.Errorf("close meta view: %w", err)
	}
	return nil
}

// GetObject is DB.GetObject as of the view.
func (v *View) GetObject(bucket, key string) (*Object, error) {
	return getObject(v.snap, bucket, key)
}

// UploadOf returns the upload of bucket/key that reserved version, or
// ErrNotFound. It relies on upload IDs beginning with their version (as
// NewUploadID makes them): one seek finds it, whatever the number of other
// uploads of the key or of keys sharing its bytes.
func (v *View) UploadOf(bucket, key string, version uint64) (*Upload, error) {
	var ver [8]byte
	binary.BigEndian.PutUint64(ver[:], version)
	base := uploadPrefix(bucket)
	// The exact key, its separator and the version: keys that merely begin
	// with key (key+0x00+..., which pebble orders among key's own
	// uploads) differ before the version digits.
	prefix := append(append(append(bytes.Clone(base), key...), 0), hex.EncodeToString(ver[:])...)
	it, err := v.snap.NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: successor(prefix)})
	if err != nil {
		return nil, fmt.Errorf("upload of %q/%q version %d: %w", bucket, key, version, err)
	}
	var found *Upload
	for valid := it.First(); valid && found == nil; valid = it.Next() {
		k, id, ok := parseUploadSuffix(it.Key()[len(base):])
		if !ok || k != key {
			continue
		}
		val, err := it.ValueAndErr()
		var u *Upload
		if err == nil {
			u, err = decodeUpload(bucket, k, id, val)
		}
		if err != nil {
			_ = it.Close()
			return nil, fmt.Errorf("upload of %q/%q version %d: %w", bucket, key, version, err)
		}
		if u.Version == version {
			found = u
		}
	}
	if err := it.Close(); err != nil {
		return nil, fmt.Errorf("upload of %q/%q version %d: %w", bucket, key, version, err)
	}
	if found == nil {
		return nil, fmt.Errorf("upload of %q/%q version %d: %w", bucket, key, version, ErrNotFound)
	}
	return found, nil
}

// AllParts is DB.AllParts as of the view.
func (v *View) AllParts(uploadID string) ([]*Part, error) {
	if !ValidUploadID(uploadID) {
		return nil, fmt.Errorf("all parts %q: malformed ID: %w", uploadID, ErrNotFound)
	}
	parts, _, err := listParts(v.snap, uploadID, 0, MaxPartNumber)
	return parts, err
}

// Applied is DB.Applied as of the view.
func (v *View) Applied() (uint64, error) { return appliedFrom(v.snap) }

// ScanBuckets calls fn for every bucket as of the view, ordered by name.
func (v *View) ScanBuckets(fn func(*Bucket) error) error {
	return scanReader(v.snap, []byte{tableBucket}, func(k, val []byte) error {
		b, err := decodeBucket(string(k[1:]), val)
		if err != nil {
			return err
		}
		return fn(b)
	})
}

// ScanObjects calls fn for every object record as of the view, inline
// payloads included, in key order: by bucket, then by the bytes of the
// key (bucket names hold no 0x00, so this is also the order of Go's string
// comparison of (bucket, key)).
func (v *View) ScanObjects(fn func(*Object) error) error {
	return scanReader(v.snap, []byte{tableObject}, func(k, val []byte) error {
		b, key, ok := bytes.Cut(k[1:], []byte{0})
		if !ok {
			return fmt.Errorf("%w: object key %q", ErrCorrupt, k)
		}
		o, err := decodeObject(string(b), string(key), val, true)
		if err != nil {
			return err
		}
		return fn(o)
	})
}

// ScanUploads calls fn for every multipart upload as of the view.
func (v *View) ScanUploads(fn func(*Upload) error) error {
	return scanReader(v.snap, []byte{tableUpload}, func(k, val []byte) error {
		u, err := decodeUploadKV(k, val)
		if err != nil {
			return err
		}
		return fn(u)
	})
}

// ScanParts calls fn for every part of every upload as of the view,
// ordered by upload ID, then part number.
func (v *View) ScanParts(fn func(*Part) error) error {
	return scanReader(v.snap, []byte{tablePart}, func(k, val []byte) error {
		if len(k) != 1+UploadIDLen+2 {
			return fmt.Errorf("%w: part key %q", ErrCorrupt, k)
		}
		p, err := decodePart(string(k[1:1+UploadIDLen]), int(k[1+UploadIDLen])<<8|int(k[2+UploadIDLen]), val)
		if err != nil {
			return err
		}
		return fn(p)
	})
}
