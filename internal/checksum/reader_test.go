package checksum

import (
	"bytes"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"hash/crc64"
	"io"
	"net/http"
	"testing"
	"testing/iotest"
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

func TestReaderVerifies(t *testing.T) {
	body := []byte("The quick brown fox jumps over the lazy dog")
	md5sum := md5.Sum(body)
	goodMD5 := Encode(md5sum[:])
	goodCRC := Encode(CRC32.Sum(body))
	goodSHA := Encode(SHA256.Sum(body))
	badCRC := Encode(CRC32.Sum([]byte("other")))

	tests := []struct {
		name      string
		header    http.Header
		trailer   http.Header // nil: plain body
		wantParse string      // S3 code from ParseHeaders
		wantRead  string      // S3 code at EOF ("" = io.EOF)
	}{
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

// TestMD5PathsAgree opens more Readers than simdFrom at once, so the later
// ones hash on SIMD lanes and the first ones with crypto/md5: every ETag
// must be the MD5 of its own body.
func TestMD5PathsAgree(t *testing.T) {
	const n = simdFrom + 3
	before := hashing.Load() // readers other tests left open
	bodies := make([][]byte, n)
	readers := make([]*Reader, n)
	for i := range readers {
		bodies[i] = bytes.Repeat([]byte{byte(i + 1)}, 100_000+i*4099)
		readers[i] = NewReader(bytes.NewReader(bodies[i]), Expected{})
	}
	for i, r := range readers {
		if _, err := io.Copy(io.Discard, r); err != nil {
			t.Fatal(err)
		}
		want := md5.Sum(bodies[i])
		if !bytes.Equal(r.MD5(), want[:]) {
			t.Fatalf("reader %d: MD5 %x, want %x", i, r.MD5(), want)
		}
		r.Close()
	}
	if got := hashing.Load(); got != before {
		t.Fatalf("%d readers counted after Close, %d before", got, before)
	}
}
