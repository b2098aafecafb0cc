package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/b3-storage/b3/internal/admin"
	"github.com/b3-storage/b3/internal/testutil"
)

// adminProcess runs the b3 binary's `admin` command in a fresh directory
// (no ./data), with HOME there too (no config file) and the server given
// only by B3_ADMIN_URL and B3_ADMIN_TOKEN.
func adminProcess(t *testing.T, s *testutil.Server) func(args ...string) (string, int) {
	bin, dir := testutil.Binary(t), t.TempDir()
	return func(args ...string) (string, int) {
		t.Helper()
		cmd := exec.Command(bin, append([]string{"admin"}, args...)...)
		cmd.Dir = dir
		cmd.Env = []string{"HOME=" + dir, "XDG_CONFIG_HOME=" + dir, "PATH=/usr/bin:/bin",
			"B3_ADMIN_URL=http://" + s.AdminAddr, "B3_ADMIN_TOKEN=" + s.AdminToken}
		out, err := cmd.CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return string(out), code
	}
}

func mustJSON[T any](t *testing.T, run func(...string) (string, int), args ...string) T {
	t.Helper()
	var v T
	out, code := run(args...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, out)
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("%v in %s", err, out)
	}
	return v
}

// TestRootAndUserBuckets: the root user reaches every bucket; a user who
// owns buckets is removed only with a new owner (who then has them) or
// --force; buckets are listed, given away and deleted by `b3 admin` run
// from a directory without ./data, configured by environment alone.
// Runtime settings survive a restart. Every change leaves an audit line.
func TestRootAndUserBuckets(t *testing.T) {
	s := testutil.StartServer(t, testutil.ServerOptions{})
	b3admin := adminProcess(t, s)
	ctx := context.Background()

	type keys struct {
		AccessKey string `json:"access_key"`
		SecretKey string `json:"secret_key"`
	}
	alice := mustJSON[keys](t, b3admin, "users", "add", "alice", "--json")
	bob := mustJSON[keys](t, b3admin, "--json", "users", "add", "bob")
	ac := testutil.S3Client(s.Endpoint(), alice.AccessKey, alice.SecretKey)
	if _, err := ac.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("alices")}); err != nil {
		t.Fatal(err)
	}
	if _, err := ac.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("alices"), Key: aws.String("k"), Body: strings.NewReader("hers")}); err != nil {
		t.Fatal(err)
	}

	// Root reads, lists and writes alice's bucket.
	root := s.Client(30 * time.Second)
	get := func(c *s3.Client, who string) {
		t.Helper()
		out, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("alices"), Key: aws.String("k")})
		if err != nil {
			t.Fatalf("%s reads alice's bucket: %v", who, err)
		}
		body, _ := io.ReadAll(out.Body)
		out.Body.Close()
		if string(body) != "hers" {
			t.Fatalf("%s read %q", who, body)
		}
	}
	get(root, "root")
	lb, err := root.ListBuckets(ctx, &s3.ListBucketsInput{})
	if err != nil || len(lb.Buckets) != 1 || *lb.Buckets[0].Name != "alices" {
		t.Fatalf("root's bucket list: %+v %v", lb, err)
	}
	if _, err := testutil.S3Client(s.Endpoint(), bob.AccessKey, bob.SecretKey).GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("alices"), Key: aws.String("k")}); err == nil || !strings.Contains(err.Error(), "AccessDenied") {
		t.Fatalf("bob (not an admin) read alice's bucket: %v", err)
	}

	// Removing alice wants a new owner; with bob named, bob has her bucket.
	if out, code := b3admin("users", "remove", alice.AccessKey); code != 1 || !strings.Contains(out, "--new-owner") || !strings.Contains(out, "alices") {
		t.Fatalf("removing a user who owns a bucket: exit %d %s", code, out)
	}
	removed := mustJSON[admin.UserRemoved](t, b3admin, "users", "remove", alice.AccessKey, "--new-owner", bob.AccessKey, "--json")
	if !slices.Equal(removed.BucketsReassigned, []string{"alices"}) || removed.NewOwner != bob.AccessKey {
		t.Fatalf("users remove: %+v", removed)
	}
	get(testutil.S3Client(s.Endpoint(), bob.AccessKey, bob.SecretKey), "bob, the new owner")
	buckets := mustJSON[[]admin.Bucket](t, b3admin, "buckets", "list", "--json")
	if len(buckets) != 1 || buckets[0].Owner != bob.AccessKey || buckets[0].OwnerName != "bob" || buckets[0].Objects != 1 || buckets[0].Bytes != 4 {
		t.Fatalf("buckets list: %+v", buckets)
	}
	rootKey, _ := s.Keys()
	if out, code := b3admin("buckets", "chown", "alices", rootKey); code != 0 || !strings.Contains(out, "now owned by root") {
		t.Fatalf("buckets chown: %d %s", code, out)
	}
	// The LL-HLS origin setting: on, shown by the listing, off again;
	// a bad word and a missing bucket are refused.
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"buckets", "hls", "alices", "on"}, 0, "LL-HLS origin on"},
		{[]string{"buckets"}, 0, "LL-HLS"},
		{[]string{"buckets", "hls", "alices", "maybe"}, 2, "want on or off"},
		{[]string{"buckets", "hls", "nosuch", "on"}, 1, "no such bucket"},
	} {
		if out, code := b3admin(c.args...); code != c.code || !strings.Contains(out, c.want) {
			t.Errorf("b3 admin %v: exit %d (want %d) %s", c.args, code, c.code, out)
		}
	}
	if buckets := mustJSON[[]admin.Bucket](t, b3admin, "buckets", "list", "--json"); len(buckets) != 1 || !buckets[0].LLHLS {
		t.Fatalf("buckets list after hls on: %+v", buckets)
	}
	if hls := mustJSON[admin.BucketHLS](t, b3admin, "buckets", "hls", "alices", "off", "--json"); hls.LLHLS || hls.Name != "alices" {
		t.Fatalf("buckets hls off: %+v", hls)
	}
	if buckets := mustJSON[[]admin.Bucket](t, b3admin, "buckets", "list", "--json"); len(buckets) != 1 || buckets[0].LLHLS {
		t.Fatalf("buckets list after hls off: %+v", buckets)
	}
	if out, code := b3admin("users", "remove", rootKey, "--force"); code != 1 || !strings.Contains(out, "404") {
		t.Fatalf("removing root: %d %s", code, out)
	}
	if out, code := b3admin("buckets", "delete", "alices"); code != 1 || !strings.Contains(out, "not empty") {
		t.Fatalf("deleting a full bucket without --force: %d %s", code, out)
	}
	del := mustJSON[admin.BucketDeleted](t, b3admin, "buckets", "delete", "--force", "alices", "--json")
	if del.ObjectsDeleted != 1 {
		t.Fatalf("buckets delete --force: %+v", del)
	}

	// The object cache shrinks at once: objects read into it are evicted
	// down to the new size.
	if _, err := root.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("cached")}); err != nil {
		t.Fatal(err)
	}
	for i := range 8 {
		key := aws.String(fmt.Sprint("c", i))
		if _, err := root.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("cached"), Key: key, Body: strings.NewReader(strings.Repeat("x", 100<<10))}); err != nil {
			t.Fatal(err)
		}
		get, err := root.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("cached"), Key: key})
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, get.Body)
		get.Body.Close()
	}
	if c := mustJSON[cacheJSON](t, b3admin, "cache", "--json"); c.Entries != 8 || c.MaxBytes != 64<<20 {
		t.Fatalf("cache after reading 8 objects of 100 KiB: %+v", c)
	}
	if out, code := b3admin("cache", "set", "--size", "2TiB"); code != 1 || !strings.Contains(out, "400") {
		t.Fatalf("cache set --size 2TiB: exit %d %s", code, out)
	}
	shrunk := mustJSON[cacheJSON](t, b3admin, "cache", "set", "--size", "300KiB", "--json")
	if shrunk.MaxBytes != 300<<10 || shrunk.Bytes > 300<<10 || shrunk.Entries == 0 || shrunk.Entries > 2 || shrunk.Evictions < 6 {
		t.Fatalf("cache set --size 300KiB: %+v", shrunk)
	}

	// Runtime settings outlive a restart, and show as overridden.
	if out, code := b3admin("limits", "set", "write=100MiB"); code != 0 {
		t.Fatalf("limits set: %s", out)
	}
	if out, code := b3admin("vacuum", "stop"); code != 0 {
		t.Fatalf("vacuum stop: %s", out)
	}
	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
	if l := mustJSON[admin.LimitsDoc](t, b3admin, "limits", "--json"); l.Write != 100<<20 {
		t.Fatalf("write limit after a restart: %+v", l)
	}
	if v := mustJSON[vacuumJSON](t, b3admin, "vacuum", "--json"); v.Auto {
		t.Fatal("vacuum stopped before the restart runs again after it")
	}
	if c := mustJSON[cacheJSON](t, b3admin, "cache", "stats", "--json"); c.MaxBytes != 300<<10 {
		t.Fatalf("cache size after a restart: %+v", c)
	}
	if m := metrics(t, s); !strings.Contains(m, "\nb3_cache_max_bytes 307200\n") {
		t.Fatalf("b3_cache_max_bytes after a restart is not 307200:\n%s", m)
	}
	rows := mustJSON[[]admin.Setting](t, b3admin, "settings", "--json")
	for _, r := range rows { // limits are overridden as a whole
		if !r.Overridden || (r.Name == "vacuum-interval" && (r.Value != "0s" || r.Configured != "5m0s")) ||
			(r.Name == "cache-size" && (r.Value != "307200" || r.Configured != "67108864")) {
			t.Errorf("setting after a restart: %+v", r)
		}
	}
	if out, code := b3admin("settings", "reset"); code != 0 || strings.Contains(out, "yes") {
		t.Fatalf("settings reset: %d %s", code, out)
	}
	if l := mustJSON[admin.LimitsDoc](t, b3admin, "limits", "--json"); l.Write != 0 {
		t.Fatalf("write limit after reset: %+v", l)
	}
	if c := mustJSON[cacheJSON](t, b3admin, "cache", "--json"); c.MaxBytes != 64<<20 {
		t.Fatalf("cache size after reset: %+v", c)
	}

	for _, action := range []string{"user.add", "user.remove", "bucket.chown", "bucket.hls", "bucket.delete", "limits.set", "vacuum.stop", "cache.set", "settings.reset"} {
		if !strings.Contains(s.Output(), "msg=audit action="+action+" actor=") {
			t.Errorf("no audit line for %s in:\n%s", action, s.Output())
		}
	}
}

// metrics is the server's /metrics page.
func metrics(t *testing.T, s *testutil.Server) string {
	t.Helper()
	resp, err := http.Get("http://" + s.AdminAddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %s %v", resp.Status, err)
	}
	return string(body)
}
