package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/b3-storage/b3/internal/admin"
	"github.com/b3-storage/b3/internal/blob"
	"github.com/b3-storage/b3/internal/iolimit"
	"github.com/b3-storage/b3/internal/objstore"
)

// node is a server.Run in this process, with its admin listener.
type node struct {
	s3Endpoint, adminEndpoint string
	admin                     *admin.Client
	root                      string
	banner                    string // what Run printed before it was ready
	stop                      func()
}

func startNode(t *testing.T, cfg Config) *node {
	t.Helper()
	if cfg.Root == "" {
		cfg.Root = t.TempDir()
	}
	cfg.Address, cfg.AdminAddress = "127.0.0.1:0", "127.0.0.1:0"
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	ready, adminReady := make(chan string, 1), make(chan string, 1)
	cfg.Ready = func(a string) { ready <- a }
	cfg.AdminReady = func(a string) { adminReady <- a }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	var banner bytes.Buffer // written before Ready, read after
	go func() { done <- Run(ctx, cfg, &banner) }()
	n := &node{root: cfg.Root}
	select {
	case a := <-ready:
		n.banner = banner.String()
		n.s3Endpoint = "http://" + a
		n.adminEndpoint = "http://" + <-adminReady
	case err := <-done:
		t.Fatalf("run: %v", err)
	}
	token, err := LoadOrCreateAdminToken(cfg.Root)
	if err != nil {
		t.Fatal(err)
	}
	n.admin = &admin.Client{Endpoint: n.adminEndpoint, Token: token}
	var once sync.Once
	n.stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("run: %v", err)
			}
		})
	}
	t.Cleanup(n.stop)
	return n
}

func (n *node) client(t *testing.T, accessKey, secret string) *s3.Client {
	if accessKey == "" {
		u, _, err := LoadOrCreateCredentials(n.root)
		if err != nil {
			t.Fatal(err)
		}
		accessKey, secret = u.AccessKey, u.SecretKey
	}
	return s3.New(s3.Options{Region: "us-east-1", BaseEndpoint: aws.String(n.s3Endpoint), UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider(accessKey, secret, "")})
}

func scrape(t *testing.T, endpoint string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(endpoint + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parse /metrics: %v", err)
	}
	return families
}

// value returns the value of the sample of family name with the labels.
func sample(families map[string]*dto.MetricFamily, name string, labels map[string]string) float64 {
	f := families[name]
	if f == nil {
		return -1
	}
next:
	for _, m := range f.Metric {
		for _, l := range m.Label {
			if want, ok := labels[l.GetName()]; ok && want != l.GetValue() {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue()
		case m.Gauge != nil:
			return m.Gauge.GetValue()
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount())
		}
	}
	return -1
}

