package server

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"github.com/b3-storage/b3/internal/sse"
)

// KeyRingFile holds b3 server's master keys when none are configured
// (--kms-keys, --kms-keys-file), made on first start. It protects against
// segment or metadata files leaking on their own; it does not protect a
// stolen data directory, which holds it: keep the keys elsewhere for that
// (docs/ENCRYPTION.md). Losing it loses every SSE-S3 and SSE-KMS object.
const KeyRingFile = "kms-keys"

// LoadOrCreateKeyRing returns the key ring kept in dir, making and saving
// one key, "default" (mode 0600), if there is none.
func LoadOrCreateKeyRing(dir string) (*sse.KeyRing, error) {
	path := filepath.Join(dir, KeyRingFile)
	keys, err := sse.LoadKeyRing(path)
	if err == nil || !errors.Is(err, fs.ErrNotExist) {
		return keys, err
	}
	entry, err := sse.NewKeyEntry("default")
	if err != nil {
		return nil, err
	}
	if err := WriteFileSync(path, []byte(entry+"\n"), 0o600); err != nil {
		return nil, fmt.Errorf("save the master keys: %w", err)
	}
	return sse.ParseKeyRing(entry)
}
