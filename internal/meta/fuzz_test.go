package meta

import (
	"reflect"
	"testing"
)

// The fuzz targets check that decoders never panic on arbitrary bytes and
// that whatever they accept re-encodes to something that decodes equal.
// `go test` runs the seed corpus (the encodings of codecCases); run e.g.
// `go test -fuzz FuzzDecodeObject ./internal/meta` to search further.

func fuzzRecord(f *testing.F, name string) {
	var c codecCase
	for _, cc := range codecCases {
		if cc.name == name {
			c = cc
		}
	}
	for _, v := range c.values {
		f.Add(c.encode(v))
	}
	f.Add([]byte{})
	f.Add([]byte{1})
	f.Add([]byte{1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})
	key := c.values[0]
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := c.decode(key, data)
		if err != nil {
			return
		}
		again, err := c.decode(key, c.encode(got))
		if err != nil {
			t.Fatalf("re-encoded %s does not decode: %v", name, err)
		}
		if !reflect.DeepEqual(again, got) {
			t.Fatalf("%s changed on re-encode:\n%+v\n%+v", name, got, again)
		}
	})
}

func FuzzDecodeObject(f *testing.F) { fuzzRecord(f, "object") }
func FuzzDecodeUpload(f *testing.F) { fuzzRecord(f, "upload") }
func FuzzDecodeBucket(f *testing.F) { fuzzRecord(f, "bucket") }
func FuzzDecodePart(f *testing.F)   { fuzzRecord(f, "part") }

func FuzzDecodeCounter(f *testing.F) {
	f.Add(encodeCounter(-5))
	f.Add([]byte{1, 2})
	f.Fuzz(func(t *testing.T, data []byte) {
		n, err := decodeCounter(data)
		if err == nil && string(encodeCounter(n)) != string(data) {
			t.Fatalf("counter %x decoded to %d", data, n)
		}
	})
}