// TestAdminEndToEnd drives the admin API of a running server: health,
// auth, users (seen by the S3 API at once, persisted), limits, vacuum,
// cache, and /metrics moving with requests.
func TestAdminEndToEnd(t *testing.T) {
	n := startNode(t, Config{Sync: blob.SyncNone, CacheBytes: 1 << 20, CachePolicy: "lru"})
	ctx := context.Background()
	for _, path := range []string{"/health/live", "/health/ready"} {
		resp, err := http.Get(n.adminEndpoint + path)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("%s: %v %v", path, resp, err)
		}
		resp.Body.Close()
	}
	bad := &admin.Client{Endpoint: n.adminEndpoint, Token: "wrong"}
	if _, err := bad.Stats(ctx, false); err == nil || !strings.Contains(err.Error(), "401") {
		t.Fatalf("wrong token accepted: %v", err)
	}
	resp, err := http.Get(n.adminEndpoint + "/debug/pprof/")
	if err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("pprof without token: %v %v", resp, err)
	}
	resp.Body.Close()

	// Users: a new key works at once; removed, it is refused at once.
	u, err := n.admin.AddUser(ctx, "alice")
	if err != nil || u.Secret == "" || !u.Managed {
		t.Fatalf("add user: %+v %v", u, err)
	}
	alice := n.client(t, u.AccessKey, u.Secret)
	if _, err := alice.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("alice")}); err != nil {
		t.Fatalf("new user's request: %v", err)
	}
	users, err := n.admin.Users(ctx)
	if err != nil || len(users) != 2 {
		t.Fatalf("users: %+v %v", users, err)
	}
	if _, err := n.admin.RemoveUserWith(ctx, u.AccessKey, "", true); err != nil {
		t.Fatal(err)
	}
	if _, err := alice.ListBuckets(ctx, &s3.ListBucketsInput{}); err == nil {
		t.Fatal("removed user still accepted")
	}
	if err := n.admin.RemoveUser(ctx, users[0].AccessKey+"x"); err == nil {
		t.Fatal("removing an unknown key succeeded")
	}

	// Limits round-trip.
	want := iolimit.Limits{WriteBytesPerSec: 100 << 20, BackgroundWriteBytesPerSec: 10 << 20}
	if got, err := n.admin.SetLimits(ctx, want); err != nil || got != want {
		t.Fatalf("set limits: %+v %v", got, err)
	}
	if got, err := n.admin.Limits(ctx); err != nil || got != want {
		t.Fatalf("limits: %+v %v", got, err)
	}
	if _, err := n.admin.SetLimits(ctx, iolimit.Limits{ReadBytesPerSec: -1}); err == nil {
		t.Fatal("negative limit accepted")
	}

	// Requests move the counters; the cache serves the second GET.
	before := scrape(t, n.adminEndpoint)
	c := n.client(t, "", "")
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("mmm")}); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("mmm"), Key: aws.String(fmt.Sprint(i)), Body: strings.NewReader("hello")}); err != nil {
			t.Fatal(err)
		}
	}
	for range 2 {
		out, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("mmm"), Key: aws.String("0")})
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, out.Body)
		out.Body.Close()
	}
	after := scrape(t, n.adminEndpoint)
	put := map[string]string{"operation": "PutObject", "status": "200"}
	if b, a := max(sample(before, "b3_s3_requests_total", put), 0), sample(after, "b3_s3_requests_total", put); a-b != 3 {
		t.Fatalf("PutObject counter moved %v -> %v, want +3", b, a)
	}
	get := map[string]string{"operation": "GetObject"}
	if got := sample(after, "b3_s3_sent_bytes_total", get); got != 10 {
		t.Fatalf("bytes out of GetObject: %v", got)
	}
	if got := sample(after, "b3_s3_request_duration_seconds", get); got != 2 {
		t.Fatalf("latency samples of GetObject: %v", got)
	}
	if got := sample(after, "b3_disk_io_bytes_total", map[string]string{"direction": "write", "priority": "foreground"}); got <= 0 {
		t.Fatalf("foreground write bytes: %v", got)
	}
	if got := sample(after, "b3_cache_hits_total", nil); got != 1 {
		t.Fatalf("cache hits: %v", got)
	}
	for _, name := range []string{"b3_segment_fsync_duration_seconds", "b3_pebble_compactions_total", "b3_pebble_wal_fsync_duration_seconds", "b3_build_info", "b3_group_commit_batch_size", "b3_vacuum_running", "b3_lifecycle_passes_total", "b3_segment_bytes", "go_goroutines"} {
		if _, ok := after[name]; !ok {
			t.Errorf("metric %s missing", name)
		}
	}
	cs, err := n.admin.Cache(ctx)
	if err != nil || cs.Hits != 1 || cs.Policy != "lru" {
		t.Fatalf("cache stats: %+v %v", cs, err)
	}
	st, err := n.admin.Stats(ctx, true)
	if err != nil || st.Objects == nil || st.Objects.Objects != 3 || st.Objects.Bytes != 15 || len(st.Segments) == 0 {
		t.Fatalf("stats: %+v %v", st.Objects, err)
	}

	// Vacuum on demand, then stopped.
	if err := n.admin.VacuumStart(ctx, 0.01); err != nil {
		t.Fatal(err)
	}
	vs, err := n.admin.VacuumStop(ctx)
	if err != nil || vs.Running || vs.Auto {
		t.Fatalf("vacuum stop: %+v %v", vs, err)
	}
	if vs, err = n.admin.VacuumAuto(ctx, time.Hour); err != nil || !vs.Auto {
		t.Fatalf("vacuum auto: %+v %v", vs, err)
	}

	// Users persist over a restart.
	u2, err := n.admin.AddUser(ctx, "bob")
	if err != nil {
		t.Fatal(err)
	}
	n.stop()
	n = startNode(t, Config{Root: n.root, Sync: blob.SyncNone})
	if _, err := n.client(t, u2.AccessKey, u2.Secret).ListBuckets(ctx, &s3.ListBucketsInput{}); err != nil {
		t.Fatalf("persisted user after restart: %v", err)
	}
}

