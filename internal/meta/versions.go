package meta

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
)

// Versions of versioned buckets.
//
// A key's current version stays where every object lives, "o" bucket 0x00
// key, so reads, writes and listings of current objects cost what they
// cost in a bucket that never had versions. Every other version (noncurrent
// versions and every delete marker) is a record of the "v" table:
//
//	"v" bucket 0x00 escaped(key) 0x00 0x01 ^version(u64 big-endian)
//
// escaped(key) is the key with each 0x00 written 0x00 0xFF; with the
// terminator 0x00 0x01 it orders keys exactly as their bytes do (a key
// that is a prefix of another comes first), whatever bytes they hold, and
// the inverted version orders one key's versions newest first. A listing
// of versions therefore merges two ordered scans ("o" and "v") by key, and
// the versions of one key are its "o" record (if any) followed by its "v"
// records.
//
// Invariant (kept by objstore): the "o" record, when present, is the key's
// latest version — the one installed last — and is never a delete marker;
// when it is absent the newest "v" record, if any, is a delete marker (the
// key's latest version). Its version is usually the key's largest, but not
// always: a version is allocated before the bytes are written and the
// record installed after, so of two writes to one key that overlap in time
// the later installed may carry the smaller number (and a completed
// multipart upload carries the number of its creation). The "v" table
// orders the noncurrent versions by number; listings put the current
// record first whatever its number.

// versionPrefix is the common prefix of every version key of bucket.
func versionPrefix(bucket string) []byte {
	k := make([]byte, 0, 2+len(bucket)+64)
	k = append(k, tableVersion)
	k = append(k, bucket...)
	return append(k, 0)
}

// escapeKey appends key to k with each 0x00 written 0x00 0xFF.
func escapeKey(k []byte, key string) []byte {
	for i := 0; i < len(key); i++ {
		k = append(k, key[i])
		if key[i] == 0 {
			k = append(k, 0xFF)
		}
	}
	return k
}

// versionKeyPrefix is the prefix of every version key of bucket/key (and
// of no other key).
func versionKeyPrefix(bucket, key string) []byte {
	return append(escapeKey(versionPrefix(bucket), key), 0, 1)
}

func noncurrentKey(bucket, key string, version uint64) []byte {
	return binary.BigEndian.AppendUint64(versionKeyPrefix(bucket, key), ^version)
}

// parseVersionSuffix splits what follows a bucket's version prefix into
// object key and version.
func parseVersionSuffix(rest []byte) (key string, version uint64, ok bool) {
	if len(rest) < 10 || rest[len(rest)-10] != 0 || rest[len(rest)-9] != 1 {
		return "", 0, false
	}
	version = ^binary.BigEndian.Uint64(rest[len(rest)-8:])
	esc := rest[:len(rest)-10]
	out := make([]byte, 0, len(esc))
	for i := 0; i < len(esc); i++ {
		out = append(out, esc[i])
		if esc[i] == 0 {
			if i+1 >= len(esc) || esc[i+1] != 0xFF {
				return "", 0, false
			}
			i++
		}
	}
	return string(out), version, true
}

// PutVersion stores o as a noncurrent version (or delete marker) of its
// key, under o.Version.
func (b *Batch) PutVersion(o *Object) {
	if !validBucketName(o.Bucket) {
		b.fail(fmt.Errorf("put version %q/%q: invalid bucket name", o.Bucket, o.Key))
		return
	}
	if o.payloadOmitted {
		b.fail(fmt.Errorf("put version %q/%q: the record was listed without its inline payload", o.Bucket, o.Key))
		return
	}
	b.set(noncurrentKey(o.Bucket, o.Key, o.Version), encodeObject(o))
}

// DeleteVersion removes version of bucket/key from the version table.
func (b *Batch) DeleteVersion(bucket, key string, version uint64) {
	b.del(noncurrentKey(bucket, key, version))
}

// GetVersion returns the record of bucket/key's version from the version
// table (not the current "o" record), or ErrNotFound.
func (db *DB) GetVersion(bucket, key string, version uint64) (*Object, error) {
	return getVersion(db.pdb, bucket, key, version)
}

// GetVersion is DB.GetVersion as of the view.
func (v *View) GetVersion(bucket, key string, version uint64) (*Object, error) {
	return getVersion(v.snap, bucket, key, version)
}

