package lifecycle

import (
	"strings"
	"time"
)

// Day is the length of a real lifecycle day.
const Day = 24 * time.Hour

// Object is what a rule looks at.
type Object struct {
	Key     string
	Tags    map[string]string
	Size    int64
	Created time.Time
}

// Upload is an incomplete multipart upload.
type Upload struct {
	Key       string
	Initiated time.Time
}

// Matches reports whether the filter selects the object.
func (f *Filter) Matches(o Object) bool {
	if !strings.HasPrefix(o.Key, f.Prefix) {
		return false
	}
	for k, v := range f.Tags {
		if got, ok := o.Tags[k]; !ok || got != v {
			return false
		}
	}
	if f.SizeGreater > 0 && o.Size <= f.SizeGreater {
		return false
	}
	if f.SizeLess > 0 && o.Size >= f.SizeLess {
		return false
	}
	return true
}

// after returns base + days lifecycle days: with a real day, rounded up to
// the next midnight UTC (as AWS); with a debug day, exact.
func after(base time.Time, days int, day time.Duration) time.Time {
	if day <= 0 {
		day = Day
	}
	t := base.UTC().Add(time.Duration(days) * day)
	if day != Day {
		return t
	}
	if mid := t.Truncate(Day); !mid.Equal(t) {
		return mid.Add(Day)
	}
	return t
}

// Expiry returns when the configuration expires o (zero: never). A nil
// configuration never expires anything.
func (c *Configuration) Expiry(o Object, day time.Duration) time.Time {
	if c == nil {
		return time.Time{}
	}
	var best time.Time
	for i := range c.Rules {
		r := &c.Rules[i]
		if !r.Enabled || (r.ExpireDays == 0 && r.ExpireDate.IsZero()) || !r.Filter.Matches(o) {
			continue
		}
		t := r.ExpireDate
		if r.ExpireDays > 0 {
			t = after(o.Created, r.ExpireDays, day)
		}
		if best.IsZero() || t.Before(best) {
			best = t
		}
	}
	return best
}

// AbortAt returns when the configuration aborts the upload (zero: never).
// Only prefix filters apply to uploads: their tags and size are unknown.
func (c *Configuration) AbortAt(u Upload, day time.Duration) time.Time {
	if c == nil {
		return time.Time{}
	}
	var best time.Time
	for i := range c.Rules {
		r := &c.Rules[i]
		if !r.Enabled || r.AbortDays == 0 || !strings.HasPrefix(u.Key, r.Filter.Prefix) ||
			r.Filter.SizeGreater > 0 || r.Filter.SizeLess > 0 {
			continue
		}
		t := after(u.Initiated, r.AbortDays, day)
		if best.IsZero() || t.Before(best) {
			best = t
		}
	}
	return best
}

// HasActions reports whether any enabled rule can expire or abort
// anything: a sweep of a bucket without is only clean-up.
func (c *Configuration) HasActions() bool {
	if c == nil {
		return false
	}
	for _, r := range c.Rules {
		if r.Enabled && (r.ExpireDays > 0 || !r.ExpireDate.IsZero() || r.AbortDays > 0) {
			return true
		}
	}
	return c.HasVersionActions()
}

// HasVersionActions reports whether any enabled rule removes noncurrent
// versions or expired delete markers.
func (c *Configuration) HasVersionActions() bool {
	if c == nil {
		return false
	}
	for _, r := range c.Rules {
		if r.Enabled && (r.NoncurrentDays > 0 || r.ExpiredObjectDeleteMarker) {
			return true
		}
	}
	return false
}

// NoncurrentExpiry returns when the configuration removes a noncurrent
// version o that became noncurrent at since and has newer noncurrent
// versions newer than itself (zero: never). A rule with
// NewerNoncurrentVersions n keeps the n newest noncurrent versions.
func (c *Configuration) NoncurrentExpiry(o Object, since time.Time, newer int, day time.Duration) time.Time {
	if c == nil {
		return time.Time{}
	}
	var best time.Time
	for i := range c.Rules {
		r := &c.Rules[i]
		if !r.Enabled || r.NoncurrentDays == 0 || newer < r.NewerNoncurrent || !r.Filter.Matches(o) {
			continue
		}
		if t := after(since, r.NoncurrentDays, day); best.IsZero() || t.Before(best) {
			best = t
		}
	}
	return best
}

// ExpiresDeleteMarker reports whether the configuration removes a delete
// marker of key that is the key's only version.
func (c *Configuration) ExpiresDeleteMarker(key string) bool {
	if c == nil {
		return false
	}
	for _, r := range c.Rules {
		if r.Enabled && r.ExpiredObjectDeleteMarker && strings.HasPrefix(key, r.Filter.Prefix) {
			return true
		}
	}
	return false
}
