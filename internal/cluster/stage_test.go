package cluster

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/b3-storage/b3/internal/meta"
	"github.com/b3-storage/b3/internal/objstore"
)

// TestStages: bytes arriving under an id can be waited for and taken
// once; failed arrivals leave nothing; unclaimed bytes expire.
func TestStages(t *testing.T) {
	dir := t.TempDir()
	store, err := objstore.Open(objstore.Options{MetaDir: filepath.Join(dir, "meta"), DataDir: filepath.Join(dir, "seg"), Logger: slog.Default()})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	if _, err := store.CreateBucket(&meta.Bucket{Name: "b"}); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	stage := func() *objstore.Staged {
		st, err := store.Stage(ctx, "b", "k", 1, bytes.NewReader(make([]byte, 10<<10)))
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	s := newStages()

	// Arriving: take waits for it.
	e := s.begin(1)
	if s.begin(1) != nil {
		t.Fatal("a second begin of the same id was accepted")
	}
	go func() {
		time.Sleep(20 * time.Millisecond)
		s.finish(1, e, stage(), nil)
	}()
	if st := s.take(ctx, 1, time.Minute); st == nil || st.Size != 10<<10 {
		t.Fatalf("take of arriving bytes: %+v", st)
	} else {
		st.Discard()
	}
	if s.take(ctx, 1, 0) != nil {
		t.Fatal("bytes taken twice")
	}

	// A failed arrival leaves nothing to take or serve.
	e = s.begin(2)
	s.finish(2, e, nil, errors.New("peer went away"))
	if s.take(ctx, 2, time.Minute) != nil || s.peek(2) != nil {
		t.Fatal("a failed arrival left bytes behind")
	}

	// Unclaimed bytes expire; claimed ones are gone from the registry.
	e = s.begin(3)
	s.finish(3, e, stage(), nil)
	if s.peek(3) == nil {
		t.Fatal("peek: staged bytes not served")
	}
	s.expire(time.Now(), false)
	if s.peek(3) == nil {
		t.Fatal("fresh bytes expired")
	}
	s.expire(time.Now().Add(stageTTL+time.Second), false)
	if s.peek(3) != nil {
		t.Fatal("bytes older than the TTL were kept")
	}
}

// TestPutBackServesRetry: bytes whose install failed are kept under the
// command's stage id, and the retry of the apply takes them there.
func TestPutBackServesRetry(t *testing.T) {
	store := newReplica(t).store
	if _, err := store.CreateBucket(&meta.Bucket{Name: "b"}); err != nil {
		t.Fatal(err)
	}
	n := &Node{store: store, stages: newStages(), closing: context.Background(), log: slog.Default()}
	body := []byte(strings.Repeat("kept", 1000))
	st, err := store.Stage(context.Background(), "b", "k", 9, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	ref := bytesRef{Stage: 77, Bucket: "b", Key: "k", Version: 9, want: wantBody(int64(len(body)), "", false)}
	n.keepForRetry(ref, st)
	again := n.takePushed(ref)
	if again == nil || again.Size != int64(len(body)) {
		t.Fatalf("the retry did not find the bytes kept: %v", again)
	}
	again.Release()
}
