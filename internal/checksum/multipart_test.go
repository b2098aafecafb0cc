package checksum

import (
	"bytes"
	"crypto/md5"
	"encoding/hex"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"testing"
)

// partsOf splits data at the given sizes.
func partsOf(data []byte, sizes []int) [][]byte {
	var parts [][]byte
	for _, size := range sizes {
		parts = append(parts, data[:size])
		data = data[size:]
	}
	return parts
}

func TestCombineCRCMatchesWholeData(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	data := make([]byte, 300_000)
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	splits := [][]int{
		{300_000},
		{0, 300_000},
		{1, 299_999},
		{100_000, 100_000, 100_000},
		{65536, 0, 131072, 103392},
		{7, 13, 299_980},
	}
	for _, alg := range []Algorithm{CRC32, CRC32C, CRC64NVME} {
		want := alg.Sum(data)
		for _, sizes := range splits {
			var parts []Part
			for _, p := range partsOf(data, sizes) {
				parts = append(parts, Part{Sum: alg.Sum(p), Size: int64(len(p))})
			}
			got, err := CombineCRC(alg, parts)
			if err != nil {
				t.Fatalf("%s %v: %v", alg, sizes, err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s %v: combined %x, whole data %x", alg, sizes, got, want)
			}
		}
	}
	if _, err := CombineCRC(SHA256, nil); err == nil {
		t.Error("CombineCRC accepted SHA256")
	}
	if _, err := CombineCRC(CRC32, []Part{{Sum: []byte{1}, Size: 1}}); err == nil {
		t.Error("CombineCRC accepted a short digest")
	}
}

func TestCompositeChecksum(t *testing.T) {
	data := bytes.Repeat([]byte("b3-composite-"), 10_000)
	parts := partsOf(data, []int{50_000, 50_000, len(data) - 100_000})
	for _, alg := range Algorithms {
		var sums [][]byte
		var concat []byte
		for _, p := range parts {
			sum := alg.Sum(p)
			sums = append(sums, sum)
			concat = append(concat, sum...)
		}
		got, err := CompositeChecksum(alg, sums)
		if err != nil {
			t.Fatal(err)
		}
		if want := Encode(alg.Sum(concat)) + "-3"; got != want {
			t.Errorf("%s composite = %s, want %s", alg, got, want)
		}
	}
	if _, err := CompositeChecksum(CRC32, [][]byte{{1, 2}}); err == nil {
		t.Error("CompositeChecksum accepted a short digest")
	}
}

func TestMultipartETag(t *testing.T) {
	parts := [][]byte{bytes.Repeat([]byte{'a'}, 5<<20), []byte("tail")}
	var concat []byte
	var sums [][]byte
	for _, p := range parts {
		sum := md5.Sum(p)
		sums = append(sums, sum[:])
		concat = append(concat, sum[:]...)
	}
	whole := md5.Sum(concat)
	want := hex.EncodeToString(whole[:]) + "-" + strconv.Itoa(len(parts))
	if got := MultipartETag(sums); got != want {
		t.Fatalf("MultipartETag = %s, want %s", got, want)
	}
}

// A CompleteMultipartUpload's x-amz-checksum-* header is the object's
// checksum, with or without the "-N" suffix of a COMPOSITE value.
func TestObjectChecksumVerify(t *testing.T) {
	partSums := [][]byte{CRC32C.Sum([]byte("part one")), CRC32C.Sum([]byte("part two"))}
	composite, err := CompositeChecksum(CRC32C, partSums)
	if err != nil {
		t.Fatal(err)
	}
	base := strings.TrimSuffix(composite, "-2")
	full := Encode(CRC32C.Sum([]byte("part onepart two")))
	other := Encode(CRC32C.Sum([]byte("other")))
	tests := []struct {
		name      string
		header    http.Header
		alg       Algorithm
		typ       Type
		stored    string
		wantParse string
		want      string
	}{
		{"none declared", hdr(), CRC32C, Composite, composite, "", ""},
		{"none declared, object without checksum", hdr(), None, TypeUnset, "", "", ""},
		{"composite without suffix", hdr("x-amz-checksum-crc32c", base), CRC32C, Composite, composite, "", ""},
		{"composite with suffix", hdr("x-amz-checksum-crc32c", composite), CRC32C, Composite, composite, "", ""},
		{"composite with type", hdr("x-amz-checksum-crc32c", base, "x-amz-checksum-type", "COMPOSITE"), CRC32C, Composite, composite, "", ""},
		{"composite wrong value", hdr("x-amz-checksum-crc32c", other), CRC32C, Composite, composite, "", "BadDigest"},
		{"composite wrong count", hdr("x-amz-checksum-crc32c", base+"-3"), CRC32C, Composite, composite, "", "BadDigest"},
		{"full object", hdr("x-amz-checksum-crc32c", full, "x-amz-checksum-type", "FULL_OBJECT"), CRC32C, FullObject, full, "", ""},
		{"full object with count", hdr("x-amz-checksum-crc32c", full+"-2"), CRC32C, FullObject, full, "", "BadDigest"},
		{"type mismatch", hdr("x-amz-checksum-crc32c", full, "x-amz-checksum-type", "COMPOSITE"), CRC32C, FullObject, full, "", "BadDigest"},
		{"algorithm mismatch", hdr("x-amz-checksum-sha256", Encode(SHA256.Sum(nil))), CRC32C, Composite, composite, "", "InvalidRequest"},
		{"upload without checksum", hdr("x-amz-checksum-crc32c", base), None, TypeUnset, "", "", "InvalidRequest"},
		{"default crc64nvme", hdr("x-amz-checksum-crc64nvme", Encode(CRC64NVME.Sum([]byte("x")))), CRC64NVME, FullObject, Encode(CRC64NVME.Sum([]byte("x"))), "", ""},
		{"unknown algorithm", hdr("x-amz-checksum-crc16", base), CRC32C, Composite, composite, "InvalidRequest", ""},
		{"malformed count", hdr("x-amz-checksum-crc32c", base+"-x"), CRC32C, Composite, composite, "InvalidRequest", ""},
		{"malformed value", hdr("x-amz-checksum-crc32c", "AAAA"), CRC32C, Composite, composite, "InvalidRequest", ""},
		{"malformed type", hdr("x-amz-checksum-type", "PARTIAL"), CRC32C, Composite, composite, "InvalidRequest", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			oc, err := ParseObjectChecksum(tt.header)
			if code := codeOf(err); code != tt.wantParse {
				t.Fatalf("ParseObjectChecksum: %q (%v), want %q", code, err, tt.wantParse)
			}
			if err != nil {
				return
			}
			if code := codeOf(oc.Verify(tt.alg, tt.typ, tt.stored)); code != tt.want {
				t.Fatalf("Verify: %q, want %q", code, tt.want)
			}
		})
	}
}
