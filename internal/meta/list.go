package meta

import (
	"bytes"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
)

// DefaultMaxKeys is the page size when none is given, and the largest.
const DefaultMaxKeys = 1000

// ListOptions selects a page of ListObjects, with S3's meanings.
type ListOptions struct {
	Prefix     string // only keys starting with Prefix
	Delimiter  string // roll keys up into common prefixes at the first Delimiter after Prefix
	StartAfter string // only keys (and common prefixes) greater than StartAfter
	// MaxKeys bounds objects plus common prefixes in the page: 0 returns
	// an empty, untruncated page (as S3 does for max-keys=0), a negative
	// value means DefaultMaxKeys, and larger values are cut to it.
	MaxKeys int
	// Keep, if set, hides the keys it refuses: the listing is that of the
	// keys it keeps (a cluster's group lists the partitions it owns). A
	// hidden key costs a step of the iterator.
	Keep func(key string) bool `json:"-"`
}

// ListResult is one page of ListObjects.
type ListResult struct {
	Objects        []*Object
	CommonPrefixes []string
	IsTruncated    bool
	// NextMarker is the last key or common prefix in the page, set when
	// IsTruncated: passing it as StartAfter continues the listing exactly.
	NextMarker string
}

// testHookListStats, set by tests, receives the iterator statistics of each
// ListObjects call: the proof that a page costs O(page) internal steps.
var testHookListStats func(pebble.IteratorStats)

func clampMax(n int) int {
	if n < 0 || n > DefaultMaxKeys {
		return DefaultMaxKeys
	}
	return n
}

// ListObjects returns one page of bucket's objects in key order, with S3's
// ListObjects/ListObjectsV2 semantics.
//
// Cost is O(page): the iterator is bounded to the prefix; when a key rolls
// up into a common prefix, the iterator seeks past every key sharing that
// common prefix (to its successor) instead of stepping through them, and
// only returned objects have their values read and decoded.
//
// A common prefix is returned only if it is greater than StartAfter, so a
// NextMarker that is a common prefix skips that whole prefix on the next
// page. Every key greater than StartAfter is returned or rolled up.
func (db *DB) ListObjects(bucket string, o ListOptions) (*ListResult, error) {
	res := &ListResult{}
	limit := clampMax(o.MaxKeys)
	if limit == 0 {
		return res, nil
	}
	base := objectPrefix(bucket)
	lower := append(bytes.Clone(base), o.Prefix...)
	it, err := db.pdb.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: successor(lower)})
	if err != nil {
		return nil, fmt.Errorf("list objects %q: %w", bucket, err)
	}
	start := lower
	if o.StartAfter != "" {
		// The least key greater than StartAfter is StartAfter+0x00.
		after := append(append(bytes.Clone(base), o.StartAfter...), 0)
		if bytes.Compare(after, start) > 0 {
			start = after
		}
	}
	delim := []byte(o.Delimiter)
	count := 0
	for valid := it.SeekGE(start); valid; {
		full := it.Key()
		key := full[len(base):]
		if o.Keep != nil && !o.Keep(string(key)) {
			valid = it.Next()
			continue
		}
		if len(delim) > 0 {
			if i := bytes.Index(key[len(o.Prefix):], delim); i >= 0 {
				cpLen := len(o.Prefix) + i + len(delim)
				if string(key[:cpLen]) > o.StartAfter {
					if count == limit {
						res.IsTruncated = true
						break
					}
					res.CommonPrefixes = append(res.CommonPrefixes, string(key[:cpLen]))
					count++
				}
				// Skip every key inside the common prefix with one seek.
				valid = it.SeekGE(successor(full[:len(base)+cpLen]))
				continue
			}
		}
		if count == limit {
			res.IsTruncated = true
			break
		}
		v, err := it.ValueAndErr()
		if err != nil {
			_ = it.Close()
			return nil, fmt.Errorf("list objects %q: %w", bucket, err)
		}
		obj, err := decodeObject(bucket, string(key), v, false)
		if err != nil {
			_ = it.Close()
			return nil, fmt.Errorf("list objects: %w", err)
		}
		res.Objects = append(res.Objects, obj)
		count++
		valid = it.Next()
	}
	if testHookListStats != nil {
		testHookListStats(it.Stats())
	}
	if err := it.Close(); err != nil {
		return nil, fmt.Errorf("list objects %q: %w", bucket, err)
	}
	if res.IsTruncated {
		res.NextMarker = lastListed(res)
	}
	return res, nil
}

