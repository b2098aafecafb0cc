package sse

import (
	"errors"
	"fmt"
	"io"

	"github.com/minio/sio"
)

// ChunkSize is the plaintext of one package; each adds Overhead bytes.
const (
	ChunkSize   = 64 << 10
	Overhead    = 32
	packageSize = ChunkSize + Overhead
)

// ErrCorrupt reports stored bytes that do not decrypt: altered, cut or
// reordered ciphertext, or sizes that no stream has.
var ErrCorrupt = errors.New("sse: stored ciphertext does not authenticate")

func config(k Key, seq uint32) sio.Config {
	return sio.Config{MinVersion: sio.Version20, MaxVersion: sio.Version20,
		CipherSuites: []byte{sio.AES_256_GCM}, Key: k[:], SequenceNumber: seq}
}

// EncryptReader returns a reader of src's bytes encrypted under k as one
// stream.
func EncryptReader(src io.Reader, k Key) (io.Reader, error) {
	r, err := sio.EncryptReader(src, config(k, 0))
	if err != nil {
		return nil, fmt.Errorf("sse: %w", err)
	}
	return r, nil
}

// EncryptedSize is the stored size of a stream of plain bytes.
func EncryptedSize(plain int64) int64 {
	return plain/ChunkSize*packageSize + overheadOfRest(plain%ChunkSize)
}

func overheadOfRest(rest int64) int64 {
	if rest == 0 {
		return 0
	}
	return rest + Overhead
}

// DecryptedSize is the plaintext size of a stream stored in enc bytes;
// ErrCorrupt for a size no stream has.
func DecryptedSize(enc int64) (int64, error) {
	plain := enc / packageSize * ChunkSize
	if rest := enc % packageSize; rest != 0 {
		if rest <= Overhead {
			return 0, fmt.Errorf("sse: stream of %d bytes: %w", enc, ErrCorrupt)
		}
		plain += rest - Overhead
	}
	return plain, nil
}

// Stream is one stream of a stored object: its key part number and its
// stored size.
type Stream struct {
	Part   int
	Stored int64
	plain  int64
}

// Layout is a stored object as its streams, in order.
type Layout struct {
	streams []Stream
	plain   int64
}

// NewLayout describes an object whose streams are given in order (one
// stream of part 0 for a single PUT).
func NewLayout(streams []Stream) (Layout, error) {
	l := Layout{streams: append([]Stream(nil), streams...)}
	for i := range l.streams {
		p, err := DecryptedSize(l.streams[i].Stored)
		if err != nil {
			return Layout{}, err
		}
		l.streams[i].plain = p
		l.plain += p
	}
	return l, nil
}

// Size is the object's plaintext size.
func (l Layout) Size() int64 { return l.plain }

// Plan is where a plaintext range lies in the stored bytes: read Stored
// bytes from StoredOff and hand them to Decrypt.
type Plan struct {
	StoredOff, Stored int64
	key               Key
	off, n            int64 // the plaintext range
	layout            Layout
}

// Range plans the read of plaintext bytes [off, off+n): the stored range
// runs from the first package holding off to the end of the last one
// holding off+n-1.
func (l Layout) Range(dataKey Key, off, n int64) Plan {
	p := Plan{key: dataKey, off: off, n: n, layout: l}
	if n <= 0 {
		return p
	}
	var plainAt, storedAt int64
	first := true
	end := off + n
	for _, s := range l.streams {
		if plainAt+s.plain <= off {
			plainAt += s.plain
			storedAt += s.Stored
			continue
		}
		if plainAt >= end {
			break
		}
		from := max(off-plainAt, 0)
		to := min(end-plainAt, s.plain)
		if first {
			p.StoredOff = storedAt + from/ChunkSize*packageSize
			first = false
		}
		p.Stored = storedAt + endOfPackage(to, s) - p.StoredOff
		plainAt += s.plain
		storedAt += s.Stored
	}
	return p
}

// endOfPackage is the stored offset, within stream s, of the end of the
// package that holds plaintext byte to-1.
func endOfPackage(to int64, s Stream) int64 {
	packages := (to + ChunkSize - 1) / ChunkSize
	return min(packages*packageSize, s.Stored)
}

