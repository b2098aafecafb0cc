package meta

// uploadFormat is the format version of the multipart upload record:
//
//	+-----------------------+
//	| 0x01                  |  byte, format version
//	| version               |  uvarint, reserved for the completed object
//	| initiated             |  time
//	| owner                 |  string
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
//	| grants                |  grants; formats 2 and 3
//	| lock mode             |  string; format 3 only
//	| retain until          |  time; format 3 only
//	| legal hold            |  byte 0 or 1; formats 3 and 4
//	| sse                   |  algorithm, key id, sealed key; format 4
//	+-----------------------+
//
// Bucket, key and upload ID are the pebble key
// ("u" bucket 0x00 key 0x00 uploadID). Format 2 adds the ACL the object
// will get (Upload.Grants); format 3 adds the Object Lock settings asked
// for at create. Each upload is written in the lowest format that holds
// it: one without grants or lock is format 1, byte for byte as before.
// Format 4 (format 3 plus Upload.SSE) is that of encrypted uploads.
const (
	uploadFormat       = 1
	uploadFormatGrants = 2
	uploadFormatLock   = 3
	uploadFormatSSE    = 4
)

func encodeUpload(u *Upload) []byte {
	e := encoder{buf: make([]byte, 0, 96)}
	format := byte(uploadFormat)
	switch {
	case u.SSE != nil:
		format = uploadFormatSSE
	case u.LockMode != "" || !u.RetainUntil.IsZero() || u.LegalHold || u.LegalHoldSet:
		format = uploadFormatLock
	case u.Grants != nil:
		format = uploadFormatGrants
	}
	e.byte1(format)
	e.uvarint(u.Version)
	e.time(u.Initiated)
	e.str(u.Owner)
	e.strs(u.ContentType, u.ContentEncoding, u.ContentDisposition, u.ContentLanguage, u.CacheControl, u.Expires)
	e.strMap(u.UserMeta)
	e.strMap(u.Tags)
	e.strs(u.ChecksumAlgorithm, u.ChecksumType)
	if format >= uploadFormatGrants {
		e.grants(u.Grants)
	}
	if format >= uploadFormatLock {
		e.str(u.LockMode)
		e.time(u.RetainUntil)
		// 0: no legal hold named; 1: ON; 2: OFF, named.
		hold := byte(0)
		switch {
		case u.LegalHold:
			hold = 1
		case u.LegalHoldSet:
			hold = 2
		}
		e.byte1(hold)
	}
	if format == uploadFormatSSE {
		e.encryption(u.SSE)
	}
	return e.buf
}

func decodeUpload(bucket, key, uploadID string, value []byte) (*Upload, error) {
	d := decoder{buf: value}
	format := d.version("upload", uploadFormat, uploadFormatGrants, uploadFormatLock, uploadFormatSSE)
	u := &Upload{Bucket: bucket, Key: key, UploadID: uploadID}
	u.Version = d.uvarint()
	u.Initiated = d.time()
	u.Owner = d.str()
	d.strs(&u.ContentType, &u.ContentEncoding, &u.ContentDisposition, &u.ContentLanguage, &u.CacheControl, &u.Expires)
	u.UserMeta = d.strMap()
	u.Tags = d.strMap()
	d.strs(&u.ChecksumAlgorithm, &u.ChecksumType)
	if format >= uploadFormatGrants {
		u.Grants = d.grants()
	}
	if format >= uploadFormatLock {
		u.LockMode = d.str()
		u.RetainUntil = d.time()
		switch d.byte1() {
		case 0:
		case 1:
			u.LegalHold, u.LegalHoldSet = true, true
		case 2:
			u.LegalHoldSet = true
		default:
			d.fail("legal hold")
		}
	}
	if format == uploadFormatSSE {
		u.SSE = d.encryption()
	}
	if err := d.finish("upload " + uploadID); err != nil {
		return nil, err
	}
	return u, nil
}

// partFormat is the format version of the part record:
//
//	+-----------------------+
//	| 0x01                  |  byte, format version
//	| size                  |  varint
//	| etag                  |  string
//	| checksum              |  string
//	| modified              |  time
//	| extents               |  uvarint count, then extent each
//	+-----------------------+
//
// Upload ID and part number are the pebble key ("p" uploadID number).
const partFormat = 1

func encodePart(p *Part) []byte {
	e := encoder{buf: make([]byte, 0, 64+16*len(p.Extents))}
	e.byte1(partFormat)
	e.varint(p.Size)
	e.strs(p.ETag, p.Checksum)
	e.time(p.Modified)
	e.extents(p.Extents)
	return e.buf
}

func decodePart(uploadID string, number int, value []byte) (*Part, error) {
	d := decoder{buf: value}
	d.version("part", partFormat)
	p := &Part{UploadID: uploadID, Number: number}
	p.Size = d.varint()
	d.strs(&p.ETag, &p.Checksum)
	p.Modified = d.time()
	p.Extents = d.extents()
	if err := d.finish("part"); err != nil {
		return nil, err
	}
	return p, nil
}
