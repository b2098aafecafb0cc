package checksum

import (
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"fmt"
	"hash"
	"hash/crc32"
	"strings"

	"github.com/cespare/xxhash/v2"
	"github.com/minio/crc64nvme"
	"github.com/zeebo/xxh3"
)

// Algorithm is an S3 flexible-checksum algorithm. The zero value, None,
// means "no checksum requested".
type Algorithm uint8

// The algorithms S3 supports for x-amz-checksum-*. The xxHash family is
// unseeded; its digests are the canonical big-endian bytes (XXHASH128:
// high 64 bits first), as the AWS SDKs' checksum library writes them.
const (
	None Algorithm = iota
	CRC32
	CRC32C
	CRC64NVME
	SHA1
	SHA256
	SHA512
	MD5
	XXHASH64  // XXH64
	XXHASH3   // XXH3, 64-bit
	XXHASH128 // XXH3, 128-bit
)

// Algorithms lists every algorithm except None, in the order of the S3
// API model (the SDKs' ChecksumAlgorithm enumeration).
var Algorithms = []Algorithm{CRC32, CRC32C, CRC64NVME, SHA1, SHA256, SHA512, MD5, XXHASH64, XXHASH3, XXHASH128}

// Default is the checksum S3 stores with an object uploaded without one:
// a FULL_OBJECT CRC64NVME, computed in the same pass as the ETag.
const Default = CRC64NVME

// Request and response header names of the checksum protocol.
const (
	HeaderPrefix       = "x-amz-checksum-"              // + lower-case algorithm name
	HeaderSDKAlgorithm = "x-amz-sdk-checksum-algorithm" // algorithm the SDK used
	HeaderAlgorithm    = "x-amz-checksum-algorithm"     // CreateMultipartUpload
	HeaderType         = "x-amz-checksum-type"          // FULL_OBJECT or COMPOSITE
	HeaderMode         = "x-amz-checksum-mode"          // "ENABLED" on GET/HEAD
	HeaderTrailer      = "x-amz-trailer"                // names the trailing checksum header
	HeaderContentMD5   = "Content-Md5"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// String returns the S3 spelling: "CRC32", "CRC64NVME", ... ("" for None).
func (a Algorithm) String() string {
	switch a {
	case CRC32:
		return "CRC32"
	case CRC32C:
		return "CRC32C"
	case CRC64NVME:
		return "CRC64NVME"
	case SHA1:
		return "SHA1"
	case SHA256:
		return "SHA256"
	case SHA512:
		return "SHA512"
	case MD5:
		return "MD5"
	case XXHASH64:
		return "XXHASH64"
	case XXHASH3:
		return "XXHASH3"
	case XXHASH128:
		return "XXHASH128"
	}
	return ""
}

// ParseAlgorithm parses an algorithm name case-insensitively ("crc32c",
// "SHA256"). It reports false for unknown names and for "".
func ParseAlgorithm(name string) (Algorithm, bool) {
	for _, a := range Algorithms {
		if strings.EqualFold(name, a.String()) {
			return a, true
		}
	}
	return None, false
}

// HeaderName returns the lower-case header carrying this checksum, e.g.
// "x-amz-checksum-crc32c".
func (a Algorithm) HeaderName() string {
	if a == None {
		return ""
	}
	return HeaderPrefix + strings.ToLower(a.String())
}

// Size returns the digest length in bytes.
func (a Algorithm) Size() int {
	switch a {
	case CRC32, CRC32C:
		return 4
	case CRC64NVME, XXHASH64, XXHASH3:
		return 8
	case SHA1:
		return sha1.Size
	case SHA256:
		return sha256.Size
	case SHA512:
		return sha512.Size
	case MD5:
		return md5.Size
	case XXHASH128:
		return 16
	}
	return 0
}

// IsCRC reports whether the algorithm is a CRC, i.e. whether full-object
// checksums of multipart uploads can be combined from the parts' values.
func (a Algorithm) IsCRC() bool { return a == CRC32 || a == CRC32C || a == CRC64NVME }

// New returns a fresh hash computing the algorithm; Sum appends the
// big-endian digest. It returns nil for None.
func (a Algorithm) New() hash.Hash {
	switch a {
	case CRC32:
		return crc32.NewIEEE()
	case CRC32C:
		return crc32.New(castagnoli)
	case CRC64NVME:
		return crc64nvme.New()
	case SHA1:
		return sha1.New()
	case SHA256:
		return sha256.New()
	case SHA512:
		return sha512.New()
	case MD5:
		return md5.New()
	case XXHASH64:
		return xxhash.New()
	case XXHASH3:
		return xxh3.New()
	case XXHASH128:
		return xxh3.New128()
	}
	return nil
}

// Sum computes the algorithm's digest of data in one call.
func (a Algorithm) Sum(data []byte) []byte {
	h := a.New()
	if h == nil {
		return nil
	}
	h.Write(data)
	return h.Sum(nil)
}

// Encode returns the header form of a digest: standard base64.
func Encode(sum []byte) string { return base64.StdEncoding.EncodeToString(sum) }

// Decode parses the header form of a digest for algorithm a, checking its
// length; the error is InvalidRequest as S3 reports it.
func (a Algorithm) Decode(value string) ([]byte, error) {
	sum, err := base64.StdEncoding.DecodeString(strings.TrimSpace(value))
	if err != nil || len(sum) != a.Size() {
		return nil, errInvalidRequest(fmt.Sprintf("Value for %s header is invalid.", a.HeaderName()))
	}
	return sum, nil
}

// Checksum is one computed or expected checksum value.
type Checksum struct {
	Algorithm Algorithm
	Sum       []byte // raw big-endian digest
}

// IsZero reports whether c holds no checksum.
func (c Checksum) IsZero() bool { return c.Algorithm == None }

// Base64 returns the header value of the checksum.
func (c Checksum) Base64() string { return Encode(c.Sum) }

// Type is the x-amz-checksum-type of an object or multipart upload.
type Type uint8

// Checksum types. The zero value means "not specified".
const (
	TypeUnset Type = iota
	FullObject
	Composite
)

func (t Type) String() string {
	switch t {
	case FullObject:
		return "FULL_OBJECT"
	case Composite:
		return "COMPOSITE"
	}
	return ""
}

// ParseType parses "FULL_OBJECT" or "COMPOSITE" (case-insensitively);
// "" gives TypeUnset. Other values are InvalidRequest.
func ParseType(s string) (Type, error) {
	switch {
	case s == "":
		return TypeUnset, nil
	case strings.EqualFold(s, "FULL_OBJECT"):
		return FullObject, nil
	case strings.EqualFold(s, "COMPOSITE"):
		return Composite, nil
	}
	return TypeUnset, errInvalidRequest("Value for x-amz-checksum-type header is invalid.")
}

// DefaultType returns the checksum type S3 uses for a multipart upload
// created with algorithm a and no explicit type: FULL_OBJECT for
// CRC64NVME (the only type it supports), COMPOSITE otherwise.
func DefaultType(a Algorithm) Type {
	if a == CRC64NVME {
		return FullObject
	}
	return Composite
}

// ValidType reports whether S3 accepts checksum type t for algorithm a:
// FULL_OBJECT only for the CRCs, COMPOSITE for all but CRC64NVME.
func ValidType(a Algorithm, t Type) bool {
	switch t {
	case FullObject:
		return a.IsCRC()
	case Composite:
		return a != CRC64NVME && a != None
	}
	return true
}
