package bench

import (
	"bytes"
	"context"
	"io"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// TestPeakDefaults: `b3 bench peak` with no flags is a first look: its
// cells take about a minute, and the largest object and the bytes
// prepared per size stay small.
func TestPeakDefaults(t *testing.T) {
	o, err := parseFlags("peak", nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	sizes, err := ParseSizeList(o.params["sizes"], MaxObjectSize)
	if err != nil {
		t.Fatal(err)
	}
	levels, err := ParseIntList(o.params["concurrency"])
	if err != nil {
		t.Fatal(err)
	}
	perCell, err := time.ParseDuration(o.params["duration"])
	if err != nil {
		t.Fatal(err)
	}
	prepare, err := ParseSize(o.params["prepare-bytes"])
	if err != nil {
		t.Fatal(err)
	}
	cells := len(sizes) * len(levels) * len(splitList(o.params["ops"]))
	if planned := time.Duration(cells) * perCell; planned > 75*time.Second {
		t.Errorf("the default cells take %s (%d × %s), want about a minute", planned, cells, perCell)
	}
	if largest := slicesMax(sizes); largest > 16<<20 {
		t.Errorf("the default sizes reach %s, want at most 16MiB", FormatSize(largest))
	}
	if prepare > 512<<20 {
		t.Errorf("the default prepares %s per size, want at most 512MiB", FormatSize(prepare))
	}
}

func slicesMax(v []int64) int64 {
	var m int64
	for _, x := range v {
		m = max(m, x)
	}
	return m
}

// TestLivePeakRemovesItsBucket: a peak run that created its bucket and
// cleans up removes the bucket too; a bucket that existed before is kept.
func TestLivePeakRemovesItsBucket(t *testing.T) {
	s := startLiveServer(t)
	client := s.target(t).Client
	ctx := context.Background()
	if _, err := client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("bench-existing")}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		bucket string
		kept   bool
	}{{"bench-new", false}, {"bench-existing", true}} {
		var stdout, stderr bytes.Buffer
		code := Main([]string{"peak", "--endpoint", s.endpoint, "--access-key", s.accessKey, "--secret-key", s.secretKey,
			"--bucket", tc.bucket, "--sizes", "4KiB", "--concurrency", "2", "--count", "10", "--duration", "0",
			"--charts=false", "--out", t.TempDir()}, &stdout, &stderr)
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", tc.bucket, code, stderr.String())
		}
		_, err := client.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(tc.bucket)})
		if exists := err == nil; exists != tc.kept {
			t.Errorf("after a run on %s the bucket exists: %v (%v), want %v\n%s", tc.bucket, exists, err, tc.kept, stderr.String())
		}
	}
}
