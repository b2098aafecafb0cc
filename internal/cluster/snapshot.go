package cluster

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"io/fs"
	"iter"
	"os"
	"path/filepath"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/b3-storage/b3/internal/meta"
	"github.com/b3-storage/b3/internal/objstore"
	"github.com/b3-storage/b3/internal/partition"
	"github.com/b3-storage/b3/internal/vfs"
)

// A Raft snapshot of a node is its replicated state at one log index:
// users, buckets, uploads, parts, object records and the version table
// (noncurrent versions and delete markers), without extents (each node's
// own) and without object bytes, except inline objects'.
// A node restoring it (a follower the leader's log has left behind, a new
// member) installs every record at once, those whose bytes it lacks
// hollow (objstore.Hollow), and fetches those bytes afterwards, outside
// raft (fill.go), from a peer by reference, through the same path (and
// background I/O class) as a command whose bytes it missed.
//
// The stream (raft's snapshot store keeps it in DATA/snapshots/<id>/):
//
//	header   "B3SNAP" 0x00 0x03 | index u64
//	frames   kind u8 | len u32 | JSON record (meta's types, Extents nil)
//	           'M' Map      the cluster map, once the node has one
//	                        (cmap.go)
//	           'U' User     every user
//	           'b' Bucket   every bucket, by name
//	           'u' Upload   every multipart upload
//	           'p' Part     every part, by upload ID, then number
//	           'o' Object   every current object record, by bucket, then
//	                        key (inline objects with their payload)
//	           'v' Object   every version-table record (noncurrent
//	                        versions, delete markers), by bucket, then
//	                        key, each key's newest first
//	end      'E' | len u32 = 8 | frames u64 | crc32c u32
//
// Format 2 ("B3SNAP" 0x00 0x02, written before the cluster map) is the
// same without the 'M' section, format 1 ("B3SNAP" 0x00 0x01, written
// before versioning was replicated) also without the 'v' section; both
// are still read.
//
// Integers are big-endian; the CRC (Castagnoli) covers every byte before
// it. Kinds come in the order listed, each section complete; a reader
// refuses another order, an unknown kind, a bad count or CRC, and a
// stream that ends early or goes on after the end.
//
// Invariants:
//   - A snapshot is the state after applying exactly the log up to its
//     index: Snapshot runs between two applies (raft calls it on the
//     apply goroutine) and reads one meta View taken there.
//   - Before a snapshot is taken the store's applied stamp reaches its
//     index and is synced, so raft may drop the log below it: a restart
//     finds the store at or past the snapshot and replays only what
//     follows (Restore then only reads the header).
//   - A restore stamps the index only once every record is installed,
//     synced; a crash midway leaves the old stamp and the restore runs
//     again from the snapshot raft kept (raft persists a received
//     snapshot before it restores it).
//   - Before a restore installs its first record, the fill mark
//     (DATA/restore-fill) is written, synced; it is removed only once no
//     record is hollow, every fill synced. So a node that crashes before
//     its filler is done resumes it at its next start.
//   - The restored store holds every record of the snapshot and no other;
//     each has bytes of its own, or is hollow until the filler (or a read,
//     which fills it first) fetches them, or a later command replaces it.

var (
	snapshotMagic   = []byte("B3SNAP\x00\x03")
	snapshotMagicV2 = []byte("B3SNAP\x00\x02") // no map
	snapshotMagicV1 = []byte("B3SNAP\x00\x01") // no map, no version table
)

const (
	kindMap     = 'M'
	kindUser    = 'U'
	kindBucket  = 'b'
	kindUpload  = 'u'
	kindPart    = 'p'
	kindObject  = 'o'
	kindVersion = 'v'
	kindEnd     = 'E'
)

// kindOrder is the order of the sections.
const kindOrder = "MUbupov"

// maxFrame bounds one record (a bucket's documents, an inline object).
const maxFrame = 64 << 20

var errSnapshotFormat = errors.New("cluster: malformed snapshot")

