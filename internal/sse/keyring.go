package sse

import (
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"
)

// KeyRing holds the master keys by name: the embedded default KMS. The
// default key seals the data keys of SSE-S3 objects and of SSE-KMS
// objects that name no key; SSE-KMS names any key of the ring.
type KeyRing struct {
	keys       map[string]Key
	defaultKey string
}

// ErrNoKey reports a key name the ring does not hold.
var ErrNoKey = errors.New("sse: no such master key")

// ParseKeyRing reads master keys from spec: entries "name:base64key"
// (32 bytes once decoded) separated by commas or new lines; blank lines
// and lines starting with # are ignored. The first entry is the default
// key.
func ParseKeyRing(spec string) (*KeyRing, error) {
	r := &KeyRing{keys: map[string]Key{}}
	fields := strings.FieldsFunc(spec, func(c rune) bool { return c == ',' || c == '\n' || c == '\r' })
	for _, f := range fields {
		f = strings.TrimSpace(f)
		if f == "" || strings.HasPrefix(f, "#") {
			continue
		}
		name, b64, ok := strings.Cut(f, ":")
		if !ok || name == "" {
			return nil, fmt.Errorf("sse: key entry %q: want name:base64key", redact(f))
		}
		raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(b64))
		if err != nil || len(raw) != KeySize {
			return nil, fmt.Errorf("sse: key %q: want %d bytes in base64", name, KeySize)
		}
		if _, dup := r.keys[name]; dup {
			return nil, fmt.Errorf("sse: key %q given twice", name)
		}
		var k Key
		copy(k[:], raw)
		r.keys[name] = k
		if r.defaultKey == "" {
			r.defaultKey = name
		}
	}
	if r.defaultKey == "" {
		return nil, errors.New("sse: no master key given")
	}
	return r, nil
}

// redact keeps an entry's name and hides its key in an error message.
func redact(entry string) string {
	name, _, _ := strings.Cut(entry, ":")
	return name + ":…"
}

// LoadKeyRing reads ParseKeyRing's format from a file.
func LoadKeyRing(path string) (*KeyRing, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("sse: key file: %w", err)
	}
	r, err := ParseKeyRing(string(data))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return r, nil
}

// NewKeyEntry returns a line for a key file: name and a fresh random key.
func NewKeyEntry(name string) (string, error) {
	k, err := NewDataKey()
	if err != nil {
		return "", err
	}
	return name + ":" + base64.StdEncoding.EncodeToString(k[:]), nil
}

// Default is the name of the default key.
func (r *KeyRing) Default() string { return r.defaultKey }

// Names lists the ring's key names, sorted.
func (r *KeyRing) Names() []string {
	names := make([]string, 0, len(r.keys))
	for n := range r.keys {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Key returns the master key named name ("" is the default key).
func (r *KeyRing) Key(name string) (Key, string, error) {
	if name == "" {
		name = r.defaultKey
	}
	k, ok := r.keys[name]
	if !ok {
		return Key{}, name, fmt.Errorf("%w: %q", ErrNoKey, name)
	}
	return k, name, nil
}

// KMSStatus describes the key ring and its re-wrap job (b3 admin kms
// status).
type KMSStatus struct {
	DefaultKey string         `json:"default_key"`
	Keys       []string       `json:"keys"`
	Rotation   RotationStatus `json:"rotation"`
}

// RotationStatus reports the last or running re-wrap job: data keys
// sealed under From (every SSE-S3 key not sealed under To, if From is
// "") sealed again under To; no object byte is rewritten.
type RotationStatus struct {
	Running   bool       `json:"running"`
	From      string     `json:"from"`
	To        string     `json:"to"`
	Started   *time.Time `json:"started"`
	Finished  *time.Time `json:"finished"`
	Scanned   int64      `json:"scanned"`
	Rewrapped int64      `json:"rewrapped"`
	Failed    int64      `json:"failed"`
	LastError string     `json:"last_error"`
}