// TestLifecycleOverS3 puts a lifecycle configuration through the S3 API,
// with a one-second day: matching objects vanish and are swept, others
// stay, vacuum gives the space back.
func TestLifecycleOverS3(t *testing.T) {
	n := startNode(t, Config{Sync: blob.SyncNone, LifecycleDay: time.Second, LifecycleInterval: 200 * time.Millisecond,
		SegmentSize: 64 << 10, VacuumThreshold: 0.5})
	ctx := context.Background()
	c := n.client(t, "", "")
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("rec")}); err != nil {
		t.Fatal(err)
	}
	_, err := c.PutBucketLifecycleConfiguration(ctx, &s3.PutBucketLifecycleConfigurationInput{Bucket: aws.String("rec"),
		LifecycleConfiguration: &types.BucketLifecycleConfiguration{Rules: []types.LifecycleRule{{
			ID: aws.String("zero-days"), Status: types.ExpirationStatusEnabled,
			Filter:     &types.LifecycleRuleFilter{Prefix: aws.String("x/")},
			Expiration: &types.LifecycleExpiration{Days: aws.Int32(0)}}}}})
	if err == nil || !strings.Contains(err.Error(), "InvalidArgument") {
		t.Fatalf("Days=0 accepted: %v", err)
	}
	_, err = c.PutBucketLifecycleConfiguration(ctx, &s3.PutBucketLifecycleConfigurationInput{Bucket: aws.String("rec"),
		LifecycleConfiguration: &types.BucketLifecycleConfiguration{Rules: []types.LifecycleRule{{
			ID: aws.String("chunks"), Status: types.ExpirationStatusEnabled,
			Filter:     &types.LifecycleRuleFilter{Prefix: aws.String("hls/")},
			Expiration: &types.LifecycleExpiration{Days: aws.Int32(2)}}}}})
	if err != nil {
		t.Fatal(err)
	}
	chunk := bytes.Repeat([]byte("v"), 16<<10)
	for i := range 30 {
		for _, key := range []string{fmt.Sprintf("hls/%02d", i), fmt.Sprintf("keep/%02d", i)} {
			if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("rec"), Key: aws.String(key), Body: bytes.NewReader(chunk)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Wait (bounded) for the sweeper to delete all 30; visibility ends at
	// the expiry instant, deletion follows within a sweep interval.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		st, err := n.admin.Stats(ctx, false)
		if err != nil {
			t.Fatal(err)
		}
		if st.Lifecycle.Expired == 30 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("sweeper expired %d of 30", st.Lifecycle.Expired)
		}
	}
	list, err := c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String("rec")})
	if err != nil || len(list.Contents) != 30 || !strings.HasPrefix(*list.Contents[0].Key, "keep/") {
		t.Fatalf("listing after expiry: %d objects, %v", len(list.Contents), err)
	}
	if _, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("rec"), Key: aws.String("hls/00")}); err == nil {
		t.Fatal("expired object still there")
	}
	before, err := n.admin.VacuumStatus(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := n.admin.VacuumStart(ctx, 0); err != nil {
		t.Fatal(err)
	}
	vs := waitVacuum(t, n)
	if vs.BytesReclaimed == 0 || vs.TotalBytes >= before.TotalBytes || vs.LastError != "" {
		t.Fatalf("vacuum after expiry: before %+v after %+v", before, vs)
	}
	out, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("rec"), Key: aws.String("keep/29")})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(out.Body)
	out.Body.Close()
	if !bytes.Equal(got, chunk) {
		t.Fatal("kept object damaged by expiry + vacuum")
	}
}

