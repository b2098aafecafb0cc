package objstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/b3-storage/b3/internal/cache"
	"github.com/b3-storage/b3/internal/meta"
	"github.com/b3-storage/b3/internal/vfs"
)

func cachedStore(t *testing.T, policy cache.Policy) *Store {
	opts := memOptions(vfs.NewCrashableMem())
	opts.Cache = cache.New[CachedObject](cache.Options{MaxBytes: 1 << 20, MaxObjectSize: 64 << 10, Policy: policy})
	s := openStore(t, opts)
	t.Cleanup(func() { s.Close() })
	ensureBucket(t, s, "b")
	return s
}

// TestCacheFresh: reads through the cache after overwrite, tag change,
// delete and multipart completion return the new state, never the cached
// one; and the cache is actually used.
func TestCacheFresh(t *testing.T) {
	for _, policy := range []cache.Policy{cache.LRU, cache.S3FIFO} {
		t.Run(string(policy), func(t *testing.T) {
			s := cachedStore(t, policy)
			mustRead := func(key string, want []byte) {
				t.Helper()
				for range 2 { // the second read is a hit
					got, err := read(s, "b", key)
					if err != nil || !bytes.Equal(got, want) {
						t.Fatalf("%s: got %q (%v), want %q", key, got, err, want)
					}
				}
			}
			put(t, s, "b", "k", []byte("v1"))
			mustRead("k", []byte("v1"))
			put(t, s, "b", "k", []byte("v2"))
			mustRead("k", []byte("v2"))

			if _, err := s.UpdateObject("b", "k", func(o *meta.Object) error { o.Tags = map[string]string{"t": "1"}; return nil }); err != nil {
				t.Fatal(err)
			}
			obj, r, err := s.OpenObject(context.Background(), "b", "k", WholeObject)
			if err != nil || obj.Tags["t"] != "1" {
				t.Fatalf("record after tag change: %+v %v", obj, err)
			}
			r.Close()

			if _, err := s.DeleteObject("b", "k"); err != nil {
				t.Fatal(err)
			}
			if _, err := read(s, "b", "k"); !errors.Is(err, ErrNoSuchKey) {
				t.Fatalf("read after delete: %v", err)
			}

			up, err := s.CreateUpload(&meta.Upload{Bucket: "b", Key: "k"})
			if err != nil {
				t.Fatal(err)
			}
			put(t, s, "b", "k", []byte("v3"))
			mustRead("k", []byte("v3"))
			if _, err := s.PutPart(context.Background(), "b", "k", up.UploadID, 1, bytes.NewReader([]byte("mp")), nil); err != nil {
				t.Fatal(err)
			}
			build := func(up *meta.Upload, parts []*meta.Part) (*meta.Object, error) { return &meta.Object{}, nil }
			if _, err := s.CompleteUpload("b", "k", up.UploadID, []int{1}, build, nil); err != nil {
				t.Fatal(err)
			}
			mustRead("k", []byte("mp"))

			// A range of a cached object.
			_, r, err = s.OpenObject(context.Background(), "b", "k", func(*meta.Object) (int64, int64, error) { return 1, 1, nil })
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			buf.ReadFrom(r)
			r.Close()
			if buf.String() != "p" {
				t.Fatalf("range from cache: %q", buf.String())
			}
			st := s.CacheStats()
			if st.Hits < 4 || st.Invalidations < 3 {
				t.Fatalf("cache not used: %+v", st)
			}
		})
	}
}

// TestCacheConcurrentOverwrite: readers racing writers never see a value
// older than the last acknowledged write.
func TestCacheConcurrentOverwrite(t *testing.T) {
	s := cachedStore(t, cache.S3FIFO)
	var mu sync.Mutex
	acked := map[string]int{}
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 300 {
				// Each key has one writer, so its sequence numbers are
				// committed in order; every goroutine reads every key.
				if i%3 == 0 {
					key := fmt.Sprint("k", w, i%2)
					mu.Lock()
					seq := acked[key] + 1
					mu.Unlock()
					put(t, s, "b", key, []byte(fmt.Sprint(seq)))
					mu.Lock()
					acked[key] = seq
					mu.Unlock()
					continue
				}
				key := fmt.Sprint("k", i%4, i%2)
				mu.Lock()
				floor := acked[key]
				mu.Unlock()
				got, err := read(s, "b", key)
				if errors.Is(err, ErrNoSuchKey) && floor == 0 {
					continue
				}
				var seq int
				fmt.Sscan(string(got), &seq)
				if err != nil || seq < floor {
					t.Errorf("%s: read %q (%v), acknowledged %d", key, got, err, floor)
					return
				}
			}
		}()
	}
	wg.Wait()
}
