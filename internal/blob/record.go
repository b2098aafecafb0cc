package blob

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
)

// Record format. Records are packed back to back in a segment file, with no
// alignment; all integers are little endian.
//
//	 0               4               8   9  10      12              16
//	+---------------+---------------+---+---+-------+---------------+
//	|   headerCRC   |  payloadCRC   |B3 |typ|keyLen |  payloadLen   |
//	+---------------+---------------+---+---+-------+---------------+
//	16                              24                              32
//	+-------------------------------+-----------------------+-------+
//	|        owner version          |       chunkOff        |  tag  |
//	+-------------------------------+-----------------------+-------+
//	32
//	+---------------------+------------------------------------------+
//	| key (keyLen bytes)  | payload (payloadLen bytes)               |
//	+---------------------+------------------------------------------+
//
//	headerCRC   crc32c (Castagnoli) of header bytes [8,32) followed by the key
//	payloadCRC  crc32c of the payload
//	magic       0xB3; a zero byte where a magic should be marks the end of
//	            data (the zero padding after the last record)
//	type        1 = data chunk; other values are reserved and rejected
//	keyLen      length of the owner key
//	payloadLen  <= MaxChunkSize (a writer uses at most Options.ChunkSize)
//	version     the owner's version
//	chunkOff    offset of this payload within the owner's value (48 bits)
//	tag         the writer's mark of one Append (16 bits; 0: none, as in
//	            every record written before tags existed): records of two
//	            appends of one owner that interleave tell apart by it
//
// Two CRCs: a valid headerCRC makes the lengths trustworthy, so a scan can
// step over a record whose payload is corrupt and go on with the next one.
const (
	headerSize     = 32
	recordMagic    = 0xB3
	recordTypeData = 1

	// MaxChunkSize bounds payloadLen of any record this package accepts on
	// read, whatever Options.ChunkSize was when the record was written.
	MaxChunkSize = 64 << 20
	// MaxKeyLen is the longest owner key a record can carry.
	MaxKeyLen = math.MaxUint16
	// MaxValueSize bounds the chunk offsets a record can carry: the 8-byte
	// field holds the offset in its low 48 bits and the tag in the rest.
	MaxValueSize = 1 << tagShift
	tagShift     = 48
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ErrCorrupt is wrapped by every error reporting corrupt or torn data; see
// CorruptError for the location.
var ErrCorrupt = errors.New("blob: corrupt data")

// CorruptError locates corrupt data. errors.Is(err, ErrCorrupt) holds.
type CorruptError struct {
	Segment uint64
	Offset  int64 // file offset of the record (or header) found corrupt
	Reason  string
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("blob: corrupt data in segment %016x at offset %d: %s", e.Segment, e.Offset, e.Reason)
}

func (e *CorruptError) Unwrap() error { return ErrCorrupt }

// Decoding outcomes other than success. errBadPayload is the only one after
// which the record length is known and the next record can be found.
var (
	errEndOfData   = errors.New("end of data")
	errShortRecord = errors.New("record extends past the available bytes")
	errBadHeader   = errors.New("invalid record header")
	errBadPayload  = errors.New("payload checksum mismatch")
)

// recordHeader is a decoded header.
type recordHeader struct {
	headerCRC  uint32
	payloadCRC uint32
	typ        uint8
	keyLen     int
	payloadLen int
	version    uint64
	chunkOff   uint64
	tag        uint16
}

func (h recordHeader) recordLen() int { return headerSize + h.keyLen + h.payloadLen }

// encodeHeader fills dst[:headerSize] with the header of a data record.
func encodeHeader(dst []byte, key []byte, version, chunkOff uint64, tag uint16, payload []byte) {
	binary.LittleEndian.PutUint32(dst[4:], crc32.Checksum(payload, castagnoli))
	dst[8] = recordMagic
	dst[9] = recordTypeData
	binary.LittleEndian.PutUint16(dst[10:], uint16(len(key)))
	binary.LittleEndian.PutUint32(dst[12:], uint32(len(payload)))
	binary.LittleEndian.PutUint64(dst[16:], version)
	binary.LittleEndian.PutUint64(dst[24:], chunkOff|uint64(tag)<<tagShift)
	binary.LittleEndian.PutUint32(dst[0:], headerChecksum(dst, key))
}

func headerChecksum(hdr, key []byte) uint32 {
	return crc32.Update(crc32.Checksum(hdr[8:headerSize], castagnoli), castagnoli, key)
}

// parseHeader decodes b[:headerSize] without checking the header CRC (that
// needs the key). It rejects what no valid writer produces.
func parseHeader(b []byte) (recordHeader, error) {
	if b[8] == 0 {
		return recordHeader{}, errEndOfData
	}
	h := recordHeader{
		headerCRC:  binary.LittleEndian.Uint32(b[0:]),
		payloadCRC: binary.LittleEndian.Uint32(b[4:]),
		typ:        b[9],
		keyLen:     int(binary.LittleEndian.Uint16(b[10:])),
		payloadLen: int(binary.LittleEndian.Uint32(b[12:])),
		version:    binary.LittleEndian.Uint64(b[16:]),
	}
	word := binary.LittleEndian.Uint64(b[24:])
	h.chunkOff, h.tag = word&(MaxValueSize-1), uint16(word>>tagShift)
	switch {
	case b[8] != recordMagic:
		return h, fmt.Errorf("%w: magic %#x", errBadHeader, b[8])
	case h.typ != recordTypeData:
		return h, fmt.Errorf("%w: unknown type %d", errBadHeader, h.typ)
	case h.payloadLen > MaxChunkSize:
		return h, fmt.Errorf("%w: payload length %d", errBadHeader, h.payloadLen)
	}
	return h, nil
}

// decodedRecord is a record decoded in place; key and payload alias the
// input.
type decodedRecord struct {
	header  recordHeader
	key     []byte
	payload []byte
}

// decodeRecord decodes the record at the start of b, verifying both CRCs.
// It returns the record and its length. On errShortRecord, need is the
// number of bytes required to go further (0 if unknown: fewer than
// headerSize bytes). On errBadPayload the header and length are valid.
func decodeRecord(b []byte) (rec decodedRecord, need int, err error) {
	if len(b) < headerSize {
		return rec, headerSize, errShortRecord
	}
	h, err := parseHeader(b)
	if err != nil {
		return rec, 0, err
	}
	rec.header = h
	if len(b) < headerSize+h.keyLen {
		return rec, headerSize + h.keyLen, errShortRecord
	}
	rec.key = b[headerSize : headerSize+h.keyLen]
	if headerChecksum(b, rec.key) != h.headerCRC {
		return rec, 0, fmt.Errorf("%w: header checksum mismatch", errBadHeader)
	}
	n := h.recordLen()
	if len(b) < n {
		return rec, n, errShortRecord
	}
	rec.payload = b[headerSize+h.keyLen : n]
	if crc32.Checksum(rec.payload, castagnoli) != h.payloadCRC {
		return rec, n, errBadPayload
	}
	return rec, n, nil
}

// appendRecordBytes appends an encoded data record to dst; tests and tools use
// it, the write path encodes the header alone and copies the parts.
func appendRecordBytes(dst []byte, key []byte, version, chunkOff uint64, tag uint16, payload []byte) []byte {
	var hdr [headerSize]byte
	encodeHeader(hdr[:], key, version, chunkOff, tag, payload)
	dst = append(dst, hdr[:]...)
	dst = append(dst, key...)
	return append(dst, payload...)
}
