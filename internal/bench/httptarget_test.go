package bench

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestEscapeKey(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"live/cam0001/seg00000001.ts", "live/cam0001/seg00000001.ts"},
		{"a b+c", "a%20b%2Bc"},
		{"x:y~z_-.", "x%3Ay~z_-."},
		{"ü", "%C3%BC"},
	} {
		if got := escapeKey(c.in); got != c.want {
			t.Errorf("escapeKey(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// TestHTTPErrorType: a refused request of the plain client is reported by
// its S3 code, else by its status, as the SDK's errors are.
func TestHTTPErrorType(t *testing.T) {
	for _, c := range []struct {
		err  *httpError
		want string
	}{
		{&httpError{status: 404, code: "NoSuchKey"}, "NoSuchKey"},
		{&httpError{status: 503, code: "SlowDown"}, "SlowDown"},
		{&httpError{status: 502}, "http_502"},
	} {
		if got := ClassifyError(c.err); got != c.want {
			t.Errorf("%v: %q, want %q", c.err, got, c.want)
		}
	}
}

// BenchmarkSegmentUpload is the load generator's cost of one 1 MB segment
// upload per client, against a loopback server that reads and discards
// the body (its cost is in every case alike). `-benchtime 500x` and
// user+sys time, or ns/op, compare the clients.
func BenchmarkSegmentUpload(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = copyPooled(io.Discard, r.Body)
	}))
	defer srv.Close()
	const size = 1_000_000
	pool := NewPool(1)
	o := S3Options{Endpoint: srv.URL, Bucket: "b", AccessKey: "k", SecretKey: "s", PathStyle: true, MaxConns: 4}
	ctx := context.Background()
	st, err := NewS3Target(ctx, o)
	if err != nil {
		b.Fatal(err)
	}
	plain := func(sendfile, chunked bool) HLSTarget {
		t, err := NewHTTPTarget(st, o, 4, chunked)
		if err != nil {
			b.Fatal(err)
		}
		if sendfile {
			if err := t.SendFromFile(pool, size); err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { t.Close() })
		}
		return t
	}
	for _, c := range []struct {
		name   string
		target HLSTarget
	}{
		{"sdk", st},
		{"http", plain(false, false)},
		{"http-chunked", plain(false, true)},
		{"http-sendfile", plain(true, false)},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(size)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				i++
				key := "cam/seg" + string(rune('a'+i%26))
				if err := c.target.Put(ctx, key, pool.Payload(key, size)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
