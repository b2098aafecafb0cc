package cluster

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/b3-storage/b3/internal/blob"
	"github.com/b3-storage/b3/internal/meta"
	"github.com/b3-storage/b3/internal/objstore"
	"github.com/b3-storage/b3/internal/testutil"
)

// TestReadRepairsFromPeer: a read that meets damaged bytes on this node
// (a record refused at its start, or in the middle of the object) fetches
// the object from a peer, repairs its copy, and returns the object whole,
// through Read and through WriteTo; with no peer holding good bytes it
// fails, never returning other bytes.
func TestReadRepairsFromPeer(t *testing.T) {
	const chunk = 1 << 20
	body := bytes.Repeat([]byte("0123456789abcdef"), (5*chunk/2)/16)
	sum := md5.Sum(body)
	cases := []struct {
		name     string
		record   int  // the record damaged: 0, 1 or 2
		peerGood bool // the peer serves the right bytes
		writeTo  bool // read through WriteTo (else Read)
	}{
		{"first record, Read", 0, true, false},
		{"second record, Read", 1, true, false},
		{"last record, WriteTo", 2, true, true},
		{"second record, WriteTo", 1, true, true},
		{"no good copy", 1, false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := newReplica(t)
			store := r.store
			if _, err := store.CreateBucket(&meta.Bucket{Name: "b"}); err != nil {
				t.Fatal(err)
			}
			obj, err := store.PutObject(context.Background(), objstore.PutInput{Bucket: "b", Key: "k", Body: bytes.NewReader(body),
				Finish: func(o *meta.Object) error { o.ETag = hex.EncodeToString(sum[:]); return nil }})
			if err != nil {
				t.Fatal(err)
			}
			// Damage the record: one bit of its payload.
			ext := obj.Extents[0]
			recordLen := int64(32 + len("b\x00k") + chunk)
			off := ext.Offset + int64(tc.record)*recordLen + 32 + 3 + 100
			testutil.FlipBit(t, filepath.Join(r.dir, "seg", fmt.Sprintf("%016x.seg", ext.Segment)), off)

			serve := body
			if !tc.peerGood {
				serve = bytes.Repeat([]byte("x"), len(body))
			}
			peer := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Length", strconv.Itoa(len(serve)))
				_, _ = w.Write(serve)
			}))
			defer peer.Close()
			n := &Node{store: store, peerClient: http.DefaultClient, log: slog.New(slog.DiscardHandler), fsm: &fsm{},
				cfg: Config{ID: "n1"}, startPeers: []Peer{{ID: "n2", Address: strings.TrimPrefix(peer.URL, "http://")}}}

			ctx := context.Background()
			got, rc, err := n.openRepaired(ctx, func() (*meta.Object, error) { return store.HeadObject("b", "k") },
				func(rng objstore.RangeFunc) (*meta.Object, io.ReadCloser, error) {
					return store.OpenObject(ctx, "b", "k", rng)
				}, objstore.WholeObject)
			if err != nil {
				t.Fatal(err)
			}
			if got.ETag != hex.EncodeToString(sum[:]) {
				t.Fatalf("ETag %s", got.ETag)
			}
			var out bytes.Buffer
			if tc.writeTo {
				_, err = io.Copy(&out, rc)
			} else {
				_, err = io.Copy(&out, struct{ io.Reader }{rc})
			}
			rc.Close()
			if !tc.peerGood {
				if err == nil || !errors.Is(err, blob.ErrCorrupt) || !bytes.HasPrefix(body, out.Bytes()) {
					t.Fatalf("without a good copy: %d bytes, %v", out.Len(), err)
				}
				return
			}
			if err != nil || !bytes.Equal(out.Bytes(), body) {
				t.Fatalf("read: %d bytes (identical: %v), %v", out.Len(), bytes.Equal(out.Bytes(), body), err)
			}
			// Repaired in place: a plain read now succeeds.
			again, err := store.HeadObject("b", "k")
			if err != nil || again.Extents[0] == obj.Extents[0] {
				t.Fatalf("not repaired in place: %v %v", again, err)
			}
			_, plain, err := store.OpenObject(ctx, "b", "k", objstore.WholeObject)
			if err != nil {
				t.Fatal(err)
			}
			defer plain.Close()
			if data, err := io.ReadAll(plain); err != nil || !bytes.Equal(data, body) {
				t.Fatalf("after repair: %v", err)
			}
		})
	}
}
