package bench

import (
	"bytes"
	"errors"
	"io"
	"strconv"
	"sync"
	"testing"
)

func TestPayloadReadersAgree(t *testing.T) {
	pool := testPool()
	for _, size := range []int64{1, 4096, testPoolSize + 12345} { // the last wraps the ring
		p := pool.Payload("key", size)
		all, err := io.ReadAll(p)
		if err != nil || int64(len(all)) != size {
			t.Fatalf("size %d: ReadAll %d bytes, %v", size, len(all), err)
		}
		at := make([]byte, size)
		if n, err := pool.Payload("key", size).ReadAt(at, 0); int64(n) != size || (err != nil && err != io.EOF) {
			t.Fatalf("ReadAt: %d %v", n, err)
		}
		var wt bytes.Buffer
		if _, err := pool.Payload("key", size).WriteTo(&wt); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(all, at) || !bytes.Equal(all, wt.Bytes()) {
			t.Fatalf("size %d: Read, ReadAt and WriteTo disagree", size)
		}
		// Seek back and re-read the tail.
		if _, err := p.Seek(-1, io.SeekEnd); err != nil {
			t.Fatal(err)
		}
		tail, _ := io.ReadAll(p)
		if !bytes.Equal(tail, all[size-1:]) {
			t.Fatal("seek to end-1 reads the wrong byte")
		}
	}
	a, b := make([]byte, 64), make([]byte, 64)
	_, _ = pool.Payload("a", 64).Read(a)
	_, _ = pool.Payload("b", 64).Read(b)
	if bytes.Equal(a, b) {
		t.Error("different keys give the same content")
	}
}

func TestSinkVerifies(t *testing.T) {
	pool := testPool()
	const size = 10000
	content, _ := io.ReadAll(pool.Payload("k", size))

	// In order, via Write.
	s := NewSink(pool.Payload("k", size))
	if _, err := copyPooled(s, bytes.NewReader(content)); err != nil {
		t.Fatal(err)
	}
	if n, err := s.Result(size); n != size || err != nil {
		t.Errorf("good content: %d %v", n, err)
	}
	// Out of order, via WriteAt (as the transfer manager writes parts).
	s = NewSink(pool.Payload("k", size))
	_, _ = s.WriteAt(content[5000:], 5000)
	_, _ = s.WriteAt(content[:5000], 0)
	if _, err := s.Result(size); err != nil {
		t.Errorf("out-of-order parts: %v", err)
	}
	// A flipped byte.
	bad := append([]byte(nil), content...)
	bad[777] ^= 1
	s = NewSink(pool.Payload("k", size))
	_, _ = s.Write(bad)
	if _, err := s.Result(size); !errors.Is(err, ErrVerify) || ClassifyError(err) != errVerify {
		t.Errorf("flipped byte: %v", err)
	}
	// Short.
	s = NewSink(nil)
	_, _ = s.Write(content[:10])
	if _, err := s.Result(size); !errors.Is(err, ErrShortRead) {
		t.Errorf("short: %v", err)
	}
}

// BenchmarkPayloadRead: producing upload bytes through Read (as the SDK's
// HTTP body copy does) must be far faster than any network or disk.
func BenchmarkPayloadRead(b *testing.B) {
	pool := NewPool(1)
	b.SetBytes(5 << 20)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		_, _ = copyPooled(io.Discard, pool.Payload("bench"+strconv.Itoa(i), 5<<20))
	}
}

func BenchmarkSinkVerify(b *testing.B) {
	pool := NewPool(1)
	content, _ := io.ReadAll(pool.Payload("k", 1<<20))
	b.SetBytes(1 << 20)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s := NewSink(pool.Payload("k", 1<<20))
		_, _ = copyPooled(s, bytes.NewReader(content))
	}
}

// testPoolSize keeps tests fast under the race detector; odd, like PoolSize.
const testPoolSize = 1<<20 + 13

var testPool = sync.OnceValue(func() *Pool { return newPoolSize(3, testPoolSize) })