type snapshotWriter struct {
	w      *bufio.Writer
	crc    hash.Hash32
	frames uint64
	buf    []byte
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func newSnapshotWriter(w io.Writer, index uint64) (*snapshotWriter, error) {
	sw := &snapshotWriter{w: bufio.NewWriterSize(w, 1<<20), crc: crc32.New(castagnoli)}
	return sw, sw.raw(binary.BigEndian.AppendUint64(bytes.Clone(snapshotMagic), index))
}

func (sw *snapshotWriter) raw(b []byte) error {
	sw.crc.Write(b)
	_, err := sw.w.Write(b)
	return err
}

func (sw *snapshotWriter) record(kind byte, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	sw.buf = binary.BigEndian.AppendUint32(append(sw.buf[:0], kind), uint32(len(data)))
	sw.buf = append(sw.buf, data...)
	sw.frames++
	return sw.raw(sw.buf)
}

// end writes the end frame and the CRC, and flushes.
func (sw *snapshotWriter) end() error {
	b := binary.BigEndian.AppendUint32([]byte{kindEnd}, 8)
	b = binary.BigEndian.AppendUint64(b, sw.frames)
	if err := sw.raw(b); err != nil {
		return err
	}
	if _, err := sw.w.Write(binary.BigEndian.AppendUint32(nil, sw.crc.Sum32())); err != nil {
		return err
	}
	return sw.w.Flush()
}

// writeSnapshot writes the state seen by view, the cluster map (nil:
// none) and users, as of index.
func writeSnapshot(w io.Writer, index uint64, view *meta.View, cmap *partition.Map, users []User) error {
	sw, err := newSnapshotWriter(w, index)
	if err != nil {
		return err
	}
	if cmap != nil {
		if err := sw.record(kindMap, cmap); err != nil {
			return err
		}
	}
	for _, u := range users {
		if err := sw.record(kindUser, u); err != nil {
			return err
		}
	}
	if err := view.ScanBuckets(func(b *meta.Bucket) error { return sw.record(kindBucket, b) }); err != nil {
		return err
	}
	if err := view.ScanUploads(func(u *meta.Upload) error { return sw.record(kindUpload, u) }); err != nil {
		return err
	}
	if err := view.ScanParts(func(p *meta.Part) error {
		p.Extents = nil
		return sw.record(kindPart, p)
	}); err != nil {
		return err
	}
	if err := view.ScanObjects(func(o *meta.Object) error {
		o.Extents = nil
		return sw.record(kindObject, o)
	}); err != nil {
		return err
	}
	if err := view.ScanVersions(func(o *meta.Object) error {
		o.Extents = nil
		return sw.record(kindVersion, o)
	}); err != nil {
		return err
	}
	return sw.end()
}

type snapshotReader struct {
	v1     bool // format 1: no version table
	v2     bool // format 1 or 2: no map
	r      *bufio.Reader
	crc    hash.Hash32
	index  uint64
	frames uint64
	kind   byte // of the last frame
	buf    []byte
}

func newSnapshotReader(r io.Reader) (*snapshotReader, error) {
	sr := &snapshotReader{r: bufio.NewReaderSize(r, 1<<20), crc: crc32.New(castagnoli)}
	head := make([]byte, len(snapshotMagic)+8)
	if err := sr.full(head); err != nil {
		return nil, err
	}
	magic := head[:len(snapshotMagic)]
	if !bytes.Equal(magic, snapshotMagic) && !bytes.Equal(magic, snapshotMagicV2) && !bytes.Equal(magic, snapshotMagicV1) {
		return nil, fmt.Errorf("%w: not a b3 snapshot (or a newer version)", errSnapshotFormat)
	}
	sr.v1 = bytes.Equal(magic, snapshotMagicV1)
	sr.v2 = sr.v1 || bytes.Equal(magic, snapshotMagicV2)
	sr.index = binary.BigEndian.Uint64(head[len(snapshotMagic):])
	return sr, nil
}

func (sr *snapshotReader) full(b []byte) error {
	if _, err := io.ReadFull(sr.r, b); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return fmt.Errorf("%w: truncated", errSnapshotFormat)
		}
		return err
	}
	sr.crc.Write(b)
	return nil
}

