package checksum

import (
	"bytes"
	"crypto/md5"
	"encoding/hex"
	"math/rand/v2"
	"strconv"
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
