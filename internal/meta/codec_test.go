package meta

import (
	"bytes"
	"errors"
	"math"
	"reflect"
	"testing"
	"time"
)

func fullObject() *Object {
	return &Object{
		Bucket: "media", Key: "cam/日本/\x00\xff.ts", Version: math.MaxUint64, Size: 5 << 30,
		ETag: `"abc-3"`, Modified: ts(1_700_000_000),
		ContentType: "video/mp2t", ContentEncoding: "gzip", ContentDisposition: `attachment; filename="a.ts"`,
		ContentLanguage: "fr", CacheControl: "max-age=60", Expires: "Wed, 21 Oct 2015 07:28:00 GMT",
		UserMeta: map[string]string{"camera": "12", "b": "", "z": "ü"}, Tags: map[string]string{"k": "v"},
		ChecksumAlgorithm: "CRC32C", ChecksumType: "COMPOSITE", Checksum: "yZRlqg==",
		Expiry: ts(1_800_000_000),
		Parts: []PartSummary{{Number: 1, Size: 5 << 20, ETag: `"p1"`, Checksum: "AAAA"},
			{Number: 10000, Size: 1, ETag: `"p2"`}},
		Extents: []Extent{{1, 0, 100, 90}, {math.MaxUint64, math.MaxInt64, -1, 0}},
		Owner:   "AKID",
	}
}

func inlineObject() *Object {
	return &Object{Bucket: "sensors", Key: "t/42", Version: 7, Size: 5, ETag: `"5d41402abc4b2a76b9719d911017c592"`,
		Modified: ts(1_700_000_001), UserMeta: map[string]string{"unit": "C"}, Inline: []byte("hello")}
}

func versionedObject() *Object {
	o := fullObject()
	o.Versioned, o.LockMode, o.RetainUntil, o.LegalHold = true, LockCompliance, ts(1_900_000_000), true
	return o
}

func lockedInlineObject() *Object {
	o := inlineObject()
	o.LockMode, o.RetainUntil = LockGovernance, ts(1_800_000_000)
	return o
}

func versionedBucket() *Bucket {
	b := fullBucket()
	b.Versioning, b.ObjectLock, b.ObjectLockConfig = VersioningEnabled, true, []byte("<ObjectLockConfiguration/>")
	return b
}

// grantedObject has an ACL of its own (format 3), with and without an
// inline payload.
func grantedObject(inline bool) *Object {
	o := fullObject()
	if inline {
		o = inlineObject()
	}
	o.Grants = []Grant{{Grantee: "c0ffee", Permission: "FULL_CONTROL"}, {Grantee: "http://acs.amazonaws.com/groups/global/AllUsers", Permission: "READ"}}
	return o
}

// accessBucket has the access settings of format 2.
func accessBucket() *Bucket {
	b := fullBucket()
	b.Grants = []Grant{}
	b.Ownership = OwnershipObjectWriter
	b.PublicAccessBlock = &PublicAccessBlock{BlockPublicAcls: true, RestrictPublicBuckets: true}
	return b
}

// hlsBucket has access settings and the LL-HLS origin flag (format 3).
func hlsBucket() *Bucket {
	b := accessBucket()
	b.LLHLS = true
	return b
}

func fullUpload() *Upload {
	return &Upload{
		Bucket: "media", Key: "a\x00b", UploadID: NewUploadID(42), Version: 42, Initiated: ts(-5),
		Owner: "AKID", ContentType: "text/plain", ContentEncoding: "br", ContentDisposition: "inline",
		ContentLanguage: "de", CacheControl: "no-cache", Expires: "0",
		UserMeta: map[string]string{"x": "y"}, Tags: map[string]string{"t1": "1", "t2": "2"},
		ChecksumAlgorithm: "SHA256", ChecksumType: "FULL_OBJECT",
	}
}

func fullBucket() *Bucket {
	return &Bucket{Name: "media", Owner: "AKID", Created: ts(1), Region: "us-east-1", ACL: ACLPublicRead,
		CORS: []byte("<CORSConfiguration/>"), Lifecycle: []byte{}, Tagging: nil, Policy: []byte(`{"a":1}`)}
}

func fullPart() *Part {
	return &Part{UploadID: NewUploadID(9), Number: 10000, Size: 5 << 20, ETag: `"e"`, Checksum: "c",
		Modified: ts(3), Extents: []Extent{{7, 8, 9, 10}}}
}

// codecCase is one record type: encode, decode from the encoding, and the
// values to round-trip.
type codecCase struct {
	name   string
	values []any
	encode func(any) []byte
	decode func(v any, data []byte) (any, error)
}