// lastListed returns the greatest entry of a page: objects and common
// prefixes interleave in key order, so it is the larger of the two lasts.
func lastListed(res *ListResult) string {
	var last string
	if n := len(res.Objects); n > 0 {
		last = res.Objects[n-1].Key
	}
	if n := len(res.CommonPrefixes); n > 0 && res.CommonPrefixes[n-1] > last {
		last = res.CommonPrefixes[n-1]
	}
	return last
}

// BucketEmpty reports whether bucket has no objects and no versions
// (delete markers included). Multipart uploads in progress do not count:
// on AWS they do not keep a bucket from being deleted, they go with it.
func (db *DB) BucketEmpty(bucket string) (bool, error) {
	for _, prefix := range [][]byte{objectPrefix(bucket), versionPrefix(bucket)} {
		it, err := db.pdb.NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: successor(prefix)})
		if err != nil {
			return false, fmt.Errorf("bucket %q empty: %w", bucket, err)
		}
		found := it.First()
		if err := it.Close(); err != nil {
			return false, fmt.Errorf("bucket %q empty: %w", bucket, err)
		}
		if found {
			return false, nil
		}
	}
	return true, nil
}

// ScanObjects calls fn for every object of bucket whose key starts with
// prefix, in key order; bucket "" scans every bucket. It reads one
// snapshot: writes committed during the scan (fn may commit batches) are
// not seen. An error from fn stops the scan and is returned as is.
//
// The snapshot pins pebble's files for the length of the scan; it is meant
// for background passes (lifecycle, vacuum), not request paths.
func (db *DB) ScanObjects(bucket, prefix string, fn func(*Object) error) error {
	lower := []byte{tableObject}
	if bucket != "" {
		lower = append(objectPrefix(bucket), prefix...)
	}
	var fromFn bool
	err := db.scan(lower, func(k, v []byte) error {
		b, key, ok := bytes.Cut(k[1:], []byte{0})
		if !ok {
			return fmt.Errorf("%w: object key %q", ErrCorrupt, k)
		}
		if bucket == "" && !bytes.HasPrefix(key, []byte(prefix)) {
			return nil
		}
		o, err := decodeObject(string(b), string(key), v, false)
		if err != nil {
			return err
		}
		return callFn(&fromFn, fn, o)
	})
	if err != nil && !fromFn {
		return fmt.Errorf("scan objects %q: %w", bucket, err)
	}
	return err
}

// ScanUploads calls fn for every multipart upload of bucket (bucket "":
// of every bucket), with ScanObjects' snapshot and error rules.
func (db *DB) ScanUploads(bucket string, fn func(*Upload) error) error {
	lower := []byte{tableUpload}
	if bucket != "" {
		lower = uploadPrefix(bucket)
	}
	var fromFn bool
	err := db.scan(lower, func(k, v []byte) error {
		u, err := decodeUploadKV(k, v)
		if err != nil {
			return err
		}
		return callFn(&fromFn, fn, u)
	})
	if err != nil && !fromFn {
		return fmt.Errorf("scan uploads %q: %w", bucket, err)
	}
	return err
}

// ScanParts calls fn for every part of every upload (vacuum needs the
// extents parts hold), with ScanObjects' snapshot and error rules.
func (db *DB) ScanParts(fn func(*Part) error) error {
	var fromFn bool
	err := db.scan([]byte{tablePart}, func(k, v []byte) error {
		if len(k) != 1+UploadIDLen+2 {
			return fmt.Errorf("%w: part key %q", ErrCorrupt, k)
		}
		p, err := decodePart(string(k[1:1+UploadIDLen]), int(k[1+UploadIDLen])<<8|int(k[2+UploadIDLen]), v)
		if err != nil {
			return err
		}
		return callFn(&fromFn, fn, p)
	})
	if err != nil && !fromFn {
		return fmt.Errorf("scan parts: %w", err)
	}
	return err
}

// decodeUploadKV decodes an upload from its full pebble key and value.
func decodeUploadKV(k, v []byte) (*Upload, error) {
	b, rest, ok := bytes.Cut(k[1:], []byte{0})
	var key, id string
	if ok {
		key, id, ok = parseUploadSuffix(rest)
	}
	if !ok {
		return nil, fmt.Errorf("%w: upload key %q", ErrCorrupt, k)
	}
	return decodeUpload(string(b), key, id, v)
}

// callFn calls a scan's callback, noting whether an error came from it:
// such errors are the caller's own and are returned unwrapped.
func callFn[T any](fromFn *bool, fn func(T) error, v T) error {
	err := fn(v)
	*fromFn = err != nil
	return err
}