func getVersion(r pebble.Reader, bucket, key string, version uint64) (*Object, error) {
	var o *Object
	err := getFrom(r, noncurrentKey(bucket, key, version), func(v []byte) (err error) {
		o, err = decodeObject(bucket, key, v, true)
		if err == nil {
			o.Version = version
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("get version %q/%q %d: %w", bucket, key, version, err)
	}
	return o, nil
}

// KeyVersions calls fn for each record of bucket/key in the version table,
// newest first, with its inline payload, until fn returns false or an
// error. It reads one snapshot. Its cost is the number of versions read.
func (db *DB) KeyVersions(bucket, key string, fn func(*Object) (bool, error)) error {
	return keyVersions(db.pdb, bucket, key, fn)
}

// KeyVersions is DB.KeyVersions as of the view.
func (v *View) KeyVersions(bucket, key string, fn func(*Object) (bool, error)) error {
	return keyVersions(v.snap, bucket, key, fn)
}

func keyVersions(r pebble.Reader, bucket, key string, fn func(*Object) (bool, error)) error {
	prefix := versionKeyPrefix(bucket, key)
	it, err := r.NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: successor(prefix)})
	if err != nil {
		return fmt.Errorf("versions of %q/%q: %w", bucket, key, err)
	}
	for valid := it.First(); valid; valid = it.Next() {
		v, err := it.ValueAndErr()
		var o *Object
		if err == nil {
			o, err = decodeObject(bucket, key, v, true)
		}
		more := false
		if err == nil {
			o.Version = ^binary.BigEndian.Uint64(it.Key()[len(prefix):])
			more, err = fn(o)
		}
		if err != nil || !more {
			_ = it.Close()
			return err
		}
	}
	return it.Close()
}

// VersionListOptions selects a page of ListVersions, with S3's meanings.
type VersionListOptions struct {
	Prefix, Delimiter string
	// KeyMarker alone: list keys after it. With VersionMarker (not 0): list
	// the versions of KeyMarker older than VersionMarker, then later keys.
	KeyMarker     string
	VersionMarker uint64
	// MaxKeys as in ListOptions: versions plus common prefixes.
	MaxKeys int
	// Keep as in ListOptions.
	Keep func(key string) bool `json:"-"`
}

// VersionListResult is one page of ListVersions. Versions are in key
// order, each key's newest first, delete markers among them; IsLatest is
// set on each key's latest version.
type VersionListResult struct {
	Versions       []*Object
	CommonPrefixes []string
	IsTruncated    bool
	// When IsTruncated: the position to pass as KeyMarker and
	// VersionMarker (0 when the page ended on a common prefix).
	NextKeyMarker     string
	NextVersionMarker uint64
}

// versionCursor walks one of the two tables of a listing.
type versionCursor struct {
	it      *pebble.Iterator
	base    []byte
	valid   bool
	key     string
	version uint64 // of a "v" record; 0 for "o"
	table   byte
}

func (c *versionCursor) load(valid bool) error {
	c.valid = valid
	if !valid {
		return nil
	}
	rest := c.it.Key()[len(c.base):]
	if c.table == tableObject {
		c.key = string(rest)
		return nil
	}
	key, version, ok := parseVersionSuffix(rest)
	if !ok {
		return fmt.Errorf("%w: version key %q", ErrCorrupt, c.it.Key())
	}
	c.key, c.version = key, version
	return nil
}

func (c *versionCursor) record(bucket string) (*Object, error) {
	v, err := c.it.ValueAndErr()
	if err != nil {
		return nil, err
	}
	o, err := decodeObject(bucket, c.key, v, false)
	if err != nil {
		return nil, err
	}
	if c.table == tableVersion {
		o.Version = c.version
	}
	return o, nil
}

