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
//	| grants              |  grants; format 2 only
//	| ownership           |  string; format 2 only
//	| public access block |  byte; format 2 only: 0 none, else
//	|                     |  1 | 2 BlockPublicAcls | 4 IgnorePublicAcls
//	|                     |  | 8 BlockPublicPolicy | 16 RestrictPublicBuckets
//	| origin flags        |  uvarint; formats 3 and 4: 1 LL-HLS origin,
//	|                     |  2 a deletion under way
//	| default encryption  |  bytes; format 4 only (raw XML)
//	+---------------------+
//
// The name is the key ("b" name) and is not repeated in the value. Format
// 2 adds versioning, Object Lock and the access settings (ACL grants,
// object ownership, Block Public Access); it is written only for a bucket
// that has one of them, so other buckets keep format 1 byte for byte and
// stores written before format 2 read back unchanged. Format 3 adds the
// origin flags after the format 2 fields, written only for a bucket with
// a flag on, for the same reason. Format 4 adds the default encryption
// configuration, written only for a bucket that has one.
const (
	bucketFormat         = 1
	bucketFormatSettings = 2
	bucketFormatOrigin   = 3
	bucketFormatSSE      = 4
)

// Origin flags of format 3.
const (
	originLLHLS    = 1
	originDeleting = 2
)
const (
	pabSet = 1 << iota
	pabBlockPublicAcls
	pabIgnorePublicAcls
	pabBlockPublicPolicy
	pabRestrictPublicBuckets
)

func encodePAB(p *PublicAccessBlock) byte {
	if p == nil {
		return 0
	}
	v := byte(pabSet)
	for _, f := range []struct {
		on  bool
		bit byte
	}{{p.BlockPublicAcls, pabBlockPublicAcls}, {p.IgnorePublicAcls, pabIgnorePublicAcls},
		{p.BlockPublicPolicy, pabBlockPublicPolicy}, {p.RestrictPublicBuckets, pabRestrictPublicBuckets}} {
		if f.on {
			v |= f.bit
		}
	}
	return v
}

func decodePAB(d *decoder) *PublicAccessBlock {
	v := d.byte1()
	if v == 0 || d.err != nil {
		return nil
	}
	if v&pabSet == 0 || v >= pabRestrictPublicBuckets<<1 {
		d.fail("public access block")
		return nil
	}
	return &PublicAccessBlock{
		BlockPublicAcls:       v&pabBlockPublicAcls != 0,
		IgnorePublicAcls:      v&pabIgnorePublicAcls != 0,
		BlockPublicPolicy:     v&pabBlockPublicPolicy != 0,
		RestrictPublicBuckets: v&pabRestrictPublicBuckets != 0,
	}
}

func encodeBucket(b *Bucket) []byte {
	e := encoder{buf: make([]byte, 0, 64+len(b.CORS)+len(b.Lifecycle)+len(b.Tagging)+len(b.Policy))}
	format := byte(bucketFormat)
	if b.Versioning != "" || b.ObjectLock || b.ObjectLockConfig != nil ||
		b.Grants != nil || b.Ownership != "" || b.PublicAccessBlock != nil {
		format = bucketFormatSettings
	}
	if b.LLHLS || b.Deleting {
		format = bucketFormatOrigin
	}
	if b.Encryption != nil {
		format = bucketFormatSSE
	}
	e.byte1(format)
	e.str(b.Owner)
	e.time(b.Created)
	e.strs(b.Region, b.ACL)
	e.bytes(b.CORS)
	e.bytes(b.Lifecycle)
	e.bytes(b.Tagging)
	e.bytes(b.Policy)
	if format >= bucketFormatSettings {
		e.str(b.Versioning)
		lock := uint64(0)
		if b.ObjectLock {
			lock = 1
		}
		e.uvarint(lock)
		e.bytes(b.ObjectLockConfig)
		e.grants(b.Grants)
		e.str(b.Ownership)
		e.byte1(encodePAB(b.PublicAccessBlock))
	}
	if format >= bucketFormatOrigin {
		flags := uint64(0)
		if b.LLHLS {
			flags |= originLLHLS
		}
		if b.Deleting {
			flags |= originDeleting
		}
		e.uvarint(flags)
	}
	if format == bucketFormatSSE {
		e.bytes(b.Encryption)
	}
	return e.buf
}

func decodeBucket(name string, value []byte) (*Bucket, error) {
	d := decoder{buf: value}
	format := d.version("bucket", bucketFormat, bucketFormatSettings, bucketFormatOrigin, bucketFormatSSE)
	b := &Bucket{Name: name}
	b.Owner = d.str()
	b.Created = d.time()
	d.strs(&b.Region, &b.ACL)
	b.CORS = d.bytes()
	b.Lifecycle = d.bytes()
	b.Tagging = d.bytes()
	b.Policy = d.bytes()
	if format >= bucketFormatSettings {
		b.Versioning = d.str()
		switch d.uvarint() {
		case 0:
		case 1:
			b.ObjectLock = true
		default:
			d.fail("object lock flag")
		}
		b.ObjectLockConfig = d.bytes()
		b.Grants = d.grants()
		b.Ownership = d.str()
		b.PublicAccessBlock = decodePAB(&d)
	}
	if format >= bucketFormatOrigin {
		flags := d.uvarint()
		if flags&^(originLLHLS|originDeleting) != 0 {
			d.fail("origin flags")
		}
		b.LLHLS = flags&originLLHLS != 0
		b.Deleting = flags&originDeleting != 0
	}
	if format == bucketFormatSSE {
		b.Encryption = d.bytes()
	}
	if err := d.finish("bucket " + name); err != nil {
		return nil, err
	}
	return b, nil
}
