package objstore

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/b3-storage/b3/internal/blob"
	"github.com/b3-storage/b3/internal/meta"
)

// The kill test runs the store in a child process (this test binary,
// re-executed) that writes (single PUTs and multipart uploads), overwrites
// and deletes concurrently with vacuum running, reporting each operation
// before it starts and once it is acknowledged. The parent kills it with
// SIGKILL at a random moment, reopens the store and checks every key.
// Keys contain 0x00 and 0xFF bytes next to keys they extend, and idle
// uploads with parts pile up on them, so vacuum's owner lookups and the
// multipart completions racing with it meet the orderings that once hid
// parts from vacuum.
const childEnv = "B3_OBJSTORE_KILL_CHILD"

func killOptions(dir string) Options {
	metaDir, dataDir := DefaultDirs(dir)
	return Options{
		MetaDir:         metaDir,
		DataDir:         dataDir,
		Sync:            blob.SyncBatch,
		DirectIO:        true,
		SegmentSize:     1 << 20,
		ChunkSize:       64 << 10,
		VacuumThreshold: 0.3,
		// About one put in twelve (sizes up to 200 KiB) is kept inline,
		// so acknowledged inline objects face the kills too.
		InlineMax: 16 << 10,
	}
}

func TestKill(t *testing.T) {
	if dir := os.Getenv(childEnv); dir != "" {
		killChild(dir)
		return
	}
	kills := 20
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(7, 7))
	// expect[key] lists the acceptable states: the last acknowledged one
	// and, if an operation was in flight at the kill, its result.
	state := map[string][]byte{}

	for round := range kills {
		var (
			mu      sync.Mutex
			acked   = map[string][]byte{}
			pending = map[string][]byte{}
			hasAck  = map[string]bool{}
			isPend  = map[string]bool{}
		)
		killRound(t, "TestKill", childEnv, dir, round, time.Duration(50+rng.IntN(400))*time.Millisecond, func(line string) {
			f := strings.Fields(line)
			if len(f) != 5 {
				return
			}
			key, err := strconv.Unquote(f[1])
			if err != nil {
				return
			}
			seq, size := atoi(f[2]), atoi(f[3])
			var v []byte
			if f[4] != "del" {
				v = value(key, seq, size)
			}
			mu.Lock()
			defer mu.Unlock()
			switch f[0] {
			case "BEGIN":
				pending[key], isPend[key] = v, true
			case "ACK":
				acked[key], hasAck[key] = v, true
				delete(pending, key)
				delete(isPend, key)
			}
		})

		s := openStore(t, killOptions(dir))
		mu.Lock()
		for key, v := range acked {
			state[key] = v
		}
		checked := 0
		for key := range union(state, pending) {
			got, err := read(s, "b", key)
			if errors.Is(err, ErrNoSuchKey) {
				got, err = nil, nil
			}
			if err != nil {
				t.Fatalf("round %d: %q: %v", round, key, err)
			}
			okAcked := equalState(got, state[key])
			okPending := isPend[key] && equalState(got, pending[key])
			if !okAcked && !okPending {
				t.Fatalf("round %d: %q holds %d bytes: neither the acknowledged state (%d bytes, acked this round: %v) nor the in-flight one",
					round, key, len(got), len(state[key]), hasAck[key])
			}
			state[key] = got
			checked++
		}
		mu.Unlock()
		parts := checkUploadParts(t, s)
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		t.Logf("round %d: %d keys and %d parts of idle uploads verified", round, checked, parts)
	}
}

// killRound runs one round of a kill test: it starts this test binary as
// the child of test (env set to dir), hands every line the child prints
// to onLine, SIGKILLs the child pause after its first line, and returns
// once the child is gone and every line was handed over.
func killRound(t *testing.T, test, env, dir string, round int, pause time.Duration, onLine func(string)) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+test+"$")
	cmd.Env = append(os.Environ(), env+"="+dir, "B3_KILL_ROUND="+strconv.Itoa(round))
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	started, readDone := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(readDone)
		sc := bufio.NewScanner(stdout)
		first := true
		for sc.Scan() {
			onLine(sc.Text())
			if first {
				close(started)
				first = false
			}
		}
	}()
	select {
	case <-started:
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("round %d: child never started writing", round)
	}
	time.Sleep(pause)
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-readDone
	_ = cmd.Wait()
}

func equalState(a, b []byte) bool { return (a == nil) == (b == nil) && bytes.Equal(a, b) }