// next returns the next frame: its kind and JSON payload (valid until the
// next call). At the end frame it checks the count and the CRC, and that
// nothing follows, and returns kindEnd.
func (sr *snapshotReader) next() (byte, []byte, error) {
	var head [5]byte
	if err := sr.full(head[:]); err != nil {
		return 0, nil, err
	}
	kind, n := head[0], binary.BigEndian.Uint32(head[1:])
	if kind == kindEnd {
		var tail [8]byte
		if n != 8 {
			return 0, nil, fmt.Errorf("%w: end frame of %d bytes", errSnapshotFormat, n)
		}
		if err := sr.full(tail[:]); err != nil {
			return 0, nil, err
		}
		want := sr.crc.Sum32()
		var sum [4]byte
		if _, err := io.ReadFull(sr.r, sum[:]); err != nil {
			return 0, nil, fmt.Errorf("%w: truncated", errSnapshotFormat)
		}
		if got := binary.BigEndian.Uint64(tail[:]); got != sr.frames {
			return 0, nil, fmt.Errorf("%w: %d frames, end says %d", errSnapshotFormat, sr.frames, got)
		}
		if binary.BigEndian.Uint32(sum[:]) != want {
			return 0, nil, fmt.Errorf("%w: checksum mismatch", errSnapshotFormat)
		}
		if _, err := sr.r.ReadByte(); err != io.EOF {
			return 0, nil, fmt.Errorf("%w: data after the end", errSnapshotFormat)
		}
		return kindEnd, nil, nil
	}
	at := bytes.IndexByte([]byte(kindOrder), kind)
	if at < 0 || at < bytes.IndexByte([]byte(kindOrder), sr.kind) || (sr.v1 && kind == kindVersion) || (sr.v2 && kind == kindMap) {
		return 0, nil, fmt.Errorf("%w: frame kind %q after %q", errSnapshotFormat, kind, sr.kind)
	}
	if n > maxFrame {
		return 0, nil, fmt.Errorf("%w: frame of %d bytes", errSnapshotFormat, n)
	}
	if cap(sr.buf) < int(n) {
		sr.buf = make([]byte, n)
	}
	sr.buf = sr.buf[:n]
	if err := sr.full(sr.buf); err != nil {
		return 0, nil, err
	}
	sr.kind = kind
	sr.frames++
	return kind, sr.buf, nil
}

// restorer brings a store to a snapshot's state (see the invariants at
// the top), one section at a time, reusing what the store already holds:
// an object of the same version keeps its local bytes, a part with the
// same size, ETag and time keeps its own. A record whose bytes the store
// lacks is installed hollow (objstore.Hollow): the restore fetches no
// bytes, the filler does afterwards (fill.go).
type restorer struct {
	store *objstore.Store
	users *userState
	// maps is the node's cluster map: the first group's restores it with
	// the rest (replaceMap), another group's only moves it forward to the
	// snapshot's (cmap.go).
	maps       *mapState
	replaceMap bool
	gotMap     *partition.Map
	index      uint64

	userList []User
	buckets  map[string]bool
	uploads  map[string]*meta.Upload // by upload ID
	local    *localObjects
	// localVersions: the local version table, from the version section on.
	localVersions *localObjects
	// hollow counts the records installed without their bytes, and
	// their size.
	hollow      int
	hollowBytes int64
}

// restoreSnapshot reads a snapshot from sr and makes store and users its
// state. It does not stamp the store: the caller does, once it returns
// nil.
func restoreSnapshot(sr *snapshotReader, store *objstore.Store, users *userState, maps *mapState, replaceMap bool) (*restorer, error) {
	rs := &restorer{store: store, users: users, maps: maps, replaceMap: replaceMap, index: sr.index,
		buckets: map[string]bool{}, uploads: map[string]*meta.Upload{}}
	defer func() {
		if rs.local != nil {
			rs.local.stop()
		}
		if rs.localVersions != nil {
			rs.localVersions.stop()
		}
	}()
	section := 0 // sections of kindOrder before this one are complete
	for {
		kind, data, err := sr.next()
		if err != nil {
			return nil, err
		}
		at := len(kindOrder)
		if kind != kindEnd {
			at = bytes.IndexByte([]byte(kindOrder), kind)
		}
		for ; section < at; section++ {
			if err := rs.endSection(kindOrder[section]); err != nil {
				return nil, err
			}
		}
		if kind == kindEnd {
			return rs, rs.deleteOtherBuckets()
		}
		if err := rs.record(kind, data); err != nil {
			return nil, err
		}
	}
}

