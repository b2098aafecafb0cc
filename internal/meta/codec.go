package meta

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"
)

// ErrCorrupt is wrapped by every error from decoding a record: the bytes
// are truncated, carry an unknown format version, or hold trailing garbage.
var ErrCorrupt = errors.New("meta: corrupt record")

// Primitive encodings shared by every record layout:
//
//	uvarint   encoding/binary unsigned varint
//	varint    encoding/binary zig-zag signed varint
//	string    uvarint length, then the bytes
//	bytes     uvarint length+1, then the bytes; 0 encodes nil, so a nil
//	          document and an empty one stay distinct
//	time      varint Unix seconds, uvarint nanoseconds (0..999999999); the
//	          zero time.Time round-trips as itself. Decoded times are UTC.
//	map       uvarint count, then count (string key, string value) pairs in
//	          ascending key order, so equal maps encode identically
//	extent    uvarint segment, varint offset, varint length, varint size
//	grants    uvarint count+1 (0 encodes nil), then count (string grantee,
//	          string permission) pairs in order

// encoder appends to a byte slice.
type encoder struct{ buf []byte }

func (e *encoder) byte1(b byte)     { e.buf = append(e.buf, b) }
func (e *encoder) uvarint(v uint64) { e.buf = binary.AppendUvarint(e.buf, v) }
func (e *encoder) varint(v int64)   { e.buf = binary.AppendVarint(e.buf, v) }
func (e *encoder) str(s string)     { e.uvarint(uint64(len(s))); e.buf = append(e.buf, s...) }
func (e *encoder) time(t time.Time) { e.varint(t.Unix()); e.uvarint(uint64(t.Nanosecond())) }
func (e *encoder) strs(ss ...string) {
	for _, s := range ss {
		e.str(s)
	}
}

func (e *encoder) bytes(b []byte) {
	if b == nil {
		e.uvarint(0)
		return
	}
	e.uvarint(uint64(len(b)) + 1)
	e.buf = append(e.buf, b...)
}

func (e *encoder) strMap(m map[string]string) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	e.uvarint(uint64(len(keys)))
	for _, k := range keys {
		e.str(k)
		e.str(m[k])
	}
}

func (e *encoder) extents(xs []Extent) {
	e.uvarint(uint64(len(xs)))
	for _, x := range xs {
		e.uvarint(x.Segment)
		e.varint(x.Offset)
		e.varint(x.Length)
		e.varint(x.Size)
	}
}

func (e *encoder) grants(gs []Grant) {
	if gs == nil {
		e.uvarint(0)
		return
	}
	e.uvarint(uint64(len(gs)) + 1)
	for _, g := range gs {
		e.strs(g.Grantee, g.Permission)
	}
}

// decoder consumes a byte slice. The first failure is sticky: later reads
// return zero values, and err reports it, so record decoders read straight
// through and check once at the end.
type decoder struct {
	buf []byte
	err error
}

func (d *decoder) fail(what string) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: bad %s", ErrCorrupt, what)
	}
	d.buf = nil
}

func (d *decoder) byte1() byte {
	if len(d.buf) < 1 {
		d.fail("byte")
		return 0
	}
	b := d.buf[0]
	d.buf = d.buf[1:]
	return b
}

func (d *decoder) uvarint() uint64 {
	v, n := binary.Uvarint(d.buf)
	if n <= 0 {
		d.fail("uvarint")
		return 0
	}
	d.buf = d.buf[n:]
	return v
}

func (d *decoder) varint() int64 {
	v, n := binary.Varint(d.buf)
	if n <= 0 {
		d.fail("varint")
		return 0
	}
	d.buf = d.buf[n:]
	return v
}

// length reads a count or byte length and checks it against what is left,
// so corrupt input can never make the decoder allocate more than the
// record's own size. Each counted item occupies at least minItem bytes.
func (d *decoder) length(minItem int) int {
	v := d.uvarint()
	if d.err != nil {
		return 0
	}
	if v > uint64(len(d.buf)/minItem) {
		d.fail("length")
		return 0
	}
	return int(v)
}

