package cluster

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/textproto"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// body returns n bytes of random data.
func streamBody(n int) []byte {
	b := make([]byte, n)
	r := rand.NewChaCha8([32]byte{1})
	_, _ = r.Read(b)
	return b
}

// writeIn writes data to w in pieces of size piece.
func writeIn(t *testing.T, w io.Writer, data []byte, piece int) {
	t.Helper()
	for len(data) > 0 {
		n := min(piece, len(data))
		if _, err := w.Write(data[:n]); err != nil {
			t.Fatal(err)
		}
		data = data[n:]
	}
}

// TestStreamChunks: a streamed body reaches a follower's connection in
// blocks of blockSize, one HTTP chunk each, whatever the pieces the local
// stage reads (an io.Pipe body went in 32 KiB chunks: three syscalls on
// each side per 32 KiB).
func TestStreamChunks(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	type result struct {
		chunks []int
		body   []byte
		err    error
	}
	got := make(chan result, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- result{err: err}
			return
		}
		defer c.Close()
		got <- readChunked(c)
	}()

	data := streamBody(3*blockSize + blockSize/2)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	fd := newFeed(cancel)
	fan := &fanout{feeds: []*feed{fd}}
	sent := make(chan error, 1)
	go func() {
		req, err := http.NewRequestWithContext(ctx, http.MethodPut, "http://"+ln.Addr().String()+"/_b3/v1/stage", fd)
		if err == nil {
			req.ContentLength = -1
			var resp *http.Response
			if resp, err = (&http.Client{}).Do(req); err == nil {
				resp.Body.Close()
			}
		}
		close(fd.gone)
		sent <- err
	}()
	writeIn(t, fan, data, 48<<10)
	fan.end(nil)
	r := <-got
	if err := <-sent; err != nil || r.err != nil {
		t.Fatalf("request: %v; follower: %v", err, r.err)
	}
	if !bytes.Equal(r.body, data) {
		t.Fatalf("the follower got %d bytes, not the %d sent", len(r.body), len(data))
	}
	want := []int{blockSize, blockSize, blockSize, blockSize / 2}
	if len(r.chunks) != len(want) {
		t.Fatalf("chunks %v, want %v", r.chunks, want)
	}
	for i := range want {
		if r.chunks[i] != want[i] {
			t.Fatalf("chunks %v, want %v", r.chunks, want)
		}
	}
}

// readChunked reads one HTTP request with a chunked body from c, records
// the chunk sizes and answers 200.
func readChunked(c net.Conn) (r struct {
	chunks []int
	body   []byte
	err    error
}) {
	br := bufio.NewReaderSize(c, 64<<10)
	tp := textproto.NewReader(br)
	if _, r.err = tp.ReadLine(); r.err != nil {
		return r
	}
	var hdr textproto.MIMEHeader
	if hdr, r.err = tp.ReadMIMEHeader(); r.err != nil {
		return r
	}
	if te := hdr.Get("Transfer-Encoding"); te != "chunked" {
		r.err = errors.New("transfer encoding " + te)
		return r
	}
	for {
		line, err := tp.ReadLine()
		if err != nil {
			r.err = err
			return r
		}
		size, err := strconv.ParseInt(strings.TrimSpace(line), 16, 64)
		if err != nil {
			r.err = err
			return r
		}
		if size == 0 {
			_, r.err = tp.ReadLine()
			break
		}
		r.chunks = append(r.chunks, int(size))
		chunk := make([]byte, size+2)
		if _, r.err = io.ReadFull(br, chunk); r.err != nil {
			return r
		}
		r.body = append(r.body, chunk[:size]...)
	}
	_, r.err = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
	return r
}

// TestFanoutFollowerBehind: a follower that reads nothing for a while
// holds the others back only once feedDepth blocks wait for it; it then
// gets the whole body. A follower that takes nothing for stallTimeout,
// or whose push ended, is dropped and its body ends with an error, while
// the others get theirs whole.
func TestFanoutFollowerBehind(t *testing.T) {
	defer func(d time.Duration) { stallTimeout = d }(stallTimeout)
	stallTimeout = time.Hour // nothing stalls in the first part

	type sink struct {
		fd   *feed
		got  bytes.Buffer
		err  error
		done chan struct{}
	}
	newSink := func() *sink {
		return &sink{fd: newFeed(func() {}), done: make(chan struct{})}
	}
	drain := func(s *sink) {
		defer close(s.done)
		_, s.err = s.fd.WriteTo(&s.got)
		close(s.fd.gone)
	}

	// Behind by feedDepth blocks: the fanout does not wait for it.
	late, live := newSink(), newSink()
	fan := &fanout{feeds: []*feed{late.fd, live.fd}}
	go drain(live)
	data := streamBody(feedDepth * blockSize)
	writeIn(t, fan, data, 100<<10)
	if fan.feeds[0] == nil {
		t.Fatal("a follower within feedDepth blocks was dropped")
	}
	// Reads through Read and then WriteTo still see every byte once.
	head := make([]byte, 1000)
	if _, err := io.ReadFull(late.fd, head); err != nil {
		t.Fatal(err)
	}
	late.got.Write(head)
	go drain(late)
	rest := streamBody(blockSize + 123)
	writeIn(t, fan, rest, 1<<20)
	fan.end(nil)
	<-late.done
	<-live.done
	want := append(append([]byte(nil), data...), rest...)
	for name, s := range map[string]*sink{"late": late, "live": live} {
		if s.err != nil || !bytes.Equal(s.got.Bytes(), want) {
			t.Fatalf("%s follower: %d bytes of %d, err %v", name, s.got.Len(), len(want), s.err)
		}
	}

	// Stalled: dropped after stallTimeout; its request is cancelled.
	stallTimeout = 50 * time.Millisecond
	stuck, live := newSink(), newSink()
	var cancelled sync.WaitGroup
	cancelled.Add(1)
	stuck.fd.cancel = cancelled.Done
	fan = &fanout{feeds: []*feed{stuck.fd, live.fd}}
	go drain(live)
	data = streamBody((feedDepth + 2) * blockSize)
	writeIn(t, fan, data, blockSize)
	cancelled.Wait()
	go drain(stuck)
	fan.end(nil)
	<-live.done
	<-stuck.done
	if !errors.Is(stuck.err, errStalled) {
		t.Fatalf("stalled follower's body ended with %v, want errStalled", stuck.err)
	}
	if live.err != nil || !bytes.Equal(live.got.Bytes(), data) {
		t.Fatalf("live follower: %d bytes of %d, err %v", live.got.Len(), len(data), live.err)
	}

	// A push that ended is dropped without waiting for the stall.
	stallTimeout = time.Hour
	ended, live := newSink(), newSink()
	close(ended.fd.gone)
	fan = &fanout{feeds: []*feed{ended.fd, live.fd}}
	go drain(live)
	writeIn(t, fan, data, blockSize)
	if fan.feeds[0] != nil {
		t.Fatal("a follower whose push ended is still fed")
	}
	fan.end(errors.New("bad digest"))
	<-live.done
	if live.err == nil || live.err.Error() != "bad digest" {
		t.Fatalf("a body ended with an error reached the follower as %v", live.err)
	}
}