// noteHollow counts a record installed without its bytes.
func (rs *restorer) noteHollow(size int64) {
	rs.hollow++
	rs.hollowBytes += size
}

func (rs *restorer) record(kind byte, data []byte) error {
	var v any
	switch kind {
	case kindMap:
		m, err := partition.Decode(data)
		if err != nil {
			return fmt.Errorf("%w: %v", errSnapshotFormat, err)
		}
		rs.gotMap = m
		return nil
	case kindUser:
		v = &User{}
	case kindBucket:
		v = &meta.Bucket{}
	case kindUpload:
		v = &meta.Upload{}
	case kindPart:
		v = &meta.Part{}
	case kindObject, kindVersion:
		v = &meta.Object{}
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("%w: %c record: %v", errSnapshotFormat, kind, err)
	}
	switch x := v.(type) {
	case *User:
		rs.userList = append(rs.userList, *x)
		return nil
	case *meta.Bucket:
		return rs.bucket(x)
	case *meta.Upload:
		rs.uploads[x.UploadID] = x
		return rs.store.ApplyCreateUpload(x, objstore.Restoring)
	case *meta.Part:
		return rs.part(x)
	default:
		if kind == kindVersion {
			return rs.version(v.(*meta.Object))
		}
		return rs.object(v.(*meta.Object))
	}
}

// endSection finishes a section: what the store has and the snapshot has
// not goes.
func (rs *restorer) endSection(kind byte) error {
	switch kind {
	case kindMap:
		switch {
		case rs.maps == nil:
			return nil
		case rs.replaceMap:
			return rs.maps.replace(rs.gotMap)
		case rs.gotMap != nil:
			_, err := rs.maps.offer(rs.gotMap)
			return err
		}
	case kindUser:
		return rs.users.replace(rs.userList)
	case kindUpload:
		var stale []*meta.Upload
		err := rs.store.Meta().ScanUploads("", func(u *meta.Upload) error {
			if rs.uploads[u.UploadID] == nil {
				stale = append(stale, u)
			}
			return nil
		})
		if err != nil {
			return err
		}
		for _, u := range stale {
			if err := rs.store.ApplyAbortUpload(u.Bucket, u.Key, u.UploadID, objstore.Restoring); err != nil {
				return err
			}
		}
	case kindObject:
		// Local records after the last in the snapshot.
		_, err := rs.deleteLocalBefore(nil)
		return err
	case kindVersion:
		_, err := rs.dropLocalVersionsBefore(nil)
		return err
	}
	return nil
}

func (rs *restorer) bucket(b *meta.Bucket) error {
	rs.buckets[b.Name] = true
	_, err := rs.store.Meta().GetBucket(b.Name)
	exists := err == nil
	if err != nil && !errors.Is(err, meta.ErrNotFound) {
		return err
	}
	return rs.store.ApplyPutBucket(b, !exists, objstore.Restoring)
}

func (rs *restorer) deleteOtherBuckets() error {
	bs, err := rs.store.ListBuckets()
	if err != nil {
		return err
	}
	for _, b := range bs {
		if !rs.buckets[b.Name] {
			if err := rs.store.ApplyDeleteBucket(b.Name, objstore.Restoring); err != nil {
				return fmt.Errorf("restore: remove bucket %s: %w", b.Name, err)
			}
		}
	}
	return nil
}

func (rs *restorer) part(p *meta.Part) error {
	up := rs.uploads[p.UploadID]
	if up == nil {
		return fmt.Errorf("%w: part %d of unknown upload %s", errSnapshotFormat, p.Number, p.UploadID)
	}
	cur, err := rs.store.Meta().GetPart(p.UploadID, p.Number)
	switch {
	case err == nil && cur.Size == p.Size && cur.ETag == p.ETag && cur.Modified.Equal(p.Modified):
		return nil // the same part: keep its bytes
	case err != nil && !errors.Is(err, meta.ErrNotFound):
		return err
	}
	p.Extents = nil // hollow: the filler fetches its bytes
	rs.noteHollow(p.Size)
	return rs.store.ApplyPutPart(up.Bucket, up.Key, p, objstore.Restoring)
}