// ListVersions returns one page of bucket's versions with S3's
// ListObjectVersions semantics. It merges the "o" and "v" tables by key;
// as ListObjects, its cost is O(page): a common prefix is skipped by one
// seek in each table, and only returned versions are decoded.
func (db *DB) ListVersions(bucket string, o VersionListOptions) (*VersionListResult, error) {
	res := &VersionListResult{}
	limit := clampMax(o.MaxKeys)
	if limit == 0 {
		return res, nil
	}
	snap := db.pdb.NewSnapshot()
	defer snap.Close()
	obase, vbase := objectPrefix(bucket), versionPrefix(bucket)
	olower := append(bytes.Clone(obase), o.Prefix...)
	vlower := escapeKey(bytes.Clone(vbase), o.Prefix)
	cur := [2]*versionCursor{
		{base: obase, table: tableObject},
		{base: vbase, table: tableVersion},
	}
	bounds := [2][]byte{olower, vlower}
	for i, c := range cur {
		it, err := snap.NewIter(&pebble.IterOptions{LowerBound: bounds[i], UpperBound: successor(bounds[i])})
		if err != nil {
			return nil, fmt.Errorf("list versions %q: %w", bucket, err)
		}
		c.it = it
		defer it.Close()
	}
	// Starting points.
	ostart, vstart := olower, vlower
	if o.KeyMarker != "" {
		if o.VersionMarker == 0 {
			ostart = maxKey(ostart, append(append(bytes.Clone(obase), o.KeyMarker...), 0))
			vstart = maxKey(vstart, successor(versionKeyPrefix(bucket, o.KeyMarker)))
		} else {
			ostart = maxKey(ostart, append(bytes.Clone(obase), o.KeyMarker...))
			// Versions of the marker's key listed after the marker: those
			// older than it (inverted versions above the marker's) or, when
			// the marker is the current record, all of the key's others: a
			// current record may be numbered below a noncurrent one (see
			// the invariant above).
			after := binary.BigEndian.AppendUint64(versionKeyPrefix(bucket, o.KeyMarker), ^o.VersionMarker+1)
			if cur, err := getObject(snap, bucket, o.KeyMarker); err == nil && cur.Version == o.VersionMarker {
				after = versionKeyPrefix(bucket, o.KeyMarker)
			} else if err != nil && !errors.Is(err, ErrNotFound) {
				return nil, err
			}
			vstart = maxKey(vstart, after)
		}
	}
	if err := cur[0].load(cur[0].it.SeekGE(ostart)); err != nil {
		return nil, err
	}
	if err := cur[1].load(cur[1].it.SeekGE(vstart)); err != nil {
		return nil, err
	}
	delim := o.Delimiter
	count := 0
	var lastKey string
	var lastVersion uint64
scan:
	for cur[0].valid || cur[1].valid {
		key := cur[1].key
		if !cur[1].valid || (cur[0].valid && cur[0].key <= cur[1].key) {
			key = cur[0].key
		}
		if o.Keep != nil && !o.Keep(key) {
			for _, c := range cur {
				for c.valid && c.key == key {
					if err := c.load(c.it.Next()); err != nil {
						return nil, err
					}
				}
			}
			continue
		}
		if delim != "" {
			if i := indexAfter(key, o.Prefix, delim); i >= 0 {
				cp := key[:i]
				if cp > o.KeyMarker {
					if count == limit {
						res.IsTruncated = true
						break scan
					}
					res.CommonPrefixes = append(res.CommonPrefixes, cp)
					count++
					lastKey, lastVersion = cp, 0
				}
				if err := cur[0].load(cur[0].it.SeekGE(successor(append(bytes.Clone(obase), cp...)))); err != nil {
					return nil, err
				}
				if err := cur[1].load(cur[1].it.SeekGE(successor(escapeKey(bytes.Clone(vbase), cp)))); err != nil {
					return nil, err
				}
				continue
			}
		}
		latest := true
		for _, c := range cur {
			for c.valid && c.key == key {
				if c.table == tableObject && o.VersionMarker != 0 && key == o.KeyMarker {
					// The current record is the newest: listed before any
					// marker inside the key, so never after one.
					if err := c.load(c.it.Next()); err != nil {
						return nil, err
					}
					latest = false
					continue
				}
				if count == limit {
					res.IsTruncated = true
					break scan
				}
				rec, err := c.record(bucket)
				if err != nil {
					return nil, fmt.Errorf("list versions %q: %w", bucket, err)
				}
				if key == o.KeyMarker && o.VersionMarker != 0 {
					latest = false
				}
				rec.IsLatest = latest
				latest = false
				res.Versions = append(res.Versions, rec)
				count++
				lastKey, lastVersion = key, rec.Version
				if err := c.load(c.it.Next()); err != nil {
					return nil, err
				}
			}
		}
	}
	if res.IsTruncated {
		res.NextKeyMarker, res.NextVersionMarker = lastKey, lastVersion
	}
	return res, nil
}

func maxKey(a, b []byte) []byte {
	if bytes.Compare(a, b) >= 0 {
		return a
	}
	return b
}

// indexAfter returns the length of key's common prefix under prefix and
// delimiter (through the first delimiter after prefix), or -1.
func indexAfter(key, prefix, delim string) int {
	if len(key) < len(prefix) {
		return -1
	}
	if i := bytes.Index([]byte(key[len(prefix):]), []byte(delim)); i >= 0 {
		return len(prefix) + i + len(delim)
	}
	return -1
}

// ScanVersions calls fn for every record of bucket's version table, in
// key order and each key's newest first, with ScanObjects' snapshot and
// error rules (for the lifecycle sweeper).
func (db *DB) ScanVersions(bucket string, fn func(*Object) error) error {
	base := versionPrefix(bucket)
	var fromFn bool
	err := db.scan(base, func(k, v []byte) error {
		key, version, ok := parseVersionSuffix(k[len(base):])
		if !ok {
			return fmt.Errorf("%w: version key %q", ErrCorrupt, k)
		}
		o, err := decodeObject(bucket, key, v, false)
		if err != nil {
			return err
		}
		o.Version = version
		return callFn(&fromFn, fn, o)
	})
	if err != nil && !fromFn {
		return fmt.Errorf("scan versions %q: %w", bucket, err)
	}
	return err
}

// ScanVersions calls fn for every record of every bucket's version table
// as of the view, inline payloads included, in key order: by bucket, then
// by the bytes of the key, each key's newest first (a snapshot of a
// replica's state).
func (v *View) ScanVersions(fn func(*Object) error) error {
	return scanReader(v.snap, []byte{tableVersion}, func(k, val []byte) error {
		bucket, rest, ok := bytes.Cut(k[1:], []byte{0})
		if !ok {
			return fmt.Errorf("%w: version key %q", ErrCorrupt, k)
		}
		key, version, ok := parseVersionSuffix(rest)
		if !ok {
			return fmt.Errorf("%w: version key %q", ErrCorrupt, k)
		}
		o, err := decodeObject(string(bucket), key, val, true)
		if err != nil {
			return err
		}
		o.Version = version
		return fn(o)
	})
}
