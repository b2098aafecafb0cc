package checksum

import (
	"bytes"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc64"
	"io"
	"math/rand/v2"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"testing/iotest"
	"time"
)

// The hash/crc64 table for the reflected polynomial must agree with the
// accelerated implementation: two independent codes, one polynomial.
func TestCRC64NVMEMatchesStdlibTable(t *testing.T) {
	table := crc64.MakeTable(crc64NVMEPoly)
	data := bytes.Repeat([]byte("0123456789abcdef-"), 1000)
	for _, n := range []int{0, 1, 9, 127, 128, 1000, len(data)} {
		want := crc64.Checksum(data[:n], table)
		got := CRC64NVME.Sum(data[:n])
		var gotValue uint64
		for _, b := range got {
			gotValue = gotValue<<8 | uint64(b)
		}
		if gotValue != want {
			t.Errorf("n=%d: crc64nvme %x, hash/crc64 %x", n, gotValue, want)
		}
	}
}

func hdr(kv ...string) http.Header {
	h := http.Header{}
	for i := 0; i < len(kv); i += 2 {
		h.Set(kv[i], kv[i+1])
	}
	return h
}

// trailerBody is a body that carries a trailer, like the aws-chunked decoder.
type trailerBody struct {
	io.Reader
	trailer http.Header
}

func (b *trailerBody) Trailer() http.Header { return b.trailer }

type readerCase struct {
	name                string
	header, trailer     http.Header // trailer nil: plain body
	wantParse, wantRead string      // S3 code from ParseHeaders, at EOF ("" = io.EOF)
}

