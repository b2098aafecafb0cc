package blob

import (
	"bytes"
	"errors"
	"testing"
)

func TestRecordRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name     string
		key      []byte
		version  uint64
		chunkOff uint64
		tag      uint16
		payload  []byte
	}{
		{"empty", nil, 0, 0, 0, nil},
		{"small", []byte("bucket/key"), 7, 0, 0, []byte("hello")},
		{"offset", []byte("k"), 1 << 40, 3 << 20, 0, bytes.Repeat([]byte{0xAB}, 4096)},
		{"long key", bytes.Repeat([]byte("x"), MaxKeyLen), 1, 2, 0, []byte{0}},
		{"tagged", []byte("k"), 3, 5 << 20, 0xBEEF, []byte("tagged")},
		{"largest offset and tag", []byte("k"), 3, MaxValueSize - 1, 0xFFFF, []byte("x")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := appendRecordBytes(nil, tc.key, tc.version, tc.chunkOff, tc.tag, tc.payload)
			if len(b) != headerSize+len(tc.key)+len(tc.payload) {
				t.Fatalf("encoded length %d", len(b))
			}
			rec, _, err := decodeRecord(append(b, 0, 0, 0)) // trailing bytes are not part of it
			if err != nil {
				t.Fatal(err)
			}
			h := rec.header
			if !bytes.Equal(rec.key, tc.key) || !bytes.Equal(rec.payload, tc.payload) ||
				h.version != tc.version || h.chunkOff != tc.chunkOff || h.tag != tc.tag || h.recordLen() != len(b) {
				t.Fatalf("decoded %+v key %q payload %d bytes", h, rec.key, len(rec.payload))
			}
		})
	}
}

func TestRecordDecodeErrors(t *testing.T) {
	good := appendRecordBytes(nil, []byte("key"), 3, 0, 0, []byte("payload"))
	mod := func(f func(b []byte) []byte) []byte { return f(append([]byte(nil), good...)) }
	for _, tc := range []struct {
		name     string
		in       []byte
		want     error
		wantNeed int
	}{
		{"zero padding", make([]byte, 64), errEndOfData, 0},
		{"short header", good[:20], errShortRecord, headerSize},
		{"short key", good[:headerSize+1], errShortRecord, headerSize + 3},
		{"short payload", good[:len(good)-1], errShortRecord, len(good)},
		{"bad magic", mod(func(b []byte) []byte { b[8] = 0xB4; return b }), errBadHeader, 0},
		{"reserved type", mod(func(b []byte) []byte { b[9] = 2; return b }), errBadHeader, 0},
		{"huge payload", mod(func(b []byte) []byte { b[15] = 0xFF; return b }), errBadHeader, 0},
		{"header crc", mod(func(b []byte) []byte { b[0] ^= 1; return b }), errBadHeader, 0},
		{"version flipped", mod(func(b []byte) []byte { b[16] ^= 1; return b }), errBadHeader, 0},
		{"tag flipped", mod(func(b []byte) []byte { b[31] ^= 1; return b }), errBadHeader, 0},
		{"key flipped", mod(func(b []byte) []byte { b[headerSize] ^= 1; return b }), errBadHeader, 0},
		{"payload flipped", mod(func(b []byte) []byte { b[len(b)-1] ^= 1; return b }), errBadPayload, len(good)},
		{"payload crc flipped", mod(func(b []byte) []byte { b[4] ^= 1; return b }), errBadPayload, len(good)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, need, err := decodeRecord(tc.in)
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			if need != tc.wantNeed {
				t.Fatalf("need = %d, want %d", need, tc.wantNeed)
			}
		})
	}
}

// FuzzDecodeRecord checks the decoder never panics and that whatever it
// accepts re-encodes to the same bytes.
func FuzzDecodeRecord(f *testing.F) {
	f.Add(appendRecordBytes(nil, []byte("k"), 1, 0, 0, []byte("v")))
	f.Add(appendRecordBytes(nil, []byte("k"), 1, 4096, 7, []byte("v")))
	f.Add(appendRecordBytes(nil, nil, 0, 0, 0, nil))
	f.Add(make([]byte, 40))
	f.Add([]byte{1, 2, 3})
	f.Fuzz(func(t *testing.T, b []byte) {
		rec, need, err := decodeRecord(b)
		if errors.Is(err, errShortRecord) && need <= len(b) {
			t.Fatalf("short record needs %d of %d bytes", need, len(b))
		}
		if err != nil {
			return
		}
		n := rec.header.recordLen()
		again := appendRecordBytes(nil, rec.key, rec.header.version, rec.header.chunkOff, rec.header.tag, rec.payload)
		if !bytes.Equal(again, b[:n]) {
			t.Fatalf("re-encoding differs")
		}
	})
}
