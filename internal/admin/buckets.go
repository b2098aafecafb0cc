package admin

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"time"

	"github.com/b3-storage/b3/internal/meta"
	"github.com/b3-storage/b3/internal/objstore"
)

// Bucket is a bucket as GET /admin/v1/buckets shows it. Objects and Bytes
// come from a scan of the metadata made for the answer.
type Bucket struct {
	Name  string `json:"name"`
	Owner string `json:"owner"` // access key of the owner
	// OwnerName is the owner's user name; "" when the owner's key no
	// longer exists (the root user can still reach the bucket).
	OwnerName string    `json:"owner_name"`
	Created   time.Time `json:"created"`
	Region    string    `json:"region"`
	Objects   int64     `json:"objects"`
	Bytes     int64     `json:"bytes"`
	// LLHLS: the bucket is a Low-Latency HLS origin (docs/HLS.md).
	LLHLS bool `json:"ll_hls"`
}

// BucketHLS is the request and the answer of PUT
// /admin/v1/buckets/{name}/hls.
type BucketHLS struct {
	Name  string `json:"name"`
	LLHLS bool   `json:"ll_hls"`
}

// BucketOwnerChanged is the answer to PUT /admin/v1/buckets/{name}/owner.
type BucketOwnerChanged struct {
	Name          string `json:"name"`
	Owner         string `json:"owner"`
	OwnerName     string `json:"owner_name"`
	PreviousOwner string `json:"previous_owner"`
}

// BucketDeleted is the answer to DELETE /admin/v1/buckets/{name}.
type BucketDeleted struct {
	Name           string `json:"name"`
	ObjectsDeleted int64  `json:"objects_deleted"`
	UploadsAborted int64  `json:"uploads_aborted"`
}

// UserRemoved is the answer to DELETE /admin/v1/users/{accessKey}.
type UserRemoved struct {
	AccessKey string `json:"access_key"`
	// BucketsReassigned went to NewOwner; BucketsOrphaned (with force)
	// stay, owned by the removed key and reachable by the root user.
	NewOwner          string   `json:"new_owner"`
	BucketsReassigned []string `json:"buckets_reassigned"`
	BucketsOrphaned   []string `json:"buckets_orphaned"`
}

// usage counts objects and bytes per bucket in one metadata scan.
func (s *Server) usage(ctx context.Context) (map[string][2]int64, error) {
	if s.cfg.Usage != nil {
		return s.cfg.Usage(ctx)
	}
	return Usage(s.cfg.Store, nil)
}

// Usage counts the current objects and their bytes per bucket in store,
// of the keys keep selects (nil: all).
func Usage(store *objstore.Store, keep func(bucket, key string) bool) (map[string][2]int64, error) {
	out := map[string][2]int64{}
	err := store.Meta().ScanObjects("", "", func(o *meta.Object) error {
		if keep != nil && !keep(o.Bucket, o.Key) {
			return nil
		}
		u := out[o.Bucket]
		u[0]++
		u[1] += o.Size
		out[o.Bucket] = u
		return nil
	})
	return out, err
}

func (s *Server) userNames() map[string]string {
	names := map[string]string{}
	if s.cfg.Users != nil {
		for _, u := range s.cfg.Users.List() {
			names[u.AccessKey] = u.Name
		}
	}
	return names
}

func (s *Server) listBuckets(w http.ResponseWriter, r *http.Request) error {
	all, err := s.cfg.Store.ListBuckets()
	if err != nil {
		return err
	}
	counts, err := s.usage(r.Context())
	if err != nil {
		return err
	}
	names := s.userNames()
	out := make([]Bucket, 0, len(all))
	for _, b := range all {
		u := counts[b.Name]
		out = append(out, Bucket{Name: b.Name, Owner: b.Owner, OwnerName: names[b.Owner], Created: b.Created,
			Region: b.Region, Objects: u[0], Bytes: u[1], LLHLS: b.LLHLS})
	}
	WriteJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) setBucketOwner(w http.ResponseWriter, r *http.Request) error {
	var req struct {
		Owner string `json:"owner"`
	}
	if err := readJSON(r, &req); err != nil {
		return err
	}
	name := r.PathValue("bucket")
	if _, ok := s.userNames()[req.Owner]; !ok {
		return badRequest("owner %q: no such access key (b3 admin users list)", req.Owner)
	}
	var old string
	err := s.cfg.Writes.UpdateBucket(name, func(b *meta.Bucket) error {
		old = b.Owner
		b.Owner = req.Owner
		return nil
	})
	if errors.Is(err, objstore.ErrNoSuchBucket) {
		return &httpError{http.StatusNotFound, "no such bucket: " + name}
	}
	if err != nil {
		return err
	}
	s.audit(r, "bucket.chown", "bucket", name, "old_owner", old, "new_owner", req.Owner)
	WriteJSON(w, http.StatusOK, BucketOwnerChanged{Name: name, Owner: req.Owner, OwnerName: s.userNames()[req.Owner], PreviousOwner: old})
	return nil
}

// setBucketHLS turns a bucket's LL-HLS origin setting on or off. The
// change travels as any bucket setting does (Config.Writes: through the
// log on b3 node).
func (s *Server) setBucketHLS(w http.ResponseWriter, r *http.Request) error {
	var req struct {
		LLHLS *bool `json:"ll_hls"`
	}
	if err := readJSON(r, &req); err != nil {
		return err
	}
	if req.LLHLS == nil {
		return badRequest("ll_hls: want true or false")
	}
	name := r.PathValue("bucket")
	err := s.cfg.Writes.UpdateBucket(name, func(b *meta.Bucket) error {
		b.LLHLS = *req.LLHLS
		return nil
	})
	if errors.Is(err, objstore.ErrNoSuchBucket) {
		return &httpError{http.StatusNotFound, "no such bucket: " + name}
	}
	if err != nil {
		return err
	}
	s.audit(r, "bucket.hls", "bucket", name, "ll_hls", *req.LLHLS)
	WriteJSON(w, http.StatusOK, BucketHLS{Name: name, LLHLS: *req.LLHLS})
	return nil
}

