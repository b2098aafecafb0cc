package cluster

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/b3-storage/b3/internal/meta"
)

func inlineObject(n int) *meta.Object {
	return &meta.Object{Bucket: "b", Key: "k", Version: 7 << 32, Size: int64(n), ETag: `"e"`,
		Modified: time.Date(2026, 11, 23, 6, 0, 0, 0, time.UTC), Inline: bytes.Repeat([]byte{0, '{', 0xff}, n)[:n]}
}

// TestCommandEncoding: commands survive encode/decode, those with inline
// bytes in the raw form, and entries written as plain JSON (before the raw
// form existed) still decode.
func TestCommandEncoding(t *testing.T) {
	for _, tc := range []struct {
		name string
		c    *command
		raw  bool // encoded with the bytes after the JSON
	}{
		{"inline object", &command{Op: opPutObject, Object: inlineObject(4096)}, true},
		{"one inline byte", &command{Op: opPutObject, Object: inlineObject(1)}, true},
		{"staged object", &command{Op: opPutObject, Object: &meta.Object{Bucket: "b", Key: "k", Size: 1 << 20}, Stage: 9}, false},
		{"delete", &command{Op: opDeleteObject, Name: "b", Key: "k"}, false},
		{"expire", &command{Op: opExpire, Name: "b", Key: "k", Version: 3}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := tc.c.encode()
			if raw := b[0] == withInline; raw != tc.raw {
				t.Fatalf("raw form %v, want %v", raw, tc.raw)
			}
			got, err := decodeCommand(b)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.c) {
				t.Fatalf("decoded %+v, want %+v", got, tc.c)
			}
			old, _ := json.Marshal(tc.c) // the encoding of earlier releases
			if got, err = decodeCommand(old); err != nil || !reflect.DeepEqual(got, tc.c) {
				t.Fatalf("plain JSON decoded to %+v, %v", got, err)
			}
		})
	}
	for _, bad := range [][]byte{{withInline}, {withInline, 0xff}, {withInline, 50, '{', '}'}, append([]byte{withInline, 2}, "{}x"...)} {
		if c, err := decodeCommand(bad); err == nil {
			t.Fatalf("decodeCommand(%q) = %+v, want an error", bad, c)
		}
	}
}

// BenchmarkDecodeCommand: what each node's serial apply spends decoding a
// small PUT's command (4 KiB inline), in the raw form and as plain JSON.
func BenchmarkDecodeCommand(b *testing.B) {
	c := &command{Op: opPutObject, Object: inlineObject(4096)}
	plain, _ := json.Marshal(c)
	for _, f := range []struct {
		name string
		data []byte
	}{{"raw", c.encode()}, {"json", plain}} {
		b.Run(f.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := decodeCommand(f.data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