// Decrypt returns a reader of the plaintext range planned, from stored,
// a reader of the planned stored bytes. A package that does not
// authenticate ends the read with ErrCorrupt: no byte of it is returned.
func (p Plan) Decrypt(stored io.Reader) io.Reader {
	if p.n <= 0 {
		return eofReader{}
	}
	return &rangeReader{plan: p, src: stored}
}

type eofReader struct{}

func (eofReader) Read([]byte) (int, error) { return 0, io.EOF }

// rangeReader decrypts the streams of a plan one after the other.
type rangeReader struct {
	plan    Plan
	src     io.Reader
	stream  int   // index of the next stream to open
	plainAt int64 // plaintext offset of stream's start
	cur     io.Reader
	dec     io.Reader         // cur's decrypter, read to its end when drain
	drain   bool              // the range runs to the end of cur's stream
	stored  *io.LimitedReader // the stored bytes of cur's stream
	left    int64             // plaintext bytes still to return
	started bool
}

func (r *rangeReader) Read(b []byte) (int, error) {
	if !r.started {
		r.started, r.left = true, r.plan.n
	}
	for {
		if r.left == 0 {
			if r.cur != nil {
				if err := r.endStream(); err != nil {
					return 0, err
				}
			}
			return 0, io.EOF
		}
		if r.cur == nil {
			if err := r.next(); err != nil {
				return 0, err
			}
		}
		if int64(len(b)) > r.left {
			b = b[:r.left]
		}
		n, err := r.cur.Read(b)
		r.left -= int64(n)
		if err == io.EOF {
			err = r.endStream()
			if err == nil && n == 0 {
				continue
			}
		}
		if err != nil {
			return n, fmt.Errorf("%w: %v", ErrCorrupt, err)
		}
		return n, nil
	}
}

// endStream closes the current stream. One read to the end of the range
// is read to its end by the decrypter too: it checks the final package's
// flag and returns the decrypter's buffer to sio's pool (a decrypter left
// before its end leaves its buffer to the garbage collector).
func (r *rangeReader) endStream() error {
	dec, drain := r.dec, r.drain
	r.cur, r.dec, r.drain = nil, nil, false
	if !drain {
		return nil
	}
	var one [1]byte
	n, err := dec.Read(one[:])
	switch {
	case n > 0:
		return fmt.Errorf("sse: stream longer than its record says: %w", ErrCorrupt)
	case err == io.EOF:
		return nil
	case err == nil:
		return fmt.Errorf("sse: stream not ended: %w", ErrCorrupt)
	}
	return fmt.Errorf("%w: %v", ErrCorrupt, err)
}

// next opens the stream holding the next plaintext byte to return.
func (r *rangeReader) next() error {
	want := r.plan.off + (r.plan.n - r.left)
	streams := r.plan.layout.streams
	for r.stream < len(streams) && r.plainAt+streams[r.stream].plain <= want {
		r.plainAt += streams[r.stream].plain
		r.stream++
	}
	if r.stream == len(streams) {
		return fmt.Errorf("sse: range past the object's end: %w", ErrCorrupt)
	}
	if r.stored != nil && r.stored.N > 0 {
		// The previous stream's final package must have been read whole.
		return fmt.Errorf("sse: %d stored bytes left in a stream: %w", r.stored.N, ErrCorrupt)
	}
	s := streams[r.stream]
	from := want - r.plainAt
	seq := from / ChunkSize
	to := min(r.plan.off+r.plan.n-r.plainAt, s.plain)
	storedLen := endOfPackage(to, s) - seq*packageSize
	r.stored = &io.LimitedReader{R: r.src, N: storedLen}
	dec, err := sio.DecryptReader(r.stored, config(r.plan.key.PartKey(s.Part), uint32(seq)))
	if err != nil {
		return fmt.Errorf("sse: %w", err)
	}
	if skip := from - seq*ChunkSize; skip > 0 {
		if _, err := io.CopyN(io.Discard, dec, skip); err != nil {
			return fmt.Errorf("%w: %v", ErrCorrupt, err)
		}
	}
	r.cur, r.dec, r.drain = io.LimitReader(dec, to-from), dec, to == s.plain
	r.plainAt += s.plain
	r.stream++
	return nil
}