// object installs one object record, after removing the local records
// that sort before it (the snapshot has none of them).
func (rs *restorer) object(o *meta.Object) error {
	cur, err := rs.deleteLocalBefore(o)
	if err != nil {
		return err
	}
	if cur != nil && cur.Version == o.Version {
		// The same version: keep the local bytes, take the attributes.
		return rs.store.ApplyUpdateObject(o, objstore.Restoring)
	}
	if o.Inline != nil {
		return rs.store.RestoreObject(o)
	}
	if old, err := rs.store.Meta().GetVersion(o.Bucket, o.Key, o.Version); err == nil && !old.DeleteMarker {
		// Noncurrent here, current in the snapshot: its bytes are here.
		o.Extents, o.Size = old.Extents, old.Size
		return rs.store.RestoreObject(o)
	}
	return rs.installHollow(o, rs.store.RestoreObject)
}

// installHollow installs o without bytes (objstore.Hollow); the filler
// fetches them later.
func (rs *restorer) installHollow(o *meta.Object, install func(*meta.Object) error) error {
	o.Extents = nil
	if objstore.Hollow(o) {
		rs.noteHollow(o.Size)
	}
	return install(o)
}

// version installs one version-table record (a noncurrent version or a
// delete marker), after removing the local ones that sort before it. A
// version held here (noncurrent, or set aside from the current records by
// the object section) keeps its bytes.
func (rs *restorer) version(o *meta.Object) error {
	local, err := rs.dropLocalVersionsBefore(o)
	if err != nil {
		return err
	}
	switch {
	case o.DeleteMarker || o.Inline != nil:
		return rs.store.RestoreVersion(o)
	case local != nil && !local.DeleteMarker:
		o.Extents, o.Size = local.Extents, local.Size
		return rs.store.RestoreVersion(o)
	}
	return rs.installHollow(o, rs.store.RestoreVersion)
}

// dropLocalVersionsBefore removes the local version-table records that
// sort before o (all that remain if o is nil), and returns the local
// record of o's version, if any. The local scan starts at the first call:
// after the object section, whose set-aside records it must see.
func (rs *restorer) dropLocalVersionsBefore(o *meta.Object) (*meta.Object, error) {
	if rs.localVersions == nil {
		view := rs.store.Meta().NewView()
		rs.localVersions = pullObjects(view.ScanVersions, func() { _ = view.Close() })
	}
	l := rs.localVersions
	for {
		v, ok := l.peek()
		if !ok {
			return nil, l.err
		}
		if o != nil && !versionBefore(v, o) {
			if v.Bucket == o.Bucket && v.Key == o.Key && v.Version == o.Version {
				l.advance()
				return v, nil
			}
			return nil, nil
		}
		if err := rs.store.RestoreDropVersion(v.Bucket, v.Key, v.Version); err != nil {
			return nil, err
		}
		l.advance()
	}
}

// versionBefore orders version-table records as meta's keys do: by
// bucket, key, then newest version first.
func versionBefore(a, b *meta.Object) bool {
	if a.Bucket != b.Bucket || a.Key != b.Key {
		return objectBefore(a, b)
	}
	return a.Version > b.Version
}

// deleteLocalBefore deletes the local object records that sort before o
// (all that remain if o is nil) and returns the local record of o's key,
// if any. Objects come in key order from the snapshot and from the local
// scan (meta.View.ScanObjects): a merge.
func (rs *restorer) deleteLocalBefore(o *meta.Object) (*meta.Object, error) {
	if rs.local == nil {
		rs.local = scanLocalObjects(rs.store.Meta())
	}
	for {
		l, ok := rs.local.peek()
		if !ok {
			return nil, rs.local.err
		}
		if o != nil && !objectBefore(l, o) {
			if l.Bucket == o.Bucket && l.Key == o.Key {
				rs.local.advance()
				return l, nil
			}
			return nil, nil
		}
		// Set aside, not deleted: it may be one of the snapshot's
		// noncurrent versions (the version section decides).
		if err := rs.store.RestoreSetAside(l.Bucket, l.Key); err != nil {
			return nil, err
		}
		rs.local.advance()
	}
}

