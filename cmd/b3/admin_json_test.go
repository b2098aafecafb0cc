package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/b3-storage/b3/internal/admin"
	"github.com/b3-storage/b3/internal/blob"
	"github.com/b3-storage/b3/internal/server"
	"github.com/b3-storage/b3/internal/testutil"
)

// documentedShapes reads the JSON examples of docs/OPERATIONS.md:
// "`b3 admin <command> --json` (a remark without backquotes):" followed
// by a ```json block.
func documentedShapes(t *testing.T) map[string]any {
	t.Helper()
	doc, err := os.ReadFile("../../docs/OPERATIONS.md")
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile("(?s)`b3 admin ([a-z -]+?) --json`[^`]*?:\\s*```json\n(.*?)```")
	out := map[string]any{}
	for _, m := range re.FindAllSubmatch(doc, -1) {
		var v any
		if err := json.Unmarshal(m[2], &v); err != nil {
			t.Fatalf("docs/OPERATIONS.md, JSON of %q: %v", m[1], err)
		}
		out[string(m[1])] = v
	}
	return out
}

// shapeDiff compares got with the documented example want: the same keys
// at every level, the same JSON types; null stands for a time that never
// happened (documented as a string or null). An array is compared by its
// first element.
func shapeDiff(path string, want, got any) []string {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return []string{fmt.Sprintf("%s: want an object, got %T", path, got)}
		}
		var diffs []string
		for k := range w {
			if _, ok := g[k]; !ok {
				diffs = append(diffs, fmt.Sprintf("%s.%s: documented, missing", path, k))
			}
		}
		for k, v := range g {
			wv, ok := w[k]
			if !ok {
				diffs = append(diffs, fmt.Sprintf("%s.%s: printed, not documented", path, k))
				continue
			}
			diffs = append(diffs, shapeDiff(path+"."+k, wv, v)...)
		}
		sort.Strings(diffs)
		return diffs
	case []any:
		g, ok := got.([]any)
		if !ok {
			return []string{fmt.Sprintf("%s: want an array, got %T", path, got)}
		}
		if len(w) == 0 || len(g) == 0 {
			return nil
		}
		return shapeDiff(path+"[0]", w[0], g[0])
	case nil:
		if _, isString := got.(string); got == nil || isString {
			return nil
		}
	default:
		if got == nil {
			if _, isString := w.(string); isString {
				return nil
			}
		} else if fmt.Sprintf("%T", w) == fmt.Sprintf("%T", got) {
			return nil
		}
	}
	return []string{fmt.Sprintf("%s: documented %T (%v), printed %T (%v)", path, want, want, got, got)}
}

