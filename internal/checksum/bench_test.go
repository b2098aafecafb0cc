package checksum

import (
	"io"
	"testing"
)

// BenchmarkReader measures the one-pass hasher; b.SetBytes makes `go test
// -bench` report MB/s.
func BenchmarkReader(b *testing.B) {
	cases := []struct {
		name string
		alg  Algorithm
	}{
		{"MD5", None},
		{"MD5+CRC32C", CRC32C},
		{"MD5+CRC64NVME", CRC64NVME},
		{"MD5+SHA256", SHA256},
	}
	const size = 4 << 20
	buf := make([]byte, 64<<10)
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(size)
			b.ReportAllocs()
			for b.Loop() {
				r := NewReader(io.LimitReader(endless{}, size), Expected{Checksum: Checksum{Algorithm: c.alg}})
				for {
					if _, err := r.Read(buf); err != nil {
						if err != io.EOF {
							b.Fatal(err)
						}
						break
					}
				}
			}
		})
	}
}

func BenchmarkCombineCRC(b *testing.B) {
	parts := make([]Part, 10_000)
	for i := range parts {
		parts[i] = Part{Sum: CRC64NVME.Sum([]byte{byte(i)}), Size: 5 << 20}
	}
	for b.Loop() {
		if _, err := CombineCRC(CRC64NVME, parts); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAlgorithm measures each algorithm alone over 1 MiB writes: what
// one more checksum in the upload pass costs per byte.
func BenchmarkAlgorithm(b *testing.B) {
	buf := make([]byte, 1<<20)
	for _, alg := range Algorithms {
		b.Run(alg.String(), func(b *testing.B) {
			h := alg.New()
			b.SetBytes(int64(len(buf)))
			for b.Loop() {
				h.Write(buf)
			}
		})
	}
}