var codecCases = []codecCase{
	{
		name: "object",
		values: []any{fullObject(), &Object{Bucket: "b", Key: ""}, sampleObject("b", "k"), inlineObject(),
			&Object{Bucket: "b", Key: "empty", Inline: []byte{}}, versionedObject(), lockedInlineObject(),
			&Object{Bucket: "b", Key: "dm", Version: 3, Versioned: true, DeleteMarker: true, Modified: ts(4)}, grantedObject(false), grantedObject(true),
			&Object{Bucket: "b", Key: "no grants", Grants: []Grant{}},
			&Object{Bucket: "b", Key: "hold released", Version: 4, Versioned: true, LegalHoldSet: true},
			&Object{Bucket: "b", Key: "sse", Version: 5, Size: 48, Extents: []Extent{{Segment: 1, Offset: 2, Length: 90, Size: 48}},
				SSE: &Encryption{Algorithm: SSEAlgorithmS3, KeyID: "default", SealedKey: []byte{1, 2, 3}}},
			&Object{Bucket: "b", Key: "sse inline", Version: 6, Size: 3, Inline: []byte{7, 8, 9}, Versioned: true,
				SSE: &Encryption{Algorithm: SSEAlgorithmCustomer, SealedKey: []byte{4}}}},
		encode: func(v any) []byte { return encodeObject(v.(*Object)) },
		decode: func(v any, data []byte) (any, error) {
			o := v.(*Object)
			return decodeObject(o.Bucket, o.Key, data, true)
		},
	},
	{
		name: "upload",
		values: []any{fullUpload(), &Upload{Bucket: "b", UploadID: NewUploadID(1)},
			&Upload{Bucket: "b", UploadID: NewUploadID(2), Grants: []Grant{{Grantee: "c0ffee", Permission: "READ"}}},
			&Upload{Bucket: "b", UploadID: NewUploadID(3), LockMode: LockCompliance, RetainUntil: ts(9)},
			&Upload{Bucket: "b", UploadID: NewUploadID(4), Grants: []Grant{}, LegalHold: true, LegalHoldSet: true},
			&Upload{Bucket: "b", UploadID: NewUploadID(5), LegalHoldSet: true},
			&Upload{Bucket: "b", UploadID: NewUploadID(6), SSE: &Encryption{Algorithm: SSEAlgorithmKMS, KeyID: "k1", SealedKey: []byte{5, 6}}}},
		encode: func(v any) []byte { return encodeUpload(v.(*Upload)) },
		decode: func(v any, data []byte) (any, error) {
			u := v.(*Upload)
			return decodeUpload(u.Bucket, u.Key, u.UploadID, data)
		},
	},
	{
		name: "bucket",
		values: []any{fullBucket(), &Bucket{Name: "x"}, versionedBucket(), &Bucket{Name: "s", Versioning: VersioningSuspended}, accessBucket(),
			&Bucket{Name: "y", Ownership: OwnershipBucketOwnerEnforced, PublicAccessBlock: &PublicAccessBlock{}},
			&Bucket{Name: "live", LLHLS: true}, hlsBucket(),
			&Bucket{Name: "enc", Encryption: []byte("<ServerSideEncryptionConfiguration/>")},
			&Bucket{Name: "enc-live", LLHLS: true, Versioning: VersioningEnabled, Encryption: []byte("<x/>")},
			&Bucket{Name: "going", Deleting: true}, &Bucket{Name: "live-going", LLHLS: true, Deleting: true}},
		encode: func(v any) []byte { return encodeBucket(v.(*Bucket)) },
		decode: func(v any, data []byte) (any, error) { return decodeBucket(v.(*Bucket).Name, data) },
	},
	{
		name:   "part",
		values: []any{fullPart(), &Part{UploadID: NewUploadID(0), Number: 1}},
		encode: func(v any) []byte { return encodePart(v.(*Part)) },
		decode: func(v any, data []byte) (any, error) {
			p := v.(*Part)
			return decodePart(p.UploadID, p.Number, data)
		},
	},
}

func TestRecordRoundTrip(t *testing.T) {
	for _, c := range codecCases {
		for i, v := range c.values {
			data := c.encode(v)
			got, err := c.decode(v, data)
			if err != nil {
				t.Fatalf("%s #%d: decode: %v", c.name, i, err)
			}
			if !reflect.DeepEqual(got, v) {
				t.Errorf("%s #%d: round trip\n got %+v\nwant %+v", c.name, i, got, v)
			}
			if again := c.encode(got); !bytes.Equal(again, data) {
				t.Errorf("%s #%d: encoding not deterministic", c.name, i)
			}
		}
	}
}

