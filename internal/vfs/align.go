package vfs

import "unsafe"

// AlignedBuffer returns a zeroed slice of n bytes whose first byte sits at a
// multiple of DirectAlignment, as direct I/O requires.
func AlignedBuffer(n int) []byte {
	raw := make([]byte, n+DirectAlignment)
	shift := 0
	if rem := int(uintptr(unsafe.Pointer(&raw[0])) % DirectAlignment); rem != 0 {
		shift = DirectAlignment - rem
	}
	return raw[shift : shift+n : shift+n]
}
