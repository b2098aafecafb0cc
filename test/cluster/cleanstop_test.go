package cluster_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/b3-storage/b3/internal/testutil"
)

// uncleanLine is what a node's store logs at a start after a run that did
// not close cleanly.
const uncleanLine = "did not close cleanly"

// TestClusterCleanStop: a node stopped with SIGTERM closes cleanly: its
// next start does not report an unclean end, whether it had been running
// since a clean start or since a crash (kill -9) it recovered from; the
// crash itself is reported.
func TestClusterCleanStop(t *testing.T) {
	c := testutil.StartCluster(t, testutil.ClusterOptions{})
	cl := clients(c)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := createBucket(ctx, cl[0], "clean"); err != nil {
		t.Fatal(err)
	}
	leader, err := c.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	i := (leader + 1) % 3
	put := func(n int) {
		t.Helper()
		for k := range 5 {
			key := fmt.Sprintf("k%d-%d", n, k)
			if _, err := cl[leader].PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("clean"), Key: aws.String(key),
				Body: bytes.NewReader(randomBytes(uint64(10*n+k), 64<<10))}); err != nil {
				t.Fatal(err)
			}
		}
		if err := c.WaitConverged(ctx); err != nil {
			t.Fatal(err)
		}
	}
	restart := func(how string) string {
		t.Helper()
		if how == "kill" {
			c.Kill(i)
			_ = c.Nodes[i].Proc.Wait(10 * time.Second)
		} else if err := c.Nodes[i].Proc.Stop(30 * time.Second); err != nil {
			t.Fatalf("SIGTERM: %v", err)
		}
		if err := c.Start(i); err != nil {
			t.Fatal(err)
		}
		if err := c.WaitConverged(ctx); err != nil {
			t.Fatal(err)
		}
		return c.Nodes[i].Proc.Output.String()
	}
	put(1)
	if out := restart("term"); strings.Contains(out, uncleanLine) {
		t.Fatalf("after SIGTERM, %s reports an unclean end:\n%s", c.Nodes[i].ID, out)
	}
	put(2)
	if out := restart("kill"); !strings.Contains(out, uncleanLine) {
		t.Fatalf("after kill -9, %s does not report an unclean end:\n%s", c.Nodes[i].ID, out)
	}
	put(3)
	if out := restart("term"); strings.Contains(out, uncleanLine) {
		t.Fatalf("after SIGTERM following a recovered crash, %s reports an unclean end:\n%s", c.Nodes[i].ID, out)
	}
}
