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
//	+---------------------+
//
// The name is the key ("b" name) and is not repeated in the value.
const bucketFormat = 1

func encodeBucket(b *Bucket) []byte {
	e := encoder{buf: make([]byte, 0, 64+len(b.CORS)+len(b.Lifecycle)+len(b.Tagging)+len(b.Policy))}
	e.byte1(bucketFormat)
	e.str(b.Owner)
	e.time(b.Created)
	e.strs(b.Region, b.ACL)
	e.bytes(b.CORS)
	e.bytes(b.Lifecycle)
	e.bytes(b.Tagging)
	e.bytes(b.Policy)
	return e.buf
}

func decodeBucket(name string, value []byte) (*Bucket, error) {
	d := decoder{buf: value}
	d.version("bucket", bucketFormat)
	b := &Bucket{Name: name}
	b.Owner = d.str()
	b.Created = d.time()
	d.strs(&b.Region, &b.ACL)
	b.CORS = d.bytes()
	b.Lifecycle = d.bytes()
	b.Tagging = d.bytes()
	b.Policy = d.bytes()
	if err := d.finish("bucket " + name); err != nil {
		return nil, err
	}
	return b, nil
}
