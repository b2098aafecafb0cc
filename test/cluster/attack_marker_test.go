package cluster_test

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/b3-storage/b3/internal/testutil"
)

// TestAttackGroupsDeleteMarkerRace: in a versioned bucket a DELETE
// without a version ID adds a delete marker (a version record, which
// BucketEmpty counts), but the deletion mark lets deletions through
// (addsData). A DELETE of a key of g2 that commits after the first
// group's emptiness question is acknowledged, the bucket is deleted in
// the catalogue, and g2 keeps the bucket with alice's marker; bob, who
// creates the name again, lists alice's marker (and key name).
func TestAttackGroupsDeleteMarkerRace(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	tg := startTwoGroups(t, nil)
	tg.waitBalanced(ctx, t)
	const bucket = "mrace"
	aliceG1, aliceG2, bob, key := deletionRacers(ctx, t, tg, bucket)
	rng := rand.New(rand.NewPCG(3, 4))
	hit := false
	for attempt := 0; attempt < 60 && !hit && ctx.Err() == nil; attempt++ {
		if _, err := aliceG1.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil && testutil.APICode(err) != "BucketAlreadyOwnedByYou" {
			t.Logf("attempt %d: create: %v", attempt, err)
			time.Sleep(time.Second)
			continue
		}
		if _, err := aliceG1.PutBucketVersioning(ctx, &s3.PutBucketVersioningInput{Bucket: aws.String(bucket),
			VersioningConfiguration: &types.VersioningConfiguration{Status: types.BucketVersioningStatusEnabled}}); err != nil {
			t.Logf("attempt %d: versioning: %v", attempt, err)
			time.Sleep(time.Second)
			continue
		}
		time.Sleep(300 * time.Millisecond) // g2 holds the versioning state
		del := make(chan error, 1)
		go func() {
			_, err := aliceG1.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String(bucket)})
			del <- err
		}()
		time.Sleep(time.Duration(rng.IntN(30000)) * time.Microsecond)
		out, xerr := aliceG2.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
		derr := <-del
		_, herr := aliceG1.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(bucket)})
		marker := xerr == nil && aws.ToBool(out.DeleteMarker)
		t.Logf("attempt %d: delete-object %v marker %v; delete-bucket %v; head %v", attempt, testutil.APICode(xerr), marker, testutil.APICode(derr), testutil.APICode(herr))
		switch {
		case marker && herr != nil:
			hit = true
			t.Errorf("attempt %d: a delete marker of %s was acknowledged, and the bucket is deleted (delete-bucket: %v)", attempt, key, derr)
		case marker:
			_, _ = aliceG2.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), VersionId: out.VersionId})
		}
	}
	if !hit {
		t.Log("no acknowledged marker outlived the bucket")
		return
	}
	// Every catalogue change now waits for g2, which never holds it: g2's
	// apply of the catalogue fails for ever (the bucket "stays here").
	time.Sleep(2 * time.Second)
	start := time.Now()
	if _, err := aliceG1.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("unrelated")}); err != nil {
		t.Errorf("an unrelated CreateBucket after the race: %v (after %s)", err, time.Since(start).Round(time.Millisecond))
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
	time.Sleep(time.Second)
	vs, err := bob.ListObjectVersions(ctx, &s3.ListObjectVersionsInput{Bucket: aws.String(bucket)})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range vs.DeleteMarkers {
		t.Errorf("bob's new bucket lists alice's delete marker of %s", aws.ToString(d.Key))
	}
}