func waitVacuum(t *testing.T, n *node) objstore.VacuumStatus {
	t.Helper()
	ctx := context.Background()
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		vs, err := n.admin.VacuumStatus(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !vs.Running && !vs.LastPass.IsZero() {
			return vs
		}
		if time.Now().After(deadline) {
			t.Fatal("vacuum pass did not end")
		}
	}
}

// TestVacuumWithinBackgroundRate: limits set at runtime through the admin
// API hold a vacuum pass, run during a write load, to its background write
// rate, by the limiter's own byte counters: bytes <= rate*elapsed + burst.
func TestVacuumWithinBackgroundRate(t *testing.T) {
	n := startNode(t, Config{Sync: blob.SyncNone, SegmentSize: 256 << 10, VacuumThreshold: 0.3})
	ctx := context.Background()
	c := n.client(t, "", "")
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("vac")}); err != nil {
		t.Fatal(err)
	}
	obj := bytes.Repeat([]byte("d"), 64<<10)
	for i := range 48 {
		key := aws.String(fmt.Sprint("old/", i))
		if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("vac"), Key: key, Body: bytes.NewReader(obj)}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 48 {
		if i%3 != 0 {
			if _, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("vac"), Key: aws.String(fmt.Sprint("old/", i))}); err != nil {
				t.Fatal(err)
			}
		}
	}
	const rate = 512 << 10
	if _, err := n.admin.SetLimits(ctx, iolimit.Limits{BackgroundWriteBytesPerSec: rate}); err != nil {
		t.Fatal(err)
	}
	s0, err := n.admin.Stats(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	loadCtx, stopLoad := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for w := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; loadCtx.Err() == nil; i++ {
				_, err := c.PutObject(loadCtx, &s3.PutObjectInput{Bucket: aws.String("vac"), Key: aws.String(fmt.Sprint("new/", w, "/", i%20)),
					Body: bytes.NewReader(obj[:16<<10])})
				if err != nil && loadCtx.Err() == nil {
					t.Errorf("put under vacuum: %v", err)
					return
				}
			}
		}()
	}
	if err := n.admin.VacuumStart(ctx, 0); err != nil {
		t.Fatal(err)
	}
	vs := waitVacuum(t, n)
	stopLoad()
	wg.Wait()
	s1, err := n.admin.Stats(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	elapsed := time.Since(start)
	moved := s1.IO.Write.Background.Bytes - s0.IO.Write.Background.Bytes
	foreground := s1.IO.Write.Foreground.Bytes - s0.IO.Write.Foreground.Bytes
	burst := max(int64(rate*iolimit.DefaultBurstWindow.Seconds()), iolimit.MinBurst)
	bound := int64(float64(rate)*elapsed.Seconds()*1.05) + burst
	t.Logf("vacuum: copied %d, background writes %d over %v (bound %d), foreground writes %d", vs.BytesCopied, moved, elapsed, bound, foreground)
	if vs.BytesCopied == 0 || moved < vs.BytesCopied || vs.SegmentsRemoved == 0 {
		t.Fatalf("vacuum did no measurable work: %+v, background bytes %d", vs, moved)
	}
	if moved > bound {
		t.Fatalf("background writes %d bytes in %v: over rate*elapsed+burst = %d", moved, elapsed, bound)
	}
	if foreground == 0 {
		t.Fatal("no foreground writes during the vacuum")
	}
}

