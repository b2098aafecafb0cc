package mount

import (
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestLargeSequentialFile writes a large file in 1 MiB writes (a
// multipart upload with parts in flight) and reads it back in 1 MiB reads
// (the read-ahead path), comparing checksums through the mount and S3.
func TestLargeSequentialFile(t *testing.T) {
	size := 52 << 20 // six whole parts and a shorter last one
	if os.Getenv("B3_MOUNT_LONG") != "" {
		size = 1 << 30
	}
	e := newEnv(t, "--part-size", "8MiB", "--read-part-size", "4MiB")
	f, err := os.Create(e.path("large"))
	if err != nil {
		t.Fatal(err)
	}
	block := pattern(7, 1<<20)
	h := sha256.New()
	for off := 0; off < size; off += len(block) {
		block[0], block[1] = byte(off>>20), byte(off>>28) // every block differs
		if _, err := f.Write(block); err != nil {
			t.Fatal(err)
		}
		h.Write(block)
	}
	if err := f.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	want := fmt.Sprintf("%x", h.Sum(nil))

	st, err := os.Stat(e.path("large"))
	if err != nil || st.Size() != int64(size) {
		t.Fatalf("stat: %v, %v; want %d bytes", st, err, size)
	}
	r, err := os.Open(e.path("large"))
	if err != nil {
		t.Fatal(err)
	}
	h.Reset()
	// (Hiding the file's WriteTo, which would read in 32 KiB pieces.)
	n, err := io.CopyBuffer(h, struct{ io.Reader }{r}, make([]byte, 1<<20))
	r.Close()
	if err != nil || n != int64(size) || fmt.Sprintf("%x", h.Sum(nil)) != want {
		t.Fatalf("read back through the mount: %d bytes, %v, checksum equal %v", n, err, fmt.Sprintf("%x", h.Sum(nil)) == want)
	}
	if got := sum(e.mustObject("large")); got != want {
		t.Fatalf("through S3: sha %s, want %s", got, want)
	}
	// Nothing failed, so the mount logged nothing but its start (the log
	// is for failures, not for every 1 MiB reply).
	for _, line := range strings.Split(strings.TrimSpace(e.mount.Output.String()), "\n") {
		if !strings.Contains(line, "mounted on") {
			t.Fatalf("the mount logged during a clean write and read: %q", line)
		}
	}
	// Random reads: each lands where it should.
	r, err = os.Open(e.path("large"))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for _, off := range []int64{int64(size) - 100, 3<<20 + 17, 0, int64(size) / 2} {
		buf := make([]byte, 100)
		if _, err := r.ReadAt(buf, off); err != nil && err != io.EOF {
			t.Fatalf("pread at %d: %v", off, err)
		}
		blockOff := off &^ (1<<20 - 1)
		exp := pattern(7, 1<<20)
		exp[0], exp[1] = byte(blockOff>>20), byte(blockOff>>28)
		in := int(off - blockOff)
		if string(buf[:min(100, 1<<20-in)]) != string(exp[in:min(in+100, 1<<20)]) {
			t.Fatalf("pread at %d returned other bytes", off)
		}
	}
}

// TestParallelSmallFiles writes many small files from 16 writers at once
// and reads them back from 16 readers.
func TestParallelSmallFiles(t *testing.T) {
	e := newEnv(t)
	const writers, perWriter, size = 16, 25, 128 << 10
	if err := os.Mkdir(e.path("small"), 0o755); err != nil {
		t.Fatal(err)
	}
	name := func(w, i int) string { return fmt.Sprintf("small/w%02d-%03d", w, i) }
	each := func(do func(w, i int) error) {
		t.Helper()
		var wg sync.WaitGroup
		errs := make(chan error, writers)
		for w := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range perWriter {
					if err := do(w, i); err != nil {
						errs <- err
						return
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
	}
	each(func(w, i int) error { return os.WriteFile(e.path(name(w, i)), pattern(w*1000+i, size), 0o644) })
	each(func(w, i int) error {
		b, err := os.ReadFile(e.path(name(w, i)))
		if err != nil {
			return err
		}
		if sum(b) != sum(pattern(w*1000+i, size)) {
			return fmt.Errorf("%s: content differs", name(w, i))
		}
		return nil
	})
	if keys := e.keys(); len(keys) != writers*perWriter+1 { // and the "small/" marker
		t.Fatalf("bucket holds %d keys, want %d", len(keys), writers*perWriter+1)
	}
	entries, err := os.ReadDir(e.path("small"))
	if err != nil || len(entries) != writers*perWriter {
		t.Fatalf("readdir: %d entries, %v", len(entries), err)
	}
}

// TestReaderCloseSendsNoFlush: closing a file opened for reading costs no
// FUSE request (the handle is opened with FOPEN_NOFLUSH: a reader's flush
// has nothing to do), while a writer's close still reaches the mount and
// commits.
func TestReaderCloseSendsNoFlush(t *testing.T) {
	e := newEnv(t, "--debug")
	e.putObject("r", pattern(1, 128<<10))
	for range 3 {
		b, err := os.ReadFile(e.path("r"))
		if err != nil || sum(b) != sum(pattern(1, 128<<10)) {
			t.Fatalf("read through the mount: %d bytes, %v", len(b), err)
		}
	}
	if err := os.WriteFile(e.path("w"), []byte("written"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := e.mustObject("w"); string(got) != "written" {
		t.Fatalf("committed %q", got)
	}
	// go-fuse logs a request as it arrives, and the kernel sends FLUSH
	// before close(2) returns: once the lookup made after the closes is
	// in the log, so is every FLUSH.
	if _, err := os.Stat(e.path("log-marker")); !os.IsNotExist(err) {
		t.Fatalf("stat of a missing name: %v", err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(e.mount.Output.String(), `"log-marker"`) {
		if e.mount.Exited() || time.Now().After(deadline) {
			t.Fatal("the lookup of log-marker is not in the --debug log")
		}
		time.Sleep(10 * time.Millisecond)
	}
	// go-fuse's own probe at mount time (its "poll hack" file, node
	// 2^64-1) is not a file of the bucket.
	out := strings.ReplaceAll(e.mount.Output.String(), "n18446744073709551615", "probe")
	count := func(op string) int { return strings.Count(out, ": "+op+" n") }
	if reads, flushes := count("READ"), count("FLUSH"); reads == 0 || flushes != 1 {
		t.Fatalf("3 files read and 1 written: %d READ and %d FLUSH requests, want 1 FLUSH (the writer's close)", reads, flushes)
	}
}
