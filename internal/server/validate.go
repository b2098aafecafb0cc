package server

import (
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/b3-storage/b3/internal/objstore"
)

// settingRange is the allowed range of one setting, checked on the
// resolved Config; LoadSettings names the value's source when one fails.
type settingRange struct {
	name  string
	check func(c *Config) error
}

func atLeast(d, lo time.Duration, zeroOK bool) error {
	if (d == 0 && zeroOK) || d >= lo {
		return nil
	}
	if zeroOK {
		return fmt.Errorf("want 0 or at least %s", lo)
	}
	return fmt.Errorf("want at least %s", lo)
}

func hostPort(addr string, emptyOK bool) error {
	if addr == "" && emptyOK {
		return nil
	}
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return fmt.Errorf("want host:port: %w", err)
	}
	return nil
}

func pair(a, b string, names string) error {
	if (a == "") != (b == "") {
		return fmt.Errorf("give both of %s, or neither", names)
	}
	return nil
}

// MinSecretLen is the shortest root secret key and admin token b3
// accepts (the cluster secret's minimum too, cluster.MinSecretLen): short
// ones fall to guessing. AWS's secret keys have 40 characters, as do the
// ones b3 generates.
const MinSecretLen = 16

func minLen(what, v string) error {
	if v != "" && len(v) < MinSecretLen {
		return fmt.Errorf("%s has %d characters, want at least %d", what, len(v), MinSecretLen)
	}
	return nil
}

// settingRanges lists the checks of every setting whose type admits
// values b3 cannot use (parsing already refused malformed ones).
func settingRanges() []settingRange {
	return []settingRange{
		{"address", func(c *Config) error { return hostPort(c.Address, false) }},
		{"admin-address", func(c *Config) error { return hostPort(c.AdminAddress, true) }},
		{"access-key", func(c *Config) error { return pair(c.AccessKey, c.SecretKey, "--access-key and --secret-key") }},
		{"secret-key", func(c *Config) error { return minLen("the root secret key", c.SecretKey) }},
		{"admin-token", func(c *Config) error { return minLen("the admin token", c.AdminToken) }},
		{"metrics-token", func(c *Config) error { return minLen("the metrics token", c.MetricsToken) }},
		{"segment-size", func(c *Config) error {
			if c.SegmentSize < 1<<20 || c.SegmentSize > 1<<40 {
				return errors.New("want 1MiB to 1TiB")
			}
			return nil
		}},
		{"inline-max", func(c *Config) error {
			if c.InlineMax > objstore.MaxInline {
				return fmt.Errorf("want at most %d bytes (1MiB)", objstore.MaxInline)
			}
			return nil
		}},
		{"vacuum-threshold", func(c *Config) error {
			if c.VacuumThreshold <= 0 || c.VacuumThreshold > 1 {
				return errors.New("want a dead/size ratio above 0 and at most 1, e.g. 0.5")
			}
			return nil
		}},
		{"vacuum-interval", func(c *Config) error { return atLeast(c.VacuumInterval, time.Second, true) }},
		{"lifecycle-interval", func(c *Config) error { return atLeast(c.LifecycleInterval, time.Second, false) }},
		{"lifecycle-day", func(c *Config) error { return atLeast(c.LifecycleDay, time.Second, false) }},
		{"cache-max-object", func(c *Config) error {
			if c.CacheBytes > 0 && c.CacheMaxObject > c.CacheBytes {
				return fmt.Errorf("larger than --cache-size (%d bytes)", c.CacheBytes)
			}
			return nil
		}},
		{"tls-cert", func(c *Config) error { return pair(c.TLSCert, c.TLSKey, "--tls-cert and --tls-key") }},
		{"admin-tls-cert", func(c *Config) error {
			return pair(c.AdminTLSCert, c.AdminTLSKey, "--admin-tls-cert and --admin-tls-key")
		}},
		{"console-tls-cert", func(c *Config) error {
			return pair(c.ConsoleTLSCert, c.ConsoleTLSKey, "--console-tls-cert and --console-tls-key")
		}},
		{"tls-check-interval", func(c *Config) error { return atLeast(c.TLSCheckInterval, time.Second, false) }},
		{"drain-delay", func(c *Config) error {
			if c.DrainDelay > 5*time.Minute {
				return errors.New("want at most 5m")
			}
			return nil
		}},
		{"bucket-metrics", func(c *Config) error {
			if c.BucketMetrics < 0 || c.BucketMetrics > 10000 {
				return errors.New("want 0 (off) to 10000")
			}
			return nil
		}},
		{"max-retention", func(c *Config) error { return atLeast(c.MaxRetention, time.Second, false) }},
		{"bucket-metrics-interval", func(c *Config) error { return atLeast(c.BucketMetricsInterval, 10*time.Second, false) }},
	}
}

// Validate checks what Run needs of a Config built in code (LoadSettings
// checks every setting's range, naming its source): zero values stand
// for the defaults here.
func (c *Config) Validate() error {
	if err := c.Limits.Validate(); err != nil {
		return err
	}
	if c.VacuumThreshold < 0 || c.VacuumThreshold > 1 {
		return fmt.Errorf("vacuum threshold %v: want a ratio in (0, 1]", c.VacuumThreshold)
	}
	if err := minLen("the root secret key", c.SecretKey); err != nil {
		return err
	}
	if err := minLen("the admin token", c.AdminToken); err != nil {
		return err
	}
	if err := minLen("the metrics token", c.MetricsToken); err != nil {
		return err
	}
	if err := pair(c.TLSCert, c.TLSKey, "the TLS certificate and key"); err != nil {
		return err
	}
	if err := pair(c.AdminTLSCert, c.AdminTLSKey, "the admin TLS certificate and key"); err != nil {
		return err
	}
	if err := pair(c.ConsoleTLSCert, c.ConsoleTLSKey, "the console TLS certificate and key"); err != nil {
		return err
	}
	if c.SegmentSize < 0 || c.LifecycleDay < 0 || c.DrainDelay < 0 || c.BucketMetrics < 0 {
		return errors.New("negative segment size, lifecycle day, drain delay or bucket metrics count")
	}
	return nil
}
