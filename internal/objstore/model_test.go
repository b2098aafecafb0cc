package objstore

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/b3-storage/b3/internal/meta"
	"github.com/b3-storage/b3/internal/vfs"
)

// TestModel runs random sequences of put, overwrite, multipart put, delete,
// vacuum and reopen against the store and against a plain map, with
// readers running concurrently, and compares after every step. Keys hold
// 0x00 and 0xFF bytes and extend one another; more than a page of idle
// uploads sits on one of them, and multipart uploads stay open across
// vacuum passes and reopens before they are completed.
func TestModel(t *testing.T) {
	for seed := uint64(1); seed <= 6; seed++ {
		t.Run("", func(t *testing.T) { runModel(t, seed, 400) })
	}
}

func runModel(t *testing.T, seed uint64, steps int) {
	rng := rand.New(rand.NewPCG(seed, 0))
	mem := vfs.NewCrashableMem()
	opts := memOptions(mem)
	s := openStore(t, opts)
	ensureBucket(t, s, "b")

	model := map[string][]byte{}
	// everWritten[key] holds the digests of every value ever written: a
	// concurrent reader may see any of them, and nothing else.
	var everMu sync.Mutex
	everWritten := map[string]map[[32]byte]bool{}
	remember := func(key string, v []byte) {
		everMu.Lock()
		if everWritten[key] == nil {
			everWritten[key] = map[[32]byte]bool{}
		}
		everWritten[key][digest(v)] = true
		everMu.Unlock()
	}
	keys := make([]string, 24)
	for i := range keys {
		keys[i] = modelKey(i)
	}
	// Pebble orders these uploads before those of keys[0], a prefix of
	// their key: more than a page of them.
	for range 1001 {
		createUpload(t, s, keys[1])
	}
	open := map[string]*openUpload{} // uploads started, not yet completed

	var readerErr atomic.Value
	startReaders := func(s *Store) (stop func()) {
		done := make(chan struct{})
		var wg sync.WaitGroup
		for r := range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rr := rand.New(rand.NewPCG(seed, uint64(r)+100))
				for {
					select {
					case <-done:
						return
					default:
					}
					key := keys[rr.IntN(len(keys))]
					data, err := read(s, "b", key)
					if errors.Is(err, ErrNoSuchKey) {
						continue
					}
					if err != nil {
						readerErr.Store(err)
						return
					}
					everMu.Lock()
					ok := everWritten[key][digest(data)]
					everMu.Unlock()
					if !ok {
						readerErr.Store(errors.New("reader saw bytes never written for " + key))
						return
					}
				}
			}()
		}
		return func() { close(done); wg.Wait() }
	}
	stopReaders := startReaders(s)

	for step := range steps {
		key := keys[rng.IntN(len(keys))]
		switch op := rng.IntN(100); {
		case op < 45:
			v := value(key, step, rng.IntN(20<<10))
			remember(key, v)
			put(t, s, "b", key, v)
			model[key] = v
		case op < 55:
			switch up := open[key]; {
			case up != nil:
				if err := completeUpload(s, key, up.id, up.numbers...); err != nil {
					t.Fatalf("step %d complete: %v", step, err)
				}
				model[key] = up.whole
				delete(open, key)
			case rng.IntN(2) == 0:
				open[key] = startUpload(t, s, rng, key, step, remember)
			default:
				model[key] = multipartPut(t, s, rng, key, step, remember)
			}
		case op < 75:
			if _, err := s.DeleteObject("b", key); err != nil {
				t.Fatalf("step %d delete: %v", step, err)
			}
			delete(model, key)
		case op < 85:
			if _, err := s.Vacuum(context.Background(), 0.05); err != nil {
				t.Fatalf("step %d vacuum: %v", step, err)
			}
		case op < 90:
			stopReaders()
			if err := s.Close(); err != nil {
				t.Fatalf("step %d close: %v", step, err)
			}
			s = openStore(t, opts)
			stopReaders = startReaders(s)
		default:
			checkAll(t, s, model, keys)
			if n := checkUploadParts(t, s); n < len(open) {
				t.Fatalf("step %d: %d parts in %d open uploads", step, n, len(open))
			}
		}
		if err, _ := readerErr.Load().(error); err != nil {
			t.Fatalf("step %d: concurrent reader: %v", step, err)
		}
	}
	stopReaders()
	checkAll(t, s, model, keys)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