// TestSIGUSR1StartsVacuum: the signal starts a pass.
func TestSIGUSR1StartsVacuum(t *testing.T) {
	n := startNode(t, Config{Sync: blob.SyncNone})
	if err := syscall.Kill(os.Getpid(), syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	if vs := waitVacuum(t, n); vs.LastError != "" {
		t.Fatalf("vacuum after SIGUSR1: %+v", vs)
	}
}

// TestAccessLogRequestID: with the access log on, each request is logged
// (JSON) with the request id the client got in x-amz-request-id.
func TestAccessLogRequestID(t *testing.T) {
	var mu sync.Mutex
	var logs bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(lockedWriter{&mu, &logs}, nil))
	n := startNode(t, Config{Sync: blob.SyncNone, AccessLog: true, Logger: logger})
	resp, err := http.Get(n.s3Endpoint + "/nobucket/key")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	id := resp.Header.Get("x-amz-request-id")
	n.stop()
	mu.Lock()
	defer mu.Unlock()
	for line := range strings.SplitSeq(logs.String(), "\n") {
		var rec map[string]any
		if json.Unmarshal([]byte(line), &rec) == nil && rec["msg"] == "request" && rec["request_id"] == id {
			if rec["status"] != float64(404) || rec["op"] != "GetObject" {
				t.Fatalf("access log line %s", line)
			}
			return
		}
	}
	t.Fatalf("no access log line with request id %s in:\n%s", id, logs.String())
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// TestNULKeyUploadsDoNotHidePartsFromVacuum: pebble orders the uploads
// of "a\x00\x01" before those of "a", though "a\x00\x01" > "a" as
// strings. More than a page of them once hid the parts of an upload of
// "a" from vacuum, which removed their segment: the completed object then
// answered 500. Through the S3 API (AWS SDK) and the admin API, with the
// default fsync policy.
func TestNULKeyUploadsDoNotHidePartsFromVacuum(t *testing.T) {
	n := startNode(t, Config{SegmentSize: 256 << 10, VacuumThreshold: 0.3})
	ctx := context.Background()
	c := n.client(t, "", "")
	bucket := aws.String("nul")
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: bucket}); err != nil {
		t.Fatal(err)
	}
	for range 1001 {
		if _, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: bucket, Key: aws.String("a\x00\x01")}); err != nil {
			t.Fatal(err)
		}
	}
	up, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: bucket, Key: aws.String("a")})
	if err != nil {
		t.Fatal(err)
	}
	part := bytes.Repeat([]byte("part of a "), 6<<10)
	pr, err := c.UploadPart(ctx, &s3.UploadPartInput{Bucket: bucket, Key: aws.String("a"), UploadId: up.UploadId,
		PartNumber: aws.Int32(1), Body: bytes.NewReader(part)})
	if err != nil {
		t.Fatal(err)
	}
	// Make the part's segment mostly dead, then seal it.
	// In this order: the filler lands beside the part and the tail seals
	// the segment.
	for _, w := range []struct {
		key  string
		size int
	}{{"filler", 180 << 10}, {"tail", 100 << 10}} {
		key := w.key
		if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: bucket, Key: aws.String(key), Body: bytes.NewReader(make([]byte, w.size))}); err != nil {
			t.Fatal(err)
		}
		if key == "filler" {
			if _, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: bucket, Key: aws.String(key)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := n.admin.VacuumStart(ctx, 0.3); err != nil {
		t.Fatal(err)
	}
	if vs := waitVacuum(t, n); vs.SegmentsRemoved == 0 || vs.LastError != "" {
		t.Fatalf("vacuum removed nothing: %+v", vs)
	}
	_, err = c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: bucket, Key: aws.String("a"), UploadId: up.UploadId,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: []types.CompletedPart{{PartNumber: aws.Int32(1), ETag: pr.ETag}}}})
	if err != nil {
		t.Fatal(err)
	}
	out, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: bucket, Key: aws.String("a")})
	if err != nil {
		t.Fatalf("GET after vacuum: %v", err)
	}
	got, err := io.ReadAll(out.Body)
	out.Body.Close()
	if err != nil || !bytes.Equal(got, part) {
		t.Fatalf("GET after vacuum: %d bytes, %v", len(got), err)
	}
}
