package sse

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
)

// KeySize is the size of every key here: master, customer, data, part.
const KeySize = 32

// Key is a 256-bit key.
type Key [KeySize]byte

// ErrKeyMismatch reports a sealed data key that the given key does not
// open: the wrong customer key, or a master key that is not the one that
// sealed it.
var ErrKeyMismatch = errors.New("sse: the key does not open the sealed data key")

// NewDataKey returns a fresh random data key.
func NewDataKey() (Key, error) {
	var k Key
	if _, err := rand.Read(k[:]); err != nil {
		return k, fmt.Errorf("sse: data key: %w", err)
	}
	return k, nil
}

// PartKey is the key of one stream of an object: part 0 for a single
// PUT, the part number for a multipart upload's part. Each part is its
// own DARE stream; deriving its key keeps two parts (or a part uploaded
// twice) from sharing a key's nonce space.
func (k Key) PartKey(part int) Key {
	mac := hmac.New(sha256.New, k[:])
	mac.Write([]byte("b3 sse part key"))
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(part))
	mac.Write(n[:])
	var out Key
	copy(out[:], mac.Sum(nil))
	return out
}

// sealVersion starts every sealed key: a format byte, so that another
// sealing can be told apart later.
const sealVersion = 1

// Seal seals data key dk under kek (a master key or a customer's key),
// bound to context (the object's bucket and key): the result opens only
// with the same kek and context. Layout: version byte, 12-byte nonce,
// AES-256-GCM of dk with its 16-byte tag (61 bytes).
func Seal(kek Key, dk Key, context string) ([]byte, error) {
	aead, err := newGCM(kek)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 1+aead.NonceSize(), 1+aead.NonceSize()+KeySize+aead.Overhead())
	out[0] = sealVersion
	if _, err := rand.Read(out[1:]); err != nil {
		return nil, fmt.Errorf("sse: nonce: %w", err)
	}
	return aead.Seal(out, out[1:], dk[:], []byte(context)), nil
}

// Unseal opens what Seal sealed; ErrKeyMismatch if kek or context differ
// (or the sealed bytes were altered).
func Unseal(kek Key, sealed []byte, context string) (Key, error) {
	var dk Key
	aead, err := newGCM(kek)
	if err != nil {
		return dk, err
	}
	if len(sealed) != 1+aead.NonceSize()+KeySize+aead.Overhead() || sealed[0] != sealVersion {
		return dk, fmt.Errorf("sse: sealed key of %d bytes: %w", len(sealed), ErrKeyMismatch)
	}
	nonce, box := sealed[1:1+aead.NonceSize()], sealed[1+aead.NonceSize():]
	plain, err := aead.Open(nil, nonce, box, []byte(context))
	if err != nil {
		return dk, ErrKeyMismatch
	}
	copy(dk[:], plain)
	return dk, nil
}

func newGCM(k Key) (cipher.AEAD, error) {
	block, err := aes.NewCipher(k[:])
	if err != nil {
		return nil, fmt.Errorf("sse: %w", err)
	}
	return cipher.NewGCM(block)
}
