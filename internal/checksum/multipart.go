package checksum

import (
	"bytes"
	"crypto/md5"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash/crc32"
	"net/http"
	"strconv"
	"strings"
)

// Part is what a multipart completion needs to know of one part.
type Part struct {
	Sum  []byte // raw digest of the part (MD5 for ETags, else the checksum)
	Size int64  // part size in bytes (used by CombineCRC only)
}

// MultipartETag returns the S3 ETag of a completed multipart upload
// (without quotes): hex(md5(md5(part1) || ... || md5(partN))) + "-N".
func MultipartETag(partMD5s [][]byte) string {
	h := md5.New()
	for _, sum := range partMD5s {
		h.Write(sum)
	}
	return hex.EncodeToString(h.Sum(nil)) + "-" + strconv.Itoa(len(partMD5s))
}

// CompositeChecksum returns the COMPOSITE checksum of a multipart upload as
// S3 reports it: base64(alg(sum1 || ... || sumN)) + "-N".
func CompositeChecksum(alg Algorithm, partSums [][]byte) (string, error) {
	h := alg.New()
	if h == nil {
		return "", fmt.Errorf("composite checksum: no algorithm")
	}
	for i, sum := range partSums {
		if len(sum) != alg.Size() {
			return "", fmt.Errorf("composite %s checksum: part %d digest has %d bytes", alg, i+1, len(sum))
		}
		h.Write(sum)
	}
	return Encode(h.Sum(nil)) + "-" + strconv.Itoa(len(partSums)), nil
}

// CombineCRC returns the FULL_OBJECT CRC of the concatenation of parts,
// computed from each part's CRC and size alone (the zlib crc_combine
// method), so completing a multipart upload never re-reads the data.
func CombineCRC(alg Algorithm, parts []Part) ([]byte, error) {
	poly, width, ok := crcParams(alg)
	if !ok {
		return nil, fmt.Errorf("combine checksum: %s is not a CRC", alg)
	}
	var combined uint64 // CRC of the empty string is 0 for all three
	for i, part := range parts {
		if len(part.Sum) != alg.Size() || part.Size < 0 {
			return nil, fmt.Errorf("combine %s checksum: part %d is malformed", alg, i+1)
		}
		var crc uint64
		if width == 32 {
			crc = uint64(binary.BigEndian.Uint32(part.Sum))
		} else {
			crc = binary.BigEndian.Uint64(part.Sum)
		}
		combined = crcCombine(poly, width, combined, crc, part.Size)
	}
	out := make([]byte, alg.Size())
	if width == 32 {
		binary.BigEndian.PutUint32(out, uint32(combined))
	} else {
		binary.BigEndian.PutUint64(out, combined)
	}
	return out, nil
}

// crcParams returns the reflected polynomial and width of a CRC algorithm.
// All three use init = xorout = all ones, which crcCombine relies on.
func crcParams(alg Algorithm) (poly uint64, width uint, ok bool) {
	switch alg {
	case CRC32:
		return crc32.IEEE, 32, true
	case CRC32C:
		return crc32.Castagnoli, 32, true
	case CRC64NVME:
		return crc64NVMEPoly, 64, true
	}
	return 0, 0, false
}

// crc64NVMEPoly is the CRC-64/NVME polynomial 0xad93d23594c93659, reflected
// (as hash/crc64 and minio/crc64nvme take it). Note: 0x9a6c9329ac4bc9ad,
// sometimes quoted, is wrong; TestAlgorithmVectors pins the check value.
const crc64NVMEPoly = 0x9a6c9329ac4bc9b5

// multModP multiplies a and b modulo the reflected polynomial poly of the
// given width (bit width-1 is x^0).
func multModP(poly uint64, width uint, a, b uint64) uint64 {
	top := uint64(1) << (width - 1)
	var product uint64
	for m := top; m != 0; m >>= 1 {
		if a&m != 0 {
			product ^= b
			if a&(m-1) == 0 {
				break
			}
		}
		if b&1 != 0 {
			b = b>>1 ^ poly
		} else {
			b >>= 1
		}
	}
	return product
}

