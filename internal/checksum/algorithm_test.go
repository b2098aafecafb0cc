package checksum

import (
	"encoding/hex"
	"strings"
	"testing"
)

// Check values of the catalogue of parametrised CRC algorithms and the
// FIPS digests of "123456789".
func TestAlgorithmVectors(t *testing.T) {
	tests := []struct {
		alg     Algorithm
		input   string
		wantHex string
	}{
		{CRC32, "123456789", "cbf43926"},
		{CRC32C, "123456789", "e3069283"},
		{CRC64NVME, "123456789", "ae8b14860a799888"},
		{SHA1, "123456789", "f7c3bc1d808e04732adf679965ccc34ca7ae3441"},
		{SHA256, "123456789", "15e2b0d3c33891ebb0f1ef609ec419420c20e320ce94c65fbc8c3312448eb225"},
		{CRC32, "", "00000000"},
		{CRC32C, "", "00000000"},
		{CRC64NVME, "", "0000000000000000"},
		{SHA256, "", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
		{SHA512, "123456789", "d9e6762dd1c8eaf6d61b3c6192fc408d4d6d5f1176d0c29169bc24e71c3f274ad27fcd5811b313d681f7e55ec02d73d499c95455b6b5bb503acf574fba8ffe85"},
		{MD5, "123456789", "25f9e794323b453885f5181f1b624d0b"},
		// xxHash's reference values for the empty input (seed 0), in the
		// canonical big-endian form; XXH128 high half first.
		{XXHASH64, "", "ef46db3751d8e999"},
		{XXHASH3, "", "2d06800538d394c2"},
		{XXHASH128, "", "99aa06d3014798d86001c324468d497f"},
	}
	for _, tt := range tests {
		got := hex.EncodeToString(tt.alg.Sum([]byte(tt.input)))
		if got != tt.wantHex {
			t.Errorf("%s(%q) = %s, want %s", tt.alg, tt.input, got, tt.wantHex)
		}
		if n := len(tt.alg.Sum(nil)); n != tt.alg.Size() {
			t.Errorf("%s: digest length %d, Size() %d", tt.alg, n, tt.alg.Size())
		}
	}
}

// The SDK documentation's aws-chunked example carries this header value.
func TestHeaderEncoding(t *testing.T) {
	got := Checksum{Algorithm: SHA256, Sum: SHA256.Sum([]byte("Hello world"))}.Base64()
	if want := "ZOyIygCyaOW6GjVnihtTFtIS9PNmskdyMlNKiuyjfzw="; got != want {
		t.Fatalf("base64 = %s, want %s", got, want)
	}
	sum, err := SHA256.Decode(got)
	if err != nil || hex.EncodeToString(sum) != hex.EncodeToString(SHA256.Sum([]byte("Hello world"))) {
		t.Fatalf("Decode round trip: %x, %v", sum, err)
	}
	if _, err := CRC32.Decode(got); err == nil {
		t.Fatal("Decode accepted a SHA256-sized value for CRC32")
	}
	if _, err := CRC32.Decode("!!!"); err == nil {
		t.Fatal("Decode accepted non-base64")
	}
}

func TestParseAlgorithm(t *testing.T) {
	for _, alg := range Algorithms {
		for _, name := range []string{alg.String(), strings.ToLower(alg.String())} {
			got, ok := ParseAlgorithm(name)
			if !ok || got != alg {
				t.Errorf("ParseAlgorithm(%q) = %v, %v", name, got, ok)
			}
		}
		if want := "x-amz-checksum-" + strings.ToLower(alg.String()); alg.HeaderName() != want {
			t.Errorf("%s.HeaderName() = %q, want %q", alg, alg.HeaderName(), want)
		}
	}
	for _, name := range []string{"", "MD4", "crc", "CRC64", "XXHASH32"} {
		if _, ok := ParseAlgorithm(name); ok {
			t.Errorf("ParseAlgorithm(%q) accepted", name)
		}
	}
}

func TestParseType(t *testing.T) {
	for in, want := range map[string]Type{"": TypeUnset, "FULL_OBJECT": FullObject, "composite": Composite} {
		got, err := ParseType(in)
		if err != nil || got != want {
			t.Errorf("ParseType(%q) = %v, %v", in, got, err)
		}
	}
	if _, err := ParseType("PARTIAL"); err == nil {
		t.Error("ParseType accepted PARTIAL")
	}
	if ValidType(CRC64NVME, Composite) || ValidType(SHA256, FullObject) || !ValidType(CRC32C, FullObject) {
		t.Error("ValidType disagrees with S3's table")
	}
	if DefaultType(CRC64NVME) != FullObject || DefaultType(SHA1) != Composite {
		t.Error("DefaultType disagrees with S3")
	}
}
