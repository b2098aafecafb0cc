package meta

import "slices"

// objectFormat is the format version of the object record:
//
//	+-----------------------+
//	| 0x01, 0x02 or 0x03    |  byte, format version
//	| version               |  uvarint
//	| size                  |  varint
//	| etag                  |  string
//	| modified              |  time
//	| content-type          |  string
//	| content-encoding      |  string
//	| content-disposition   |  string
//	| content-language      |  string
//	| cache-control         |  string
//	| expires               |  string
//	| user metadata         |  map
//	| tags                  |  map
//	| checksum algorithm    |  string
//	| checksum type         |  string
//	| checksum              |  string
//	| expiry                |  time (zero time = never)
//	| part count            |  uvarint, then per part:
//	|   number              |    uvarint (1..10000)
//	|   size                |    varint
//	|   etag                |    string
//	|   checksum            |    string
//	| extents               |  uvarint count, then extent each
//	| owner                 |  string
//	| inline payload        |  bytes; formats 2 and 3 (nil in 3: none)
//	| version flags         |  uvarint; format 3 only: 1 versioned (not
//	|                       |  the null version), 2 delete marker,
//	|                       |  4 legal hold
//	| lock mode             |  string; format 3 only
//	| retain until          |  time; format 3 only
//	| grants                |  grants; formats 3 and 4
//	| sse algorithm         |  string; format 4 only
//	| sse key id            |  string; format 4 only
//	| sse sealed key        |  bytes; format 4 only
//	+-----------------------+
//
// Format 2 is format 1 plus the payload of an object small enough to live
// in its record (Object.Inline). Format 3 adds, after the payload (which
// may then be nil), the versioning and Object Lock fields and the object's
// ACL grants (Object.Grants). Each record is written in the lowest format
// that holds it: a bucket that never enabled versioning, with objects of
// the default ACL, writes formats 1 and 2 exactly as before; records
// written before format 3 read as null versions without a lock or grants.
// Format 4 is format 3 plus the sealed data key of an encrypted object
// (Object.SSE); only encrypted objects are written in it.
// Bucket and key are the pebble key ("o" bucket 0x00 key). An object of one
// extent, an etag, a content type and a time takes about 80 bytes; with
// two user-metadata pairs, cache-control, expiry and a checksum, 176.
const (
	objectFormat         = 1
	objectFormatInline   = 2
	objectFormatSettings = 3
	objectFormatSSE      = 4
)

// Bits of the version flags of format 3.
const (
	flagVersioned    = 1
	flagDeleteMarker = 2
	flagLegalHold    = 4
	flagLegalHoldSet = 8
	flagsKnown       = flagVersioned | flagDeleteMarker | flagLegalHold | flagLegalHoldSet
)

func versionFlags(o *Object) uint64 {
	var f uint64
	if o.Versioned {
		f |= flagVersioned
	}
	if o.DeleteMarker {
		f |= flagDeleteMarker
	}
	if o.LegalHold {
		f |= flagLegalHold
	}
	if o.LegalHoldSet {
		f |= flagLegalHoldSet
	}
	return f
}

func encodeObject(o *Object) []byte { return AppendObject(nil, o) }

// AppendObject appends o's record, as stored (bucket and key are not in
// it: they are the pebble key), to dst; ReadObject decodes it. A
// replicated command carries its object in this form.
func AppendObject(dst []byte, o *Object) []byte {
	e := encoder{buf: slices.Grow(dst, 128+16*len(o.Extents)+48*len(o.Parts)+len(o.Inline))}
	format := byte(objectFormat)
	flags := versionFlags(o)
	switch {
	case o.SSE != nil:
		format = objectFormatSSE
	case flags != 0 || o.LockMode != "" || !o.RetainUntil.IsZero() || o.Grants != nil:
		format = objectFormatSettings
	case o.Inline != nil:
		format = objectFormatInline
	}
	e.byte1(format)
	e.uvarint(o.Version)
	e.varint(o.Size)
	e.str(o.ETag)
	e.time(o.Modified)
	e.strs(o.ContentType, o.ContentEncoding, o.ContentDisposition, o.ContentLanguage, o.CacheControl, o.Expires)
	e.strMap(o.UserMeta)
	e.strMap(o.Tags)
	e.strs(o.ChecksumAlgorithm, o.ChecksumType, o.Checksum)
	e.time(o.Expiry)
	e.uvarint(uint64(len(o.Parts)))
	for _, p := range o.Parts {
		e.uvarint(uint64(p.Number))
		e.varint(p.Size)
		e.strs(p.ETag, p.Checksum)
	}
	e.extents(o.Extents)
	e.str(o.Owner)
	if format != objectFormat {
		e.bytes(o.Inline)
	}
	if format >= objectFormatSettings {
		e.uvarint(flags)
		e.str(o.LockMode)
		e.time(o.RetainUntil)
		e.grants(o.Grants)
	}
	if format == objectFormatSSE {
		e.encryption(o.SSE)
	}
	return e.buf
}

// ReadObject decodes a record made by AppendObject, with its payload, as
// the object bucket/key.
func ReadObject(bucket, key string, record []byte) (*Object, error) {
	return decodeObject(bucket, key, record, true)
}

// decodeObject decodes an object record; without withPayload an inline
// payload is checked for length but not copied (see Object.Inline).
func decodeObject(bucket, key string, value []byte, withPayload bool) (*Object, error) {
	d := decoder{buf: value}
	format := d.version("object", objectFormat, objectFormatInline, objectFormatSettings, objectFormatSSE)
	o := &Object{Bucket: bucket, Key: key}
	o.Version = d.uvarint()
	o.Size = d.varint()
	o.ETag = d.str()
	o.Modified = d.time()
	d.strs(&o.ContentType, &o.ContentEncoding, &o.ContentDisposition, &o.ContentLanguage, &o.CacheControl, &o.Expires)
	o.UserMeta = d.strMap()
	o.Tags = d.strMap()
	d.strs(&o.ChecksumAlgorithm, &o.ChecksumType, &o.Checksum)
	o.Expiry = d.time()
	if n := d.length(4); n > 0 {
		o.Parts = make([]PartSummary, n)
		for i := range o.Parts {
			p := &o.Parts[i]
			p.Number = d.int(MaxPartNumber, "part number")
			p.Size = d.varint()
			d.strs(&p.ETag, &p.Checksum)
		}
	}
	o.Extents = d.extents()
	o.Owner = d.str()
	if format != objectFormat {
		n := int64(-1)
		if withPayload {
			if o.Inline = d.bytes(); o.Inline != nil {
				n = int64(len(o.Inline))
			}
		} else {
			n = d.skipBytes()
			o.payloadOmitted = n >= 0
		}
		if d.err == nil && n >= 0 && (n != o.Size || len(o.Extents) != 0) {
			d.fail("inline payload")
		}
		if d.err == nil && format == objectFormatInline && n < 0 {
			d.fail("inline payload")
		}
	}
	if format >= objectFormatSettings {
		flags := d.uvarint()
		if flags&^flagsKnown != 0 {
			d.fail("version flags")
		}
		o.Versioned, o.DeleteMarker, o.LegalHold = flags&flagVersioned != 0, flags&flagDeleteMarker != 0, flags&flagLegalHold != 0
		o.LegalHoldSet = flags&flagLegalHoldSet != 0
		o.LockMode = d.str()
		o.RetainUntil = d.time()
		o.Grants = d.grants()
	}
	if format == objectFormatSSE {
		o.SSE = d.encryption()
	}
	if err := d.finish("object " + bucket + "/" + key); err != nil {
		return nil, err
	}
	return o, nil
}
