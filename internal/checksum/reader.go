package checksum

import (
	"bytes"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"hash"
	"io"
	"net/http"
	"sync"
	"sync/atomic"

	md5simd "github.com/minio/md5-simd"
)

// md5Server hashes the MD5 of concurrent uploads together: with AVX2 or
// AVX-512 it runs up to 16 streams in SIMD lanes, about 3x the throughput of
// one-stream MD5 when many uploads are in flight (see docs/PERFORMANCE.md).
// A lone stream is slower through it than through crypto/md5 (it takes the
// scalar path plus a channel hop per block), so Readers use the lanes only
// while at least simdFrom of them are hashing. On CPUs without AVX2 it falls
// back to crypto/md5.
var md5Server = sync.OnceValue(md5simd.NewServer)

// simdFrom is the number of concurrent MD5 streams from which SIMD lanes
// pay off. Measured on b3's 2-core AVX-512 machine (docs/PERFORMANCE.md):
// md5-simd hashes 684 MB/s for 1 stream, 901 MB/s for 4 and 2434 MB/s for
// 8, against 775 MB/s per stream (and core) for crypto/md5; below 8 streams
// it also runs partly on its scalar path.
const simdFrom = 8

// hashing counts Readers between NewReader and Close.
var hashing atomic.Int64

// TrailerSource is implemented by body readers that carry trailing headers
// (the aws-chunked decoder of package s3auth). Trailer is valid once Read
// has returned io.EOF.
type TrailerSource interface {
	Trailer() http.Header
}

// maxHashes bounds the fan-out: MD5 plus every flexible algorithm.
const maxHashes = 1 + 5

// Reader computes MD5 and the requested checksums of a body in one pass
// and verifies the expected values at EOF. It is not safe for concurrent
// use. Read does not allocate.
type Reader struct {
	src      io.Reader
	expected Expected

	// hashes[0] is always MD5; algs[i] names hashes[i] for i > 0.
	hashes [maxHashes]hash.Hash
	algs   [maxHashes]Algorithm
	count  int
	md5    md5simd.Hasher // hashes[0] when on a SIMD lane; held until Close
	open   bool           // counted in hashing

	size int64
	sums [maxHashes][]byte // filled at EOF
	err  error             // sticky terminal result (io.EOF on success)
}

// NewReader wraps src. The caller must Close the Reader. MD5 is always computed; so is expected's checksum
// algorithm, and every algorithm in also (duplicates are ignored).
func NewReader(src io.Reader, expected Expected, also ...Algorithm) *Reader {
	r := &Reader{src: src, expected: expected}
	r.open = true
	if hashing.Add(1) >= simdFrom {
		r.md5 = md5Server().NewHash()
		r.hashes[0] = r.md5
	} else {
		r.hashes[0] = md5.New()
	}
	r.count = 1
	r.add(expected.Checksum.Algorithm)
	for _, alg := range also {
		r.add(alg)
	}
	return r
}

func (r *Reader) add(alg Algorithm) {
	if alg == None || r.index(alg) >= 0 {
		return
	}
	r.hashes[r.count] = alg.New()
	r.algs[r.count] = alg
	r.count++
}

func (r *Reader) index(alg Algorithm) int {
	for i := 1; i < r.count; i++ {
		if r.algs[i] == alg {
			return i
		}
	}
	return -1
}

// Read reads from the source and feeds every hash. At the source's EOF it
// verifies the expected digests and returns io.EOF only if all match;
// otherwise it returns the *Error (BadDigest, InvalidRequest,
// MalformedTrailerError). Source errors are returned unchanged.
func (r *Reader) Read(p []byte) (int, error) {
	if r.err != nil {
		return 0, r.err
	}
	n, err := r.src.Read(p)
	if n > 0 {
		r.size += int64(n)
		for i := 0; i < r.count; i++ {
			r.hashes[i].Write(p[:n])
		}
	}
	switch {
	case err == io.EOF:
		r.err = r.finish()
		return n, r.err
	case err != nil:
		r.err = err
	}
	return n, err
}

// finish computes the digests and compares them with the expected values.
func (r *Reader) finish() error {
	for i := 0; i < r.count; i++ {
		r.sums[i] = r.hashes[i].Sum(nil)
	}
	r.Close()
	if r.expected.ContentMD5 != nil && !bytes.Equal(r.expected.ContentMD5, r.sums[0]) {
		return errBadDigestMD5()
	}
	want := r.expected.Checksum
	if want.Algorithm == None {
		return io.EOF
	}
	if r.expected.FromTrailer {
		source, ok := r.src.(TrailerSource)
		if !ok {
			return errMalformedTrailer()
		}
		value := source.Trailer().Get(want.Algorithm.HeaderName())
		if value == "" {
			return errMalformedTrailer()
		}
		sum, err := want.Algorithm.Decode(value)
		if err != nil {
			return err
		}
		want.Sum = sum
		r.expected.Checksum.Sum = sum
	}
	if want.Sum != nil && !bytes.Equal(want.Sum, r.sums[r.index(want.Algorithm)]) {
		return errBadDigestChecksum(want.Algorithm)
	}
	return io.EOF
}

// Close releases the MD5 lane, if any. It is idempotent and leaves computed
// digests readable.
func (r *Reader) Close() {
	if r.open {
		r.open = false
		hashing.Add(-1)
	}
	if r.md5 != nil {
		r.md5.Close()
		r.md5 = nil
	}
}

// Done reports whether the body was read to EOF and verified.
func (r *Reader) Done() bool { return errors.Is(r.err, io.EOF) }

// Size returns the number of bytes read so far.
func (r *Reader) Size() int64 { return r.size }

// MD5 returns the MD5 digest of the body; nil until Done.
func (r *Reader) MD5() []byte {
	if !r.Done() {
		return nil
	}
	return r.sums[0]
}

// ETag returns the hex MD5 of the body (no quotes); "" until Done.
func (r *Reader) ETag() string {
	if !r.Done() {
		return ""
	}
	return hex.EncodeToString(r.sums[0])
}

// Checksum returns the computed digest for alg; false until Done or when
// alg was not computed.
func (r *Reader) Checksum(alg Algorithm) (Checksum, bool) {
	i := r.index(alg)
	if i < 0 || !r.Done() {
		return Checksum{}, false
	}
	return Checksum{Algorithm: alg, Sum: r.sums[i]}, true
}

// Requested returns the computed value of the checksum the request asked
// for (zero when none was asked or before Done).
func (r *Reader) Requested() Checksum {
	c, _ := r.Checksum(r.expected.Checksum.Algorithm)
	return c
}