func (s *Server) deleteBucket(w http.ResponseWriter, r *http.Request) error {
	name := r.PathValue("bucket")
	force := r.URL.Query().Get("force") == "1"
	res := BucketDeleted{Name: name}
	// A write may land between emptying and the delete; a few rounds
	// settle it unless clients keep writing.
	for attempt := 0; ; attempt++ {
		if force {
			if err := s.emptyBucket(r.Context(), name, &res); err != nil {
				return err
			}
		}
		err := s.cfg.Writes.DeleteBucket(name)
		switch {
		case err == nil:
			s.audit(r, "bucket.delete", "bucket", name, "force", force,
				"objects_deleted", res.ObjectsDeleted, "uploads_aborted", res.UploadsAborted)
			WriteJSON(w, http.StatusOK, res)
			return nil
		case errors.Is(err, objstore.ErrNoSuchBucket):
			return &httpError{http.StatusNotFound, "no such bucket: " + name}
		case errors.Is(err, objstore.ErrBucketNotEmpty) && !force:
			return &httpError{http.StatusConflict, "bucket " + name + " is not empty (--force deletes its objects and uploads)"}
		case errors.Is(err, objstore.ErrBucketNotEmpty) && attempt < 5:
			continue
		default:
			return err
		}
	}
}

// emptyBucket deletes every object and aborts every upload of bucket, in
// rounds of at most 1000 (a scan holds a snapshot; deletes go through
// the store as a client's would).
func (s *Server) emptyBucket(ctx context.Context, bucket string, res *BucketDeleted) error {
	if b, err := s.cfg.Store.GetBucket(bucket); err == nil && b.Versioning != "" {
		if err := s.emptyVersions(ctx, bucket, res); err != nil {
			return err
		}
	}
	errFull := errors.New("round full")
	for {
		var keys []string
		err := s.cfg.Store.Meta().ScanObjects(bucket, "", func(o *meta.Object) error {
			keys = append(keys, o.Key)
			if len(keys) == 1000 {
				return errFull
			}
			return nil
		})
		if err != nil && !errors.Is(err, errFull) {
			return err
		}
		if len(keys) == 0 {
			break
		}
		for _, k := range keys {
			if err := ctx.Err(); err != nil {
				return err
			}
			if _, err := s.cfg.Writes.DeleteObject(bucket, k); err != nil && !errors.Is(err, objstore.ErrNoSuchKey) {
				return err
			}
			res.ObjectsDeleted++
		}
	}
	var uploads []*meta.Upload
	if err := s.cfg.Store.Meta().ScanUploads(bucket, func(u *meta.Upload) error {
		uploads = append(uploads, u)
		return nil
	}); err != nil {
		return err
	}
	for _, u := range uploads {
		if err := s.cfg.Writes.AbortUpload(u.Bucket, u.Key, u.UploadID); err != nil && !errors.Is(err, objstore.ErrNoSuchUpload) {
			return err
		}
		res.UploadsAborted++
	}
	return nil
}

// bucketsOf returns the names of the buckets accessKey owns.
func (s *Server) bucketsOf(accessKey string) ([]string, error) {
	all, err := s.cfg.Store.ListBuckets()
	if err != nil {
		return nil, err
	}
	out := []string{}
	for _, b := range all {
		if b.Owner == accessKey {
			out = append(out, b.Name)
		}
	}
	sort.Strings(out)
	return out, nil
}

// chownAll gives every bucket of from to to.
func (s *Server) chownAll(from, to string) ([]string, error) {
	names, err := s.bucketsOf(from)
	if err != nil {
		return nil, err
	}
	for _, name := range names {
		err := s.cfg.Writes.UpdateBucket(name, func(b *meta.Bucket) error {
			if b.Owner == from {
				b.Owner = to
			}
			return nil
		})
		if err != nil && !errors.Is(err, objstore.ErrNoSuchBucket) {
			return nil, err
		}
	}
	return names, nil
}

// emptyVersions removes every version and delete marker of a bucket that
// has had versioning, a page at a time. A version under Object Lock
// retention or legal hold is not removed (the store refuses it): the
// delete then fails and says so, as locks bind the admin API too.
func (s *Server) emptyVersions(ctx context.Context, bucket string, res *BucketDeleted) error {
	for {
		page, err := s.cfg.Store.ListVersions(bucket, objstore.VersionListOptions{MaxKeys: 1000})
		if err != nil {
			return err
		}
		if len(page.Versions) == 0 {
			return nil
		}
		for _, v := range page.Versions {
			if err := ctx.Err(); err != nil {
				return err
			}
			if _, err := s.cfg.Writes.DeleteVersioned(bucket, v.Key, objstore.VersionID(v), false); err != nil {
				if errors.Is(err, objstore.ErrObjectLocked) {
					return &httpError{http.StatusConflict, fmt.Sprintf("bucket %s: version %s of %q is locked (Object Lock); it cannot be deleted before its retention ends", bucket, objstore.VersionID(v), v.Key)}
				}
				return err
			}
			res.ObjectsDeleted++
		}
	}
}
