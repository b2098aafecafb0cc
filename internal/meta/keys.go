package meta

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"strings"
)

// Table prefixes; doc.go draws the full key layout.
const (
	tableBucket  = 'b'
	tableObject  = 'o'
	tableVersion = 'v'
	tableUpload  = 'u'
	tablePart    = 'p'
	tableSegment = 's'
	tableMisc    = 'm'
)

// UploadIDLen is the length of every upload ID. Upload keys are parsed from
// their end, which only works because the length is fixed.
const UploadIDLen = 32

// NewUploadID returns a fresh upload ID: the reserved version as 16 hex
// digits, so that the uploads of one key list in creation order, followed
// by 64 random bits, so that IDs cannot be guessed.
func NewUploadID(version uint64) string {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], version)
	_, _ = rand.Read(b[8:]) // crypto/rand.Read never fails
	return hex.EncodeToString(b[:])
}

// ValidUploadID reports whether s has the form NewUploadID returns. IDs
// from clients must pass it before they are used to build keys.
func ValidUploadID(s string) bool {
	if len(s) != UploadIDLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// validBucketName is the only bucket-name rule meta depends on: no 0x00,
// which separates the bucket from the key. S3 naming rules are the engine's.
func validBucketName(name string) bool {
	return name != "" && !strings.ContainsRune(name, 0)
}

func bucketKey(name string) []byte {
	return append([]byte{tableBucket}, name...)
}

// objectPrefix is the common prefix of every object key of bucket.
func objectPrefix(bucket string) []byte {
	k := make([]byte, 0, 2+len(bucket)+64)
	k = append(k, tableObject)
	k = append(k, bucket...)
	return append(k, 0)
}

func objectKey(bucket, key string) []byte {
	return append(objectPrefix(bucket), key...)
}

func uploadPrefix(bucket string) []byte {
	k := make([]byte, 0, 3+len(bucket)+64+UploadIDLen)
	k = append(k, tableUpload)
	k = append(k, bucket...)
	return append(k, 0)
}

func uploadKey(bucket, key, uploadID string) []byte {
	k := append(uploadPrefix(bucket), key...)
	k = append(k, 0)
	return append(k, uploadID...)
}

// parseUploadSuffix splits the part of an upload key after the bucket
// prefix into object key and upload ID, reading the fixed-length ID from
// the end because object keys may contain 0x00.
func parseUploadSuffix(rest []byte) (key, uploadID string, ok bool) {
	if len(rest) < UploadIDLen+1 || rest[len(rest)-UploadIDLen-1] != 0 {
		return "", "", false
	}
	return string(rest[:len(rest)-UploadIDLen-1]), string(rest[len(rest)-UploadIDLen:]), true
}

func partPrefix(uploadID string) []byte {
	k := make([]byte, 0, 1+UploadIDLen+2)
	k = append(k, tablePart)
	return append(k, uploadID...)
}

func partKey(uploadID string, number int) []byte {
	return binary.BigEndian.AppendUint16(partPrefix(uploadID), uint16(number))
}

func segmentKey(segment uint64) []byte {
	return binary.BigEndian.AppendUint64([]byte{tableSegment}, segment)
}

var (
	versionKey = []byte("mversion")
	formatKey  = []byte("mformat")
)

// successor returns the smallest key greater than every key having prefix p
// (the last byte below 0xFF incremented, the 0xFF bytes after it dropped),
// or nil when there is none (p is empty or all 0xFF): nil as an upper bound
// means unbounded. p is not modified.
func successor(p []byte) []byte {
	for i := len(p) - 1; i >= 0; i-- {
		if p[i] != 0xFF {
			s := make([]byte, i+1)
			copy(s, p)
			s[i]++
			return s
		}
	}
	return nil
}
