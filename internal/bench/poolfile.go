package bench

import (
	"errors"
	"io"
	"os"
	"syscall"
)

// A poolFile is the payload pool unrolled into an in-memory file: the
// ring, then its first max bytes again, so every payload of at most max
// bytes is one contiguous range of the file. Uploads sent from it go out
// with sendfile(2): the kernel hands the file's pages to the socket, and
// the load generator neither copies the body into a buffer nor into the
// socket (through net/http a body of known length is otherwise copied
// twice, in 32 KiB pieces). Every upload opens the file anew, so that
// each has its own file position, which sendfile reads from.
type poolFile struct {
	pool *Pool
	f    *os.File
	path string // opening it gives a new, independent file position
	max  int64
}

// errNoPoolFile: the payload is not in the pool file (another pool, or
// larger than max); it is sent from memory instead.
var errNoPoolFile = errors.New("payload not in the pool file")

// newPoolFile writes the unrolled pool into an anonymous in-memory file
// (where the system has one).
func newPoolFile(p *Pool, max int64) (*poolFile, error) {
	if max <= 0 || max > int64(len(p.data)) {
		return nil, errNoPoolFile
	}
	f, path, err := memFile("b3-bench-pool")
	if err != nil {
		return nil, err
	}
	if _, err := f.Write(p.data); err != nil {
		f.Close()
		return nil, err
	}
	if _, err := f.Write(p.data[:max]); err != nil {
		f.Close()
		return nil, err
	}
	return &poolFile{pool: p, f: f, path: path, max: max}, nil
}

// open returns b's content as a request body net/http sends with
// sendfile: the file positioned at b's start, ending at its end.
func (pf *poolFile) open(b *Payload) (*fileBody, error) {
	if b.pool != pf.pool || b.size > pf.max || b.pos != 0 {
		return nil, errNoPoolFile
	}
	f, err := os.Open(pf.path)
	if err != nil {
		return nil, err
	}
	if _, err := f.Seek(b.start, io.SeekStart); err != nil {
		f.Close()
		return nil, err
	}
	return &fileBody{f: f, end: b.start + b.size}, nil
}

func (pf *poolFile) Close() error { return pf.f.Close() }

// fileBody is an upload body read from the pool file. net/http reads a
// body of known length through an io.LimitedReader, which a TCP
// connection sends with sendfile when the reader inside is a syscall.Conn
// (as *os.File is): sendfile moves the file position, so Read looks the
// position up rather than counting, and reports io.EOF at the payload's
// end (net/http reads on to check the body is not longer than declared).
type fileBody struct {
	f   *os.File
	end int64
}

var _ syscall.Conn = (*fileBody)(nil)

func (b *fileBody) Read(p []byte) (int, error) {
	pos, err := b.f.Seek(0, io.SeekCurrent)
	if err != nil {
		return 0, err
	}
	if pos >= b.end {
		return 0, io.EOF
	}
	if left := b.end - pos; int64(len(p)) > left {
		p = p[:left]
	}
	return b.f.Read(p)
}

func (b *fileBody) Close() error { return b.f.Close() }

// SyscallConn is the file's: sendfile reads from its descriptor.
func (b *fileBody) SyscallConn() (syscall.RawConn, error) { return b.f.SyscallConn() }