func TestReaderVerifies(t *testing.T) {
	body := []byte("The quick brown fox jumps over the lazy dog")
	md5sum := md5.Sum(body)
	goodMD5 := Encode(md5sum[:])
	goodCRC := Encode(CRC32.Sum(body))
	goodSHA := Encode(SHA256.Sum(body))
	badCRC := Encode(CRC32.Sum([]byte("other")))

	tests := []readerCase{
		{"no expectations", hdr(), nil, "", ""},
		{"good md5", hdr("Content-MD5", goodMD5), nil, "", ""},
		{"bad md5", hdr("Content-MD5", Encode(make([]byte, 16))), nil, "", "BadDigest"},
		{"malformed md5", hdr("Content-MD5", "nope"), nil, "InvalidDigest", ""},
		{"short md5", hdr("Content-MD5", Encode([]byte{1, 2, 3})), nil, "InvalidDigest", ""},
		{"good crc32", hdr("x-amz-checksum-crc32", goodCRC), nil, "", ""},
		{"bad crc32", hdr("x-amz-checksum-crc32", badCRC), nil, "", "BadDigest"},
		{"good sha256 with sdk alg", hdr("x-amz-checksum-sha256", goodSHA, "x-amz-sdk-checksum-algorithm", "SHA256"), nil, "", ""},
		{"sdk alg mismatch", hdr("x-amz-checksum-sha256", goodSHA, "x-amz-sdk-checksum-algorithm", "CRC32"), nil, "BadDigest", ""},
		{"sdk alg alone", hdr("x-amz-sdk-checksum-algorithm", "CRC32"), nil, "InvalidRequest", ""},
		{"sdk alg unknown", hdr("x-amz-checksum-crc32", goodCRC, "x-amz-sdk-checksum-algorithm", "MD4"), nil, "InvalidRequest", ""},
		{"two checksums", hdr("x-amz-checksum-crc32", goodCRC, "x-amz-checksum-sha256", goodSHA), nil, "InvalidRequest", ""},
		{"malformed checksum", hdr("x-amz-checksum-crc32", goodSHA), nil, "InvalidRequest", ""},
		{"trailer good", hdr("x-amz-trailer", "x-amz-checksum-crc32"), hdr("x-amz-checksum-crc32", goodCRC), "", ""},
		{"trailer bad", hdr("x-amz-trailer", "x-amz-checksum-crc32"), hdr("x-amz-checksum-crc32", badCRC), "", "BadDigest"},
		{"trailer missing", hdr("x-amz-trailer", "x-amz-checksum-crc32"), hdr(), "", "MalformedTrailerError"},
		{"trailer malformed", hdr("x-amz-trailer", "x-amz-checksum-crc32"), hdr("x-amz-checksum-crc32", "zz"), "", "InvalidRequest"},
		{"trailer on plain body", hdr("x-amz-trailer", "x-amz-checksum-crc32"), nil, "", "MalformedTrailerError"},
		{"trailer unsupported", hdr("x-amz-trailer", "x-amz-meta-foo"), nil, "InvalidRequest", ""},
		{"trailer plus header", hdr("x-amz-trailer", "x-amz-checksum-crc32", "x-amz-checksum-crc32", goodCRC), nil, "InvalidRequest", ""},
		// Headers naming an algorithm b3 does not compute are refused,
		// never ignored: the client would believe its data was checked.
		{"unknown checksum header", hdr("x-amz-checksum-crc16", goodCRC), nil, "InvalidRequest", ""},
		{"unknown next to known", hdr("x-amz-checksum-crc32", goodCRC, "x-amz-checksum-blake3", goodSHA), nil, "InvalidRequest", ""},
		{"empty checksum value", hdr("x-amz-checksum-crc32", ""), nil, "InvalidRequest", ""},
		{"unknown algorithm header", hdr("x-amz-checksum-algorithm", "BLAKE3"), nil, "InvalidRequest", ""},
		{"bad checksum type", hdr("x-amz-checksum-type", "PARTIAL"), nil, "InvalidRequest", ""},
		{"checksum mode ignored", hdr("x-amz-checksum-mode", "ENABLED"), nil, "", ""},
		{"known algorithm and type", hdr("x-amz-checksum-crc32", goodCRC, "x-amz-checksum-algorithm", "crc32", "x-amz-checksum-type", "FULL_OBJECT"), nil, "", ""},
		{"trailer unknown algorithm", hdr("x-amz-trailer", "x-amz-checksum-crc16"), nil, "InvalidRequest", ""},
		{"undeclared trailer", hdr(), hdr("x-amz-checksum-crc32", badCRC), "", "InvalidRequest"},
		{"second trailer", hdr("x-amz-trailer", "x-amz-checksum-crc32"), hdr("x-amz-checksum-crc32", goodCRC, "x-amz-checksum-sha256", goodSHA), "", "InvalidRequest"},
	}
	for _, alg := range Algorithms {
		header := strings.ToLower(alg.HeaderName())
		tests = append(tests,
			readerCase{"good " + alg.String(), hdr(header, Encode(alg.Sum(body))), nil, "", ""},
			readerCase{"bad " + alg.String(), hdr(header, Encode(alg.Sum([]byte("other")))), nil, "", "BadDigest"},
			readerCase{"trailer " + alg.String(), hdr("x-amz-trailer", header, "x-amz-sdk-checksum-algorithm", alg.String()), hdr(header, Encode(alg.Sum(body))), "", ""})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			exp, err := ParseHeaders(tt.header)
			if code := codeOf(err); code != tt.wantParse {
				t.Fatalf("ParseHeaders: code %q (%v), want %q", code, err, tt.wantParse)
			}
			if err != nil {
				return
			}
			var src io.Reader = iotest.OneByteReader(bytes.NewReader(body))
			if tt.trailer != nil {
				src = &trailerBody{Reader: src, trailer: tt.trailer}
			}
			r := NewReader(src, exp, CRC32C)
			got, err := io.ReadAll(r)
			if code := codeOf(err); code != tt.wantRead {
				t.Fatalf("read: code %q (%v), want %q", code, err, tt.wantRead)
			}
			if !bytes.Equal(got, body) {
				t.Fatalf("read %q", got)
			}
			if tt.wantRead != "" {
				if r.Done() || r.ETag() != "" {
					t.Fatal("reader reports success after a failed verification")
				}
				return
			}
			if r.ETag() != hex.EncodeToString(md5sum[:]) || r.Size() != int64(len(body)) {
				t.Fatalf("ETag %s size %d", r.ETag(), r.Size())
			}
			if c, ok := r.Checksum(CRC32C); !ok || c.Base64() != Encode(CRC32C.Sum(body)) {
				t.Fatalf("extra CRC32C = %v %v", c, ok)
			}
			if alg := exp.Checksum.Algorithm; alg != None && r.Requested().Base64() != Encode(alg.Sum(body)) {
				t.Fatalf("requested %s = %s", alg, r.Requested().Base64())
			}
		})
	}
}

