package mount

import (
	"os"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// bufferPool hands out at most count buffers of size bytes and takes them
// back for reuse, as the SDK's download manager does with its
// BufferProvider: memory stays bounded by size*count however many files
// are open. Buffers are allocated on first use, so an idle mount is small.
//
// A pool made with files maps each buffer from a file of its own in
// memory (memfd_create): an upload then sends a whole part with
// sendfile(2) from that file (fileOf), and the kernel takes the bytes from
// the buffer's pages instead of Go copying them, 32 KiB at a time, through
// net/http's copy buffer into the socket. The file's pages may still be
// referenced by the socket after sendfile returns; a part's buffer is only
// reused once its request has been answered (the server read the whole
// body) or has failed (and a failed part voids the file: see writer).
type bufferPool struct {
	size int
	free chan []byte // a nil element is a buffer not yet allocated

	files bool
	mu    sync.Mutex
	file  map[*byte]*os.File // by the buffer's first byte; under mu
}

func newBufferPool(size, count int, files bool) *bufferPool {
	p := &bufferPool{size: size, free: make(chan []byte, count), files: files, file: map[*byte]*os.File{}}
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
	if b != nil {
		return b[:p.size]
	}
	if p.files {
		if b = p.mapFile(); b != nil {
			return b
		}
	}
	b, err := unix.Mmap(-1, 0, p.size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		b = make([]byte, p.size) // out of address space: the heap
	}
	return b[:p.size]
}

// mapFile maps a new buffer from a memory file of its own, nil if the
// system cannot (the buffer is then anonymous memory, sent by copying).
func (p *bufferPool) mapFile() []byte {
	fd, err := unix.MemfdCreate("b3-mount-part", unix.MFD_CLOEXEC)
	if err != nil {
		return nil
	}
	if err := unix.Ftruncate(fd, int64(p.size)); err != nil {
		unix.Close(fd)
		return nil
	}
	b, err := unix.Mmap(fd, 0, p.size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		unix.Close(fd)
		return nil
	}
	p.mu.Lock()
	p.file[unsafe.SliceData(b)] = os.NewFile(uintptr(fd), "b3-mount-part")
	p.mu.Unlock()
	return b
}

// fileOf returns the memory file that holds b (a buffer of this pool, or
// a slice of one starting at its first byte) if b fills it whole, else
// nil: the file is sent from its start to its end.
func (p *bufferPool) fileOf(b []byte) *os.File {
	if !p.files || len(b) != p.size {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.file[unsafe.SliceData(b)]
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