// objectBefore orders records as meta's keys do.
func objectBefore(a, b *meta.Object) bool {
	if a.Bucket != b.Bucket {
		return a.Bucket < b.Bucket
	}
	return a.Key < b.Key
}

// localObjects pulls the store's object (or version) records, in key
// order, from one scan (a pebble snapshot: the restore's own writes are
// not seen).
type localObjects struct {
	next  func() (*meta.Object, bool)
	stop  func()
	cur   *meta.Object
	valid bool
	err   error
}

func scanLocalObjects(db *meta.DB) *localObjects {
	return pullObjects(func(fn func(*meta.Object) error) error { return db.ScanObjects("", "", fn) }, nil)
}

// pullObjects runs scan as an iterator; done, if set, runs when it stops.
func pullObjects(scan func(fn func(*meta.Object) error) error, done func()) *localObjects {
	l := &localObjects{}
	seq := func(yield func(*meta.Object) bool) {
		errStop := errors.New("stop")
		err := scan(func(o *meta.Object) error {
			if !yield(o) {
				return errStop
			}
			return nil
		})
		if err != nil && !errors.Is(err, errStop) {
			l.err = err
		}
	}
	next, stop := iter.Pull(iter.Seq[*meta.Object](seq))
	l.next, l.stop = next, stop
	if done != nil {
		l.stop = func() { stop(); done() }
	}
	l.advance()
	return l
}

func (l *localObjects) peek() (*meta.Object, bool) { return l.cur, l.valid }
func (l *localObjects) advance()                   { l.cur, l.valid = l.next() }

// fsmSnapshot is one snapshot being persisted: a meta View taken between
// two applies, and the users then.
type fsmSnapshot struct {
	index uint64
	view  *meta.View
	cmap  *partition.Map
	users []User
}

func (s *fsmSnapshot) Persist(sink raft.SnapshotSink) error {
	if err := writeSnapshot(sink, s.index, s.view, s.cmap, s.users); err != nil {
		_ = sink.Cancel()
		return fmt.Errorf("cluster: write snapshot at %d: %w", s.index, err)
	}
	return sink.Close()
}

func (s *fsmSnapshot) Release() { _ = s.view.Close() }

// snapshotDir is where raft's file snapshot store keeps the snapshots
// (DATA/snapshots/<term>-<index>-<ms>/{meta.json,state.bin}); the two
// newest are kept.
const snapshotDir = "snapshots"

// privateSnapshots is raft's FileSnapshotStore with b3's file modes: it
// creates its directories 0755 and files 0644, and a snapshot holds
// inline objects and users' secrets. DATA/snapshots is made 0700 before
// the store first writes in it, and each snapshot is narrowed to 0700 and
// 0600 once written.
type privateSnapshots struct {
	*raft.FileSnapshotStore
	dir string
}

func openSnapshotStore(root string, logger hclog.Logger) (*privateSnapshots, error) {
	dir := filepath.Join(root, snapshotDir)
	if err := os.MkdirAll(dir, vfs.DirPerm); err != nil {
		return nil, err
	}
	store, err := raft.NewFileSnapshotStoreWithLogger(root, 2, logger)
	if err != nil {
		return nil, fmt.Errorf("open snapshot store: %w", err)
	}
	return &privateSnapshots{FileSnapshotStore: store, dir: dir}, nil
}

func (p *privateSnapshots) Create(version raft.SnapshotVersion, index, term uint64, conf raft.Configuration, confIndex uint64, trans raft.Transport) (raft.SnapshotSink, error) {
	sink, err := p.FileSnapshotStore.Create(version, index, term, conf, confIndex, trans)
	if err != nil {
		return nil, err
	}
	return privateSink{sink, filepath.Join(p.dir, sink.ID())}, nil
}

type privateSink struct {
	raft.SnapshotSink
	dir string
}

func (s privateSink) Close() error {
	err := s.SnapshotSink.Close()
	_ = filepath.WalkDir(s.dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // reaped meanwhile
		}
		mode := fs.FileMode(0o600)
		if d.IsDir() {
			mode = vfs.DirPerm
		}
		return os.Chmod(path, mode)
	})
	return err
}
