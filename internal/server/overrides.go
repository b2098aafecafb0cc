package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/b3-storage/b3/internal/admin"
)

// OverridesFile holds the settings changed at run time through the admin
// API (limits, vacuum auto/stop, cache size), under the data root. They are applied
// over the configured values at every start, until `b3 admin settings
// reset` drops them.
const OverridesFile = "overrides.json"

// overrideStore is admin.OverrideStore over OverridesFile, written with
// WriteFileSync (temp file, fsync, rename) before a change is answered.
type overrideStore struct {
	path string
	mu   sync.Mutex
	cur  admin.Overrides
}

func openOverrides(root string) (*overrideStore, error) {
	st := &overrideStore{path: filepath.Join(root, OverridesFile)}
	data, err := os.ReadFile(st.path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return st, nil
	case err != nil:
		return nil, fmt.Errorf("read runtime settings: %w", err)
	}
	if err := json.Unmarshal(data, &st.cur); err != nil {
		return nil, fmt.Errorf("runtime settings %s are malformed (b3 admin settings reset, or delete the file): %w", st.path, err)
	}
	return st, nil
}

func (st *overrideStore) Overrides() admin.Overrides {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.cur
}

func (st *overrideStore) SaveOverrides(o admin.Overrides) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	data, _ := json.MarshalIndent(o, "", "  ")
	if err := WriteFileSync(st.path, append(data, '\n'), 0o600); err != nil {
		return fmt.Errorf("save runtime settings: %w", err)
	}
	st.cur = o
	return nil
}

// apply puts the kept overrides over cfg and says which it applied.
func (st *overrideStore) apply(cfg *Config) (applied []string, err error) {
	o := st.Overrides()
	if o.Limits != nil {
		l := o.Limits.ToLimits()
		if err := l.Validate(); err != nil {
			return nil, fmt.Errorf("runtime settings %s: limits: %w", st.path, err)
		}
		cfg.Limits = l
		applied = append(applied, "limits")
	}
	if o.VacuumInterval != nil {
		d, err := time.ParseDuration(*o.VacuumInterval)
		if err != nil || d < 0 {
			return nil, fmt.Errorf("runtime settings %s: vacuum_interval %q: want a duration", st.path, *o.VacuumInterval)
		}
		cfg.VacuumInterval = d
		applied = append(applied, "vacuum-interval")
	}
	if o.CacheBytes != nil {
		if n := *o.CacheBytes; n < 0 || n > admin.MaxCacheBytes {
			return nil, fmt.Errorf("runtime settings %s: cache_size_bytes %d: want 0 to %d", st.path, n, int64(admin.MaxCacheBytes))
		}
		cfg.CacheBytes = *o.CacheBytes
		applied = append(applied, "cache-size")
	}
	return applied, nil
}
