package objstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/b3-storage/b3/internal/lifecycle"
	"github.com/b3-storage/b3/internal/meta"
	"github.com/b3-storage/b3/internal/vfs"
)

// fakeClock is the store's clock of expiry decisions: real time plus an
// offset the test advances by whole lifecycle days.
type fakeClock struct{ offset atomic.Int64 }

func (c *fakeClock) now() time.Time          { return time.Now().Add(time.Duration(c.offset.Load())) }
func (c *fakeClock) advance(d time.Duration) { c.offset.Add(int64(d)) }

// clockedOptions is memOptions with lifecycle days of length day, counted
// by a fake clock the test advances.
func clockedOptions(day time.Duration) (Options, *fakeClock) {
	clock := &fakeClock{}
	opts := memOptions(vfs.NewCrashableMem())
	opts.LifecycleDay, opts.Now = day, clock.now
	return opts, clock
}

func lifecycleDoc(rules string) []byte {
	return []byte("<LifecycleConfiguration>" + rules + "</LifecycleConfiguration>")
}
func expireRule(id, filter string, days int) string {
	return fmt.Sprintf("<Rule><ID>%s</ID><Status>Enabled</Status><Filter>%s</Filter><Expiration><Days>%d</Days></Expiration></Rule>", id, filter, days)
}

func visible(t *testing.T, s *Store, key string) bool {
	t.Helper()
	_, err := s.HeadObject("b", key)
	if err != nil && !errors.Is(err, ErrNoSuchKey) {
		t.Fatal(err)
	}
	_, oerr := read(s, "b", key)
	if (err == nil) != (oerr == nil) {
		t.Fatalf("%s: HeadObject says %v, OpenObject %v", key, err, oerr)
	}
	return err == nil
}

func listed(t *testing.T, s *Store, prefix string) []string {
	t.Helper()
	var keys []string
	opts := meta.ListOptions{Prefix: prefix, MaxKeys: 3}
	for {
		res, err := s.ListObjects("b", opts)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range res.Objects {
			keys = append(keys, o.Key)
		}
		if !res.IsTruncated {
			return keys
		}
		if len(res.Objects)+len(res.CommonPrefixes) != 3 {
			t.Fatalf("truncated page of %d entries, want 3", len(res.Objects))
		}
		opts.StartAfter = res.NextMarker
	}
}

// TestLifecycleExpiry: with a shortened day, objects matching a rule vanish
// at their instant (prefix and tag filters), others stay; the sweeper
// deletes them and vacuum reclaims their segments.
func TestLifecycleExpiry(t *testing.T) {
	opts, clock := clockedOptions(time.Hour)
	s := openStore(t, opts)
	defer s.Close()
	ensureBucket(t, s, "b")
	err := s.SetBucketLifecycle("b", lifecycleDoc(
		expireRule("tmp", "<Prefix>tmp/</Prefix>", 3)+
			expireRule("scratch", "<Tag><Key>class</Key><Value>scratch</Value></Tag>", 1)))
	if err != nil {
		t.Fatal(err)
	}
	keep := map[string][]byte{}
	for i := range 40 {
		put(t, s, "b", fmt.Sprintf("tmp/%02d", i), value("tmp", i, 8<<10))
		k := fmt.Sprintf("keep/%02d", i)
		keep[k] = value(k, i, 1<<10)
		put(t, s, "b", k, keep[k])
	}
	tagged := &meta.Object{Tags: map[string]string{"class": "scratch"}}
	if _, err := s.PutObject(context.Background(), PutInput{Bucket: "b", Key: "keep/scratch", Body: bytes.NewReader(value("s", 0, 100)), Object: tagged}); err != nil {
		t.Fatal(err)
	}
	if !visible(t, s, "tmp/00") || !visible(t, s, "keep/scratch") {
		t.Fatal("objects invisible before their day")
	}

	clock.advance(time.Hour + time.Minute)
	if visible(t, s, "keep/scratch") || !visible(t, s, "tmp/00") {
		t.Fatal("after one day: the tagged object should be gone, tmp/ still there")
	}
	clock.advance(2 * time.Hour)
	if visible(t, s, "tmp/17") {
		t.Fatal("tmp/ object visible after three days")
	}
	if got := listed(t, s, "tmp/"); len(got) != 0 {
		t.Fatalf("listing shows expired objects: %v", got)
	}
	if got := listed(t, s, ""); len(got) != 40 {
		t.Fatalf("listing shows %d objects, want the 40 under keep/", len(got))
	}

	before := s.VacuumStatus()
	res, err := s.SweepLifecycle(context.Background())
	if err != nil || res.Expired != 41 {
		t.Fatalf("sweep: %+v %v", res, err)
	}
	if _, err := s.meta.GetObject("b", "tmp/05"); !errors.Is(err, meta.ErrNotFound) {
		t.Fatalf("expired record still stored: %v", err)
	}
	vres, err := s.Vacuum(context.Background(), 0.5)
	if err != nil || vres.SegmentsRemoved == 0 || vres.BytesReclaimed == 0 {
		t.Fatalf("vacuum after expiry: %+v %v", vres, err)
	}
	if after := s.VacuumStatus(); after.TotalBytes >= before.TotalBytes {
		t.Fatalf("segments hold %d bytes after vacuum, %d before", after.TotalBytes, before.TotalBytes)
	}
	for k, want := range keep {
		got, err := read(s, "b", k)
		if err != nil || digest(got) != digest(want) {
			t.Fatalf("%s after expiry and vacuum: %v", k, err)
		}
	}
	if st := s.LifecycleStatus(); st.Expired != 41 || st.Passes != 1 {
		t.Fatalf("status %+v", st)
	}
}

