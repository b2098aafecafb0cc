package cluster_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/b3-storage/b3/internal/testutil"
)

// TestClusterMaxRetention: b3 node takes b3 server's --max-retention, and
// a retention beyond it is refused through every node (issue 28, item 4).
func TestClusterMaxRetention(t *testing.T) {
	c := testutil.StartCluster(t, testutil.ClusterOptions{Args: []string{"--max-retention", "30d"}})
	cl := clients(c)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	bucket := aws.String("bounded")
	if _, err := cl[0].CreateBucket(ctx, &s3.CreateBucketInput{Bucket: bucket, ObjectLockEnabledForBucket: aws.Bool(true)}); err != nil {
		t.Fatal(err)
	}
	in29days, in31days := time.Now().Add(29*24*time.Hour), time.Now().Add(31*24*time.Hour)
	for i := range cl {
		put := func(until time.Time) error {
			_, err := cl[i].PutObject(ctx, &s3.PutObjectInput{Bucket: bucket, Key: aws.String("k"), Body: strings.NewReader("x"),
				ObjectLockMode: types.ObjectLockModeCompliance, ObjectLockRetainUntilDate: aws.Time(until)})
			return err
		}
		if code := testutil.APICode(put(in31days)); code != "InvalidArgument" {
			t.Errorf("node %d: retention of 31 days with a maximum of 30: %q", i, code)
		}
		if err := put(in29days); err != nil {
			t.Errorf("node %d: retention of 29 days: %v", i, err)
		}
	}
}