// xPow8nModP returns x^(8n) modulo poly: the operator that appends n zero
// bytes to a CRC register.
func xPow8nModP(poly uint64, width uint, n int64) uint64 {
	result := uint64(1) << (width - 1)    // x^0
	power := uint64(1) << (width - 1 - 8) // x^8, squared as n's bits advance
	for n > 0 {
		if n&1 != 0 {
			result = multModP(poly, width, power, result)
		}
		power = multModP(poly, width, power, power)
		n >>= 1
	}
	return result
}

// crcCombine returns crc(A || B) from crc(A), crc(B) and len(B).
func crcCombine(poly uint64, width uint, crcA, crcB uint64, lenB int64) uint64 {
	return multModP(poly, width, xPow8nModP(poly, width, lenB), crcA) ^ crcB
}

// ObjectChecksum is what a CompleteMultipartUpload request declares about
// the object it creates: x-amz-checksum-<alg> carries the checksum of the
// whole object (not of the request's XML body), as "<base64>" or, for a
// COMPOSITE checksum, "<base64>-N"; x-amz-checksum-type its type.
type ObjectChecksum struct {
	Checksum      // zero when the request declares no value
	Parts    int  // the N of "<base64>-N"; 0 when the value has none
	Type     Type // TypeUnset when the request declares none
}

// ParseObjectChecksum reads the declared object checksum of a
// CompleteMultipartUpload request, refusing unknown algorithms and
// malformed values with InvalidRequest.
func ParseObjectChecksum(h http.Header) (ObjectChecksum, error) {
	var oc ObjectChecksum
	typ, err := ParseType(h.Get(HeaderType))
	if err != nil {
		return ObjectChecksum{}, err
	}
	oc.Type = typ
	alg, value, err := valueHeader(h)
	if err != nil || alg == None {
		return oc, err
	}
	value = strings.TrimSpace(value)
	if base, count, ok := strings.Cut(value, "-"); ok {
		n, err := strconv.Atoi(count)
		if err != nil || n < 1 {
			return ObjectChecksum{}, errInvalidRequest(fmt.Sprintf("Value for %s header is invalid.", alg.HeaderName()))
		}
		value, oc.Parts = base, n
	}
	sum, err := alg.Decode(value)
	if err != nil {
		return ObjectChecksum{}, err
	}
	oc.Checksum = Checksum{Algorithm: alg, Sum: sum}
	return oc, nil
}

// Verify compares the declaration with the object's checksum as computed
// from its parts: algorithm alg (None if the object has none), type typ
// and the stored value ("<base64>" or "<base64>-N"). A different
// algorithm is InvalidRequest; a different type or value BadDigest, as S3
// documents.
func (oc ObjectChecksum) Verify(alg Algorithm, typ Type, value string) error {
	if oc.Type != TypeUnset && oc.Type != typ {
		return &Error{Code: "BadDigest", Status: http.StatusBadRequest,
			Message: fmt.Sprintf("The upload was created using the %s checksum mode. The complete request must use the same checksum mode.", describeType(typ))}
	}
	if oc.IsZero() {
		return nil
	}
	if oc.Algorithm != alg {
		name := alg.String()
		if alg == None {
			name = "null"
		}
		return errInvalidRequest(fmt.Sprintf("The upload was created using the %s checksum algorithm. The complete request must use the same checksum algorithm.", name))
	}
	base, count, composite := strings.Cut(value, "-")
	if oc.Parts != 0 && (!composite || strconv.Itoa(oc.Parts) != count) {
		return errBadDigestChecksum(alg)
	}
	if stored, err := alg.Decode(base); err != nil || !bytes.Equal(stored, oc.Sum) {
		return errBadDigestChecksum(alg)
	}
	return nil
}

func describeType(t Type) string {
	if t == TypeUnset {
		return "null"
	}
	return t.String()
}
