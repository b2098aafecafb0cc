package server

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// VersionKeyFile holds the key of the version ids clients see (s3api's
// versionids.go), made on first start. It must last as long as the
// store: with another key every version id a client kept is refused
// (the versions themselves are unchanged). Back it up with the data.
const VersionKeyFile = "version-ids.key"

// LoadOrCreateVersionKey returns the version-id key kept in dir, making
// and saving one (mode 0600) if there is none.
func LoadOrCreateVersionKey(dir string) ([]byte, error) {
	path := filepath.Join(dir, VersionKeyFile)
	data, err := os.ReadFile(path)
	switch {
	case err == nil:
		key, err := hex.DecodeString(strings.TrimSpace(string(data)))
		if err != nil || len(key) != 32 {
			return nil, fmt.Errorf("version-id key file %s is malformed (it must hold the 64 hex digits it was made with: restore it from a backup; a new key changes every version id clients see)", path)
		}
		return key, nil
	case !errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("read the version-id key: %w", err)
	}
	key := make([]byte, 32)
	_, _ = rand.Read(key) // never fails (crypto/rand panics rather)
	if err := WriteFileSync(path, []byte(hex.EncodeToString(key)+"\n"), 0o600); err != nil {
		return nil, fmt.Errorf("save the version-id key: %w", err)
	}
	return key, nil
}
