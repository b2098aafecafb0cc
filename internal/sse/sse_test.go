package sse

import (
	"bytes"
	"crypto/rand"
	"errors"
	"io"
	"testing"
)

func encryptAll(t *testing.T, plain []byte, k Key) []byte {
	t.Helper()
	r, err := EncryptReader(bytes.NewReader(plain), k)
	if err != nil {
		t.Fatal(err)
	}
	out, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	if int64(len(out)) != EncryptedSize(int64(len(plain))) {
		t.Fatalf("stored %d bytes of %d, EncryptedSize says %d", len(out), len(plain), EncryptedSize(int64(len(plain))))
	}
	return out
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	rand.Read(b)
	return b
}

// object builds a stored object of streams with the given plaintext
// sizes: one stream of part 0 if there is one size, else parts 1..n.
func object(t *testing.T, dk Key, sizes ...int) (plain, stored []byte, l Layout) {
	t.Helper()
	var streams []Stream
	for i, n := range sizes {
		part := i + 1
		if len(sizes) == 1 {
			part = 0
		}
		p := randomBytes(n)
		s := encryptAll(t, p, dk.PartKey(part))
		plain, stored = append(plain, p...), append(stored, s...)
		streams = append(streams, Stream{Part: part, Stored: int64(len(s))})
	}
	l, err := NewLayout(streams)
	if err != nil {
		t.Fatal(err)
	}
	if l.Size() != int64(len(plain)) {
		t.Fatalf("layout size %d, plain %d", l.Size(), len(plain))
	}
	return plain, stored, l
}

func TestRangeDecrypt(t *testing.T) {
	dk, _ := NewDataKey()
	cases := []struct {
		name   string
		sizes  []int
		off, n int64
	}{
		{"empty object", []int{0}, 0, 0},
		{"one byte", []int{1}, 0, 1},
		{"whole single chunk", []int{1000}, 0, 1000},
		{"exact chunk", []int{ChunkSize}, 0, ChunkSize},
		{"inside first chunk", []int{3 * ChunkSize}, 10, 100},
		{"across one boundary", []int{3 * ChunkSize}, ChunkSize - 5, 10},
		{"across two boundaries", []int{3*ChunkSize + 7}, ChunkSize - 1, ChunkSize + 2},
		{"last byte", []int{3*ChunkSize + 7}, 3*ChunkSize + 6, 1},
		{"tail from a boundary", []int{3*ChunkSize + 7}, 2 * ChunkSize, ChunkSize + 7},
		{"whole multi", []int{ChunkSize + 3, 2 * ChunkSize, 11}, 0, 3*ChunkSize + 14},
		{"across parts", []int{ChunkSize + 3, 2 * ChunkSize, 11}, ChunkSize, 10},
		{"across three parts", []int{ChunkSize + 3, 2 * ChunkSize, 11}, ChunkSize + 2, 2*ChunkSize + 3},
		{"within last part", []int{ChunkSize + 3, 2 * ChunkSize, 11}, 3*ChunkSize + 5, 6},
		{"empty part between", []int{5, 0, 5}, 3, 5},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			plain, stored, l := object(t, dk, c.sizes...)
			p := l.Range(dk, c.off, c.n)
			if p.StoredOff < 0 || p.StoredOff+p.Stored > int64(len(stored)) {
				t.Fatalf("plan %d+%d outside %d stored bytes", p.StoredOff, p.Stored, len(stored))
			}
			got, err := io.ReadAll(p.Decrypt(bytes.NewReader(stored[p.StoredOff : p.StoredOff+p.Stored])))
			if err != nil {
				t.Fatal(err)
			}
			if want := plain[c.off : c.off+c.n]; !bytes.Equal(got, want) {
				t.Fatalf("got %d bytes, want %d (equal prefix: %v)", len(got), len(want), bytes.HasPrefix(want, got))
			}
		})
	}
}

// A range reads only the packages that hold it.
func TestRangeReadsOnlyItsPackages(t *testing.T) {
	dk, _ := NewDataKey()
	_, _, l := object(t, dk, 10*ChunkSize)
	p := l.Range(dk, 4*ChunkSize+1, 10)
	if p.StoredOff != 4*packageSize || p.Stored != packageSize {
		t.Fatalf("plan %d+%d, want %d+%d", p.StoredOff, p.Stored, 4*packageSize, packageSize)
	}
}

func TestTamperedChunkFails(t *testing.T) {
	dk, _ := NewDataKey()
	for _, at := range []int{0, 20, packageSize + 100, 2*packageSize + 5} {
		plain, stored, l := object(t, dk, 3*ChunkSize)
		stored[at] ^= 0x40
		p := l.Range(dk, 0, int64(len(plain)))
		got, err := io.ReadAll(p.Decrypt(bytes.NewReader(stored)))
		if !errors.Is(err, ErrCorrupt) {
			t.Fatalf("flip at %d: err %v, want ErrCorrupt", at, err)
		}
		// Whatever came out before the failure is the true plaintext.
		if !bytes.Equal(got, plain[:len(got)]) {
			t.Fatalf("flip at %d: altered bytes returned", at)
		}
		if len(got) > at/packageSize*ChunkSize {
			t.Fatalf("flip at %d: %d bytes returned, the altered package's included", at, len(got))
		}
	}
}