// TestLifecycleRulesChange: objects written before a rule exist get their
// instant from the sweeper's re-evaluation; removing the rule gives them
// back an unlimited life.
func TestLifecycleRulesChange(t *testing.T) {
	opts, clock := clockedOptions(time.Hour)
	s := openStore(t, opts)
	defer s.Close()
	ensureBucket(t, s, "b")
	put(t, s, "b", "old/a", []byte("a"))
	put(t, s, "b", "old/b", []byte("b"))

	if err := s.SetBucketLifecycle("b", lifecycleDoc(expireRule("r", "<Prefix>old/</Prefix>", 1))); err != nil {
		t.Fatal(err)
	}
	res, err := s.SweepLifecycle(context.Background())
	if err != nil || res.Reevaluated != 2 || res.Expired != 0 {
		t.Fatalf("sweep after adding a rule: %+v %v", res, err)
	}
	if obj, _ := s.HeadObject("b", "old/a"); obj == nil || obj.Expiry.IsZero() {
		t.Fatalf("no expiry stamped: %+v", obj)
	}
	// Rule removed before the day passes: the objects live on.
	if err := s.SetBucketLifecycle("b", nil); err != nil {
		t.Fatal(err)
	}
	if res, err := s.SweepLifecycle(context.Background()); err != nil || res.Reevaluated != 2 {
		t.Fatalf("sweep after removing the rule: %+v %v", res, err)
	}
	clock.advance(48 * time.Hour)
	if !visible(t, s, "old/a") {
		t.Fatal("object expired by a removed rule")
	}
	// Re-added: already past its instant, so the next pass deletes it.
	if err := s.SetBucketLifecycle("b", lifecycleDoc(expireRule("r", "<Prefix>old/</Prefix>", 1))); err != nil {
		t.Fatal(err)
	}
	if res, err := s.SweepLifecycle(context.Background()); err != nil || res.Expired != 2 {
		t.Fatalf("sweep after re-adding: %+v %v", res, err)
	}
	var le *lifecycle.Error
	if err := s.SetBucketLifecycle("b", lifecycleDoc(expireRule("r", "", 0))); !errors.As(err, &le) || le.Code != "InvalidArgument" {
		t.Fatalf("invalid document: %v", err)
	}
}

// TestLifecycleAbortsUploads: stale multipart uploads under a rule are
// aborted; others stay.
func TestLifecycleAbortsUploads(t *testing.T) {
	opts, clock := clockedOptions(time.Hour)
	s := openStore(t, opts)
	defer s.Close()
	ensureBucket(t, s, "b")
	rule := "<Rule><Status>Enabled</Status><Filter><Prefix>up/</Prefix></Filter><AbortIncompleteMultipartUpload><DaysAfterInitiation>2</DaysAfterInitiation></AbortIncompleteMultipartUpload></Rule>"
	if err := s.SetBucketLifecycle("b", lifecycleDoc(rule)); err != nil {
		t.Fatal(err)
	}
	stale, err := s.CreateUpload(&meta.Upload{Bucket: "b", Key: "up/x"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.PutPart(context.Background(), "b", "up/x", stale.UploadID, 1, bytes.NewReader(value("p", 1, 5000)), nil); err != nil {
		t.Fatal(err)
	}
	other, err := s.CreateUpload(&meta.Upload{Bucket: "b", Key: "other/x"})
	if err != nil {
		t.Fatal(err)
	}
	if res, _ := s.SweepLifecycle(context.Background()); res.Aborted != 0 {
		t.Fatalf("aborted before the day: %+v", res)
	}
	clock.advance(2*time.Hour + time.Second)
	if res, err := s.SweepLifecycle(context.Background()); err != nil || res.Aborted != 1 {
		t.Fatalf("sweep: %+v %v", res, err)
	}
	if _, err := s.GetUpload("b", "up/x", stale.UploadID); !errors.Is(err, ErrNoSuchUpload) {
		t.Fatalf("stale upload: %v", err)
	}
	if _, err := s.GetUpload("b", "other/x", other.UploadID); err != nil {
		t.Fatalf("unrelated upload: %v", err)
	}
}

// TestLifecycleLoop: the background sweeper, with a debug day of 50ms,
// deletes expired objects by itself.
func TestLifecycleLoop(t *testing.T) {
	opts := memOptions(vfs.NewCrashableMem())
	opts.LifecycleDay = 50 * time.Millisecond
	s := openStore(t, opts)
	defer s.Close()
	ensureBucket(t, s, "b")
	if err := s.SetBucketLifecycle("b", lifecycleDoc(expireRule("r", "<Prefix>tmp/</Prefix>", 1))); err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		put(t, s, "b", fmt.Sprintf("tmp/%d", i), []byte("x"))
	}
	put(t, s, "b", "keep", []byte("y"))
	s.StartLifecycle(20*time.Millisecond, 1000)
	for deadline := time.Now().Add(20 * time.Second); s.LifecycleStatus().Expired < 10; {
		if time.Now().After(deadline) {
			t.Fatalf("sweeper did not delete the expired objects: %+v", s.LifecycleStatus())
		}
		time.Sleep(10 * time.Millisecond)
	}
	s.StopLifecycle()
	if !visible(t, s, "keep") || s.LifecycleStatus().Expired != 10 {
		t.Fatalf("non-matching object touched: %+v", s.LifecycleStatus())
	}
}
