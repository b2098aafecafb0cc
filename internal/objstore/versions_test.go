package objstore

import (
	"bytes"
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/b3-storage/b3/internal/meta"
)

// versionsOf returns key's version IDs, newest first ("id:m" for markers).
func versionsOf(t *testing.T, s *Store, key string) []string {
	t.Helper()
	var out []string
	for _, v := range storedHistory(t, s, key) {
		id := v.id
		if v.marker {
			id += ":m"
		}
		out = append(out, id)
	}
	return out
}

// NoncurrentVersionExpiration removes noncurrent versions NoncurrentDays
// after they became noncurrent, keeping NewerNoncurrentVersions of them
// and every locked one; ExpiredObjectDeleteMarker removes a delete marker
// left alone; current expiration in a versioned bucket adds a delete
// marker. Vacuum then reclaims the removed versions' space, and moves the
// surviving noncurrent versions intact.
func TestLifecycleOfVersions(t *testing.T) {
	opts, clock := clockedOptions(time.Second)
	s := openStore(t, opts)
	defer s.Close()
	ensureBucket(t, s, "b")
	if err := s.SetBucketVersioning("b", meta.VersioningEnabled); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for i := range 6 {
		obj, err := s.PutObject(context.Background(), PutInput{Bucket: "b", Key: "cam", Body: bytesReader(value("cam", i, 20<<10))})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, VersionID(obj))
	}
	// The oldest noncurrent version is under COMPLIANCE retention.
	if _, err := s.UpdateVersion("b", "cam", ids[0], func(o *meta.Object) error {
		o.LockMode, o.RetainUntil = meta.LockCompliance, time.Now().Add(time.Hour)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	// "gone": its only version left is a delete marker.
	put(t, s, "b", "gone", []byte("x"))
	if _, err := s.DeleteVersioned("b", "gone", "", false); err != nil {
		t.Fatal(err)
	}
	obj, _, err := s.findVersion("b", "gone", mustLatestObjectID(t, s, "gone"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.DeleteVersioned("b", "gone", VersionID(obj), false); err != nil {
		t.Fatal(err)
	}
	if err := s.SetBucketLifecycle("b", lifecycleDoc(`<Rule><ID>nc</ID><Status>Enabled</Status><Filter></Filter>
		<NoncurrentVersionExpiration><NoncurrentDays>2</NoncurrentDays><NewerNoncurrentVersions>2</NewerNoncurrentVersions></NoncurrentVersionExpiration>
		<Expiration><ExpiredObjectDeleteMarker>true</ExpiredObjectDeleteMarker></Expiration></Rule>`)); err != nil {
		t.Fatal(err)
	}
	// Before NoncurrentDays nothing goes.
	if _, err := s.SweepLifecycle(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := versionsOf(t, s, "cam"); len(got) != 6 {
		t.Fatalf("before the days passed: %v", got)
	}
	clock.advance(3 * time.Second)
	res, err := s.SweepLifecycle(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	// Kept: the current, the 2 newest noncurrent, and the locked oldest.
	want := []string{ids[5], ids[4], ids[3], ids[0]}
	if got := versionsOf(t, s, "cam"); !equalStrings(got, want) {
		t.Fatalf("after the sweep: %v, want %v (result %+v)", got, want, res)
	}
	if got := versionsOf(t, s, "gone"); len(got) != 0 {
		t.Fatalf("the expired delete marker stayed: %v", got)
	}
	// The removed versions' bytes are dead; vacuum reclaims them and the
	// kept versions read back whole.
	if _, err := s.Vacuum(context.Background(), 0.01); err != nil {
		t.Fatal(err)
	}
	for _, i := range []int{5, 4, 3, 0} {
		_, r, err := s.OpenVersion(context.Background(), "b", "cam", ids[i], WholeObject)
		if err != nil {
			t.Fatalf("version %d after vacuum: %v", i, err)
		}
		got, _ := readAllClose(r)
		if string(got) != string(value("cam", i, 20<<10)) {
			t.Fatalf("version %d after vacuum: wrong bytes", i)
		}
	}
	var dead, total int64
	for _, seg := range s.Segments() {
		dead += seg.DeadBytes
		total += seg.Size
	}
	if total > 5*(21<<10) {
		t.Fatalf("vacuum left %d bytes in segments for 4 versions of 20 KiB (%d dead)", total, dead)
	}

	// Current expiration in a versioned bucket: a delete marker, and the
	// version stays as noncurrent.
	if err := s.SetBucketLifecycle("b", lifecycleDoc(expireRule("cur", "<Prefix>tmp/</Prefix>", 1))); err != nil {
		t.Fatal(err)
	}
	put(t, s, "b", "tmp/x", []byte("soon"))
	clock.advance(2 * time.Second)
	if _, err := s.SweepLifecycle(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := versionsOf(t, s, "tmp/x")
	if len(got) != 2 || got[0][len(got[0])-2:] != ":m" {
		t.Fatalf("expired current version in a versioned bucket: %v", got)
	}
}

func mustLatestObjectID(t *testing.T, s *Store, key string) string {
	t.Helper()
	for _, v := range storedHistory(t, s, key) {
		if !v.marker {
			return v.id
		}
	}
	t.Fatalf("%s has no object version", key)
	return ""
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// A locked null version is never replaced in place: a PUT or DELETE in a
// bucket that never enabled versioning, and the lifecycle sweeper, leave
// it until its retention ends.
func TestLockedNullVersionIsNotReplaced(t *testing.T) {
	opts, clock := clockedOptions(time.Second)
	s := openStore(t, opts)
	defer s.Close()
	ensureBucket(t, s, "b")
	put(t, s, "b", "k", []byte("kept"))
	if _, err := s.UpdateVersion("b", "k", NullVersionID, func(o *meta.Object) error {
		o.LockMode, o.RetainUntil = meta.LockGovernance, time.Now().Add(time.Minute)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.PutObject(context.Background(), PutInput{Bucket: "b", Key: "k", Body: bytesReader([]byte("new"))}); !errors.Is(err, ErrObjectLocked) {
		t.Fatalf("overwrite of a locked null version: %v", err)
	}
	if _, err := s.DeleteObject("b", "k"); !errors.Is(err, ErrObjectLocked) {
		t.Fatalf("delete of a locked null version: %v", err)
	}
	if err := s.SetBucketLifecycle("b", lifecycleDoc(expireRule("all", "", 1))); err != nil {
		t.Fatal(err)
	}
	clock.advance(2 * time.Second)
	if _, err := s.SweepLifecycle(context.Background()); err != nil {
		t.Fatal(err)
	}
	if obj, err := s.HeadVersion("b", "k", NullVersionID); err != nil || obj.LockMode == "" {
		t.Fatalf("lifecycle removed a locked version: %+v %v", obj, err)
	}
	clock.advance(2 * time.Minute)
	if _, err := s.DeleteObject("b", "k"); err != nil {
		t.Fatalf("delete once retention ended: %v", err)
	}
}

func bytesReader(b []byte) *bytes.Reader { return bytes.NewReader(b) }

func readAllClose(r io.ReadCloser) ([]byte, error) {
	defer r.Close()
	return io.ReadAll(r)
}
