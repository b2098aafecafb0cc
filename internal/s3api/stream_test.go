package s3api

import (
	"bufio"
	"bytes"
	"context"
	"crypto/md5"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/b3-storage/b3/internal/blob"
	"github.com/b3-storage/b3/internal/objstore"
)

// chunkedOnly hides a body's length from net/http, which then sends it
// with Transfer-Encoding: chunked and no Content-Length, as live encoders
// (ffmpeg -method PUT, GStreamer, nginx-rtmp) do.
type chunkedOnly struct{ io.Reader }

// putChunked sends a PUT with a chunked body; signed requests are signed
// with UNSIGNED-PAYLOAD (or payloadHash) and no Content-Length.
func (e *testEnv) putChunked(user *User, path string, body io.Reader, payloadHash string) (*http.Response, string) {
	e.t.Helper()
	var req *http.Request
	if user != nil {
		if payloadHash == "" {
			payloadHash = "UNSIGNED-PAYLOAD"
		}
		req = e.signedRequest(*user, http.MethodPut, path, nil, payloadHash, nil)
	} else {
		var err error
		if req, err = http.NewRequest(http.MethodPut, e.ts.URL+path, nil); err != nil {
			e.t.Fatal(err)
		}
	}
	req.ContentLength = -1
	req.Body = io.NopCloser(chunkedOnly{body})
	return e.do(req)
}

// TestChunkedUpload: PutObject and UploadPart with Transfer-Encoding:
// chunked and no Content-Length store the body whatever its size — around
// the inline limit (1 KiB here) and the record size (1 MiB) —, signed or
// anonymous, and read back byte for byte with the body's MD5 as ETag.
func TestChunkedUpload(t *testing.T) {
	const inline, record = 1 << 10, 1 << 20
	e := newEnv(t)
	e.mustCreateBucket("bkt")
	e.mustCreatePublicBucket("open", types.BucketCannedACLPublicReadWrite)
	ctx := context.Background()
	sizes := []int{0, 1, inline - 1, inline, inline + 1, record - 1, record, record + 1, 2*record + 3}
	for i, size := range sizes {
		body := randomBytes(size, uint64(i))
		sum := md5.Sum(body)
		for _, c := range []struct {
			bucket string
			user   *User
		}{{"bkt", &rootUser}, {"open", nil}} {
			key := fmt.Sprintf("obj-%d", size)
			resp, out := e.putChunked(c.user, "/"+c.bucket+"/"+key, bytes.NewReader(body), "")
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("chunked PUT of %d bytes to %s: %d %s", size, c.bucket, resp.StatusCode, out)
			}
			if got, want := resp.Header.Get("ETag"), `"`+hex.EncodeToString(sum[:])+`"`; got != want {
				t.Fatalf("chunked PUT of %d bytes: ETag %s, want %s", size, got, want)
			}
			if got := e.mustGet(c.bucket, key); !bytes.Equal(got, body) {
				t.Fatalf("chunked PUT of %d bytes to %s read back %d bytes, not the same", size, c.bucket, len(got))
			}
		}
		up, err := e.root().CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String("bkt"), Key: aws.String("mp")})
		if err != nil {
			t.Fatal(err)
		}
		path := "/bkt/mp?partNumber=1&uploadId=" + url.QueryEscape(aws.ToString(up.UploadId))
		if resp, out := e.putChunked(&rootUser, path, bytes.NewReader(body), ""); resp.StatusCode != http.StatusOK {
			t.Fatalf("chunked UploadPart of %d bytes: %d %s", size, resp.StatusCode, out)
		}
		if _, err := e.root().CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: aws.String("bkt"), Key: aws.String("mp"), UploadId: up.UploadId,
			MultipartUpload: &types.CompletedMultipartUpload{Parts: []types.CompletedPart{{PartNumber: aws.Int32(1), ETag: aws.String(hex.EncodeToString(sum[:]))}}}}); err != nil {
			t.Fatalf("complete a chunked part of %d bytes: %v", size, err)
		}
		if got := e.mustGet("bkt", "mp"); !bytes.Equal(got, body) {
			t.Fatalf("chunked part of %d bytes read back %d bytes, not the same", size, len(got))
		}
	}
}

