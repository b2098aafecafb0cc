package s3api

import (
	"context"
	"io"

	"github.com/b3-storage/b3/internal/meta"
	"github.com/b3-storage/b3/internal/objstore"
)

// Backend is what the S3 API needs of a store. *objstore.Store is one (a
// single server); a cluster node passes a store that orders each write
// through its replica group and answers reads from its local copy. The
// semantics of every method are objstore's.
type Backend interface {
	GetBucket(name string) (*meta.Bucket, error)
	ListBuckets() ([]meta.Bucket, error)
	CreateBucket(b *meta.Bucket) (*meta.Bucket, error)
	DeleteBucket(name string) error
	UpdateBucket(name string, fn func(*meta.Bucket) error) error
	SetBucketLifecycle(bucket string, doc []byte) error

	HeadObject(bucket, key string) (*meta.Object, error)
	OpenObject(ctx context.Context, bucket, key string, rng objstore.RangeFunc) (*meta.Object, io.ReadCloser, error)
	PutObject(ctx context.Context, in objstore.PutInput) (*meta.Object, error)
	DeleteObject(bucket, key string) (*meta.Object, error)
	UpdateObject(bucket, key string, fn func(*meta.Object) error) (*meta.Object, error)
	ListObjects(bucket string, o meta.ListOptions) (*meta.ListResult, error)

	// Versioning (see objstore/versions.go).
	SetBucketVersioning(bucket, state string) error
	HeadVersion(bucket, key, versionID string) (*meta.Object, error)
	OpenVersion(ctx context.Context, bucket, key, versionID string, rng objstore.RangeFunc) (*meta.Object, io.ReadCloser, error)
	LatestMarker(bucket, key string) (*meta.Object, error)
	DeleteVersioned(bucket, key, versionID string, bypassGovernance bool) (objstore.DeleteResult, error)
	UpdateVersion(bucket, key, versionID string, fn func(*meta.Object) error) (*meta.Object, error)
	ListVersions(bucket string, o objstore.VersionListOptions) (*meta.VersionListResult, error)

	CreateUpload(up *meta.Upload) (*meta.Upload, error)
	GetUpload(bucket, key, uploadID string) (*meta.Upload, error)
	PutPart(ctx context.Context, bucket, key, uploadID string, number int, body io.Reader, finish func(*meta.Part) error) (*meta.Part, error)
	CompleteUpload(bucket, key, uploadID string, numbers []int, build objstore.CompleteFunc, precondition func(*meta.Object) error) (*meta.Object, error)
	AbortUpload(bucket, key, uploadID string) error

	// Reserve takes size bytes of the free-space reserve (see objstore).
	Reserve(size int64) (release func(), err error)
	// ListUploads lists a bucket's multipart uploads (meta.DB.ListUploads).
	ListUploads(bucket string, o meta.UploadListOptions) (*meta.UploadListResult, error)
	// Meta answers listings of parts.
	Meta() *meta.DB
}

var _ Backend = (*objstore.Store)(nil)
