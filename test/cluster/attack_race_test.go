package cluster_test

import (
	"bytes"
	"context"
	"io"
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/b3-storage/b3/internal/admin"
	"github.com/b3-storage/b3/internal/testutil"
)

// TestAttackGroupsDeleteBucketRace: user A deletes its bucket while it
// writes a key of another group (g2) into it. The first group asks g2
// whether it holds an object of the bucket, then deletes the bucket; a
// PUT that reaches g2 after the question and before g2's catalogue copy
// drops the bucket is acknowledged, and the bucket stays in g2 with it
// (docs/CLUSTER.md, "Deleting a bucket during a write"). The cluster then
// says the bucket does not exist, so user B may create it: g2's copy of
// the catalogue makes B the owner of g2's bucket, which still holds A's
// object, and B lists and reads it.
//
// It fails on the current code (the fence that would close the window is
// not built): B3_ATTACK_RACE=1 runs it.
func TestAttackGroupsDeleteBucketRace(t *testing.T) {
	if os.Getenv("B3_ATTACK_RACE") == "" {
		t.Skip("a known open defect (a bucket deleted while another group takes a write of it); B3_ATTACK_RACE=1 runs it")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	tg := startTwoGroups(t, nil)
	tg.waitBalanced(ctx, t)
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
	aliceG1 := one(testutil.S3ClientTimeout(tg.g1.Nodes[l1].Endpoint(), ua.AccessKey, ua.Secret, 30*time.Second))
	aliceG2 := one(testutil.S3ClientTimeout(tg.g2.Nodes[l2].Endpoint(), ua.AccessKey, ua.Secret, 30*time.Second))
	bob := retrying(testutil.S3ClientTimeout(tg.routers[0], ub.AccessKey, ub.Secret, 30*time.Second))
	const bucket = "race"
	m := clusterMap(ctx, t, tg.g1.Nodes[0].ClusterAddr)
	key := keyIn(t, m, bucket, "alice/private-", "g2")
	secret := randomBytes(99, 3000)
	rng := rand.New(rand.NewPCG(1, 2))
	hit := false
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
		}
	}
	if !hit {
		t.Logf("the window was not hit")
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