// TestChunkedUploadKeepsChecks: a chunked body still passes every check a
// body of known length does. A signed payload hash that does not match,
// a wrong Content-MD5, an unsigned request to a private bucket, or a
// body past the maximum object size are refused and store nothing; an
// aws-chunked body without x-amz-decoded-content-length is still 411.
func TestChunkedUploadKeepsChecks(t *testing.T) {
	const maxObject = 3<<20 + 5
	e := newEnv(t, func(c *Config) { c.MaxObjectSize = maxObject })
	e.mustCreateBucket("bkt")
	body := randomBytes(2<<20, 7)
	wrong := md5.Sum([]byte("other"))
	full := sha256.Sum256(body)
	sum := hex.EncodeToString(full[:])
	cases := []struct {
		name      string
		send      func() (*http.Response, string)
		status    int
		code      string
		maxStored int64 // segment bytes the refused upload may append
	}{
		{"sha256 mismatch", func() (*http.Response, string) {
			return e.putChunked(&rootUser, "/bkt/k", bytes.NewReader(body[1:]), sum)
		}, 400, "XAmzContentSHA256Mismatch", 3 << 20},
		{"anonymous to a private bucket", func() (*http.Response, string) {
			return e.putChunked(nil, "/bkt/k", bytes.NewReader(body), "")
		}, 403, "AccessDenied", 0},
		{"past the maximum object size", func() (*http.Response, string) {
			return e.putChunked(&rootUser, "/bkt/k", zeros(4*maxObject), "")
		}, 400, "EntityTooLarge", maxObject + 64<<10},
		{"wrong Content-MD5", func() (*http.Response, string) {
			req := e.signedRequest(rootUser, http.MethodPut, "/bkt/k", nil, "UNSIGNED-PAYLOAD",
				http.Header{"Content-Md5": {base64.StdEncoding.EncodeToString(wrong[:])}})
			req.ContentLength, req.Body = -1, io.NopCloser(chunkedOnly{bytes.NewReader(body)})
			return e.do(req)
		}, 400, "BadDigest", 3 << 20},
		{"aws-chunked without a decoded length", func() (*http.Response, string) {
			req := e.signedRequest(rootUser, http.MethodPut, "/bkt/k", nil, "STREAMING-UNSIGNED-PAYLOAD-TRAILER",
				http.Header{"Content-Encoding": {"aws-chunked"}, "X-Amz-Trailer": {"x-amz-checksum-crc32"}})
			req.ContentLength, req.Body = -1, io.NopCloser(chunkedOnly{strings.NewReader("4\r\ndata\r\n0\r\n\r\n")})
			return e.do(req)
		}, 411, "MissingContentLength", 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := e.store.Blob().Stats().BytesAppended
			resp, out := c.send()
			wantXMLError(t, resp, out, c.status, c.code)
			e.assertAbsent("bkt", "k")
			if n := e.store.Blob().Stats().BytesAppended - before; n > c.maxStored {
				t.Fatalf("refused upload appended %d bytes, want at most %d", n, c.maxStored)
			}
		})
	}
}

// TestChunkedUploadTruncated: a client that hangs up in the middle of a
// chunked body (inside a chunk, or between chunks, before the last) leaves
// no object and no part behind, and every byte it appended counts dead.
func TestChunkedUploadTruncated(t *testing.T) {
	e := newEnv(t)
	e.mustCreatePublicBucket("open", types.BucketCannedACLPublicReadWrite)
	up, err := e.root().CreateMultipartUpload(context.Background(), &s3.CreateMultipartUploadInput{Bucket: aws.String("open"), Key: aws.String("mp")})
	if err != nil {
		t.Fatal(err)
	}
	chunk := bytes.Repeat([]byte("v"), 256<<10)
	for _, c := range []struct {
		name   string
		chunks int  // whole chunks sent
		torn   bool // then half of one more
	}{{"in the first chunk", 0, true}, {"inside a chunk", 5, true}, {"between chunks", 6, false}, {"past the inline limit", 0, false}} {
		for target, path := range map[string]string{"object": "/open/cut", "part": "/open/mp?partNumber=1&uploadId=" + url.QueryEscape(aws.ToString(up.UploadId))} {
			t.Run(target+" "+c.name, func(t *testing.T) {
				before := e.store.Blob().Stats().BytesAppended
				conn, err := net.Dial("tcp", e.ts.Listener.Addr().String())
				if err != nil {
					t.Fatal(err)
				}
				w := bufio.NewWriter(conn)
				fmt.Fprintf(w, "PUT %s HTTP/1.1\r\nHost: %s\r\nTransfer-Encoding: chunked\r\nContent-Type: video/mp2t\r\n\r\n", path, e.ts.Listener.Addr())
				if c.chunks == 0 && !c.torn {
					fmt.Fprintf(w, "800\r\n%s\r\n", bytes.Repeat([]byte("s"), 0x800))
				}
				for range c.chunks {
					fmt.Fprintf(w, "%x\r\n%s\r\n", len(chunk), chunk)
				}
				if c.torn {
					fmt.Fprintf(w, "%x\r\n%s", len(chunk), chunk[:len(chunk)/2])
				}
				if err := w.Flush(); err != nil {
					t.Fatal(err)
				}
				conn.(*net.TCPConn).CloseWrite()
				// The server answers the cut body with IncompleteBody once
				// the store has discarded what it appended.
				resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
				if err != nil {
					t.Fatalf("no answer to a cut chunked body: %v", err)
				}
				out, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				conn.Close()
				wantXMLError(t, resp, string(out), 400, "IncompleteBody")
				if appended := e.store.Blob().Stats().BytesAppended - before; c.chunks >= 5 && appended == 0 {
					t.Fatalf("%d bytes of a cut chunked body reached no segment: the test did not stream", c.chunks*len(chunk))
				}
				e.assertAbsent("open", "cut")
				parts, err := e.root().ListParts(context.Background(), &s3.ListPartsInput{Bucket: aws.String("open"), Key: aws.String("mp"), UploadId: up.UploadId})
				if err != nil || len(parts.Parts) != 0 {
					t.Fatalf("parts after a cut upload: %v, %v", parts, err)
				}
				assertAllDead(t, e.store)
			})
		}
	}
}

