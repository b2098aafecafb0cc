package cluster

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/b3-storage/b3/internal/meta"
	"github.com/b3-storage/b3/internal/objstore"
)

// TestFetchRefusesWrongBytes: bytes a peer gives are stored only if they
// are those the command names — its size, and its MD5 sum where the ETag
// is one. A peer serving a flipped bit, another version's bytes, a short
// or a long body is refused (the fetch then asks the next peer); a peer
// serving the right bytes is taken. A multipart object's ETag is no MD5
// sum: its size alone is checked.
func TestFetchRefusesWrongBytes(t *testing.T) {
	store := newReplica(t).store
	if _, err := store.CreateBucket(&meta.Bucket{Name: "b"}); err != nil {
		t.Fatal(err)
	}
	n := &Node{store: store, peerClient: http.DefaultClient, log: slog.Default()}

	body := bytes.Repeat([]byte("0123456789abcdef"), 64<<10/16)
	sum := md5.Sum(body)
	etag := hex.EncodeToString(sum[:])
	flipped := bytes.Clone(body)
	flipped[12345] ^= 0x10
	other := bytes.Repeat([]byte("x"), len(body))

	cases := []struct {
		name   string
		serve  []byte
		etag   string
		wantOK bool
	}{
		{"the right bytes", body, etag, true},
		{"a flipped bit", flipped, etag, false},
		{"another version's bytes", other, etag, false},
		{"short", body[:len(body)-1], etag, false},
		{"long", append(bytes.Clone(body), 'x'), etag, false},
		{"multipart ETag, right size", flipped, etag + "-3", true},
		{"multipart ETag, wrong size", body[:100], etag + "-3", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			peer := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if !strings.HasPrefix(r.URL.Path, "/_b3/v1/bytes") {
					http.NotFound(w, r)
					return
				}
				w.Header().Set("Content-Length", strconv.Itoa(len(tc.serve)))
				_, _ = w.Write(tc.serve)
			}))
			defer peer.Close()
			ref := bytesRef{Stage: 7, Bucket: "b", Key: "k", Version: 3, Index: 10, want: wantBody(int64(len(body)), tc.etag, false)}
			st, err := n.fetchFrom(context.Background(), strings.TrimPrefix(peer.URL, "http://"), ref, nil)
			if tc.wantOK {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				st.Discard()
				return
			}
			if err == nil {
				st.Discard()
				t.Fatal("taken")
			}
			if !errors.Is(err, errBadBody) {
				t.Fatalf("refused for another reason: %v", err)
			}
		})
	}
}

// TestPushedBytesChecked: bytes the leader pushes are taken by the apply
// only if they are those the command names, as fetched bytes are: a
// flipped bit in a push of the right size is refused (the apply then
// fetches them), the right bytes are taken.
func TestPushedBytesChecked(t *testing.T) {
	store := newReplica(t).store
	if _, err := store.CreateBucket(&meta.Bucket{Name: "b"}); err != nil {
		t.Fatal(err)
	}
	n := &Node{store: store, stages: newStages(), closing: context.Background(), log: slog.Default()}
	body := bytes.Repeat([]byte("fedcba9876543210"), 64<<10/16)
	sum := md5.Sum(body)
	etag := hex.EncodeToString(sum[:])
	flipped := bytes.Clone(body)
	flipped[40000] ^= 0x01
	for i, tc := range []struct {
		name   string
		push   []byte
		etag   string
		wantOK bool
	}{
		{"the right bytes", body, etag, true},
		{"a flipped bit", flipped, etag, false},
		{"multipart ETag: the size alone", flipped, etag + "-2", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ref := bytesRef{Stage: uint64(100 + i), Bucket: "b", Key: "k", Version: 3, Index: 10, want: wantBody(int64(len(body)), tc.etag, false)}
			req := httptest.NewRequest(http.MethodPut, "/_b3/v1/stage?"+refQuery(ref).Encode(), bytes.NewReader(tc.push))
			rec := httptest.NewRecorder()
			n.handleStage(rec, req)
			if rec.Code != http.StatusOK {
				t.Fatalf("push: %d %s", rec.Code, rec.Body)
			}
			st := n.takePushed(ref)
			if (st != nil) != tc.wantOK {
				t.Fatalf("taken: %v, want %v", st != nil, tc.wantOK)
			}
			if st != nil {
				st.Discard()
			}
		})
	}
}

// TestLocalFaultIsNotThePeers: a peer's bytes that this node cannot
// write (its disk within the reserve) are this node's fault, reported as
// such: the peer holds them.
func TestLocalFaultIsNotThePeers(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{objstore.ErrStorageFull, true},
		{errors.Join(errors.New("blob: write segment"), errNoSpace()), true},
		{errBadBody, false},
		{errNotYet, false},
		{objstore.ErrNoSuchKey, false},
	} {
		if got := isLocalFault(tc.err); got != tc.want {
			t.Errorf("isLocalFault(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
	m := &missing{asked: []peerAnswer{{Address: "a", Err: errNotYet}, {Address: "b", Err: &localFault{objstore.ErrStorageFull}}}}
	if m.localFault() == nil {
		t.Fatal("a wait on this node's disk not told apart")
	}
	m.asked = m.asked[:1]
	if m.localFault() != nil {
		t.Fatal("a peer's 'not yet' taken for a local fault")
	}
}

func errNoSpace() error { return syscall.ENOSPC }
