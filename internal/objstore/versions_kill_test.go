package objstore

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/b3-storage/b3/internal/meta"
)

// The versioned kill test: a child process (this test binary) writes a
// versioned bucket — PUTs of new versions, multipart completions, delete
// markers, removals of single versions, a few toggles to Suspended and
// back — with vacuum running, reporting each operation before it starts
// and once acknowledged. The parent SIGKILLs it at a random moment,
// reopens the store, and checks every key's whole history
// (ListVersions, and the bytes of every version): it must be the
// acknowledged history, or that history plus the one operation in flight
// on the key. The history carried into the next round is what was found.
const versionedChildEnv = "B3_OBJSTORE_VKILL_CHILD"

// vkVersion is one version of the parent's model.
type vkVersion struct {
	id     string
	marker bool
	seq    int // value(key, seq, size), for objects
	size   int
}

func (v vkVersion) String() string {
	if v.marker {
		return v.id + ":marker"
	}
	return fmt.Sprintf("%s:%d/%d", v.id, v.seq, v.size)
}

func TestKillVersioned(t *testing.T) {
	if dir := os.Getenv(versionedChildEnv); dir != "" {
		versionedKillChild(dir)
		return
	}
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(11, 5))
	history := map[string][]vkVersion{} // newest first
	for round := range 12 {
		var (
			mu      sync.Mutex
			pending = map[string]string{} // key -> the BEGIN line of the op in flight
		)
		// Lines: BEGIN|ACK key op seq size id; op is put, marker or rm.
		killRound(t, "TestKillVersioned", versionedChildEnv, dir, round, time.Duration(100+rng.IntN(400))*time.Millisecond, func(line string) {
			f := strings.Fields(line)
			if len(f) != 6 {
				return
			}
			key, err := strconv.Unquote(f[1])
			if err != nil {
				return
			}
			mu.Lock()
			defer mu.Unlock()
			switch f[0] {
			case "BEGIN":
				pending[key] = line
			case "ACK":
				delete(pending, key)
				applyVK(history, key, f[2], atoi(f[3]), atoi(f[4]), f[5])
			}
		})

		s := openStore(t, killOptions(dir))
		mu.Lock()
		keys := map[string]bool{}
		for k := range history {
			keys[k] = true
		}
		for k := range pending {
			keys[k] = true
		}
		versions := 0
		for key := range keys {
			got := storedHistory(t, s, key)
			want := history[key]
			ok := slices.Equal(vkIDs(got), vkIDs(want))
			if !ok && pending[key] != "" {
				ok = inFlightExplains(want, got, strings.Fields(pending[key]))
			}
			if !ok {
				t.Fatalf("round %d: %q holds %v\nacknowledged %v\nin flight: %q", round, key, got, want, pending[key])
			}
			// The bytes of every version are the ones written: the
			// acknowledged write of that ID, or the one in flight (a null
			// version's ID is reused by each null write).
			for i, v := range got {
				if v.marker {
					continue
				}
				var candidates []vkVersion
				if j := slices.IndexFunc(want, func(w vkVersion) bool { return w.id == v.id }); j >= 0 {
					candidates = append(candidates, want[j])
				}
				if f := strings.Fields(pending[key]); len(f) == 6 && f[2] == "put" {
					candidates = append(candidates, vkVersion{id: v.id, seq: atoi(f[3]), size: atoi(f[4])})
				}
				got[i] = matchVersionBytes(t, s, key, v.id, candidates)
				versions++
			}
			history[key] = got
		}
		mu.Unlock()
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		t.Logf("round %d: %d keys, %d versions verified", round, len(keys), versions)
	}
}

// applyVK applies an acknowledged operation to the model.
func applyVK(history map[string][]vkVersion, key, op string, seq, size int, id string) {
	switch op {
	case "put":
		history[key] = append([]vkVersion{{id: id, seq: seq, size: size}}, removeNullVK(history[key], id)...)
	case "marker":
		history[key] = append([]vkVersion{{id: id, marker: true}}, removeNullVK(history[key], id)...)
	case "rm":
		history[key] = slices.DeleteFunc(history[key], func(v vkVersion) bool { return v.id == id })
	}
}

// removeNullVK drops the null version when the new one is null (a
// suspended bucket's write replaces it).
func removeNullVK(vs []vkVersion, newID string) []vkVersion {
	if newID != NullVersionID {
		return vs
	}
	return slices.DeleteFunc(slices.Clone(vs), func(v vkVersion) bool { return v.id == NullVersionID })
}

// inFlightExplains reports whether got is want with the in-flight
// operation (BEGIN line fields) applied.
func inFlightExplains(want, got []vkVersion, begin []string) bool {
	op := begin[2]
	switch op {
	case "rm":
		after := slices.DeleteFunc(slices.Clone(want), func(v vkVersion) bool { return v.id == begin[5] })
		return slices.Equal(vkIDs(got), vkIDs(after))
	default:
		// A new latest version whose ID the child never reported.
		if len(got) == 0 || (got[0].marker != (op == "marker")) {
			return false
		}
		return slices.Equal(vkIDs(got[1:]), vkIDs(removeNullVK(want, got[0].id)))
	}
}

