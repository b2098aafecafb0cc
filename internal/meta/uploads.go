package meta

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/cockroachdb/pebble/v2"
)

// UploadListOptions selects a page of ListUploads, with the meanings of
// S3's ListMultipartUploads parameters.
type UploadListOptions struct {
	Prefix    string
	Delimiter string
	// KeyMarker alone: start after every upload of KeyMarker. With
	// UploadIDMarker: start after that one upload of KeyMarker.
	KeyMarker      string
	UploadIDMarker string
	MaxUploads     int // uploads plus common prefixes; <= 0 or > 1000 means 1000
	// Keep as in ListOptions.
	Keep func(key string) bool `json:"-"`
}

// UploadListResult is one page of ListUploads. When IsTruncated, the Next
// markers passed back as KeyMarker/UploadIDMarker continue the listing
// exactly (NextUploadIDMarker is "" when the page ended on a common prefix).
type UploadListResult struct {
	Uploads            []*Upload
	CommonPrefixes     []string
	IsTruncated        bool
	NextKeyMarker      string
	NextUploadIDMarker string
}

// ListUploads returns one page of bucket's multipart uploads ordered by key,
// then by creation (upload IDs begin with their version). Cost is O(page),
// as for ListObjects.
//
// The order is that of the pebble keys ("u" bucket 0x00 key 0x00 uploadID).
// For an object key containing 0x00 this can differ from (key, uploadID)
// order; paging with the Next markers still returns every upload and
// every common prefix exactly once, because pages resume at a key
// position, not at a filter (TestListUploadsPagesNULKeys).
//
// A common prefix containing 0x00 (from a delimiter or a prefix holding
// it) is ambiguous in that order: its encoded bytes can also begin the
// uploads of a shorter key ("a" 0x00 uploadID under common prefix
// "a" 0x00). Past such a prefix the listing steps instead of seeking, so
// as not to skip those uploads (a page then costs the uploads under the
// prefix, not O(1) for it), and it decides whether an earlier page
// listed the prefix by looking for one of its keys before the page's
// start, not by comparing strings. A page that ends on such a prefix
// resumes at its first key.
func (db *DB) ListUploads(bucket string, o UploadListOptions) (*UploadListResult, error) {
	limit := o.MaxUploads
	if limit <= 0 {
		limit = DefaultMaxKeys
	}
	limit = clampMax(limit)
	base := uploadPrefix(bucket)
	lower := append(bytes.Clone(base), o.Prefix...)
	start := lower
	skipMarkerKey := false
	if o.KeyMarker != "" {
		after := append(append(bytes.Clone(base), o.KeyMarker...), 0)
		if o.UploadIDMarker != "" {
			// Just past the marker upload's own key.
			after = append(append(after, o.UploadIDMarker...), 0)
		} else {
			skipMarkerKey = true
			if ambiguous(o.KeyMarker) {
				// The page before ended on this common prefix, listed at
				// its first key: resume there (uploads of shorter keys
				// that pebble puts before it were listed already).
				first, err := db.firstUnder(base, o.KeyMarker)
				if err != nil {
					return nil, fmt.Errorf("list uploads %q: %w", bucket, err)
				}
				if first != nil && bytes.Compare(first, after) > 0 {
					after = first
				}
			}
		}
		if bytes.Compare(after, start) > 0 {
			start = after
		}
	}
	it, err := db.pdb.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: successor(lower)})
	if err != nil {
		return nil, fmt.Errorf("list uploads %q: %w", bucket, err)
	}
	res := &UploadListResult{}
	count := 0
	var stepping []byte // base+cp of an ambiguous common prefix being stepped over
	var steppingCP string
	for valid := it.SeekGE(start); valid; {
		full := it.Key()
		if stepping != nil && !bytes.HasPrefix(full, stepping) {
			stepping = nil
		}
		key, id, ok := parseUploadSuffix(full[len(base):])
		if !ok {
			_ = it.Close()
			return nil, fmt.Errorf("list uploads: %w: upload key %q", ErrCorrupt, full)
		}
		if !strings.HasPrefix(key, o.Prefix) || stepping != nil && strings.HasPrefix(key, steppingCP) {
			// A Prefix containing 0x00 can match the key separator of a
			// shorter key ("a" 0x00 id for Prefix "a\x00").
			valid = it.Next()
			continue
		}
		if o.Keep != nil && !o.Keep(key) {
			valid = it.Next()
			continue
		}
		if o.Delimiter != "" {
			if i := strings.Index(key[len(o.Prefix):], o.Delimiter); i >= 0 {
				cp := key[:len(o.Prefix)+i+len(o.Delimiter)]
				encoded := append(bytes.Clone(base), cp...)
				listed := bytes.Compare(encoded, start) < 0 // S3's cp <= KeyMarker
				if ambiguous(cp) {
					listed = skipMarkerKey && cp == o.KeyMarker
					if !listed {
						if listed, err = db.underBefore(base, cp, start); err != nil {
							_ = it.Close()
							return nil, fmt.Errorf("list uploads %q: %w", bucket, err)
						}
					}
				}
				if !listed {
					if count == limit {
						res.IsTruncated = true
						break
					}
					res.CommonPrefixes = append(res.CommonPrefixes, cp)
					res.NextKeyMarker, res.NextUploadIDMarker = cp, ""
					count++
				}
				if ambiguous(cp) {
					stepping, steppingCP = encoded, cp
					valid = it.Next()
				} else {
					valid = it.SeekGE(successor(encoded))
				}
				continue
			}
		}
		if skipMarkerKey && key == o.KeyMarker {
			valid = it.Next()
			continue
		}
		if count == limit {
			res.IsTruncated = true
			break
		}
		v, err := it.ValueAndErr()
		var u *Upload
		if err == nil {
			u, err = decodeUpload(bucket, key, id, v)
		}
		if err != nil {
			_ = it.Close()
			return nil, fmt.Errorf("list uploads %q: %w", bucket, err)
		}
		res.Uploads = append(res.Uploads, u)
		res.NextKeyMarker, res.NextUploadIDMarker = key, id
		count++
		valid = it.Next()
	}
	if err := it.Close(); err != nil {
		return nil, fmt.Errorf("list uploads %q: %w", bucket, err)
	}
	if !res.IsTruncated {
		res.NextKeyMarker, res.NextUploadIDMarker = "", ""
	}
	return res, nil
}