func TestSwappedChunksFail(t *testing.T) {
	dk, _ := NewDataKey()
	plain, stored, l := object(t, dk, 3*ChunkSize)
	a := append([]byte(nil), stored[:packageSize]...)
	copy(stored[:packageSize], stored[packageSize:2*packageSize])
	copy(stored[packageSize:2*packageSize], a)
	_, err := io.ReadAll(l.Range(dk, 0, int64(len(plain))).Decrypt(bytes.NewReader(stored)))
	if !errors.Is(err, ErrCorrupt) {
		t.Fatalf("err %v, want ErrCorrupt", err)
	}
}

func TestSeal(t *testing.T) {
	kek, _ := NewDataKey()
	other, _ := NewDataKey()
	dk, _ := NewDataKey()
	sealed, err := Seal(kek, dk, "b/k")
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(sealed, dk[:8]) {
		t.Fatal("sealed key holds the data key")
	}
	got, err := Unseal(kek, sealed, "b/k")
	if err != nil || got != dk {
		t.Fatalf("unseal: %v", err)
	}
	cases := []struct {
		name    string
		kek     Key
		sealed  []byte
		context string
	}{
		{"wrong key", other, sealed, "b/k"},
		{"other object", kek, sealed, "b/k2"},
		{"cut", kek, sealed[:len(sealed)-1], "b/k"},
		{"altered", kek, append(append([]byte(nil), sealed[:20]...), append([]byte{sealed[20] ^ 1}, sealed[21:]...)...), "b/k"},
	}
	for _, c := range cases {
		if _, err := Unseal(c.kek, c.sealed, c.context); !errors.Is(err, ErrKeyMismatch) {
			t.Errorf("%s: err %v, want ErrKeyMismatch", c.name, err)
		}
	}
}

func TestPartKeysDiffer(t *testing.T) {
	dk, _ := NewDataKey()
	seen := map[Key]bool{dk: true}
	for part := 0; part < 100; part++ {
		k := dk.PartKey(part)
		if seen[k] {
			t.Fatalf("part %d key repeats", part)
		}
		seen[k] = true
	}
}

func TestKeyRing(t *testing.T) {
	a, _ := NewKeyEntry("a")
	b, _ := NewKeyEntry("b")
	cases := []struct {
		name, spec string
		ok         bool
		def        string
	}{
		{"one", a, true, "a"},
		{"two, comma", a + "," + b, true, "a"},
		{"lines and comments", "# keys\n" + b + "\n\n" + a + "\n", true, "b"},
		{"none", "# nothing\n", false, ""},
		{"short key", "a:AAAA", false, ""},
		{"no name", ":" + a[2:], false, ""},
		{"twice", a + "," + a, false, ""},
		{"not base64", "a:!!!", false, ""},
	}
	for _, c := range cases {
		r, err := ParseKeyRing(c.spec)
		if (err == nil) != c.ok {
			t.Errorf("%s: err %v", c.name, err)
			continue
		}
		if c.ok && r.Default() != c.def {
			t.Errorf("%s: default %q, want %q", c.name, r.Default(), c.def)
		}
	}
	r, _ := ParseKeyRing(a + "," + b)
	if _, name, err := r.Key(""); err != nil || name != "a" {
		t.Fatalf("default key: %q %v", name, err)
	}
	if _, _, err := r.Key("c"); !errors.Is(err, ErrNoKey) {
		t.Fatalf("unknown key: %v", err)
	}
}

// BenchmarkEncrypt and BenchmarkDecrypt measure the cipher path alone
// (one core, no I/O): what encryption adds to a PUT or GET of 1 MiB.
func BenchmarkEncrypt(b *testing.B) {
	dk, _ := NewDataKey()
	plain := randomBytes(1 << 20)
	b.SetBytes(int64(len(plain)))
	for b.Loop() {
		r, err := EncryptReader(bytes.NewReader(plain), dk.PartKey(0))
		if err != nil {
			b.Fatal(err)
		}
		if _, err := io.Copy(io.Discard, r); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecrypt(b *testing.B) {
	dk, _ := NewDataKey()
	plain := randomBytes(1 << 20)
	r, _ := EncryptReader(bytes.NewReader(plain), dk.PartKey(0))
	stored, _ := io.ReadAll(r)
	l, _ := NewLayout([]Stream{{Part: 0, Stored: int64(len(stored))}})
	b.SetBytes(int64(len(plain)))
	for b.Loop() {
		p := l.Range(dk, 0, int64(len(plain)))
		if _, err := io.Copy(io.Discard, p.Decrypt(bytes.NewReader(stored))); err != nil {
			b.Fatal(err)
		}
	}
}
