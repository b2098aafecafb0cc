package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"

	"github.com/b3-storage/b3/internal/blob"
	"github.com/b3-storage/b3/internal/meta"
	"github.com/b3-storage/b3/internal/objstore"
	"github.com/b3-storage/b3/internal/scrub"
	"github.com/b3-storage/b3/internal/server"
)

// Scrub and repair on a member of a replica group.
//
// Each node scrubs its own store (package scrub: its segments and
// records, at background priority, paced by its own pacer), as b3 server
// does. Where b3 server can only report damage, a member has other
// copies: the bytes of a damaged version are fetched again from a peer,
// exactly as a returning node fetches bytes it missed (Node.fetchFrom:
// GET /_b3/v1/bytes on the authenticated peer channel; the peer's reader
// verifies its own records' CRCs, so a peer whose copy is damaged too
// serves a short body, which is refused, and the fetch checks size and,
// where the ETag is one, the MD5 sum), staged in this node's segments,
// and put in place of the damaged extents (objstore.RepairExtents: only
// if the version still references them). Nothing goes through the Raft
// log: the record stays the same, only where its bytes lie on this node
// changes, and extents are each node's own.
//
// A read on the leader that meets a damaged record does the same before
// it goes on (repairingReader): the client gets the object's bytes, from
// the repaired copy, never the damaged ones and never an error while a
// peer holds them.

// newScrubber makes the node's scrubber: its state in the data
// directory, as on b3 server, and a repair from the peers.
func (n *Node) newScrubber() (*scrub.Scrubber, error) {
	return scrub.New(scrub.Config{Engine: n.store, State: server.StateFile(filepath.Join(n.cfg.Root, server.ScrubStateFile)),
		Interval: n.cfg.ScrubInterval, Logger: n.log, Repair: func(ctx context.Context, v objstore.ScrubValue) (bool, error) {
			return n.repairVersion(ctx, v.Bucket, v.Key, v.Version)
		}})
}

// repairVersion fetches the bytes of bucket/key's version from a peer
// and puts them in place of this node's copy (see above). It reports
// whether it did: false when no peer gave them (asked once each) or the
// version changed meanwhile (replaced, deleted or moved: nothing to
// repair then).
func (n *Node) repairVersion(ctx context.Context, bucket, key string, version uint64) (bool, error) {
	obj, err := n.store.Record(bucket, key, version)
	switch {
	case errors.Is(err, meta.ErrNotFound):
		return false, nil
	case err != nil:
		return false, err
	case obj.Inline != nil || len(obj.Extents) == 0:
		return false, nil
	}
	ref := bytesRef{Bucket: bucket, Key: key, Version: version, Index: n.fsm.applied.Load(), want: wantBody(obj.Size, obj.ETag, obj.SSE != nil)}
	var answers []error
	for _, peer := range n.peersLeaderFirst() {
		st, err := n.fetchFrom(ctx, peer, ref, nil)
		if errors.Is(err, errGone) {
			return false, nil // replaced since: this node applies that next
		}
		if err != nil {
			if ctx.Err() != nil {
				return false, ctx.Err()
			}
			answers = append(answers, err)
			continue
		}
		ok, err := n.store.RepairExtents(bucket, key, version, obj.Extents, st)
		if err != nil || !ok {
			st.Discard()
			return false, err
		}
		st.Release()
		n.log.Warn("damaged object bytes fetched again from a replica", "bucket", bucket, "key", key, "version", version, "peer", peer, "bytes", obj.Size)
		return true, nil
	}
	return false, fmt.Errorf("no peer gave the bytes of %s/%s version %d: %w", bucket, key, version, errors.Join(answers...))
}

// repairing wraps a read of obj's bytes [off, off+n) (rc) so that damage
// met on the way is repaired from a peer and the read goes on from the
// repaired copy.
func (n *Node) repairing(ctx context.Context, obj *meta.Object, off, size int64, rc io.ReadCloser) io.ReadCloser {
	if obj == nil || rc == nil || obj.Inline != nil || len(obj.Extents) == 0 {
		return rc
	}
	return &repairingReader{n: n, ctx: ctx, obj: obj, off: off, left: size, rc: rc}
}