// TestAdminJSONShapes runs every `b3 admin` command with --json against a
// running server and checks its output against the shape documented in
// docs/OPERATIONS.md. (cluster status needs a b3 node: its type is
// checked instead.)
func TestAdminJSONShapes(t *testing.T) {
	root := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	adminAddr, s3Addr := make(chan string, 1), make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- server.Run(ctx, server.Config{Address: "127.0.0.1:0", AdminAddress: "127.0.0.1:0", Root: root,
			Sync: blob.SyncNone, Logger: slog.New(slog.DiscardHandler),
			Ready: func(a string) { s3Addr <- a }, AdminReady: func(a string) { adminAddr <- a }}, io.Discard)
	}()
	var endpoint, s3Endpoint string
	select {
	case a := <-s3Addr:
		s3Endpoint, endpoint = "http://"+a, "http://"+<-adminAddr
	case err := <-done:
		t.Fatal(err)
	}
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	rootUser, _, err := server.LoadOrCreateCredentials(root)
	if err != nil {
		t.Fatal(err)
	}
	c := testutil.S3Client(s3Endpoint, rootUser.AccessKey, rootUser.SecretKey)
	if _, err := c.CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: aws.String("shape")}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String("shape"), Key: aws.String("k"), Body: strings.NewReader("x")}); err != nil {
		t.Fatal(err)
	}

	b3admin := func(args ...string) string {
		t.Helper()
		var out, errs bytes.Buffer
		if code := run(append([]string{"admin", "--url", endpoint, "--data", root, "--json"}, args...), &out, &errs); code != 0 {
			t.Fatalf("b3 admin %s: exit %d: %s", strings.Join(args, " "), code, errs.String())
		}
		return out.String()
	}
	var carol struct {
		AccessKey string `json:"access_key"`
	}
	// The commands in an order that leaves each something to act on.
	script := []struct {
		command string
		args    []string
	}{
		{"stats", []string{"--objects"}},
		{"users add", []string{"carol"}},
		{"users list", nil},
		{"buckets list", nil},
		{"buckets chown", []string{"shape", "<carol>"}},
		{"buckets hls", []string{"shape", "on"}},
		{"users remove", []string{"<carol>", "--force"}},
		{"buckets delete", []string{"shape", "--force"}},
		{"vacuum status", nil},
		{"vacuum start", []string{"0.9"}},
		{"vacuum stop", nil},
		{"vacuum auto", []string{"1h"}},
		{"limits get", nil},
		{"limits set", []string{"write=1GiB"}},
		{"settings list", nil},
		{"settings reset", nil},
		{"cache stats", nil},
		{"cache set", []string{"--size", "32MiB"}},
		{"lifecycle run", nil},
		{"scrub start", nil},
		{"scrub status", nil},
		{"kms status", nil},
		{"kms rotate", nil},
	}
	docs := documentedShapes(t)
	ran := map[string]bool{}
	for _, step := range script {
		args := append(strings.Fields(step.command), step.args...)
		for i, a := range args {
			if a == "<carol>" {
				args[i] = carol.AccessKey
			}
		}
		out := b3admin(args...)
		if step.command == "users add" {
			_ = json.Unmarshal([]byte(out), &carol)
		}
		ran[step.command] = true
		check(t, step.command, docs, out)
	}
	st, _ := json.Marshal(admin.ClusterStatus{Members: []admin.ClusterMember{{}}, Group: "g1", MapEpoch: 3, Partitions: 1024,
		Groups: []admin.ClusterGroup{{Name: "g1", Capacity: 1, Members: []admin.ClusterMember{{}}}}, Moves: []admin.ClusterMove{{}}})
	check(t, "cluster status", docs, string(st))
	ran["cluster status"] = true
	ch, _ := json.Marshal(admin.ClusterChange{})
	check(t, "cluster add", docs, string(ch))
	check(t, "cluster remove", docs, string(ch))
	rb, _ := json.Marshal(rebalanceState(admin.ClusterStatus{Groups: []admin.ClusterGroup{{}}, Moves: []admin.ClusterMove{{}}}))
	check(t, "cluster rebalance", docs, string(rb))
	check(t, "cluster drain", docs, string(rb))
	lost, _ := json.Marshal([]admin.ClusterLost{{}})
	check(t, "cluster declare-lost", docs, string(lost))
	for _, cmd := range adminCommands() {
		if !ran[cmd.name] && !strings.HasPrefix(cmd.name, "cluster ") {
			t.Errorf("b3 admin %s: not run by this test (add it to the script and its JSON to docs/OPERATIONS.md)", cmd.name)
		}
	}
}

func check(t *testing.T, command string, docs map[string]any, out string) {
	t.Helper()
	want, ok := docs[command]
	if !ok {
		t.Errorf("docs/OPERATIONS.md has no \"`b3 admin %s --json`:\" example; it prints:\n%s", command, out)
		return
	}
	var got any
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Errorf("b3 admin %s --json: %v in %s", command, err, out)
		return
	}
	for _, d := range shapeDiff(command, want, got) {
		t.Errorf("b3 admin %s --json differs from docs/OPERATIONS.md: %s", command, d)
	}
}