// Every proper prefix, an unknown version and a trailing byte must fail
// with ErrCorrupt, never panic.
func TestRecordDecodeRejectsDamage(t *testing.T) {
	for _, c := range codecCases {
		v := c.values[0]
		data := c.encode(v)
		for n := 0; n < len(data); n++ {
			if _, err := c.decode(v, data[:n]); !errors.Is(err, ErrCorrupt) {
				t.Errorf("%s truncated to %d of %d bytes: err = %v, want ErrCorrupt", c.name, n, len(data), err)
			}
		}
		bad := bytes.Clone(data)
		bad[0] = 99
		if _, err := c.decode(v, bad); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s unknown version: err = %v", c.name, err)
		}
		if _, err := c.decode(v, append(bytes.Clone(data), 0)); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s trailing byte: err = %v", c.name, err)
		}
	}
}

func TestTimeEncoding(t *testing.T) {
	for _, tm := range []time.Time{{}, time.Unix(0, 0).UTC(), time.Unix(-1, 999_999_999).UTC(),
		time.Date(9999, 12, 31, 23, 59, 59, 1, time.UTC)} {
		e := encoder{}
		e.time(tm)
		d := decoder{buf: e.buf}
		got := d.time()
		if err := d.finish("time"); err != nil || got != tm {
			t.Errorf("time %v: got %v, %v", tm, got, err)
		}
	}
	// A time in another zone decodes as the same instant in UTC.
	local := time.Date(2024, 5, 1, 12, 0, 0, 5, time.FixedZone("X", 3600))
	e := encoder{}
	e.time(local)
	d := decoder{buf: e.buf}
	if got := d.time(); !got.Equal(local) || got.Location() != time.UTC {
		t.Errorf("zoned time: got %v", got)
	}
}

func TestHugeCountRejectedWithoutAllocation(t *testing.T) {
	// version, then a user-metadata count of 2^62 after a minimal prefix.
	e := encoder{}
	e.byte1(objectFormat)
	e.uvarint(1)
	e.varint(1)
	e.str("")
	e.time(time.Time{})
	e.strs("", "", "", "", "", "")
	e.uvarint(1 << 62)
	if _, err := decodeObject("b", "k", e.buf, true); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("err = %v, want ErrCorrupt", err)
	}
}

// An object without an inline payload keeps format 1, byte for byte, so
// stores written before format 2 and after read alike; a payload that does
// not match the record's size, or sits beside extents, is corrupt.
func TestInlineObjectFormat(t *testing.T) {
	if v := encodeObject(fullObject())[0]; v != objectFormat {
		t.Fatalf("object without inline payload written as format %d", v)
	}
	if v := encodeObject(inlineObject())[0]; v != objectFormatInline {
		t.Fatalf("inline object written as format %d", v)
	}
	short := inlineObject()
	short.Size = 6
	withExtents := inlineObject()
	withExtents.Extents = []Extent{{1, 0, 40, 5}}
	for name, o := range map[string]*Object{"size mismatch": short, "extents too": withExtents} {
		for _, payload := range []bool{true, false} {
			if _, err := decodeObject(o.Bucket, o.Key, encodeObject(o), payload); !errors.Is(err, ErrCorrupt) {
				t.Errorf("%s (payload %v): err = %v, want ErrCorrupt", name, payload, err)
			}
		}
	}
}

// Listings leave inline payloads out; a record so listed cannot be written
// back, and the one GetObject returns carries the payload.
func TestListingOmitsInlinePayload(t *testing.T) {
	db := openMem(t)
	o := inlineObject()
	commit(t, db, func(b *Batch) {
		b.PutBucket(&Bucket{Name: o.Bucket})
		b.PutObject(o)
	})
	page, err := db.ListObjects(o.Bucket, ListOptions{MaxKeys: -1})
	if err != nil || len(page.Objects) != 1 {
		t.Fatalf("list: %+v %v", page, err)
	}
	listed := page.Objects[0]
	if listed.Inline != nil || !listed.payloadOmitted || listed.Size != o.Size || listed.ETag != o.ETag {
		t.Fatalf("listed %+v", listed)
	}
	var scanned *Object
	if err := db.ScanObjects(o.Bucket, "", func(x *Object) error { scanned = x; return nil }); err != nil || scanned.Inline != nil {
		t.Fatalf("scan: %+v %v", scanned, err)
	}
	b := db.NewBatch()
	b.PutObject(listed)
	if err := b.Commit(); err == nil {
		t.Fatal("a listed record without its payload was written back")
	}
	b.Close()
	got, err := db.GetObject(o.Bucket, o.Key)
	if err != nil || !bytes.Equal(got.Inline, o.Inline) {
		t.Fatalf("get after the refused write: %+v %v", got, err)
	}
}