func vkIDs(vs []vkVersion) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = v.id
		if v.marker {
			out[i] += ":marker"
		}
	}
	return out
}

// storedHistory lists key's versions, newest first, as the store has them.
func storedHistory(t *testing.T, s *Store, key string) []vkVersion {
	t.Helper()
	var out []vkVersion
	opts := VersionListOptions{Prefix: key, MaxKeys: 7}
	for {
		res, err := s.ListVersions("b", opts)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range res.Versions {
			if v.Key == key {
				out = append(out, vkVersion{id: VersionID(v), marker: v.DeleteMarker})
			}
		}
		if !res.IsTruncated {
			return out
		}
		opts.KeyMarker, opts.VersionIDMarker = res.NextKeyMarker, ""
		if res.NextVersionMarker != 0 {
			opts.VersionIDMarker = VersionID(res.Versions[len(res.Versions)-1])
		}
	}
}

// matchVersionBytes reads key's version id and returns the candidate
// whose bytes it holds; none is a failure.
func matchVersionBytes(t *testing.T, s *Store, key, id string, candidates []vkVersion) vkVersion {
	t.Helper()
	_, r, err := s.OpenVersion(context.Background(), "b", key, id, WholeObject)
	if err != nil {
		t.Fatalf("%q version %s: %v", key, id, err)
	}
	defer r.Close()
	got, err := io.ReadAll(r)
	if err != nil {
		t.Fatalf("%q version %s: %v", key, id, err)
	}
	for _, c := range candidates {
		if bytes.Equal(got, value(key, c.seq, c.size)) {
			return c
		}
	}
	t.Fatalf("%q version %s: %d bytes, none of the writes %v", key, id, len(got), candidates)
	return vkVersion{}
}

// versionedKillChild writes until killed; each key belongs to one
// goroutine, so at most one operation per key is in flight.
func versionedKillChild(dir string) {
	s := openKillChild(dir)
	fail := func(what string, err error) {
		fmt.Fprintln(os.Stderr, "child", what+":", err)
		os.Exit(3)
	}
	if err := s.SetBucketVersioning("b", meta.VersioningEnabled); err != nil {
		fail("versioning", err)
	}
	s.StartVacuum(20 * time.Millisecond)
	round := atoi(os.Getenv("B3_KILL_ROUND"))
	var out sync.Mutex
	say := func(format string, args ...any) {
		out.Lock()
		fmt.Fprintf(os.Stdout, format, args...)
		out.Unlock()
	}
	const writers = 6
	for w := range writers {
		go func() {
			r := rand.New(rand.NewPCG(uint64(round), uint64(w)))
			for seq := round * 1_000_000; ; seq++ {
				key := killKey(w, r.IntN(12))
				q := strconv.Quote(key)
				switch op := r.IntN(20); {
				case op < 3:
					say("BEGIN %s marker %d 0 -\n", q, seq)
					res, err := s.DeleteVersioned("b", key, "", false)
					if err != nil {
						fail("delete", err)
					}
					say("ACK %s marker %d 0 %s\n", q, seq, res.VersionID)
				case op < 6:
					// Remove one stored version (the child reads what is
					// there: the history of earlier rounds included).
					var ids []string
					err := s.meta.KeyVersions("b", key, func(o *meta.Object) (bool, error) {
						ids = append(ids, VersionID(o))
						return true, nil
					})
					if cur, cerr := s.currentObject("b", key); cerr == nil && cur != nil {
						ids = append(ids, VersionID(cur))
					}
					if err != nil || len(ids) == 0 {
						continue
					}
					id := ids[r.IntN(len(ids))]
					say("BEGIN %s rm %d 0 %s\n", q, seq, id)
					if _, err := s.DeleteVersioned("b", key, id, false); err != nil {
						fail("delete version", err)
					}
					say("ACK %s rm %d 0 %s\n", q, seq, id)
				case op == 6 && w == 0:
					// Writer 0 alone toggles the state, so the others'
					// in-flight writes see one state or the other; the
					// model learns it from the version IDs they report.
					state := meta.VersioningSuspended
					if r.IntN(2) == 0 {
						state = meta.VersioningEnabled
					}
					if err := s.SetBucketVersioning("b", state); err != nil {
						fail("set versioning", err)
					}
				default:
					size := r.IntN(100 << 10)
					say("BEGIN %s put %d %d -\n", q, seq, size)
					v := value(key, seq, size)
					var obj *meta.Object
					var err error
					if op < 9 {
						err = multipartValue(s, key, v, 1+r.IntN(max(1, size)))
						if err == nil {
							obj, err = s.currentObject("b", key)
						}
					} else {
						obj, err = s.PutObject(context.Background(), PutInput{Bucket: "b", Key: key, Body: bytes.NewReader(v)})
					}
					if err != nil || obj == nil {
						fail("put", err)
					}
					say("ACK %s put %d %d %s\n", q, seq, size, VersionID(obj))
				}
			}
		}()
	}
	select {}
}
