package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/b3-storage/b3/internal/objstore"
)

// In sync mode the leader does not write a body and then send it: it
// streams the body to the followers while it writes its own copy (one
// pass, the three disks working at once). A follower that cannot keep up
// is dropped from the stream (stallTimeout) and fetches the bytes later;
// the write goes on as long as a majority holds them.

// stallTimeout is how long one write to a follower's stream may block
// before the follower is dropped from it.
const stallTimeout = 5 * time.Second

var errStalled = errors.New("cluster: follower stalled; dropped from the stream")

// fanout copies what the local stage reads to every follower's pipe, in
// parallel, dropping a follower whose pipe fails or stalls. Its Write
// never fails: the local copy must not depend on a follower.
type fanout struct {
	mu    sync.Mutex
	pipes []*io.PipeWriter // nil once dropped
}

func (f *fanout) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	done := make([]chan struct{}, len(f.pipes))
	failed := make([]bool, len(f.pipes)) // slot i: written before done[i] closes
	for i, w := range f.pipes {
		if w == nil {
			continue
		}
		done[i] = make(chan struct{})
		go func() {
			defer close(done[i])
			if _, err := w.Write(p); err != nil {
				failed[i] = true
			}
		}()
	}
	timer := time.NewTimer(stallTimeout)
	defer timer.Stop()
	for i, ch := range done {
		if ch == nil {
			continue
		}
		select {
		case <-ch:
		case <-timer.C:
			// Closing the writer ends the blocked Write (io.Pipe).
			f.pipes[i].CloseWithError(errStalled)
			<-ch
			failed[i] = true
			timer.Reset(0) // the others had stallTimeout too
		}
	}
	for i := range failed {
		if failed[i] {
			f.pipes[i] = nil
		}
	}
	return len(p), nil
}

// end closes every live pipe: with nil the followers see the end of the
// body, with an error they discard what they got.
func (f *fanout) end(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, w := range f.pipes {
		if w != nil {
			w.CloseWithError(err)
		}
	}
}

// stream stages body here and on every follower in one pass (see above).
// finish runs once the local copy is synced; if it refuses the body, the
// followers drop theirs. It returns once need followers hold the bytes
// durable too.
func (n *Node) stream(ctx context.Context, ref bytesRef, body io.Reader, need int, finish func(size int64) error) (*objstore.Staged, error) {
	peers := n.followers()
	fan := &fanout{}
	results := make(chan error, len(peers))
	var cancels []context.CancelFunc
	for _, peer := range peers {
		if !n.pushes.add() {
			results <- errClosed
			continue
		}
		pr, pw := io.Pipe()
		fan.pipes = append(fan.pipes, pw)
		// Bound by the node, not the request: the follower's copy may
		// still finish after the client is answered.
		pctx, cancel := context.WithCancel(n.closing)
		cancels = append(cancels, cancel)
		go func() {
			defer n.pushes.done()
			err := n.sendStage(pctx, peer, ref, pr, -1)
			pr.CloseWithError(errOr(err, errStalled)) // unblocks the fan
			results <- err
		}()
	}
	st, err := n.store.Stage(ctx, ref.Bucket, ref.Key, ref.Version, io.TeeReader(body, fan))
	if err == nil {
		if err = finish(st.Size); err != nil {
			st.Discard()
		}
	}
	if err != nil {
		fan.end(fmt.Errorf("upload failed: %w", err))
		for _, c := range cancels {
			c()
		}
		return nil, err
	}
	fan.end(nil)
	// The followers sync what they got; bound the wait for the slowest.
	time.AfterFunc(pushTimeout(st.Size), func() {
		for _, c := range cancels {
			c()
		}
	})
	if err := n.awaitAcks(ctx, results, len(peers), need); err != nil {
		st.Discard()
		return nil, err
	}
	return st, nil
}

func errOr(err, alt error) error {
	if err != nil {
		return err
	}
	return alt
}

// sendStage sends one body to a follower's stage endpoint (size -1:
// unknown, chunked).
func (n *Node) sendStage(ctx context.Context, peer string, ref bytesRef, body io.Reader, size int64) error {
	u := "http://" + peer + "/_b3/v1/stage?" + refQuery(ref).Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, u, body)
	if err != nil {
		return err
	}
	req.ContentLength = size
	resp, err := n.peerClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("push to %s: %s", peer, resp.Status)
	}
	return nil
}

// awaitAcks waits until need of total results are successes, or until
// that can no longer happen.
func (n *Node) awaitAcks(ctx context.Context, results <-chan error, total, need int) error {
	if need <= 0 {
		return nil
	}
	var errs []error
	acks := 0
	for range total {
		select {
		case err := <-results:
			if err == nil {
				if acks++; acks >= need {
					return nil
				}
				continue
			}
			errs = append(errs, err)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return fmt.Errorf("%w: %d of %d replicas hold the bytes: %v", errNoQuorum, acks, need, errors.Join(errs...))
}
