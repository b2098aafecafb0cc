package mount

import (
	"sync"

	"golang.org/x/sys/unix"
)

// bufferPool hands out at most count buffers of size bytes and takes them
// back for reuse, as the SDK's download manager does with its
// BufferProvider: memory stays bounded by size*count however many files
// are open. Buffers are allocated on first use, so an idle mount is small.
type bufferPool struct {
	size int
	free chan []byte // a nil element is a buffer not yet allocated
}

func newBufferPool(size, count int) *bufferPool {
	p := &bufferPool{size: size, free: make(chan []byte, count)}
	for range count {
		p.free <- nil
	}
	return p
}

// get waits for a buffer or for done to close (then nil); a nil done
// waits for the buffer.
func (p *bufferPool) get(done <-chan struct{}) []byte {
	select {
	case b := <-p.free:
		return p.alloc(b)
	case <-done:
		return nil
	}
}

// tryGet returns a buffer if one is free now, else nil.
func (p *bufferPool) tryGet() []byte {
	select {
	case b := <-p.free:
		return p.alloc(b)
	default:
		return nil
	}
}

// alloc maps a buffer outside the Go heap: the pool's memory is fixed,
// and on the heap it would double the garbage collector's target (the
// heap may grow to twice what is live before a collection).
func (p *bufferPool) alloc(b []byte) []byte {
	if b == nil {
		var err error
		b, err = unix.Mmap(-1, 0, p.size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
		if err != nil {
			b = make([]byte, p.size) // out of address space: the heap
		}
	}
	return b[:p.size]
}

// put returns a buffer from get or tryGet; the caller no longer uses it.
func (p *bufferPool) put(b []byte) { p.free <- b[:p.size] }

// smallBuffers recycles the growing first buffers of files being written
// and the whole-object buffers of small files being read.
var smallBuffers = sync.Pool{New: func() any { return new([]byte) }}

func getSmall(capacity int) *[]byte {
	b := smallBuffers.Get().(*[]byte)
	if cap(*b) < capacity {
		*b = make([]byte, 0, capacity)
	}
	*b = (*b)[:0]
	return b
}

func putSmall(b *[]byte) {
	if b != nil && cap(*b) <= 16<<20 {
		smallBuffers.Put(b)
	}
}