// assertAllDead checks that every byte in the segments counts dead: no
// refused upload's record is live.
func assertAllDead(t *testing.T, store *objstore.Store) {
	t.Helper()
	for _, seg := range store.Segments() {
		if seg.DeadBytes != seg.Size {
			t.Fatalf("segment %d: %d bytes, %d dead: a refused upload left live bytes", seg.ID, seg.Size, seg.DeadBytes)
		}
	}
}

// TestChunkedUploadFreeSpaceReserve: an endless chunked body is stopped by
// the free-space reserve with 507 InsufficientStorage once its bytes
// would cut into it, before they are written, and nothing of it stays.
func TestChunkedUploadFreeSpaceReserve(t *testing.T) {
	const room = 16 << 20
	e := newRoomEnv(t, room)
	before := e.store.Blob().Stats().BytesAppended
	resp, body := e.putChunked(nil, "/open/endless", io.LimitReader(zeroReader{}, 1<<40), "")
	wantXMLError(t, resp, body, http.StatusInsufficientStorage, "InsufficientStorage")
	e.assertAbsent("open", "endless")
	if n := e.store.Blob().Stats().BytesAppended - before; n > room+64<<10 { // record headers
		t.Fatalf("a chunked PUT refused for space wrote %d bytes, room was %d", n, room)
	}
	assertAllDead(t, e.store)
	// Within the room, a chunked PUT is stored, and its reservation ends
	// with it: the next one fits again.
	for i := range 3 {
		if resp, body := e.putChunked(nil, fmt.Sprintf("/open/fits-%d", i), zeros(room/4), ""); resp.StatusCode != http.StatusOK {
			t.Fatalf("chunked PUT %d within the room: %d %s", i, resp.StatusCode, body)
		}
	}
}

// TestChunkedUploadClientClosesAfterBody: a client that sends its whole
// chunked body and closes the connection without reading the answer (as
// ffmpeg's HLS muxer does with every segment) has its object stored, above
// the inline limit too, where the store waits for the records' fsync (group
// commit, as the server runs) before it commits.
func TestChunkedUploadClientClosesAfterBody(t *testing.T) {
	e := newEnvStore(t, func(o *objstore.Options) { o.Sync = blob.SyncBatch })
	e.mustCreateStreamBucket("open")
	for _, size := range []int{100, 20 << 10, 3<<20 + 7} {
		body := randomBytes(size, uint64(size))
		key := fmt.Sprintf("seg%d.ts", size)
		conn, err := net.Dial("tcp", e.ts.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		w := bufio.NewWriter(conn)
		fmt.Fprintf(w, "PUT /open/%s HTTP/1.1\r\nHost: %s\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n", key, e.ts.Listener.Addr())
		for rest := body; len(rest) > 0; {
			n := min(len(rest), 32<<10)
			fmt.Fprintf(w, "%x\r\n%s\r\n", n, rest[:n])
			rest = rest[n:]
		}
		fmt.Fprint(w, "0\r\n\r\n")
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		conn.Close()
		// The server finishes the upload after the client is gone: wait
		// for it (bounded), then compare.
		var got *http.Response
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if got, err = http.Get(e.ts.URL + "/open/" + key); err == nil && got.StatusCode == http.StatusOK {
				break
			}
			if err == nil {
				got.Body.Close()
			}
		}
		if got == nil || got.StatusCode != http.StatusOK {
			t.Fatalf("%d-byte body sent whole, connection closed: never stored", size)
		}
		data, err := io.ReadAll(got.Body)
		got.Body.Close()
		if err != nil || !bytes.Equal(data, body) {
			t.Fatalf("%d-byte body sent whole: read back %d bytes (%v), not the same", size, len(data), err)
		}
	}
}

// TestChunkedUploadObserved: the bytes of a body of unknown length reach
// the request metrics (RequestInfo.BytesIn) as read, not as -1.
func TestChunkedUploadObserved(t *testing.T) {
	var mu sync.Mutex
	var seen []RequestInfo
	e := newEnv(t, func(c *Config) {
		c.Observe = func(info RequestInfo) {
			mu.Lock()
			seen = append(seen, info)
			mu.Unlock()
		}
	})
	e.mustCreateBucket("bkt")
	const size = 3<<20 + 11
	if resp, body := e.putChunked(&rootUser, "/bkt/obj", zeros(size), ""); resp.StatusCode != http.StatusOK {
		t.Fatalf("chunked PUT: %d %s", resp.StatusCode, body)
	}
	mu.Lock()
	defer mu.Unlock()
	last := seen[len(seen)-1]
	if last.Operation != "PutObject" || last.BytesIn != size {
		t.Fatalf("observed %s with %d bytes in, want PutObject with %d", last.Operation, last.BytesIn, size)
	}
}