func (d *decoder) str() string {
	n := d.length(1)
	s := string(d.buf[:n])
	d.buf = d.buf[n:]
	return s
}

func (d *decoder) strs(dst ...*string) {
	for _, p := range dst {
		*p = d.str()
	}
}

func (d *decoder) bytes() []byte {
	v := d.uvarint()
	if v == 0 || d.err != nil {
		return nil
	}
	if v-1 > uint64(len(d.buf)) {
		d.fail("bytes length")
		return nil
	}
	b := slices.Clone(d.buf[:v-1])
	if b == nil {
		b = []byte{}
	}
	d.buf = d.buf[v-1:]
	return b
}

// skipBytes steps over what bytes would return and reports its length, -1
// for nil.
func (d *decoder) skipBytes() int64 {
	v := d.uvarint()
	if v == 0 || d.err != nil {
		return -1
	}
	if v-1 > uint64(len(d.buf)) {
		d.fail("bytes length")
		return -1
	}
	d.buf = d.buf[v-1:]
	return int64(v - 1)
}

func (d *decoder) time() time.Time {
	sec := d.varint()
	nsec := d.uvarint()
	if nsec >= 1e9 {
		d.fail("time")
		return time.Time{}
	}
	if d.err != nil {
		return time.Time{}
	}
	return time.Unix(sec, int64(nsec)).UTC()
}

func (d *decoder) strMap() map[string]string {
	n := d.length(2)
	if n == 0 {
		return nil
	}
	m := make(map[string]string, n)
	for range n {
		k := d.str()
		m[k] = d.str()
	}
	if d.err == nil && len(m) != n {
		d.fail("map (duplicate key)")
	}
	return m
}

func (d *decoder) extents() []Extent {
	n := d.length(4)
	if n == 0 {
		return nil
	}
	xs := make([]Extent, n)
	for i := range xs {
		xs[i] = Extent{Segment: d.uvarint(), Offset: d.varint(), Length: d.varint(), Size: d.varint()}
	}
	return xs
}

func (d *decoder) grants() []Grant {
	v := d.uvarint()
	if v == 0 || d.err != nil {
		return nil
	}
	if v-1 > uint64(len(d.buf)/2) {
		d.fail("grant count")
		return nil
	}
	gs := make([]Grant, v-1)
	for i := range gs {
		d.strs(&gs[i].Grantee, &gs[i].Permission)
	}
	return gs
}

// int reads a non-negative int that must not exceed limit.
func (d *decoder) int(limit uint64, what string) int {
	v := d.uvarint()
	if v > limit || v > math.MaxInt32 {
		d.fail(what)
		return 0
	}
	return int(v)
}

// version reads the format version byte and returns it if it is one of
// known; otherwise it fails the decoder.
func (d *decoder) version(record string, known ...byte) byte {
	v := d.byte1()
	if d.err == nil && !slices.Contains(known, v) {
		d.err = fmt.Errorf("%w: %s record format version %d, want one of %v", ErrCorrupt, record, v, known)
		d.buf = nil
	}
	return v
}

// finish reports the first error, or trailing bytes, with the record name.
func (d *decoder) finish(record string) error {
	if d.err == nil && len(d.buf) != 0 {
		d.err = fmt.Errorf("%w: %d trailing bytes", ErrCorrupt, len(d.buf))
	}
	if d.err != nil {
		return fmt.Errorf("decode %s: %w", record, d.err)
	}
	return nil
}

// encryption writes an encrypted record's key fields (Encryption).
func (e *encoder) encryption(x *Encryption) {
	e.strs(x.Algorithm, x.KeyID)
	e.bytes(x.SealedKey)
}

func (d *decoder) encryption() *Encryption {
	x := &Encryption{}
	d.strs(&x.Algorithm, &x.KeyID)
	x.SealedKey = d.bytes()
	if d.err == nil && x.Algorithm == "" {
		d.fail("encryption")
	}
	return x
}
