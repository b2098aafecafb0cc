package meta

// bucketFormat is the format version of the bucket record:
//
//	+---------------------+
//	| 0x01                |  byte, format version
//	| owner               |  string
//	| created             |  time
//	| region              |  string
//	| acl                 |  string
//	| cors                |  bytes
//	| lifecycle           |  bytes
//	| tagging             |  bytes
//	| policy              |  bytes
//	| versioning          |  string; format 2 only ("", Enabled, Suspended)
//	| object lock         |  uvarint 0 or 1; format 2 only
//	| object lock config  |  bytes; format 2 only
//	+---------------------+
//
// The name is the key ("b" name) and is not repeated in the value. Format
// 2 adds versioning and Object Lock; it is written only for a bucket that
// has either, so other buckets keep format 1 byte for byte.
const (
	bucketFormat          = 1
	bucketFormatVersioned = 2
)

func encodeBucket(b *Bucket) []byte {
	e := encoder{buf: make([]byte, 0, 64+len(b.CORS)+len(b.Lifecycle)+len(b.Tagging)+len(b.Policy))}
	format := byte(bucketFormat)
	if b.Versioning != "" || b.ObjectLock || b.ObjectLockConfig != nil {
		format = bucketFormatVersioned
	}
	e.byte1(format)
	e.str(b.Owner)
	e.time(b.Created)
	e.strs(b.Region, b.ACL)
	e.bytes(b.CORS)
	e.bytes(b.Lifecycle)
	e.bytes(b.Tagging)
	e.bytes(b.Policy)
	if format == bucketFormatVersioned {
		e.str(b.Versioning)
		lock := uint64(0)
		if b.ObjectLock {
			lock = 1
		}
		e.uvarint(lock)
		e.bytes(b.ObjectLockConfig)
	}
	return e.buf
}

func decodeBucket(name string, value []byte) (*Bucket, error) {
	d := decoder{buf: value}
	format := d.version("bucket", bucketFormat, bucketFormatVersioned)
	b := &Bucket{Name: name}
	b.Owner = d.str()
	b.Created = d.time()
	d.strs(&b.Region, &b.ACL)
	b.CORS = d.bytes()
	b.Lifecycle = d.bytes()
	b.Tagging = d.bytes()
	b.Policy = d.bytes()
	if format == bucketFormatVersioned {
		b.Versioning = d.str()
		switch d.uvarint() {
		case 0:
		case 1:
			b.ObjectLock = true
		default:
			d.fail("object lock flag")
		}
		b.ObjectLockConfig = d.bytes()
	}
	if err := d.finish("bucket " + name); err != nil {
		return nil, err
	}
	return b, nil
}
