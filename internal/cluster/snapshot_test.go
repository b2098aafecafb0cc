package cluster

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/b3-storage/b3/internal/meta"
	"github.com/b3-storage/b3/internal/objstore"
)

// replica is one node's store and users, for the snapshot tests.
type replica struct {
	t     testing.TB
	dir   string
	store *objstore.Store
	users *userState
}

func newReplica(t testing.TB) *replica {
	t.Helper()
	dir := t.TempDir()
	store, err := objstore.Open(objstore.Options{MetaDir: filepath.Join(dir, "meta"), DataDir: filepath.Join(dir, "seg"), Logger: slog.Default()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	users, err := openUserState(dir)
	if err != nil {
		t.Fatal(err)
	}
	return &replica{t: t, dir: dir, store: store, users: users}
}

var t0 = time.Date(2026, 11, 23, 5, 0, 0, 0, time.UTC)

func (r *replica) bucket(name string, stamp uint64) {
	r.t.Helper()
	if err := r.store.ApplyPutBucket(&meta.Bucket{Name: name, Created: t0}, true, stamp); err != nil {
		r.t.Fatal(err)
	}
}

// put installs bucket/key at version with data: inline if small.
func (r *replica) put(bucket, key string, version uint64, data string, tags map[string]string, stamp uint64) {
	r.t.Helper()
	obj := &meta.Object{Bucket: bucket, Key: key, Version: version, Size: int64(len(data)), ETag: fmt.Sprintf("%q", key+data[:1]), Modified: t0, Tags: tags}
	if len(data) < 100 {
		obj.Inline = []byte(data)
		if err := r.store.ApplyPutObject(obj, stamp); err != nil {
			r.t.Fatal(err)
		}
		return
	}
	st, err := r.store.Stage(context.Background(), bucket, key, version, strings.NewReader(data))
	if err != nil {
		r.t.Fatal(err)
	}
	obj.Extents = st.Extents
	if err := r.store.ApplyPutObject(obj, stamp); err != nil {
		r.t.Fatal(err)
	}
	st.Release()
}

func (r *replica) upload(bucket, key, id string, version uint64, stamp uint64) {
	r.t.Helper()
	up := &meta.Upload{Bucket: bucket, Key: key, UploadID: id, Version: version, Initiated: t0}
	if err := r.store.ApplyCreateUpload(up, stamp); err != nil {
		r.t.Fatal(err)
	}
}

func (r *replica) part(bucket, key string, version uint64, uploadID string, n int, data string, stamp uint64) {
	r.t.Helper()
	st, err := r.store.Stage(context.Background(), bucket, key, version, strings.NewReader(data))
	if err != nil {
		r.t.Fatal(err)
	}
	p := &meta.Part{UploadID: uploadID, Number: n, Size: st.Size, ETag: fmt.Sprintf("%q", data[:3]), Modified: t0, Extents: st.Extents}
	if err := r.store.ApplyPutPart(bucket, key, p, stamp); err != nil {
		r.t.Fatal(err)
	}
	st.Release()
}

// read returns an object's bytes, or "" if it does not exist.
func (r *replica) read(bucket, key string) string {
	r.t.Helper()
	_, rc, err := r.store.OpenObject(context.Background(), bucket, key, objstore.WholeObject)
	if errors.Is(err, objstore.ErrNoSuchKey) {
		return ""
	}
	return string(r.readAll(rc, err))
}

// readAll reads rc to its end and closes it; err is the opener's.
func (r *replica) readAll(rc io.ReadCloser, err error) []byte {
	r.t.Helper()
	if err != nil {
		r.t.Fatal(err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		r.t.Fatal(err)
	}
	return b
}

// snapshot takes a snapshot of r at index, as raft would, and returns its
// bytes.
func (r *replica) snapshot(index uint64) []byte {
	r.t.Helper()
	f := &fsm{store: r.store, users: r.users, log: slog.Default()}
	f.applied.Store(index)
	snap, err := f.Snapshot()
	if err != nil {
		r.t.Fatal(err)
	}
	defer snap.Release()
	if have, _ := r.store.Applied(); have != index {
		r.t.Fatalf("store stamp %d after a snapshot at %d", have, index)
	}
	store := raft.NewInmemSnapshotStore()
	sink, err := store.Create(raft.SnapshotVersionMax, index, 1, raft.Configuration{}, 1, nil)
	if err != nil {
		r.t.Fatal(err)
	}
	if err := snap.Persist(sink); err != nil {
		r.t.Fatal(err)
	}
	_, rc, err := store.Open(sink.ID())
	return r.readAll(rc, err)
}

// restore restores data into r and fills the records it restored
// without their bytes from src (nil: every fetch fails); it returns the
// bytes fetched. Keys named "gone" are answered gone, as a peer past the
// snapshot that no longer holds them would.
func (r *replica) restore(data []byte, src *replica) (fetched int64, err error) {
	if err := r.restoreOnly(data); err != nil {
		return 0, err
	}
	fetched, _, err = r.fill(src, nil)
	return fetched, err
}

// filler returns a filler of r's records, with r's fill mark, that
// fetches from src through wrap (if set).
func (r *replica) filler(src *replica, wrap func(fetchFunc) fetchFunc) *filler {
	var fetch fetchFunc = func(ctx context.Context, ref bytesRef) (*objstore.Staged, error) {
		if ref.Key == "gone" {
			return nil, errGone
		}
		if src == nil {
			return nil, errors.New("no peer answers")
		}
		var exts []meta.Extent
		var size int64
		if ref.UploadID != "" {
			p, err := src.store.Meta().GetPart(ref.UploadID, ref.Part)
			if err != nil {
				return nil, err
			}
			exts, size = p.Extents, p.Size
		} else {
			o, err := src.store.Meta().GetObject(ref.Bucket, ref.Key)
			if err != nil || o.Version != ref.Version {
				o, err = src.store.Meta().GetVersion(ref.Bucket, ref.Key, ref.Version)
			}
			if err != nil {
				return nil, fmt.Errorf("fetch %+v: %v", ref, err)
			}
			exts, size = o.Extents, o.Size
		}
		rc, err := src.store.ReadExtents(ctx, ref.Bucket, ref.Key, ref.Version, exts, size)
		if err != nil {
			return nil, err
		}
		defer rc.Close()
		return r.store.Stage(ctx, ref.Bucket, ref.Key, ref.Version, rc)
	}
	if wrap != nil {
		fetch = wrap(fetch)
	}
	return newFiller(r.store, fetch, func() uint64 { have, _ := r.store.Applied(); return have }, r.dir, slog.Default())
}

// restoreOnly runs the state machine's Restore of data into r, with a
// filler that fetches nothing (Restore must not fetch).
func (r *replica) restoreOnly(data []byte) error {
	fl := r.filler(nil, func(fetchFunc) fetchFunc {
		return func(context.Context, bytesRef) (*objstore.Staged, error) {
			r.t.Error("Restore fetched bytes")
			return nil, errors.New("Restore fetched bytes")
		}
	})
	f := &fsm{store: r.store, users: r.users, log: slog.Default(), fill: fl}
	return f.Restore(io.NopCloser(bytes.NewReader(data)))
}

// fill runs one pass of a filler fetching from src (through wrap, if
// set), as the node's would after a restore or at a start; it returns
// the bytes fetched and the records left hollow.
func (r *replica) fill(src *replica, wrap func(fetchFunc) fetchFunc) (fetched int64, left int, err error) {
	fl := r.filler(src, wrap)
	left, err = fl.pass(context.Background())
	if err == nil && left == 0 {
		_, err = fl.done(fl.generation())
	}
	return fl.fetched.Load(), left, err
}

// fillMarked reports whether r's fill mark exists.
func (r *replica) fillMarked() bool {
	_, err := os.Stat(filepath.Join(r.dir, fillMarkFile))
	return err == nil
}

// objects lists a replica's records as "bucket/key@version tags", inline
// payloads and extents aside.
func (r *replica) objects() []string {
	var out []string
	err := r.store.Meta().ScanObjects("", "", func(o *meta.Object) error {
		out = append(out, fmt.Sprintf("%s/%s@%d %s %d %v", o.Bucket, o.Key, o.Version, o.ETag, o.Size, o.Tags))
		return nil
	})
	if err != nil {
		r.t.Fatal(err)
	}
	return out
}

// TestSnapshotRestore: a stale replica restored from a snapshot holds
// exactly the snapshot's records — objects of the same version keep their
// bytes and take new attributes, others are fetched, records the snapshot
// lacks are removed, uploads and parts likewise, users replaced — and a
// second restore of the same snapshot is a no-op.
func TestSnapshotRestore(t *testing.T) {
	big := func(c byte) string { return strings.Repeat(string(c), 20<<10) }
	src, dst := newReplica(t), newReplica(t)
	dropped, up := meta.NewUploadID(10), meta.NewUploadID(11)

	// Common history up to index 40.
	for _, r := range []*replica{src, dst} {
		r.bucket("b1", 1)
		r.put("b1", "same", 2, big('s'), nil, 2)
		r.put("b1", "big", 3, big('o'), nil, 3)
		r.put("b1", "zzz", 4, "zzz", nil, 4)
		r.put("b1", "aaa", 5, "aaa", nil, 5)
		r.bucket("old", 6)
		r.put("old", "o", 7, "old", nil, 7)
		r.bucket("b2", 8)
		r.put("b2", "gone", 9, big('g'), nil, 9)
		r.upload("b1", "dropped", dropped, 10, 10)
		r.upload("b1", "mp", up, 11, 11)
		r.part("b1", "mp", 11, up, 1, big('1'), 12)
		if err := r.users.apply(&command{Op: opAddUser, User: &User{Name: "old", AccessKey: "OLD", SecretKey: "s"}}); err != nil {
			t.Fatal(err)
		}
	}

	// Only the source goes on, to index 100.
	src.put("b1", "big", 20, big('n'), nil, 20)
	src.put("b1", "same", 2, big('s'), map[string]string{"t": "v"}, 21) // same version, new tags
	if _, err := src.store.ApplyDeleteObject("b1", "zzz", 22); err != nil {
		t.Fatal(err)
	}
	if _, err := src.store.ApplyDeleteObject("b1", "aaa", 23); err != nil {
		t.Fatal(err)
	}
	if _, err := src.store.ApplyDeleteObject("old", "o", 24); err != nil {
		t.Fatal(err)
	}
	if err := src.store.ApplyDeleteBucket("old", 25); err != nil {
		t.Fatal(err)
	}
	src.put("b2", "gone", 26, big('G'), nil, 26) // its fetch will answer gone
	src.put("b1", "gone", 31, big('H'), nil, 31) // also gone, and new here
	src.put("b2", "inline", 27, "small and inline", nil, 27)
	src.put("b2", "new", 28, big('w'), nil, 28)
	src.part("b1", "mp", 11, up, 2, big('2'), 29)
	if err := src.store.ApplyAbortUpload("b1", "dropped", dropped, 30); err != nil {
		t.Fatal(err)
	}
	if err := src.users.replace([]User{{Name: "root", AccessKey: "ROOT", SecretKey: "x", Root: true}}); err != nil {
		t.Fatal(err)
	}

	data := src.snapshot(100)
	// Restore installs the records at once, fetching nothing: those whose
	// bytes dst lacks are hollow, not readable yet, and the fill mark says
	// so until they are filled.
	if err := dst.restoreOnly(data); err != nil {
		t.Fatal(err)
	}
	if have, _ := dst.store.Applied(); have != 100 {
		t.Fatalf("applied %d after restoring the snapshot at 100", have)
	}
	want := src.objects()
	if got := dst.objects(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("objects after restore:\n got %v\nwant %v", got, want)
	}
	if _, _, err := dst.store.OpenObject(context.Background(), "b1", "big", objstore.WholeObject); !errors.Is(err, objstore.ErrHollow) {
		t.Fatalf("reading a record restored without its bytes: %v, want ErrHollow", err)
	}
	if got := dst.read("b1", "same"); got != big('s') {
		t.Fatalf("b1/same (same version: kept its bytes) reads %d bytes", len(got))
	}
	if !dst.fillMarked() {
		t.Fatal("no fill mark after a restore that left records hollow")
	}
	// A fill cut short (no peer has the bytes) leaves the mark: the next
	// start fills again.
	if _, _, err := dst.fill(nil, nil); err == nil {
		t.Fatal("a fill whose fetches fail succeeded")
	}
	if !dst.fillMarked() || !dst.filler(nil, nil).pending.Load() {
		t.Fatal("the fill mark is gone after a failed fill")
	}
	fetched, left, err := dst.fill(src, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Fetched: big, new and part 2 (20 KiB each); not same, not part 1.
	// Left: the two keys whose bytes are gone, until the commands that
	// replaced them are applied here.
	if fetched != 3*20<<10 || left != 2 {
		t.Errorf("fetched %d bytes, left %d hollow; want %d and 2", fetched, left, 3*20<<10)
	}
	if !dst.fillMarked() {
		t.Fatal("fill mark removed while records are hollow")
	}
	for _, k := range []string{"b1/big", "b1/same", "b2/inline", "b2/new"} {
		b, key, _ := strings.Cut(k, "/")
		if got, want := dst.read(b, key), src.read(b, key); got != want {
			t.Errorf("%s: %d bytes read back, want %d", k, len(got), len(want))
		}
	}
	if bs, _ := dst.store.ListBuckets(); len(bs) != 2 || bs[0].Name != "b1" || bs[1].Name != "b2" {
		t.Errorf("buckets after restore: %+v", bs)
	}
	var uploads []string
	_ = dst.store.Meta().ScanUploads("", func(u *meta.Upload) error { uploads = append(uploads, u.Key); return nil })
	if fmt.Sprint(uploads) != "[mp]" {
		t.Errorf("uploads after restore: %v", uploads)
	}
	for n := 1; n <= 2; n++ {
		p, err := dst.store.Meta().GetPart(up, n)
		if err != nil {
			t.Fatalf("part %d: %v", n, err)
		}
		b := dst.readAll(dst.store.ReadExtents(context.Background(), "b1", "mp", 11, p.Extents, p.Size))
		if string(b) != big(byte('0'+n)) {
			t.Errorf("part %d: wrong bytes", n)
		}
	}
	if u := dst.users.snapshot(); len(u) != 1 || u[0].AccessKey != "ROOT" {
		t.Errorf("users after restore: %+v", u)
	}

	// The commands that replaced the gone keys: nothing is left hollow,
	// and the mark goes.
	dst.put("b2", "gone", 101, big('x'), nil, 101)
	if _, err := dst.store.ApplyDeleteObject("b1", "gone", 102); err != nil {
		t.Fatal(err)
	}
	if fetched, left, err := dst.fill(src, nil); err != nil || fetched != 0 || left != 0 {
		t.Fatalf("fill after the replacing commands: fetched %d, left %d, %v", fetched, left, err)
	}
	if dst.fillMarked() {
		t.Fatal("fill mark left after every record was filled")
	}

	// Again: the store is past the snapshot's index, nothing to do.
	if fetched, err := dst.restore(data, src); err != nil || fetched != 0 {
		t.Fatalf("second restore: fetched %d, %v", fetched, err)
	}
}

// TestSnapshotFormat: the reader refuses what the writer would not have
// written.
func TestSnapshotFormat(t *testing.T) {
	src := newReplica(t)
	src.bucket("b", 1)
	src.put("b", "k", 2, "inline bytes", nil, 2)
	good := src.snapshot(7)
	read := func(b []byte) error {
		sr, err := newSnapshotReader(bytes.NewReader(b))
		if err != nil {
			return err
		}
		if sr.index != 7 {
			t.Fatalf("index %d, want 7", sr.index)
		}
		for {
			kind, _, err := sr.next()
			if err != nil || kind == kindEnd {
				return err
			}
		}
	}
	if err := read(good); err != nil {
		t.Fatalf("a good snapshot: %v", err)
	}
	// Format 1 (no version table) is still read, and restored.
	v1 := func() []byte {
		var buf bytes.Buffer
		sw := &snapshotWriter{w: bufio.NewWriter(&buf), crc: crc32.New(castagnoli)}
		if err := sw.raw(binary.BigEndian.AppendUint64(bytes.Clone(snapshotMagicV1), 7)); err != nil {
			t.Fatal(err)
		}
		_ = sw.record(kindBucket, &meta.Bucket{Name: "b", Created: t0})
		_ = sw.record(kindObject, &meta.Object{Bucket: "b", Key: "k", Version: 2, Size: 2, Inline: []byte("v1"), Modified: t0})
		if err := sw.end(); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}()
	if err := read(v1); err != nil {
		t.Fatalf("a format 1 snapshot: %v", err)
	}
	old := newReplica(t)
	if _, err := old.restore(v1, nil); err != nil {
		t.Fatalf("restore a format 1 snapshot: %v", err)
	}
	if got := old.read("b", "k"); got != "v1" {
		t.Fatalf("format 1 snapshot restored %q, want v1", got)
	}
	frame := func(kind byte, payload string) []byte {
		return append(binary.BigEndian.AppendUint32([]byte{kind}, uint32(len(payload))), payload...)
	}
	header := binary.BigEndian.AppendUint64(bytes.Clone(snapshotMagic), 7)
	for _, c := range []struct {
		name string
		data []byte
	}{
		{"empty", nil},
		{"other magic", append([]byte("B3SNAP\x00\x04"), good[8:]...)},
		{"versions in format 1", append(binary.BigEndian.AppendUint64(bytes.Clone(snapshotMagicV1), 7), frame(kindVersion, "{}")...)},
		{"truncated", good[:len(good)-5]},
		{"flipped byte", func() []byte { b := bytes.Clone(good); b[len(b)/2] ^= 1; return b }()},
		{"trailing data", append(bytes.Clone(good), 0)},
		{"sections out of order", append(append(bytes.Clone(header), frame(kindObject, "{}")...), frame(kindBucket, "{}")...)},
		{"unknown kind", append(bytes.Clone(header), frame('x', "{}")...)},
		{"huge frame", append(bytes.Clone(header), binary.BigEndian.AppendUint32([]byte{kindObject}, maxFrame+1)...)},
	} {
		if err := read(c.data); !errors.Is(err, errSnapshotFormat) {
			t.Errorf("%s: %v, want errSnapshotFormat", c.name, err)
		}
	}
}

// del applies a deletion decided at t0 (marker: the delete marker's
// version, for a deletion without versionID).
func (r *replica) del(bucket, key, versionID string, marker, stamp uint64) {
	r.t.Helper()
	d := objstore.Deletion{VersionID: versionID, Marker: marker, Modified: t0, At: t0}
	if _, _, err := r.store.ApplyDelete(bucket, key, d, stamp); err != nil {
		r.t.Fatal(err)
	}
}

// versions lists every version of a replica, current and noncurrent, as
// "bucket/key@version current|noncurrent marker data".
func (r *replica) versions() []string {
	r.t.Helper()
	var out []string
	line := func(o *meta.Object, where string) string {
		data := ""
		if !o.DeleteMarker {
			_, rc, err := r.store.OpenVersion(context.Background(), o.Bucket, o.Key, objstore.VersionID(o), objstore.WholeObject)
			data = string(r.readAll(rc, err))
			if len(data) > 8 {
				data = fmt.Sprintf("%c*%d", data[0], len(data))
			}
		}
		return fmt.Sprintf("%s/%s@%d %s marker=%v %s", o.Bucket, o.Key, o.Version, where, o.DeleteMarker, data)
	}
	view := r.store.Meta().NewView()
	defer view.Close()
	err := view.ScanObjects(func(o *meta.Object) error { out = append(out, line(o, "current")); return nil })
	if err == nil {
		err = view.ScanVersions(func(o *meta.Object) error { out = append(out, line(o, "noncurrent")); return nil })
	}
	if err != nil {
		r.t.Fatal(err)
	}
	return out
}

// TestSnapshotRestoreVersions: a snapshot carries the version table, and
// a stale replica restored from it holds exactly the snapshot's versions
// and delete markers, fetching only the bytes it lacks: a version current
// here and noncurrent in the snapshot, or the reverse, keeps its bytes; a
// version the snapshot lacks is dropped.
func TestSnapshotRestoreVersions(t *testing.T) {
	big := func(c byte) string { return strings.Repeat(string(c), 20<<10) }
	src, dst := newReplica(t), newReplica(t)
	for _, r := range []*replica{src, dst} {
		r.bucket("v", 1)
		if err := r.store.ApplyPutBucket(&meta.Bucket{Name: "v", Created: t0, Versioning: meta.VersioningEnabled}, false, 2); err != nil {
			t.Fatal(err)
		}
		r.put("v", "k1", 3, big('a'), nil, 3)
		r.put("v", "k1", 4, big('b'), nil, 4) // k1@3 noncurrent
		r.put("v", "k2", 5, big('c'), nil, 5)
		r.put("v", "k3", 6, big('d'), nil, 6)
	}
	src.del("v", "k2", "", 20, 20)                     // k2@5 noncurrent behind a marker
	src.del("v", "k1", fmt.Sprintf("%016x", 4), 0, 21) // k1@3 current again
	src.put("v", "k3", 22, big('e'), nil, 22)
	src.del("v", "k3", fmt.Sprintf("%016x", 6), 0, 23) // k3@6 gone
	src.put("v", "k4", 24, "small", nil, 24)
	src.del("v", "k4", "", 25, 25)

	data := src.snapshot(100)
	fetched, err := dst.restore(data, src)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := dst.versions(), src.versions(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("versions after restore:\n got %q\nwant %q", got, want)
	}
	// Only k3@22 was not here; k1@3 (noncurrent here) and k2@5 (current
	// here) kept their bytes.
	if fetched != 20<<10 {
		t.Errorf("fetched %d bytes, want %d", fetched, 20<<10)
	}
	if fetched, err := dst.restore(data, src); err != nil || fetched != 0 {
		t.Fatalf("second restore: fetched %d, %v", fetched, err)
	}
}

// TestSnapshotRestoreFetchesInParallel: the fill after a restore fetches
// the bytes it lacks several at a time (objects, versions and parts
// alike), never more than restoreParallel, and fills every record.
func TestSnapshotRestoreFetchesInParallel(t *testing.T) {
	big := func(i int) string { return strings.Repeat(string(rune('a'+i)), 20<<10) }
	src, dst := newReplica(t), newReplica(t)
	src.bucket("b", 1)
	dst.bucket("b", 1)
	up := meta.NewUploadID(2)
	src.upload("b", "mp", up, 2, 2)
	for n := 1; n <= 6; n++ {
		src.part("b", "mp", 2, up, n, big(n), uint64(2+n))
	}
	if err := src.store.ApplyPutBucket(&meta.Bucket{Name: "b", Created: t0, Versioning: meta.VersioningEnabled}, false, 9); err != nil {
		t.Fatal(err)
	}
	for i := range 12 {
		src.put("b", fmt.Sprintf("k%d", i%6), uint64(10+i), big(i), nil, uint64(10+i)) // 6 current, 6 noncurrent
	}
	data := src.snapshot(100)

	var mu sync.Mutex
	inFlight, most := 0, 0
	several, opened := make(chan struct{}), false
	giveUp := time.Now().Add(2 * time.Second)
	if err := dst.restoreOnly(data); err != nil {
		t.Fatal(err)
	}
	fetched, _, err := dst.fill(src, func(fetch fetchFunc) fetchFunc {
		return func(ctx context.Context, ref bytesRef) (*objstore.Staged, error) {
			mu.Lock()
			inFlight++
			if inFlight > most {
				most = inFlight
			}
			if inFlight == 2 && !opened {
				close(several)
				opened = true
			}
			mu.Unlock()
			defer func() { mu.Lock(); inFlight--; mu.Unlock() }()
			// Hold the fetches until a second is in flight; a restore
			// fetching alone gets through after a while and fails below.
			select {
			case <-several:
			case <-time.After(time.Until(giveUp)):
			}
			return fetch(ctx, ref)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if fetched != 18*20<<10 {
		t.Errorf("fetched %d bytes, want %d", fetched, 18*20<<10)
	}
	if most < 2 || most > restoreParallel {
		t.Fatalf("at most %d fetches at once, want 2 to %d", most, restoreParallel)
	}
	if got, want := dst.versions(), src.versions(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("versions after restore:\n got %q\nwant %q", got, want)
	}
	for n := 1; n <= 6; n++ {
		if _, err := dst.store.Meta().GetPart(up, n); err != nil {
			t.Fatalf("part %d: %v", n, err)
		}
	}
}

// TestFillMarkKeptForALaterRestore: a pass that began before another
// restore marked the fill again does not remove the mark (its view may
// predate that restore's hollow records); the next pass does.
func TestFillMarkKeptForALaterRestore(t *testing.T) {
	r := newReplica(t)
	fl := r.filler(nil, nil)
	if err := fl.mark(); err != nil {
		t.Fatal(err)
	}
	began := fl.generation()
	if err := fl.mark(); err != nil { // a second restore, during the pass
		t.Fatal(err)
	}
	if ok, err := fl.done(began); err != nil || ok || !r.fillMarked() || !fl.pending.Load() {
		t.Fatalf("a pass older than the last restore removed the mark: %v, %v", ok, err)
	}
	if ok, err := fl.done(fl.generation()); err != nil || !ok || r.fillMarked() || fl.pending.Load() {
		t.Fatalf("a pass after the last restore kept the mark: %v, %v", ok, err)
	}
}
