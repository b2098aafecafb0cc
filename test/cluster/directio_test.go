//go:build linux

package cluster_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/b3-storage/b3/internal/testutil"
)

// A node writes its segments as b3 server does: with O_DIRECT where the
// file system allows it (--direct-io, default true). Buffered segment
// writes leave every byte to the group commit's fsync, which then writes
// back all of them while each follower's stage waits: the large-object
// rate of a group fell to what its fsyncs could flush.
func TestNodeSegmentsDirectIO(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	srv := testutil.StartServer(t, testutil.ServerOptions{})
	c := testutil.StartCluster(t, testutil.ClusterOptions{})
	leader, err := c.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	body := bytes.Repeat([]byte("direct"), 200<<10) // past --inline-max: written to segments
	for _, cl := range []*s3.Client{srv.Client(time.Minute), c.Client(leader, time.Minute)} {
		if err := createBucket(ctx, cl, "direct"); err != nil {
			t.Fatal(err)
		}
		if _, err := cl.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("direct"), Key: aws.String("k"), Body: bytes.NewReader(body)}); err != nil {
			t.Fatal(err)
		}
	}
	want, err := segmentWriteDirect(srv.Proc.Cmd.Process.Pid, filepath.Join(srv.Data, "segments"))
	if err != nil {
		t.Fatalf("b3 server: %v", err)
	}
	for i, n := range c.Nodes {
		got, err := segmentWriteDirect(n.Proc.Cmd.Process.Pid, filepath.Join(n.Data, "segments"))
		if err != nil {
			t.Fatalf("node %d: %v", i, err)
		}
		if got != want {
			t.Errorf("node %s writes its segments with O_DIRECT=%v; b3 server on the same file system: %v", n.ID, got, want)
		}
	}
}

// segmentWriteDirect reports whether process pid holds a segment of dir
// open for writing with O_DIRECT (from /proc/PID/fdinfo).
func segmentWriteDirect(pid int, dir string) (bool, error) {
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return false, err
	}
	for _, fd := range fds {
		target, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name()))
		if err != nil || filepath.Dir(target) != dir {
			continue
		}
		info, err := os.ReadFile(fmt.Sprintf("/proc/%d/fdinfo/%s", pid, fd.Name()))
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(info), "\n") {
			v, ok := strings.CutPrefix(line, "flags:")
			if !ok {
				continue
			}
			flags, err := strconv.ParseUint(strings.TrimSpace(v), 8, 64)
			if err != nil {
				return false, err
			}
			if flags&syscall.O_ACCMODE != syscall.O_RDONLY {
				return flags&syscall.O_DIRECT != 0, nil
			}
		}
	}
	return false, fmt.Errorf("no segment of %s open for writing", dir)
}
