package cluster

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/b3-storage/b3/internal/meta"
	"github.com/b3-storage/b3/internal/objstore"
)

// A sync's copiers whose context ends (leadership lost, node closing)
// while no copy is in flight skip every queued record and report no
// error: wait says the sync copied all it had to.
func TestCopiersReportCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var calls atomic.Int64
	c := newCopiers(ctx, 2, func(context.Context, moveRecord) (bool, error) {
		calls.Add(1)
		return true, nil
	})
	cancel()
	for i := 0; i < 10; i++ {
		if !c.add(moveRecord{Kind: "o", Object: &meta.Object{Bucket: "b", Key: string(rune('a' + i))}}) {
			t.Fatal("add refused")
		}
	}
	copied, err := c.wait()
	if err == nil && calls.Load() < 10 {
		t.Fatalf("wait: copied %d, err nil, but only %d of 10 records were copied (the rest skipped without an error)", copied, calls.Load())
	}
}

// errChanged does not keep its identity across askOwner: its 503 is
// retried there with the same (stale) version, and what comes back is a
// new APIError, so openElsewhere's "record changed: read it again" never
// runs.
func TestRemoteErrChangedKeepsIdentity(t *testing.T) {
	e := remoteErrorOf(errChanged)
	if got := e.errOf(); !errors.Is(got, errChanged) {
		t.Fatalf("errChanged across the hop is %v (%T), not errChanged: openElsewhere's retry is dead code", got, got)
	}
}

// InvalidArgument errors of the owner all come back as ErrInvalidVersionID
// (its message, not the owner's).
func TestRemoteInvalidArgumentStaysItself(t *testing.T) {
	e := &remoteError{Code: "InvalidArgument", Status: 400, Message: "some other argument"}
	if got := e.errOf(); errors.Is(got, objstore.ErrInvalidVersionID) {
		t.Fatalf("an owner's InvalidArgument %q comes back as %v", e.Message, got)
	}
}
