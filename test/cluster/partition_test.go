package cluster_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/b3-storage/b3/internal/testutil"
)

// TestClusterPartition runs the nodes in network namespaces joined by a
// bridge (ip netns, veth pairs) and cuts the leader's link. The cut-off
// leader must not acknowledge a write, even to a client beside it; the
// majority elects a leader and takes writes; once the link is back, the
// old leader converges: it serves the majority's writes and nothing it
// could not commit.
func TestClusterPartition(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("this test creates network namespaces: run it as root")
	}
	nw, err := testutil.NewNetwork(3)
	if err != nil {
		t.Fatalf("network namespaces: %v", err)
	}
	t.Cleanup(nw.Close)
	c := testutil.StartCluster(t, testutil.ClusterOptions{Network: nw})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const bucket = "partition"
	if err := createBucket(ctx, c.Client(0, 10*time.Second), bucket); err != nil {
		t.Fatal(err)
	}
	put := func(cl *s3.Client, key, body string) error {
		_, err := cl.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: strings.NewReader(body)})
		return err
	}
	if err := put(c.Client(1, 10*time.Second), "before", "before the cut"); err != nil {
		t.Fatal(err)
	}
	old, err := c.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := nw.Cut(old); err != nil {
		t.Fatal(err)
	}
	cutAt := time.Now()

	// The old leader, reached from inside its namespace, acknowledges
	// nothing: small (in the log entry) and large (pushed) writes alike;
	// meanwhile the majority elects a leader and goes on.
	inside := c.InsideClient(old, 20*time.Second)
	insideErr := make(chan error, 1)
	go func() {
		for _, body := range []string{"split", strings.Repeat("s", 100<<10)} {
			if err := put(inside, "split", body); err == nil {
				insideErr <- fmt.Errorf("the partitioned leader acknowledged a write of %d bytes", len(body))
				return
			}
		}
		if _, err := getObject(ctx, inside, bucket, "before"); err == nil {
			insideErr <- errors.New("the partitioned leader answered a read")
			return
		}
		insideErr <- nil
	}()
	other := (old + 1) % 3
	majority := c.Client(other, 10*time.Second)
	for {
		err := put(majority, "majority", "after the cut")
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("the majority took no write: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("the majority acknowledged a write %s after the cut", time.Since(cutAt).Round(time.Millisecond))
	if err := <-insideErr; err != nil {
		t.Fatal(err)
	}

	if err := nw.Heal(old); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitConverged(ctx); err != nil {
		t.Fatal(err)
	}
	through := c.Client(old, 10*time.Second)
	got, err := getRetry(ctx, through, bucket, "majority")
	if err != nil || !bytes.Equal(got, []byte("after the cut")) {
		t.Fatalf("the majority's write through the healed node: %q, %v", got, err)
	}
	if _, err := getRetry(ctx, through, bucket, "split"); !notFound(err) {
		t.Fatalf("the write the cut-off leader could not commit: %v, want 404", err)
	}
	if err := c.Stop(); err != nil {
		t.Fatalf("stop: %v", err)
	}
	checkReplicas(t, c, bucket, map[string][]byte{"before": []byte("before the cut"), "majority": []byte("after the cut")})
}
