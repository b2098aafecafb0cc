package admin

import (
	"time"

	"github.com/b3-storage/b3/internal/blob"
	"github.com/b3-storage/b3/internal/cache"
	"github.com/b3-storage/b3/internal/iolimit"
	"github.com/b3-storage/b3/internal/objstore"
)

// Stats is GET /admin/v1/stats.
type Stats struct {
	Objects   *ObjectCounts            `json:"objects,omitempty"`
	Segments  []objstore.SegmentStat   `json:"segments"`
	Vacuum    objstore.VacuumStatus    `json:"vacuum"`
	Lifecycle objstore.LifecycleStatus `json:"lifecycle"`
	Cache     cache.Stats              `json:"cache"`
	IO        iolimit.Stats            `json:"io"`
	Limits    iolimit.Limits           `json:"limits"`
	Blob      blob.Stats               `json:"blob"`
	Uptime    time.Duration            `json:"uptime_ns"`
}

// ObjectCounts are the totals of a metadata scan.
type ObjectCounts struct {
	Buckets int   `json:"buckets"`
	Objects int64 `json:"objects"`
	Bytes   int64 `json:"bytes"`
}

// User is an access key as the admin API shows it. Secret is set only in
// the answer to an add.
type User struct {
	Name      string `json:"name"`
	AccessKey string `json:"access_key"`
	Secret    string `json:"secret_key,omitempty"`
	Managed   bool   `json:"managed"` // added through the admin API (removable)
	Admin     bool   `json:"admin"`   // the root user: full access to every bucket
	// CanonicalID is the id S3 listings and ACLs show for the user.
	CanonicalID string `json:"canonical_id,omitempty"`
}

// VacuumRequest is POST /admin/v1/vacuum/start and /auto.
type VacuumRequest struct {
	Threshold float64 `json:"threshold,omitempty"` // 0: the configured one
	Interval  string  `json:"interval,omitempty"`  // for /auto
}
