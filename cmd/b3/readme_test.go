package main

import (
	"context"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/b3-storage/b3/internal/testutil"
)

func readme(t *testing.T) string {
	data, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// codeLines are the lines of the README's code blocks, in order.
func codeLines(text string) []string {
	var lines []string
	in := false
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, "```") {
			in = !in
			continue
		}
		if in {
			lines = append(lines, line)
		}
	}
	return lines
}

// TestReadmeNewcomerPath: what a newcomer reads first works as read. The
// README opens with the two commands that run the server and the tests;
// it says how `b3` gets on the PATH before a command calls it; its first
// upload of a segment gives the segment's type.
func TestReadmeNewcomerPath(t *testing.T) {
	text := readme(t)
	lines := codeLines(text)
	if len(lines) < 2 || !strings.HasPrefix(lines[0], "go run ./cmd/b3 server") || !strings.HasPrefix(lines[1], "make test") {
		t.Errorf("the README does not open with the server and test commands: %q", lines[:min(2, len(lines))])
	}
	firstCall := -1
	for _, line := range lines {
		if strings.HasPrefix(line, "b3 ") {
			firstCall = strings.Index(text, "\n"+line+"\n")
			break
		}
	}
	install := strings.Index(text, "go install ./cmd/b3")
	if firstCall < 0 || install < 0 || install > firstCall || !strings.Contains(text[:firstCall], "make build") {
		t.Errorf("the README calls b3 (at byte %d) before it says how to build and install it (go install at %d)", firstCall, install)
	}
	for _, line := range lines {
		if strings.Contains(line, "s3 cp") && strings.Contains(line, ".ts ") && !strings.Contains(line, "--content-type video/mp2t") {
			t.Errorf("the README uploads a segment without its type: %s", line)
		}
	}
}

// TestReadmeAdminStats runs the README's `b3 admin stats` line against a
// server with objects: it prints the objects its comment promises.
func TestReadmeAdminStats(t *testing.T) {
	var line string
	for _, l := range codeLines(readme(t)) {
		if strings.HasPrefix(l, "b3 admin stats") {
			line = l
		}
	}
	command, comment, _ := strings.Cut(line, "#")
	if !strings.Contains(comment, "objects") {
		t.Fatalf("README's stats line promises no objects: %q", line)
	}
	s := testutil.StartServer(t, testutil.ServerOptions{})
	c := s.Client(10 * time.Second)
	if _, err := c.CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: aws.String("videos")}); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"a", "b"} {
		if _, err := c.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String("videos"), Key: aws.String(key), Body: strings.NewReader("x")}); err != nil {
			t.Fatal(err)
		}
	}
	out, code := adminProcess(t, s)(strings.Fields(command)[2:]...)
	if code != 0 || !regexp.MustCompile(`(?m)^objects: 2 in 1 buckets`).MatchString(out) {
		t.Errorf("%s: exit %d\n%s\nwant a line objects: 2 in 1 buckets", strings.TrimSpace(command), code, out)
	}
}