// Records without versioning or lock fields keep formats 1 and 2 byte for
// byte (what stores written before format 3 hold, and what a bucket that
// never enabled versioning still writes); those with any field are format
// 3, and a format-3 record without a payload lists as writable.
func TestVersionedRecordFormats(t *testing.T) {
	for _, c := range []struct {
		name string
		data []byte
		want byte
	}{
		{"plain object", encodeObject(fullObject()), objectFormat},
		{"inline object", encodeObject(inlineObject()), objectFormatInline},
		{"versioned object", encodeObject(versionedObject()), objectFormatSettings},
		{"null version with a lock", encodeObject(lockedInlineObject()), objectFormatSettings},
		{"plain bucket", encodeBucket(fullBucket()), bucketFormat},
		{"versioned bucket", encodeBucket(versionedBucket()), bucketFormatSettings},
	} {
		if c.data[0] != c.want {
			t.Errorf("%s: format %d, want %d", c.name, c.data[0], c.want)
		}
	}
	// A format-1 record written by an older build: hand-made prefix of
	// the same fields reads as a null version without a lock.
	old := encodeObject(fullObject())
	got, err := decodeObject("media", fullObject().Key, old, true)
	if err != nil || got.Versioned || got.DeleteMarker || got.LockMode != "" || !got.RetainUntil.IsZero() {
		t.Fatalf("old record: %+v %v", got, err)
	}
	listed, err := decodeObject("media", "k", encodeObject(versionedObject()), false)
	if err != nil || listed.payloadOmitted {
		t.Fatalf("versioned record without payload listed as omitted: %v %v", listed.payloadOmitted, err)
	}
	bad := encodeObject(versionedObject())
	// The flags come before the lock mode and the time.
	e := encoder{}
	e.str(LockCompliance)
	e.time(versionedObject().RetainUntil)
	e.grants(versionedObject().Grants)
	bad[len(bad)-len(e.buf)-1] = 0x40
	if _, err := decodeObject("media", "k", bad, true); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("unknown version flag: %v", err)
	}
}

// Records written before the access settings existed decode unchanged,
// and records without them are still written in the old formats, byte for
// byte: the encodings below were taken from the code before formats 3
// (object) and 2 (bucket).
func TestAccessFormatsKeepOldRecords(t *testing.T) {
	oldBucket := []byte("\x01\x04AKID\x02\x95\x9a\xef:\tus-east-1\vpublic-read\x15<CORSConfiguration/>\x01\x00\b{\"a\":1}")
	b, err := decodeBucket("media", oldBucket)
	if err != nil || !reflect.DeepEqual(b, fullBucket()) {
		t.Fatalf("old bucket record: %+v, %v", b, err)
	}
	if got := encodeBucket(fullBucket()); !bytes.Equal(got, oldBucket) {
		t.Fatalf("bucket without access settings encodes as %q, want the format 1 bytes %q", got, oldBucket)
	}
	for _, o := range []*Object{fullObject(), inlineObject()} {
		if v := encodeObject(o)[0]; v == objectFormatSettings {
			t.Fatalf("object without grants written as format %d", v)
		}
	}
	if v := encodeObject(grantedObject(false))[0]; v != objectFormatSettings {
		t.Fatalf("object with grants written as format %d", v)
	}
	for _, c := range []struct {
		u    *Upload
		want byte
	}{
		{fullUpload(), uploadFormat},
		{&Upload{Grants: []Grant{}}, uploadFormatGrants},
		{&Upload{LegalHold: true}, uploadFormatLock},
	} {
		if v := encodeUpload(c.u)[0]; v != c.want {
			t.Errorf("upload %+v written as format %d, want %d", c.u, v, c.want)
		}
	}
	if v := encodeBucket(accessBucket())[0]; v != bucketFormatSettings {
		t.Fatalf("bucket with access settings written as format %d", v)
	}
	if v := encodeBucket(hlsBucket())[0]; v != bucketFormatOrigin {
		t.Fatalf("LL-HLS bucket written as format %d", v)
	}
	// An origin flag b3 does not know is corruption, not a setting lost.
	unknown := encodeBucket(hlsBucket())
	unknown[len(unknown)-1] = 4
	if _, err := decodeBucket("media", unknown); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("unknown origin flag: %v", err)
	}
	// A listed record of format 3 without a payload can be written back.
	o, err := decodeObject("b", "k", encodeObject(grantedObject(false)), false)
	if err != nil || o.payloadOmitted {
		t.Fatalf("format 3 without payload, listed: %+v %v", o, err)
	}
	bad := encodeBucket(accessBucket())
	bad[len(bad)-1] = 2 // flags without the "set" bit
	if _, err := decodeBucket("media", bad); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("bad public access block byte: %v", err)
	}
}
