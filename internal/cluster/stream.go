package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/b3-storage/b3/internal/objstore"
)

// In sync mode the leader does not write a body and then send it: it
// streams the body to the followers while it writes its own copy (one
// pass, the three disks working at once). The body travels in blocks of
// blockSize, each written to a follower's connection in one piece, and
// up to feedDepth blocks wait for a follower that is behind: the three
// copies are written side by side, each at its own pace, not in lockstep
// with whichever node is slowest at each instant. A follower that takes
// no block for stallTimeout is dropped from the stream and fetches the
// bytes later; the write goes on as long as a majority holds them.

// stallTimeout is how long a block may wait for a follower's queue
// before the follower is dropped from the stream.
var stallTimeout = 5 * time.Second // a variable for tests

const (
	// blockSize is the unit of a streamed body: one write to a follower's
	// connection (one HTTP chunk).
	blockSize = 1 << 20
	// feedDepth is how many blocks may wait for one follower.
	feedDepth = 4
)

var errStalled = errors.New("cluster: follower stalled; dropped from the stream")

// block is a piece of a body on its way to the followers, shared by their
// feeds: refs counts the holders, and the last returns it to blockPool.
type block struct {
	buf  []byte
	n    int
	refs atomic.Int32
}

var blockPool = sync.Pool{New: func() any { return &block{buf: make([]byte, blockSize)} }}

func (b *block) release() {
	if b.refs.Add(-1) == 0 {
		b.n = 0
		blockPool.Put(b)
	}
}

// feed is one follower's share of a stream: the body of its stage request.
// The fanout sends blocks and closes blocks at the end of the body, end
// set first (nil: the whole body; else why it stops short); the push's
// goroutine closes gone once the request is over.
type feed struct {
	blocks chan *block
	end    error
	gone   chan struct{}
	cancel context.CancelFunc // ends the follower's request

	cur *block // Read's block, and how much of it was read
	off int
}

func newFeed(cancel context.CancelFunc) *feed {
	return &feed{blocks: make(chan *block, feedDepth), gone: make(chan struct{}), cancel: cancel}
}

// WriteTo writes each block in one call as it arrives. The HTTP transport
// copies a request body through WriteTo when it has one (else through a
// 32 KiB buffer, a chunk each).
func (f *feed) WriteTo(w io.Writer) (int64, error) {
	var total int64
	if f.cur != nil { // after a Read
		n, err := w.Write(f.cur.buf[f.off:f.cur.n])
		total += int64(n)
		f.cur.release()
		f.cur = nil
		if err != nil {
			return total, err
		}
	}
	for b := range f.blocks {
		n, err := w.Write(b.buf[:b.n])
		b.release()
		total += int64(n)
		if err != nil {
			return total, err
		}
	}
	return total, f.end
}

func (f *feed) Read(p []byte) (int, error) {
	for f.cur == nil {
		b, ok := <-f.blocks
		if !ok {
			return 0, errOr(f.end, io.EOF)
		}
		f.cur, f.off = b, 0
	}
	n := copy(p, f.cur.buf[f.off:f.cur.n])
	if f.off += n; f.off == f.cur.n {
		f.cur.release()
		f.cur = nil
	}
	return n, nil
}

// fanout copies what the local stage reads into blocks for every
// follower's feed, dropping a follower whose push ended or stalled. Its
// Write never fails: the local copy must not depend on a follower. One
// goroutine (the local stage's) calls Write and end.
type fanout struct {
	feeds []*feed // nil once dropped or ended
	cur   *block
}

func (f *fanout) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		if f.cur == nil {
			f.cur = blockPool.Get().(*block)
		}
		c := copy(f.cur.buf[f.cur.n:], p)
		f.cur.n += c
		p = p[c:]
		if f.cur.n == len(f.cur.buf) {
			f.send()
		}
	}
	return n, nil
}

// send hands the current block to every live feed. A feed whose queue is
// full gets until stallTimeout from the first wait for this block (the
// followers drain their queues meanwhile, so each had that long); a feed
// whose push ended is dropped.
func (f *fanout) send() {
	b := f.cur
	f.cur = nil
	if b == nil {
		return
	}
	b.refs.Store(1) // send's own, until every feed has the block
	var timer *time.Timer
	expired := false
	for i, fd := range f.feeds {
		if fd == nil {
			continue
		}
		b.refs.Add(1)
		select {
		case fd.blocks <- b:
			continue
		default:
		}
		if !expired {
			if timer == nil {
				timer = time.NewTimer(stallTimeout)
				defer timer.Stop()
			}
			select {
			case fd.blocks <- b:
				continue
			case <-fd.gone:
			case <-timer.C:
				expired = true
			}
		}
		b.release()
		f.drop(i, errStalled)
	}
	b.release()
}

// drop ends feed i: its body stops short with err and its request ends.
func (f *fanout) drop(i int, err error) {
	fd := f.feeds[i]
	f.feeds[i] = nil
	fd.end = err
	close(fd.blocks)
	fd.cancel()
}

// end sends what is left: with nil the followers get the rest and the end
// of the body; with an error their bodies stop short, and they discard
// what they got.
func (f *fanout) end(err error) {
	if err == nil {
		f.send()
	} else if f.cur != nil {
		f.cur.n = 0
		blockPool.Put(f.cur)
		f.cur = nil
	}
	for i, fd := range f.feeds {
		if fd != nil {
			f.feeds[i] = nil
			fd.end = err
			close(fd.blocks)
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
		// Bound by the node, not the request: the follower's copy may
		// still finish after the client is answered.
		pctx, cancel := context.WithCancel(n.closing)
		cancels = append(cancels, cancel)
		fd := newFeed(cancel)
		fan.feeds = append(fan.feeds, fd)
		go func() {
			defer n.pushes.done()
			err := n.sendStage(pctx, peer, ref, fd, -1)
			close(fd.gone) // the fan feeds it no more
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
