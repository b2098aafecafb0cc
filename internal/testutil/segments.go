package testutil

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"sort"
	"testing"
)

// SegmentRecord is one record of a segment file, as a test that damages
// segments on purpose finds it (the format is drawn in
// internal/blob/record.go).
type SegmentRecord struct {
	File         string // the segment file's path
	Offset, Size int64  // where the record starts; its length on disk
	Bucket, Key  string // its owner
}

// SegmentRecords decodes the records of every segment file in dir (a
// data root's segments/), file by file in ID order, each until the zero
// padding. It trusts the headers: decode before damaging.
func SegmentRecords(t testing.TB, dir string) (files []string, records map[string][]SegmentRecord) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.seg"))
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(files)
	records = map[string][]SegmentRecord{}
	for _, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		for off := 0; off+32 <= len(data) && data[off+8] == 0xB3; {
			keyLen := int(binary.LittleEndian.Uint16(data[off+10:]))
			payloadLen := int(binary.LittleEndian.Uint32(data[off+12:]))
			bucket, key, _ := bytes.Cut(data[off+32:off+32+keyLen], []byte{0})
			n := 32 + keyLen + payloadLen
			records[name] = append(records[name], SegmentRecord{File: name, Offset: int64(off), Size: int64(n), Bucket: string(bucket), Key: string(key)})
			off += n
		}
	}
	return files, records
}

// FlipBit flips one bit of the byte at off in the file name, in place
// (through the page cache: a running process reading the file sees it).
func FlipBit(t testing.TB, name string, off int64) {
	t.Helper()
	f, err := os.OpenFile(name, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, 1)
	if _, err := f.ReadAt(b, off); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0x04
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
}
