package cluster

import (
	"github.com/b3-storage/b3/internal/meta"
	"github.com/b3-storage/b3/internal/objstore"
	"github.com/b3-storage/b3/internal/s3api"
)

// Versioning and Object Lock are not replicated yet: a delete marker or
// the removal of one version would need commands of their own. A cluster
// refuses to enable them, so its buckets stay unversioned and every write
// goes through the commands above; the versioned methods that objstore
// would otherwise lend the embedded store (local writes, outside the log)
// refuse too.
var errVersioningUnsupported = &s3api.APIError{Code: "NotImplemented", Status: 501,
	Message: "Bucket versioning and Object Lock are not available on a cluster."}

// SetBucketVersioning refuses: see errVersioningUnsupported.
func (s *Store) SetBucketVersioning(string, string) error { return errVersioningUnsupported }

// DeleteVersioned refuses: see errVersioningUnsupported.
func (s *Store) DeleteVersioned(string, string, string, bool) (objstore.DeleteResult, error) {
	return objstore.DeleteResult{}, errVersioningUnsupported
}

// UpdateVersion refuses: see errVersioningUnsupported.
func (s *Store) UpdateVersion(string, string, string, func(*meta.Object) error) (*meta.Object, error) {
	return nil, errVersioningUnsupported
}