func TestReaderPassesSourceErrors(t *testing.T) {
	boom := errors.New("boom")
	r := NewReader(iotest.ErrReader(boom), Expected{})
	if _, err := io.ReadAll(r); !errors.Is(err, boom) {
		t.Fatalf("err = %v", err)
	}
	if r.Done() {
		t.Fatal("Done after a source error")
	}
}

func TestReaderReadDoesNotAllocate(t *testing.T) {
	src := &endless{}
	r := NewReader(src, Expected{Checksum: Checksum{Algorithm: CRC32C}}, SHA256, CRC64NVME)
	buf := make([]byte, 32<<10)
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := r.Read(buf); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("Read allocates %.1f times per call", allocs)
	}
}

type endless struct{}

func (endless) Read(p []byte) (int, error) { return len(p), nil }

func codeOf(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	if err != nil && err != io.EOF {
		return "other: " + err.Error()
	}
	return ""
}

// TestManyConcurrentReaders streams hundreds of bodies at once, in reads of
// uneven sizes, and abandons a third of them part way (a client that hangs
// up), as an overloaded server does. Every finished body must have its own
// MD5 and no Reader may wait on another: a hasher that shared state across
// Readers (a SIMD lane server, since removed) starved here and hung the
// server.
func TestManyConcurrentReaders(t *testing.T) {
	const readers = 600
	done := make(chan struct{})
	errs := make(chan error, readers)
	go func() {
		var wg sync.WaitGroup
		for i := range readers {
			wg.Go(func() {
				rng := rand.New(rand.NewPCG(uint64(i), 7))
				body := make([]byte, 1+rng.IntN(1<<20))
				// Filled in one call: byte by byte, the bodies alone
				// took minutes under -race on a loaded machine.
				rand.NewChaCha8([32]byte{byte(i), byte(i >> 8)}).Read(body)
				r := NewReader(bytes.NewReader(body), Expected{})
				abandonAt := len(body) + 1
				if i%3 == 0 {
					abandonAt = rng.IntN(len(body))
				}
				buf := make([]byte, 70_000)
				for read := 0; ; {
					if read >= abandonAt {
						return
					}
					n, err := r.Read(buf[:1+rng.IntN(len(buf))])
					read += n
					if err == io.EOF {
						break
					}
					if err != nil {
						errs <- err
						return
					}
					runtime.Gosched()
				}
				if want := md5.Sum(body); !bytes.Equal(r.MD5(), want[:]) {
					errs <- fmt.Errorf("reader %d: MD5 %x, want %x", i, r.MD5(), want)
				}
			})
		}
		wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(2 * time.Minute):
		buf := make([]byte, 1<<20)
		t.Fatalf("readers still hashing after 2 minutes:\n%s", buf[:runtime.Stack(buf, true)])
	}
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestStoredAlgorithm: a whole-object upload keeps the requested checksum,
// else the default one; a Reader given Expected.Stored computes exactly
// that one besides MD5 (no CRC64NVME computed only to be dropped).
func TestStoredAlgorithm(t *testing.T) {
	body := []byte("stored checksum")
	for _, c := range []struct {
		name string
		exp  Expected
		want Algorithm
	}{
		{"none requested", Expected{}, Default},
		{"header", Expected{Checksum: Checksum{Algorithm: CRC32, Sum: CRC32.Sum(body)}}, CRC32},
		{"trailer", Expected{Checksum: Checksum{Algorithm: CRC32C}, FromTrailer: true}, CRC32C},
		{"the default itself", Expected{Checksum: Checksum{Algorithm: CRC64NVME, Sum: CRC64NVME.Sum(body)}}, CRC64NVME},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := c.exp.Stored(); got != c.want {
				t.Fatalf("Stored() = %v, want %v", got, c.want)
			}
			r := NewReader(bytes.NewReader(body), Expected{Checksum: Checksum{Algorithm: c.exp.Checksum.Algorithm}}, c.exp.Stored())
			if _, err := io.ReadAll(r); err != nil {
				t.Fatal(err)
			}
			if got := r.Stored(); got.Algorithm != c.want || !bytes.Equal(got.Sum, c.want.Sum(body)) {
				t.Fatalf("stored %v %x, want %v", got.Algorithm, got.Sum, c.want)
			}
			if _, computed := r.Checksum(Default); computed != (c.want == Default) {
				t.Fatalf("CRC64NVME computed: %v, want %v", computed, c.want == Default)
			}
		})
	}
}