// modelKey names the i-th key: groups of four extend one base name with
// nothing, 0x00 0x01 or 0x00, or put 0xFF before it.
func modelKey(i int) string {
	base := string(rune('a'+i/4)) + "/k"
	return [...]string{base, base + "\x00\x01", "\xff" + base, base + "\x00"}[i%4]
}

// openUpload is a multipart upload whose parts are in, not yet completed.
type openUpload struct {
	id      string
	numbers []int
	whole   []byte
}

// multipartPut uploads a value in parts and completes the upload.
func multipartPut(t *testing.T, s *Store, rng *rand.Rand, key string, step int, remember func(string, []byte)) []byte {
	t.Helper()
	up := startUpload(t, s, rng, key, step, remember)
	if err := completeUpload(s, key, up.id, up.numbers...); err != nil {
		t.Fatalf("complete: %v", err)
	}
	return up.whole
}

// startUpload uploads a value in 2..4 parts sent in random order, plus a
// part that is replaced and one that will be left out of the completion.
func startUpload(t *testing.T, s *Store, rng *rand.Rand, key string, step int, remember func(string, []byte)) *openUpload {
	t.Helper()
	ctx := context.Background()
	up, err := s.CreateUpload(&meta.Upload{Bucket: "b", Key: key})
	if err != nil {
		t.Fatalf("create upload: %v", err)
	}
	n := 2 + rng.IntN(3)
	parts := make([][]byte, n)
	for i := range parts {
		parts[i] = value(key, step*10+i, 1+rng.IntN(9<<10))
	}
	order := rng.Perm(n)
	for _, i := range order {
		// Upload a throwaway version of the part first, then replace it.
		if rng.IntN(3) == 0 {
			if _, err := s.PutPart(ctx, "b", key, up.UploadID, i+1, bytes.NewReader(value(key, -1, 3000)), nil); err != nil {
				t.Fatalf("put part: %v", err)
			}
		}
		if _, err := s.PutPart(ctx, "b", key, up.UploadID, i+1, bytes.NewReader(parts[i]), nil); err != nil {
			t.Fatalf("put part: %v", err)
		}
	}
	// A part uploaded but not completed: its bytes must become dead.
	if _, err := s.PutPart(ctx, "b", key, up.UploadID, n+1, bytes.NewReader(value(key, -2, 2000)), nil); err != nil {
		t.Fatalf("put extra part: %v", err)
	}
	numbers := make([]int, n)
	for i := range numbers {
		numbers[i] = i + 1
	}
	whole := bytes.Join(parts, nil)
	remember(key, whole)
	return &openUpload{id: up.UploadID, numbers: numbers, whole: whole}
}

func checkAll(t *testing.T, s *Store, model map[string][]byte, keys []string) {
	t.Helper()
	for _, key := range keys {
		data, err := read(s, "b", key)
		want, exists := model[key]
		switch {
		case !exists && errors.Is(err, ErrNoSuchKey):
		case !exists:
			t.Fatalf("%s: deleted key reads back (%v)", key, err)
		case err != nil:
			t.Fatalf("%s: %v", key, err)
		case !bytes.Equal(data, want):
			t.Fatalf("%s: %d bytes differ from the %d written", key, len(data), len(want))
		}
	}
	res, err := s.Meta().ListObjects("b", meta.ListOptions{MaxKeys: 1000})
	if err != nil {
		t.Fatal(err)
	}
	var listed, wantKeys []string
	for _, o := range res.Objects {
		listed = append(listed, o.Key)
	}
	for k := range model {
		wantKeys = append(wantKeys, k)
	}
	sort.Strings(wantKeys)
	if !slices.Equal(listed, wantKeys) {
		t.Fatalf("listing %v, model %v", listed, wantKeys)
	}
}
