package s3api

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"

	"github.com/b3-storage/b3/internal/meta"
	"github.com/b3-storage/b3/internal/objstore"
)

// Version ids as clients see them.
//
// The engine names a version by an ordered counter (objstore.VersionID:
// 16 hex digits; on b3 node, term<<32|n), which anyone can guess. A
// client sees instead one AES block of it, under the store's version-id
// key, in hex:
//
//	AES-256(key, version u64BE | 8 zero bytes)  → 32 hex digits
//
// The block is a permutation, so each version has one id and an id one
// version; an id not made with the key decrypts to nonzero check bytes
// but once in 2^64, and is refused as malformed (InvalidArgument "Invalid
// version id specified", as S3 answers an id it never issued). An id has
// one spelling, lowercase: the same digits in uppercase are refused alike.
// "null" stays "null". The engine keeps its counter, and its order, to itself:
// every id crosses this boundary here, in versionCodec, and nowhere else
// in the S3 API.
//
// The key is the store's: Config.VersionKey, the same on every member of
// a cluster (derived from the cluster secret) and kept across restarts
// (b3 server keeps it in its data directory), since a client may keep an
// id for as long as the version lives.
type versionCodec struct {
	block cipher.Block
}

// newVersionCodec derives the AES key from key (any length; a fresh
// random one when empty, for a store that no client outlives).
func newVersionCodec(key []byte) *versionCodec {
	if len(key) == 0 {
		key = make([]byte, 32)
		_, _ = rand.Read(key)
	}
	sum := sha256.Sum256(append([]byte("b3 version ids\x00"), key...))
	block, err := aes.NewCipher(sum[:])
	if err != nil {
		panic(err) // a 32-byte key is always valid
	}
	return &versionCodec{block: block}
}

// encode returns the client's id of an engine version id ("null" stays).
func (c *versionCodec) encode(engineID string) string {
	v, null, err := objstore.ParseVersionID(engineID)
	if err != nil || null {
		return engineID // "null" ("" and others are never passed)
	}
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], v)
	c.block.Encrypt(b[:], b[:])
	return hex.EncodeToString(b[:])
}

// decode returns the engine version id of a client's id, or
// objstore.ErrInvalidVersionID if the key did not make it.
func (c *versionCodec) decode(clientID string) (string, error) {
	if clientID == objstore.NullVersionID {
		return clientID, nil
	}
	var b [16]byte
	if len(clientID) != 32 || !lowerHex(clientID) {
		return "", objstore.ErrInvalidVersionID
	}
	if _, err := hex.Decode(b[:], []byte(clientID)); err != nil {
		return "", objstore.ErrInvalidVersionID
	}
	c.block.Decrypt(b[:], b[:])
	v := binary.BigEndian.Uint64(b[:8])
	if binary.BigEndian.Uint64(b[8:]) != 0 || v == 0 {
		return "", objstore.ErrInvalidVersionID
	}
	return objstore.VersionID(&meta.Object{Versioned: true, Version: v}), nil
}

// lowerHex reports whether s is lowercase hex digits only: encode's
// spelling, the one spelling of an id (hex.Decode would take uppercase
// too, giving one version many ids).
func lowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// ClientVersionID is the id clients see of the engine's version id under
// key (Config.VersionKey): for a tool or a test that reads a store
// directly and speaks of its versions to S3 clients.
func ClientVersionID(key []byte, engineID string) string {
	return newVersionCodec(key).encode(engineID)
}

// clientVersionID is the id clients see of obj.
func (s *Server) clientVersionID(obj *meta.Object) string {
	return s.versions.encode(objstore.VersionID(obj))
}
