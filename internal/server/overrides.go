package server

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"sync"
	"time"

	"github.com/b3-storage/b3/internal/admin"
	"github.com/b3-storage/b3/internal/iolimit"
)

// OverridesFile holds the settings changed at run time through the admin
// API (limits, vacuum auto/stop, cache size), under the data root. They are applied
// over the configured values at every start, until `b3 admin settings
// reset` drops them.
const OverridesFile = "overrides.json"

// OverrideStore is admin.OverrideStore over OverridesFile, written with
// WriteFileSync (temp file, fsync, rename) before a change is answered.
// b3 server and b3 node both keep theirs here.
type OverrideStore struct {
	path string
	mu   sync.Mutex
	cur  admin.Overrides
}

// OpenOverrideStore reads root's OverridesFile (none: no overrides).
func OpenOverrideStore(root string) (*OverrideStore, error) {
	st := &OverrideStore{path: filepath.Join(root, OverridesFile)}
	if _, err := ReadJSONFile(st.path, "runtime settings", &st.cur); err != nil {
		return nil, fmt.Errorf("%w (delete the file to go back to the configuration)", err)
	}
	return st, nil
}

func (st *OverrideStore) Overrides() admin.Overrides {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.cur
}

func (st *OverrideStore) SaveOverrides(o admin.Overrides) error {
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
func (st *OverrideStore) apply(cfg *Config) (applied []string, err error) {
	return st.Apply(&cfg.Limits, &cfg.VacuumInterval, &cfg.CacheBytes)
}

// Apply puts the kept overrides over the configured settings it is given
// (a nil one, such as the cache size of a node without a cache, is left
// out) and says which it applied.
func (st *OverrideStore) Apply(limits *iolimit.Limits, vacuumInterval *time.Duration, cacheBytes *int64) (applied []string, err error) {
	o := st.Overrides()
	if o.Limits != nil && limits != nil {
		l := o.Limits.ToLimits()
		if err := l.Validate(); err != nil {
			return nil, fmt.Errorf("runtime settings %s: limits: %w", st.path, err)
		}
		*limits = l
		applied = append(applied, "limits")
	}
	if o.VacuumInterval != nil && vacuumInterval != nil {
		d, err := time.ParseDuration(*o.VacuumInterval)
		if err != nil || d < 0 {
			return nil, fmt.Errorf("runtime settings %s: vacuum_interval %q: want a duration", st.path, *o.VacuumInterval)
		}
		*vacuumInterval = d
		applied = append(applied, "vacuum-interval")
	}
	if o.CacheBytes != nil && cacheBytes != nil {
		if n := *o.CacheBytes; n < 0 || n > admin.MaxCacheBytes {
			return nil, fmt.Errorf("runtime settings %s: cache_size_bytes %d: want 0 to %d", st.path, n, int64(admin.MaxCacheBytes))
		}
		*cacheBytes = *o.CacheBytes
		applied = append(applied, "cache-size")
	}
	return applied, nil
}