// ambiguous reports whether the upload keys of keys starting with cp may
// interleave with the uploads of a shorter key: cp contains 0x00, the
// separator before an upload ID.
func ambiguous(cp string) bool { return strings.IndexByte(cp, 0) >= 0 }

// firstUnder returns the first upload key (base included) whose object key
// starts with cp, or nil.
func (db *DB) firstUnder(base []byte, cp string) ([]byte, error) {
	return db.seekUnder(base, cp, nil)
}

// underBefore reports whether an upload key whose object key starts with
// cp sorts before limit.
func (db *DB) underBefore(base []byte, cp string, limit []byte) (bool, error) {
	first, err := db.seekUnder(base, cp, limit)
	return first != nil, err
}

// seekUnder returns the first upload key below limit (nil: no limit) whose
// object key starts with cp. It steps over the uploads of shorter keys
// interleaved with them: at most those of the keys cp extends with 0x00.
func (db *DB) seekUnder(base []byte, cp string, limit []byte) ([]byte, error) {
	lo := append(bytes.Clone(base), cp...)
	hi := successor(lo)
	if limit != nil && (hi == nil || bytes.Compare(limit, hi) < 0) {
		hi = limit
	}
	if hi != nil && bytes.Compare(lo, hi) >= 0 {
		return nil, nil
	}
	it, err := db.pdb.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return nil, err
	}
	for valid := it.First(); valid; valid = it.Next() {
		if key, _, ok := parseUploadSuffix(it.Key()[len(base):]); ok && strings.HasPrefix(key, cp) {
			found := bytes.Clone(it.Key())
			return found, it.Close()
		}
	}
	return nil, it.Close()
}

// ListParts returns up to max parts of an upload with numbers greater than
// marker, in number order, and whether more follow. max <= 0 or > 1000
// means 1000.
func (db *DB) ListParts(uploadID string, marker, maxParts int) (parts []*Part, truncated bool, err error) {
	if !ValidUploadID(uploadID) {
		return nil, false, fmt.Errorf("list parts %q: malformed ID: %w", uploadID, ErrNotFound)
	}
	if maxParts <= 0 {
		maxParts = DefaultMaxKeys
	}
	marker = min(max(marker, 0), MaxPartNumber)
	return listParts(db.pdb, uploadID, marker, clampMax(maxParts))
}

func listParts(r pebble.Reader, uploadID string, marker, limit int) ([]*Part, bool, error) {
	prefix := partPrefix(uploadID)
	it, err := r.NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: successor(prefix)})
	if err != nil {
		return nil, false, fmt.Errorf("list parts %s: %w", uploadID, err)
	}
	var parts []*Part
	truncated := false
	for valid := it.SeekGE(partKey(uploadID, marker+1)); valid; valid = it.Next() {
		if len(parts) == limit {
			truncated = true
			break
		}
		k := it.Key()
		v, err := it.ValueAndErr()
		var p *Part
		if err == nil {
			p, err = decodePart(uploadID, int(k[len(k)-2])<<8|int(k[len(k)-1]), v)
		}
		if err != nil {
			_ = it.Close()
			return nil, false, fmt.Errorf("list parts %s: %w", uploadID, err)
		}
		parts = append(parts, p)
	}
	if err := it.Close(); err != nil {
		return nil, false, fmt.Errorf("list parts %s: %w", uploadID, err)
	}
	return parts, truncated, nil
}

// AllParts returns every part of an upload in number order (at most
// MaxPartNumber), for CompleteMultipartUpload.
func (db *DB) AllParts(uploadID string) ([]*Part, error) {
	if !ValidUploadID(uploadID) {
		return nil, fmt.Errorf("all parts %q: malformed ID: %w", uploadID, ErrNotFound)
	}
	parts, _, err := listParts(db.pdb, uploadID, 0, MaxPartNumber)
	return parts, err
}
