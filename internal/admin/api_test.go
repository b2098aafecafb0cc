package admin

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/b3-storage/b3/internal/iolimit"
	"github.com/b3-storage/b3/internal/meta"
	"github.com/b3-storage/b3/internal/objstore"
	"github.com/b3-storage/b3/internal/s3api"
	"github.com/b3-storage/b3/internal/vfs"
)

func newTestServer(t *testing.T) (*Server, *httptest.Server, *RequestMetrics) {
	t.Helper()
	mem := vfs.NewCrashableMem()
	store, err := objstore.Open(objstore.Options{MetaDir: "/meta", DataDir: "/data", FS: vfs.Pebble(mem), MetaFS: mem})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	limiter := iolimit.New(iolimit.Limits{})
	reg := NewRegistry()
	reqs := NewRequestMetrics(reg)
	reg.MustRegister(&StoreCollector{Store: store, Limiter: limiter})
	srv, err := New(Config{Store: store, Limiter: limiter, Token: "secret", Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	return srv, hs, reqs
}

func status(t *testing.T, method, url, token string) int {
	t.Helper()
	req, _ := http.NewRequest(method, url, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func TestAuthAndHealth(t *testing.T) {
	srv, hs, _ := newTestServer(t)
	cases := []struct {
		method, path, token string
		want                int
	}{
		{"GET", "/health/live", "", 200},
		{"GET", "/health/ready", "", 200},
		{"GET", "/metrics", "", 200},
		{"GET", "/console", "", 404}, // the console has its own listener
		{"GET", "/admin/v1/stats", "", 401},
		{"GET", "/admin/v1/stats", "wrong", 401},
		{"GET", "/admin/v1/stats", "secret", 200},
		{"GET", "/debug/pprof/", "", 401},
		{"GET", "/debug/pprof/", "secret", 200},
		{"GET", "/admin/v1/users", "secret", 501}, // no user store configured
		{"POST", "/admin/v1/vacuum/auto", "secret", 400},
	}
	for _, c := range cases {
		if got := status(t, c.method, hs.URL+c.path, c.token); got != c.want {
			t.Errorf("%s %s (token %q): %d, want %d", c.method, c.path, c.token, got, c.want)
		}
	}
	srv.SetClosing()
	if got := status(t, "GET", hs.URL+"/health/ready", ""); got != http.StatusServiceUnavailable {
		t.Fatalf("ready while closing: %d", got)
	}
	if _, err := New(Config{}); err == nil {
		t.Fatal("empty token accepted")
	}
}

func TestMetricsParse(t *testing.T) {
	_, hs, reqs := newTestServer(t)
	reqs.Observe(s3api.RequestInfo{Operation: "PutObject", Status: 200, BytesIn: 100})
	reqs.Observe(s3api.RequestInfo{Operation: "PutObject", Status: 200, BytesIn: 50})
	resp, err := http.Get(hs.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if got := families["b3_s3_received_bytes_total"].GetMetric()[0].GetCounter().GetValue(); got != 150 {
		t.Fatalf("bytes in: %v", got)
	}
	if got := families["b3_s3_requests_total"].GetMetric()[0].GetCounter().GetValue(); got != 2 {
		t.Fatalf("requests: %v", got)
	}
	for _, name := range []string{"b3_disk_io_bytes_total", "b3_group_commit_batch_size", "b3_cache_hits_total", "b3_lifecycle_expired_objects_total", "b3_vacuum_reclaimed_bytes_total"} {
		if families[name] == nil {
			t.Errorf("%s missing", name)
		}
	}
	c := &Client{Endpoint: hs.URL, Token: "secret"}
	if _, err := c.SetLimits(context.Background(), iolimit.Limits{WriteBytesPerSec: 1 << 20}); err != nil {
		t.Fatal(err)
	}
}

// TestDeleteVersionedBucket: `buckets delete --force` empties a bucket
// that has had versioning (every version and delete marker, not only the
// current objects), and refuses one holding a version under retention.
func TestDeleteVersionedBucket(t *testing.T) {
	srv, hs, _ := newTestServer(t)
	store := srv.cfg.Store
	ctx := context.Background()
	put := func(bucket, key string, o *meta.Object) {
		t.Helper()
		if o == nil {
			o = &meta.Object{}
		}
		if _, err := store.PutObject(ctx, objstore.PutInput{Bucket: bucket, Key: key, Body: strings.NewReader("v"), Object: o}); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"versioned", "locked"} {
		if _, err := store.CreateBucket(&meta.Bucket{Name: name, Owner: "AKID"}); err != nil {
			t.Fatal(err)
		}
		if err := store.SetBucketVersioning(name, meta.VersioningEnabled); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 3 {
		put("versioned", fmt.Sprint("k", i%2), nil) // two keys, three versions
	}
	if _, err := store.DeleteObject("versioned", "k0"); err != nil { // a delete marker
		t.Fatal(err)
	}
	put("locked", "evidence", &meta.Object{LockMode: meta.LockCompliance, RetainUntil: time.Now().Add(time.Hour)})

	c := &Client{Endpoint: hs.URL, Token: "secret", HTTP: http.DefaultClient}
	res, err := c.DeleteBucket(ctx, "versioned", true)
	if err != nil || res.ObjectsDeleted != 4 {
		t.Fatalf("force delete of a versioned bucket: %+v, %v; want its 3 versions and 1 marker deleted", res, err)
	}
	if _, err := store.GetBucket("versioned"); !errors.Is(err, objstore.ErrNoSuchBucket) {
		t.Fatalf("bucket still there: %v", err)
	}
	if _, err := c.DeleteBucket(ctx, "locked", true); err == nil || !strings.Contains(err.Error(), "locked") {
		t.Fatalf("force delete of a bucket with a locked version: %v, want a refusal naming the lock", err)
	}
	if _, err := store.GetBucket("locked"); err != nil {
		t.Fatalf("the locked bucket: %v, want it kept", err)
	}
}
