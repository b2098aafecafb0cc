package checksum

import (
	"bytes"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/http"
	"strings"
)

// TrailerSource is implemented by body readers that carry trailing headers
// (the aws-chunked decoder of package s3auth). Trailer is valid once Read
// has returned io.EOF.
type TrailerSource interface {
	Trailer() http.Header
}

// maxHashes bounds the fan-out: every flexible algorithm, MD5 among them
// (the ETag's MD5 serves as the MD5 checksum too).
const maxHashes = 10

// Reader computes MD5 and the requested checksums of a body in one pass
// and verifies the expected values at EOF. It is not safe for concurrent
// use. Read does not allocate.
type Reader struct {
	src      io.Reader
	expected Expected

	// hashes[0] is always MD5; algs[i] names hashes[i].
	hashes [maxHashes]hash.Hash
	algs   [maxHashes]Algorithm
	count  int

	size int64
	sums [maxHashes][]byte // filled at EOF
	err  error             // sticky terminal result (io.EOF on success)
}

// NewReader wraps src. MD5 is always computed; so is expected's checksum
// algorithm, and every algorithm in also (duplicates are ignored).
//
// Each Reader hashes with its own state (crypto/md5 and friends), so
// concurrent uploads never wait on one another: a shared multi-lane MD5
// server was tried and, with hundreds of uploads in flight and some
// abandoned, starved its lanes and hung every upload
// (TestManyConcurrentReaders).
func NewReader(src io.Reader, expected Expected, also ...Algorithm) *Reader {
	r := &Reader{src: src, expected: expected}
	r.hashes[0], r.algs[0] = md5.New(), MD5
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
	for i := 0; i < r.count; i++ {
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
	if r.expected.ContentMD5 != nil && !bytes.Equal(r.expected.ContentMD5, r.sums[0]) {
		return errBadDigestMD5()
	}
	want := r.expected.Checksum
	source, hasTrailer := r.src.(TrailerSource)
	if hasTrailer {
		if err := checkUndeclared(source.Trailer(), r.expected); err != nil {
			return err
		}
	}
	if want.Algorithm == None {
		return io.EOF
	}
	if r.expected.FromTrailer {
		if !hasTrailer {
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

// checkUndeclared refuses a trailing x-amz-checksum-* header that
// x-amz-trailer did not announce: nothing would compare it with the body,
// and a client that sent it believes it was checked.
func checkUndeclared(trailer http.Header, exp Expected) error {
	for name := range trailer {
		lower := strings.ToLower(name)
		if !strings.HasPrefix(lower, HeaderPrefix) {
			continue
		}
		if !exp.FromTrailer || lower != exp.Checksum.Algorithm.HeaderName() {
			return errInvalidRequest(fmt.Sprintf("The trailing header %s was not declared in x-amz-trailer.", lower))
		}
	}
	return nil
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

// Stored returns the checksum to keep with an object: the requested one,
// else the Default algorithm's if the Reader computed it (the caller
// passes Default among the extra algorithms); zero before Done.
func (r *Reader) Stored() Checksum {
	if c := r.Requested(); !c.IsZero() {
		return c
	}
	c, _ := r.Checksum(Default)
	return c
}
