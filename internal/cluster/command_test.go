package cluster

import (
	"bytes"
	"crypto/md5"
	"encoding/binary"
	"encoding/hex"
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

// benchObject is a 4 KiB PUT as an S3 SDK sends it: content type, a
// checksum, an owner.
func benchObject() *meta.Object {
	o := inlineObject(4096)
	o.Bucket, o.Key = "b3-perf", "b3-bench/20261123-083000/4KiB/c64/000123"
	o.ETag = `"0f343b0931126a20f133d67c2b018a3b"`
	o.ContentType = "application/octet-stream"
	o.ChecksumAlgorithm, o.ChecksumType, o.Checksum = "CRC32", "FULL_OBJECT", "yZRlqg=="
	o.Owner = "b3perfaccess"
	return o
}

// encodeInlineForm encodes c as earlier releases did when it carried
// inline bytes: withInline, the JSON without them, the bytes raw.
func encodeInlineForm(c *command) []byte {
	cc, obj := *c, *c.Object
	obj.Inline = nil
	cc.Object = &obj
	j, _ := json.Marshal(&cc)
	out := binary.AppendUvarint([]byte{withInline}, uint64(len(j)))
	return append(append(out, j...), c.Object.Inline...)
}

// TestCommandEncoding: commands survive encode/decode, puts in the record
// form, and entries written in the earlier forms (plain JSON; the inline
// bytes raw after the JSON) still decode.
func TestCommandEncoding(t *testing.T) {
	empty := inlineObject(0)
	empty.Inline = []byte{}
	settings := inlineObject(10)
	settings.Versioned, settings.Grants = true, []meta.Grant{{Grantee: "id", Permission: "READ"}}
	settings.UserMeta, settings.Tags = map[string]string{"a": "1"}, map[string]string{"t": "v"}
	for _, tc := range []struct {
		name string
		c    *command
		form byte // the first byte of the encoding
	}{
		{"inline object", &command{Op: opPutObject, Object: inlineObject(4096)}, withRecord},
		{"one inline byte", &command{Op: opPutObject, Object: inlineObject(1)}, withRecord},
		{"empty object", &command{Op: opPutObject, Object: empty}, withRecord},
		{"object with settings", &command{Op: opPutObject, Object: settings}, withRecord},
		{"bench object", &command{Op: opPutObject, Object: benchObject()}, withRecord},
		{"staged object", &command{Op: opPutObject, Object: &meta.Object{Bucket: "b", Key: "k", Size: 1 << 20}, Stage: 9}, withRecord},
		{"update", &command{Op: opUpdateObject, Object: &meta.Object{Bucket: "b", Key: "k", Size: 5, Tags: map[string]string{"a": "b"}}}, '{'},
		{"delete", &command{Op: opDeleteObject, Name: "b", Key: "k"}, '{'},
		{"expire", &command{Op: opExpire, Name: "b", Key: "k", Version: 3}, '{'},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := tc.c.encode()
			if b[0] != tc.form {
				t.Fatalf("encoded in form %#x, want %#x", b[0], tc.form)
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
			if tc.c.Object != nil && len(tc.c.Object.Inline) > 0 {
				if got, err = decodeCommand(encodeInlineForm(tc.c)); err != nil || !reflect.DeepEqual(got, tc.c) {
					t.Fatalf("inline form decoded to %+v, %v", got, err)
				}
			}
		})
	}
	// An object the record form cannot hold goes as JSON.
	odd := &command{Op: opPutObject, Object: inlineObject(3)}
	odd.Object.Size = 4
	if b := odd.encode(); b[0] != '{' {
		t.Fatalf("inline bytes unlike Size encoded in form %#x, want JSON", b[0])
	}
	rec := (&command{Op: opPutObject, Object: inlineObject(3)}).encode()
	for _, bad := range [][]byte{
		{withInline}, {withInline, 0xff}, {withInline, 50, '{', '}'}, append([]byte{withInline, 2}, "{}x"...),
		{withRecord}, {withRecord, 2, '{', '}'}, {withRecord, 2, '{', '}', 1, 'b'},
		rec[:len(rec)-1], append(rec, 0),
		append(append([]byte{withRecord}, rec[1:len(rec)-len(meta.AppendObject(nil, inlineObject(3)))]...), 9),
	} {
		if c, err := decodeCommand(bad); err == nil {
			t.Fatalf("decodeCommand(%q) = %+v, want an error", bad, c)
		}
	}
	twice, _ := json.Marshal(&command{Op: opPutObject, Object: inlineObject(1)})
	twice = append(binary.AppendUvarint([]byte{withRecord}, uint64(len(twice))), twice...)
	twice = append(appendString(appendString(twice, "b"), "k"), meta.AppendObject(nil, inlineObject(1))...)
	if c, err := decodeCommand(twice); err == nil {
		t.Fatalf("a command with its object twice decoded to %+v", c)
	}
}

// BenchmarkCommand: what each node's serial apply spends decoding a small
// PUT's command (4 KiB inline, as an S3 SDK sends it), and the leader
// encoding it, in the record form and the earlier two (the bytes raw
// after the JSON; plain JSON).
func BenchmarkCommand(b *testing.B) {
	c := &command{Op: opPutObject, Object: benchObject()}
	plain, _ := json.Marshal(c)
	for _, f := range []struct {
		name   string
		encode func() []byte
	}{
		{"record", c.encode},
		{"inline", func() []byte { return encodeInlineForm(c) }},
		{"json", func() []byte { b, _ := json.Marshal(c); return b }},
	} {
		data := f.encode()
		if f.name == "json" {
			data = plain
		}
		b.Run("decode/"+f.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := decodeCommand(data); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("encode/"+f.name, func(b *testing.B) {
			for b.Loop() {
				f.encode()
			}
		})
	}
}

// TestEncryptedBodyCheck: an encrypted body's ETag is computed over its
// plaintext (or is a keyed digest), so the bytes a follower fetches or
// finds are told by their size alone; a plain body's ETag is the MD5 of
// its bytes and is checked.
func TestEncryptedBodyCheck(t *testing.T) {
	plainSum := md5.Sum([]byte("plaintext!"))
	cipherSum := md5.Sum([]byte("ciphertext"))
	etag := hex.EncodeToString(plainSum[:])
	cases := []struct {
		name      string
		encrypted bool
		size      int64
		ok        bool
	}{
		{"encrypted, ciphertext's MD5", true, 10, true},
		{"encrypted, wrong size", true, 11, false},
		{"plain, other bytes' MD5", false, 10, false},
	}
	for _, c := range cases {
		err := wantBody(10, etag, c.encrypted).verify(c.size, cipherSum[:])
		if (err == nil) != c.ok {
			t.Errorf("%s: %v", c.name, err)
		}
	}
	if bodyMD5(etag, true) != nil || bodyMD5(etag, false) == nil {
		t.Fatal("bodyMD5")
	}
}
