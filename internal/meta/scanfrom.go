package meta

import (
	"bytes"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
)

// ScanRecordsAfter calls fn for every object record as of the view, the
// current ones ("o" table) then the noncurrent versions and delete markers
// ("v" table), whose encoded key sorts after after (nil: from the first),
// in that order, inline payloads included. pos is the record's encoded
// key: opaque, and what a later scan resumes after, so that a background
// pass (the scrub) can stop at any record, release its view and go on from
// there with another, even after a restart. An error from fn stops the
// scan and is returned as is.
func (v *View) ScanRecordsAfter(after []byte, fn func(pos []byte, o *Object) error) error {
	for _, table := range []byte{tableObject, tableVersion} {
		lower := []byte{table}
		if bytes.Compare(after, lower) > 0 {
			lower = bytes.Clone(after)
		}
		upper := []byte{table + 1}
		if bytes.Compare(lower, upper) >= 0 {
			continue
		}
		if err := scanRange(v.snap, lower, upper, func(k, val []byte) error {
			if bytes.Equal(k, after) {
				return nil
			}
			o, err := decodeRecordKV(table, k, val)
			if err != nil {
				return err
			}
			return fn(bytes.Clone(k), o)
		}); err != nil {
			return err
		}
	}
	return nil
}

// decodeRecordKV decodes an object record of the "o" or "v" table from its
// full key and value.
func decodeRecordKV(table byte, k, val []byte) (*Object, error) {
	b, rest, ok := bytes.Cut(k[1:], []byte{0})
	if !ok {
		return nil, fmt.Errorf("%w: record key %q", ErrCorrupt, k)
	}
	if table == tableObject {
		return decodeObject(string(b), string(rest), val, true)
	}
	key, version, ok := parseVersionSuffix(rest)
	if !ok {
		return nil, fmt.Errorf("%w: version key %q", ErrCorrupt, k)
	}
	o, err := decodeObject(string(b), key, val, true)
	if err == nil {
		o.Version = version
	}
	return o, err
}

// scanRange calls fn for every key in [lower, upper), in order, on one
// reader; k and v are valid only during the call.
func scanRange(r pebble.Reader, lower, upper []byte, fn func(k, v []byte) error) error {
	it, err := r.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return err
	}
	for ok := it.First(); ok; ok = it.Next() {
		v, err := it.ValueAndErr()
		if err == nil {
			err = fn(it.Key(), v)
		}
		if err != nil {
			_ = it.Close()
			return err
		}
	}
	return it.Close()
}

// ReadAfter reads up to max keys of the whole index, with their values,
// that follow after (nil: from the first), on a view of its own, and
// returns the last key read, how many keys and how many bytes (keys and
// values). Reading makes pebble verify the checksum of every block it
// loads, so a pass of ReadAfter calls over the whole index finds any
// damaged block: its error wraps pebble's corruption error. A short
// count means the end. Each call takes a new view, so that a paced pass
// never holds pebble's files for long.
func (db *DB) ReadAfter(after []byte, max int) (last []byte, keys int, bytes int64, err error) {
	snap := db.pdb.NewSnapshot()
	defer snap.Close()
	var lower []byte
	if after != nil {
		lower = append(bytesClone(after), 0) // the smallest key after it
	}
	it, err := snap.NewIter(&pebble.IterOptions{LowerBound: lower})
	if err != nil {
		return nil, 0, 0, fmt.Errorf("read metadata: %w", err)
	}
	for ok := it.First(); ok && keys < max; ok = it.Next() {
		v, verr := it.ValueAndErr()
		if verr != nil {
			_ = it.Close()
			return last, keys, bytes, fmt.Errorf("read metadata at %q: %w", it.Key(), verr)
		}
		keys++
		bytes += int64(len(it.Key()) + len(v))
		last = append(last[:0], it.Key()...)
	}
	if err := it.Close(); err != nil {
		return last, keys, bytes, fmt.Errorf("read metadata after %q: %w", last, err)
	}
	return last, keys, bytes, nil
}

func bytesClone(b []byte) []byte { return append([]byte(nil), b...) }