func union(a, b map[string][]byte) map[string]bool {
	out := map[string]bool{}
	for k := range a {
		out[k] = true
	}
	for k := range b {
		out[k] = true
	}
	return out
}

func atoi(s string) int { n, _ := strconv.Atoi(s); return n }

// killChild writes until killed. Each key belongs to one goroutine, so at
// most one operation per key is in flight.
func killChild(dir string) {
	s := openKillChild(dir)
	s.StartVacuum(20 * time.Millisecond)
	round := atoi(os.Getenv("B3_KILL_ROUND"))
	var out sync.Mutex
	say := func(format string, args ...any) {
		out.Lock()
		fmt.Fprintf(os.Stdout, format, args...)
		out.Unlock()
	}
	const writers = 8
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(round), uint64(w)))
			for seq := round * 1_000_000; ; seq++ {
				key := killKey(w, r.IntN(60))
				q := strconv.Quote(key)
				op := r.IntN(12)
				if op < 2 {
					say("BEGIN %s %d 0 del\n", q, seq)
					if _, err := s.DeleteObject("b", key); err != nil {
						fmt.Fprintln(os.Stderr, "child delete:", err)
						os.Exit(3)
					}
					say("ACK %s %d 0 del\n", q, seq)
					continue
				}
				if op == 2 {
					// An idle upload with a part: it stays, and its part
					// must stay readable through vacuum passes (the parent
					// reads every part after each kill).
					idleUpload(s, key, seq)
					continue
				}
				size := r.IntN(200 << 10)
				kind := "put"
				if op < 5 {
					kind = "mpu"
				}
				say("BEGIN %s %d %d %s\n", q, seq, size, kind)
				v := value(key, seq, size)
				var err error
				if kind == "put" {
					_, err = s.PutObject(context.Background(), PutInput{Bucket: "b", Key: key, Body: bytes.NewReader(v)})
				} else {
					err = multipartValue(s, key, v, 1+r.IntN(max(1, size)))
				}
				if err != nil {
					fmt.Fprintln(os.Stderr, "child", kind, err)
					os.Exit(3)
				}
				say("ACK %s %d %d %s\n", q, seq, size, kind)
			}
		}()
	}
	wg.Wait()
}

// openKillChild opens a kill test child's store with its bucket "b"; a
// failure ends the child.
func openKillChild(dir string) *Store {
	s, err := Open(killOptions(dir))
	if err != nil {
		fmt.Fprintln(os.Stderr, "child open:", err)
		os.Exit(2)
	}
	if _, err := s.CreateBucket(bucketRecord("b")); err != nil && !errors.Is(err, ErrBucketExists) {
		fmt.Fprintln(os.Stderr, "child bucket:", err)
		os.Exit(2)
	}
	return s
}

// killKey names writer w's i-th key. Each third key extends the one before
// it with 0x00 0x01 (pebble orders its uploads before the shorter key's),
// and each third begins with 0xFF.
func killKey(w, i int) string {
	return [...]string{"", "", "\xff"}[i%3] + fmt.Sprintf("w%d/k%02d", w, i/3) + [...]string{"", "\x00\x01", ""}[i%3]
}

// multipartValue stores v under key as a multipart upload of two parts
// split at cut (one part if cut >= len(v)).
func multipartValue(s *Store, key string, v []byte, cut int) error {
	up, err := s.CreateUpload(&meta.Upload{Bucket: "b", Key: key})
	if err != nil {
		return err
	}
	parts := [][]byte{v}
	if cut < len(v) {
		parts = [][]byte{v[:cut], v[cut:]}
	}
	numbers := make([]int, len(parts))
	for i, p := range parts {
		if _, err := s.PutPart(context.Background(), "b", key, up.UploadID, i+1, bytes.NewReader(p), nil); err != nil {
			return err
		}
		numbers[i] = i + 1
	}
	return completeUpload(s, key, up.UploadID, numbers...)
}

// idleUpload leaves an upload with one part on key.
func idleUpload(s *Store, key string, seq int) {
	if err := idleUploadErr(s, key, seq); err != nil {
		fmt.Fprintln(os.Stderr, "child idle upload:", err)
		os.Exit(3)
	}
}

func idleUploadErr(s *Store, key string, seq int) error {
	up, err := s.CreateUpload(&meta.Upload{Bucket: "b", Key: key})
	if err != nil {
		return err
	}
	_, err = s.PutPart(context.Background(), "b", key, up.UploadID, 1, bytes.NewReader(value(key, -seq, 5000)), nil)
	return err
}
