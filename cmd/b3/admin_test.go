package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/b3-storage/b3/internal/admin"
	"github.com/b3-storage/b3/internal/blob"
	"github.com/b3-storage/b3/internal/s3api"
	"github.com/b3-storage/b3/internal/server"
)

// TestAdminCLI runs `b3 admin` commands against a running server.
func TestAdminCLI(t *testing.T) {
	root := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	adminAddr := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- server.Run(ctx, server.Config{Address: "127.0.0.1:0", AdminAddress: "127.0.0.1:0", Root: root,
			Sync: blob.SyncNone, CacheBytes: 1 << 20, Logger: slog.New(slog.DiscardHandler),
			AdminReady: func(a string) { adminAddr <- a }}, io.Discard)
	}()
	var endpoint string
	select {
	case a := <-adminAddr:
		endpoint = "http://" + a
	case err := <-done:
		t.Fatal(err)
	}
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	b3admin := func(args ...string) (string, int) {
		var out, errs bytes.Buffer
		code := run(append([]string{"admin", "--endpoint", endpoint, "--data", root}, args...), &out, &errs)
		return out.String() + errs.String(), code
	}
	steps := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"stats"}, 0, "segments:"},
		{[]string{"stats", "--objects"}, 0, "objects: 0 in 0 buckets"},
		{[]string{"--objects", "stats"}, 0, "objects: 0 in 0 buckets"},
		{[]string{"users", "list"}, 0, "root"},
		{[]string{"users"}, 0, "ACCESS KEY"},
		{[]string{"vacuum", "start", "0.9"}, 0, "vacuum pass started"},
		{[]string{"vacuum", "status"}, 0, "THRESHOLD"},
		{[]string{"vacuum", "status", "--json"}, 0, `"min_bytes_per_second": 8388608`},
		{[]string{"stats"}, 0, "background pace: "},
		{[]string{"vacuum", "stop", "--json"}, 0, `"auto": false`},
		{[]string{"limits", "set", "background-write=8MiB", "read=1GiB", "--json"}, 0, `"background_write_bytes_per_second": 8388608`},
		{[]string{"limits", "get"}, 0, "1073741824"},
		{[]string{"limits", "set", "sideways=1"}, 2, "unknown limit"},
		{[]string{"settings"}, 0, "read-limit"},
		{[]string{"cache", "--json"}, 0, `"policy": "s3fifo"`},
		{[]string{"lifecycle", "run"}, 0, "lifecycle pass: scanned"},
		{[]string{"users", "remove", "NOPE"}, 1, "404"},
		{[]string{"stats", "--force"}, 2, "does not take --force"},
		{[]string{"users", "add"}, 2, "usage: b3 admin users add <name>"},
		{[]string{"frobnicate"}, 2, "unknown command"},
		{[]string{"stats", "--token", "wrong"}, 1, "401"},
	}
	for _, s := range steps {
		out, code := b3admin(s.args...)
		if code != s.code || !strings.Contains(out, s.want) {
			t.Fatalf("b3 admin %s: exit %d, output:\n%s\nwant exit %d and %q", strings.Join(s.args, " "), code, out, s.code, s.want)
		}
	}
	// users add, then remove by the printed key.
	out, code := b3admin("users", "add", "carol", "--json")
	var u struct {
		AccessKey string `json:"access_key"`
		Secret    string `json:"secret_key"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &u) != nil || u.Secret == "" {
		t.Fatalf("users add: %d %s", code, out)
	}
	// The list maps access keys to the canonical ids S3 documents show.
	if out, code := b3admin("users", "list"); code != 0 || !strings.Contains(out, u.AccessKey) || !strings.Contains(out, s3api.CanonicalID(u.AccessKey)) {
		t.Fatalf("users list after add: %s", out)
	}
	if out, code := b3admin("users", "remove", u.AccessKey); code != 0 {
		t.Fatalf("users remove: %s", out)
	}
	var l admin.LimitsDoc
	out, _ = b3admin("--json", "limits", "get")
	if json.Unmarshal([]byte(out), &l) != nil || l.BackgroundWrite != 8<<20 {
		t.Fatalf("limits after set: %s", out)
	}
}
