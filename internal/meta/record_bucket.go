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
//	| grants              |  grants; format 2 only
//	| ownership           |  string; format 2 only
//	| public access block |  byte; format 2 only: 0 none, else
//	|                     |  1 | 2 BlockPublicAcls | 4 IgnorePublicAcls
//	|                     |  | 8 BlockPublicPolicy | 16 RestrictPublicBuckets
//	+---------------------+
//
// The name is the key ("b" name) and is not repeated in the value.
// Format 2 is format 1 plus the access settings (ACL grants, object
// ownership, Block Public Access). A bucket without any is written as
// format 1, so stores written before format 2 read back unchanged.
const (
	bucketFormat       = 1
	bucketFormatAccess = 2
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
	if b.Grants != nil || b.Ownership != "" || b.PublicAccessBlock != nil {
		format = bucketFormatAccess
	}
	e.byte1(format)
	e.str(b.Owner)
	e.time(b.Created)
	e.strs(b.Region, b.ACL)
	e.bytes(b.CORS)
	e.bytes(b.Lifecycle)
	e.bytes(b.Tagging)
	e.bytes(b.Policy)
	if format == bucketFormatAccess {
		e.grants(b.Grants)
		e.str(b.Ownership)
		e.byte1(encodePAB(b.PublicAccessBlock))
	}
	return e.buf
}

func decodeBucket(name string, value []byte) (*Bucket, error) {
	d := decoder{buf: value}
	format := d.version("bucket", bucketFormat, bucketFormatAccess)
	b := &Bucket{Name: name}
	b.Owner = d.str()
	b.Created = d.time()
	d.strs(&b.Region, &b.ACL)
	b.CORS = d.bytes()
	b.Lifecycle = d.bytes()
	b.Tagging = d.bytes()
	b.Policy = d.bytes()
	if format == bucketFormatAccess {
		b.Grants = d.grants()
		b.Ownership = d.str()
		b.PublicAccessBlock = decodePAB(&d)
	}
	if err := d.finish("bucket " + name); err != nil {
		return nil, err
	}
	return b, nil
}