// repairingReader is a read of an object's bytes that, when the store
// refuses a record (blob.ErrCorrupt: a bad CRC, a missing segment, a
// record that is not the object's), fetches the object's bytes from a
// peer into place (Node.repairVersion) and goes on from where it was in
// the repaired copy: bytes before the damage were verified, bytes after
// it come from the repaired copy, verified in turn. Once only: a second
// failure is the read's error.
type repairingReader struct {
	n         *Node
	ctx       context.Context
	obj       *meta.Object
	off, left int64 // the next byte of the range and how many are left
	rc        io.ReadCloser
	repaired  bool
}

func (r *repairingReader) Read(p []byte) (int, error) {
	n, err := r.rc.Read(p)
	r.off, r.left = r.off+int64(n), r.left-int64(n)
	if err == nil || !r.repair(err) {
		return n, err
	}
	if n > 0 {
		return n, nil
	}
	return r.rc.Read(p)
}

// WriteTo keeps the store reader's copy-free path (blob.Reader.WriteTo).
func (r *repairingReader) WriteTo(w io.Writer) (int64, error) {
	var total int64
	for {
		var n int64
		var err error
		if wt, ok := r.rc.(io.WriterTo); ok {
			n, err = wt.WriteTo(w)
		} else {
			n, err = io.Copy(w, r.rc)
		}
		total += n
		r.off, r.left = r.off+n, r.left-n
		if err == nil || !r.repair(err) {
			return total, err
		}
	}
}

// repair reports whether err was damage it repaired, r.rc then reading
// the rest of the range from the repaired copy.
func (r *repairingReader) repair(err error) bool {
	if r.repaired || !errors.Is(err, blob.ErrCorrupt) || r.ctx.Err() != nil {
		return false
	}
	r.repaired = true
	log := r.n.log.With("bucket", r.obj.Bucket, "key", r.obj.Key, "version", r.obj.Version)
	log.Error("a read met damaged bytes; fetching them from a replica", "err", err)
	ctx := context.WithValue(r.ctx, clientFetch{}, true) // a client waits
	ok, rerr := r.n.repairVersion(ctx, r.obj.Bucket, r.obj.Key, r.obj.Version)
	if rerr != nil || !ok {
		log.Error("damaged bytes not repaired; the read fails", "err", rerr)
		return false
	}
	obj, rerr := r.n.store.Record(r.obj.Bucket, r.obj.Key, r.obj.Version)
	var rc io.ReadCloser
	if rerr == nil {
		rc, rerr = r.n.store.ReadRange(r.ctx, obj.Bucket, obj.Key, obj.Version, obj.Extents, r.off, r.left)
	}
	if rerr != nil {
		log.Error("repaired copy unreadable; the read fails", "err", rerr)
		return false
	}
	r.rc.Close()
	r.rc = rc
	return true
}

func (r *repairingReader) Close() error { return r.rc.Close() }

// openRepaired is a read of an object (open, with the range rng chooses)
// that repairs damage from a peer: damage met as it opens (a record
// refused, a segment missing: the version head names) is repaired and the
// read opened again; damage met later by the reader it returns
// (repairing).
func (n *Node) openRepaired(ctx context.Context, head func() (*meta.Object, error), open func(objstore.RangeFunc) (*meta.Object, io.ReadCloser, error), rng objstore.RangeFunc) (*meta.Object, io.ReadCloser, error) {
	var off, size int64
	chosen := func(o *meta.Object) (int64, int64, error) {
		var err error
		off, size, err = rng(o)
		return off, size, err
	}
	obj, rc, err := open(chosen)
	if err != nil && (errors.Is(err, blob.ErrCorrupt) || errors.Is(err, fs.ErrNotExist)) && ctx.Err() == nil {
		cur, herr := head()
		if herr == nil {
			n.log.Error("a read met damaged bytes; fetching them from a replica", "bucket", cur.Bucket, "key", cur.Key, "version", cur.Version, "err", err)
			ok, rerr := n.repairVersion(context.WithValue(ctx, clientFetch{}, true), cur.Bucket, cur.Key, cur.Version)
			if ok {
				obj, rc, err = open(chosen)
			} else {
				n.log.Error("damaged bytes not repaired; the read fails", "bucket", cur.Bucket, "key", cur.Key, "err", rerr)
			}
		}
	}
	if err != nil {
		return obj, rc, err
	}
	return obj, n.repairing(ctx, obj, off, size, rc), nil
}
