package cluster_test

import (
	"bytes"
	"context"
	"io"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/b3-storage/b3/internal/admin"
	"github.com/b3-storage/b3/internal/testutil"
)

// TestAttackGroupsDeleteBucketRace: user A deletes its bucket while it
// writes a key of another group (g2) into it, 60 times at random offsets.
// Without the deletion mark (docs/CLUSTER.md, "Buckets and users are the
// cluster's"), a PUT that reached g2 after the first group's "is it
// empty?" question was acknowledged and stayed in g2 with the bucket, and
// user B who then created the name was made owner of g2's copy, listing
// and reading A's object. Now each attempt ends one of three ways: the PUT
// first (BucketNotEmpty), the deletion first (NoSuchBucket), or the PUT
// meets the deletion under way (503 SlowDown, the bucket then gone) —
// which some attempts must show — and never an acknowledged PUT into a
// bucket that is deleted.
func TestAttackGroupsDeleteBucketRace(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	tg := startTwoGroups(t, nil)
	tg.waitBalanced(ctx, t)
	const bucket = "race"
	aliceG1, aliceG2, bob, key := deletionRacers(ctx, t, tg, bucket)
	secret := randomBytes(99, 3000)
	rng := rand.New(rand.NewPCG(1, 2))
	hit, met := false, 0
	for attempt := 0; attempt < 60 && !hit && ctx.Err() == nil; attempt++ {
		if _, err := aliceG1.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil && testutil.APICode(err) != "BucketAlreadyOwnedByYou" {
			t.Logf("attempt %d: create: %v", attempt, err)
			time.Sleep(time.Second)
			continue
		}
		del := make(chan error, 1)
		go func() {
			_, err := aliceG1.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String(bucket)})
			del <- err
		}()
		time.Sleep(time.Duration(rng.IntN(20000)) * time.Microsecond)
		_, perr := aliceG2.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader(secret)})
		derr := <-del
		_, herr := aliceG1.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(bucket)})
		t.Logf("attempt %d: put %v; delete %v; head %v", attempt, testutil.APICode(perr), testutil.APICode(derr), testutil.APICode(herr))
		switch {
		case perr == nil && herr != nil:
			hit = true // acknowledged into a bucket the cluster deleted
			t.Errorf("attempt %d: alice's PUT of %s was acknowledged, and the bucket is deleted (delete: %v)", attempt, key, derr)
		case perr == nil:
			_, _ = aliceG2.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
		case testutil.APICode(perr) == "SlowDown" && derr == nil:
			met++ // refused while the deletion ran
		}
	}
	if !hit {
		if met == 0 {
			t.Fatal("no PUT met a deletion under way: the test did not reach the window it is about")
		}
		t.Logf("%d PUTs met a deletion under way and were refused; none outlived the bucket", met)
		return
	}
	// Bob takes the name.
	for {
		_, err := bob.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)})
		if err == nil || ctx.Err() != nil {
			break
		}
		t.Logf("bob's create: %v", err)
		time.Sleep(time.Second)
	}
	out, err := bob.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(bucket)})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range out.Contents {
		t.Errorf("bob's new bucket lists alice's %s", aws.ToString(o.Key))
	}
	if got, err := bob.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)}); err == nil {
		data, _ := io.ReadAll(got.Body)
		got.Body.Close()
		if bytes.Equal(data, secret) {
			t.Errorf("bob reads alice's object %s from his new bucket", key)
		}
	}
}

// deletionRacers are the parties of a bucket deletion's race: alice
// without retries on g1's leader (which deletes the bucket) and on g2's
// (which owns key, a key of hers in bucket), and bob with retries through
// a router (who takes the name once it is free).
func deletionRacers(ctx context.Context, t *testing.T, tg *twoGroups, bucket string) (aliceG1, aliceG2, bob *s3.Client, key string) {
	t.Helper()
	ac := &admin.Client{Endpoint: "http://" + tg.g1.Nodes[0].AdminAddr, Token: tg.g1.AdminToken}
	ua, err := ac.AddUser(ctx, "alice")
	if err != nil {
		t.Fatal(err)
	}
	ub, err := ac.AddUser(ctx, "bob")
	if err != nil {
		t.Fatal(err)
	}
	l1, err := tg.g1.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	l2, err := tg.g2.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	one := func(cl *s3.Client) *s3.Client {
		return s3.New(cl.Options(), func(o *s3.Options) { o.RetryMaxAttempts = 1 })
	}
	aliceG1 = one(testutil.S3ClientTimeout(tg.g1.Nodes[l1].Endpoint(), ua.AccessKey, ua.Secret, 30*time.Second))
	aliceG2 = one(testutil.S3ClientTimeout(tg.g2.Nodes[l2].Endpoint(), ua.AccessKey, ua.Secret, 30*time.Second))
	bob = retrying(testutil.S3ClientTimeout(tg.routers[0], ub.AccessKey, ub.Secret, 30*time.Second))
	m := clusterMap(ctx, t, tg.g1.Nodes[0].ClusterAddr)
	return aliceG1, aliceG2, bob, keyIn(t, m, bucket, "alice/private-", "g2")
}
