package objstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/b3-storage/b3/internal/vfs"
)

// TestGetBucketTakesNoLock: GetBucket is called with key locks held (tag
// updates, the lifecycle sweeper), while object writes take the bucket
// lock and then the key lock. If GetBucket took the bucket lock it could
// deadlock against a writer queued for it. With the bucket lock held
// exclusively and a cold cache, it must still answer.
func TestGetBucketTakesNoLock(t *testing.T) {
	opts := memOptions(vfs.NewCrashableMem())
	s := openStore(t, opts)
	ensureBucket(t, s, "b")
	s.Close()
	s = openStore(t, opts) // empty bucket cache
	defer s.Close()

	mu := s.bucketMutex("b")
	mu.Lock()
	done := make(chan error, 1)
	go func() { _, err := s.GetBucket("b"); done <- err }()
	select {
	case err := <-done:
		mu.Unlock()
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(20 * time.Second): // a liveness bound, not a timing claim
		t.Fatal("GetBucket waited for the bucket lock")
	}
}

// TestBucketCacheAfterDelete: a deleted bucket is gone from the cache at
// once, and a bucket created again under the name is the new one.
func TestBucketCacheAfterDelete(t *testing.T) {
	s := openStore(t, memOptions(vfs.NewCrashableMem()))
	defer s.Close()
	ensureBucket(t, s, "b")
	if _, err := s.GetBucket("b"); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteBucket("b"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetBucket("b"); !errors.Is(err, ErrNoSuchBucket) {
		t.Fatalf("deleted bucket: %v", err)
	}
	rec := bucketRecord("b")
	rec.Owner = "someone-else"
	if _, err := s.CreateBucket(rec); err != nil {
		t.Fatal(err)
	}
	if b, err := s.GetBucket("b"); err != nil || b.Owner != "someone-else" {
		t.Fatalf("re-created bucket: %+v %v", b, err)
	}
}

// TestCloseEndsManualSweep: Close must not return while a lifecycle pass
// started through SweepLifecycle (the admin API) still runs against the
// store it closes.
func TestCloseEndsManualSweep(t *testing.T) {
	opts, clk := clockedOptions(time.Second)
	s := openStore(t, opts)
	ensureBucket(t, s, "b")
	for i := range 50 {
		put(t, s, "b", fmt.Sprint("k", i), []byte("x"))
	}
	s.StartLifecycle(time.Hour, 1) // one delete a second: a long pass
	s.StopLifecycle()
	if err := s.SetBucketLifecycle("b", lifecycleDoc(expireRule("r", "<Prefix></Prefix>", 1))); err != nil {
		t.Fatal(err)
	}
	clk.advance(5 * time.Second)
	res := make(chan error, 1)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				res <- fmt.Errorf("panic: %v", r)
			}
		}()
		_, err := s.SweepLifecycle(context.Background())
		res <- err
	}()
	for !s.lc.running.Load() {
		time.Sleep(time.Millisecond)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if s.lc.running.Load() {
		t.Fatal("Close returned while a lifecycle pass was running")
	}
	if err := <-res; !errors.Is(err, context.Canceled) {
		t.Fatalf("pass ended with %v, want context.Canceled", err)
	}
}

// signalReader reports its first Read, then blocks until released.
type signalReader struct {
	reading, release chan struct{}
	r                io.Reader
	started          bool
}

func (g *signalReader) Read(p []byte) (int, error) {
	if !g.started {
		g.started = true
		close(g.reading)
		<-g.release
	}
	return g.r.Read(p)
}

// TestPutTakesRulesOfItsCommit: rules removed while an upload streams do
// not apply to it: the object carries no expiry and stays visible.
func TestPutTakesRulesOfItsCommit(t *testing.T) {
	opts, clk := clockedOptions(time.Second)
	s := openStore(t, opts)
	defer s.Close()
	ensureBucket(t, s, "b")
	if err := s.SetBucketLifecycle("b", lifecycleDoc(expireRule("r", "<Prefix></Prefix>", 1))); err != nil {
		t.Fatal(err)
	}
	body := &signalReader{reading: make(chan struct{}), release: make(chan struct{}), r: bytes.NewReader([]byte("hello"))}
	done := make(chan error, 1)
	go func() {
		_, err := s.PutObject(context.Background(), PutInput{Bucket: "b", Key: "k", Body: body})
		done <- err
	}()
	<-body.reading // the PUT has started and is streaming its body
	if err := s.SetBucketLifecycle("b", nil); err != nil {
		t.Fatal(err)
	}
	close(body.release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	clk.advance(5 * time.Second)
	if _, err := s.HeadObject("b", "k"); err != nil {
		t.Fatalf("object written after its bucket's rules were removed: %v", err)
	}
}
