package sse_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/b3-storage/b3/internal/testutil"
)

// tamper flips one byte of the first segment record of bucket/key at
// payload offset at, and rewrites the record's payload CRC so that the
// segment layer finds nothing wrong: only the ciphertext's authentication
// can tell. The record layout is package blob's (record.go).
func tamper(t *testing.T, segments, bucket, key string, at int) {
	t.Helper()
	owner := append(append([]byte(bucket), 0), key...)
	files, err := filepath.Glob(filepath.Join(segments, "*.seg"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for from := 0; ; {
			i := bytes.Index(data[from:], owner)
			if i < 0 {
				break
			}
			i += from
			from = i + 1
			h := i - 32
			if h < 0 || data[h+8] != 0xB3 || int(binary.LittleEndian.Uint16(data[h+10:])) != len(owner) {
				continue
			}
			payloadLen := int(binary.LittleEndian.Uint32(data[h+12:]))
			payload := data[i+len(owner) : i+len(owner)+payloadLen]
			if at >= payloadLen {
				t.Fatalf("record of %d bytes: cannot tamper at %d", payloadLen, at)
			}
			payload[at] ^= 0x20
			binary.LittleEndian.PutUint32(data[h+4:], crc32.Checksum(payload, crc32.MakeTable(crc32.Castagnoli)))
			if err := os.WriteFile(f, data, 0o600); err != nil {
				t.Fatal(err)
			}
			return
		}
	}
	t.Fatalf("no record of %s/%s in %s", bucket, key, segments)
}

// TestTamperedCiphertext: a ciphertext package altered on disk (its
// segment record's CRC made to match) fails the read; no altered byte
// reaches the client, and ranges that do not touch the package still
// read. The server runs with no flags: its master key is the one b3
// server generates in the data directory, kept over the restart.
func TestTamperedCiphertext(t *testing.T) {
	srv := testutil.StartServer(t, testutil.ServerOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	c := srv.Client(timeout)
	const bucket = "tamper"
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatal(err)
	}
	ck := newCustomerKey(t)
	kinds := map[string]sseOpts{"sse-s3": {sse: types.ServerSideEncryptionAes256}, "sse-c": {ck: &ck}}
	bodies := map[string][]byte{}
	for name, o := range kinds {
		bodies[name] = patterned(secretMark, 2<<20) // past the cache's largest object
		put(ctx, t, c, bucket, name, bodies[name], o)
	}
	if err := srv.Proc.Stop(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	// Byte 100000 of the stored stream lies in its second package
	// (packages of 65,568 bytes): plaintext 65536..131071.
	for name := range kinds {
		tamper(t, filepath.Join(srv.Data, "segments"), bucket, name, 100000)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	c = srv.Client(timeout)
	for name, o := range kinds {
		body := bodies[name]
		cases := []struct {
			rng string
			ok  bool
			off int
		}{
			{"", false, 0},
			{"bytes=70000-70010", false, 70000},
			{"bytes=60000-70000", false, 60000},
			{"bytes=0-65535", true, 0},
			{"bytes=131072-200000", true, 131072},
		}
		for _, tc := range cases {
			out, err := c.GetObject(ctx, o.get(&s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(name), Range: optString(tc.rng)}))
			var got []byte
			if err == nil {
				got, err = io.ReadAll(out.Body)
				out.Body.Close()
			}
			if !bytes.Equal(got, body[tc.off:tc.off+len(got)]) {
				t.Fatalf("%s %q: altered bytes reached the client", name, tc.rng)
			}
			if tc.ok && err != nil {
				t.Fatalf("%s %q: a range clear of the tampered package failed: %v", name, tc.rng, err)
			}
			if !tc.ok && err == nil {
				t.Fatalf("%s %q: a read through the tampered package succeeded (%d bytes)", name, tc.rng, len(got))
			}
			if !tc.ok && len(got) > 0 && tc.off+len(got) > 65536 {
				t.Fatalf("%s %q: %d bytes returned, past the tampered package's start", name, tc.rng, len(got))
			}
			// A read that starts in the tampered package fails before
			// its headers: an error answer, not a body cut short.
			if tc.off >= 65536 && !tc.ok && httpStatus(err) != 500 {
				t.Fatalf("%s %q: %v, want a 500 answer", name, tc.rng, err)
			}
		}
	}
}
