package cluster_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/b3-storage/b3/internal/cluster"
	"github.com/b3-storage/b3/internal/objstore"
	"github.com/b3-storage/b3/internal/s3api"
	"github.com/b3-storage/b3/internal/testutil"
	"github.com/b3-storage/b3/internal/testutil/versionmodel"
)

// TestClusterVersioningMatchesModel: a random history of PUTs, DELETEs
// (with and without version IDs) and versioning state changes, made
// through every node of a 3-node group, matches the model a single
// server's history is checked against (package versionmodel): GET, GET by
// version and ListObjectVersions through every node, also after the
// leader is killed (-9) mid-history and after a follower that was away
// is restored from a snapshot. At the end every node's own store holds
// the same versions, byte for byte.
func TestClusterVersioningMatchesModel(t *testing.T) {
	c := testutil.StartCluster(t, testutil.ClusterOptions{Args: append([]string{"--inline-max", "512"}, snapshotArgs...)})
	cl := clients(c)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	const bucket = "versions"
	if err := createBucket(ctx, cl[0], bucket); err != nil {
		t.Fatal(err)
	}
	m := versionmodel.New()
	rng := rand.New(rand.NewPCG(11, 99))
	keys := []string{"a", "a/b", "b", "dir/c"}
	step := 0
	// history makes n steps through the running nodes, in turn, and
	// checks each key it touched through another one.
	history := func(n int, running []int) {
		t.Helper()
		for range n {
			step++
			through, check := running[step%len(running)], running[(step+1)%len(running)]
			key, what := m.Step(t, cl[through], rng, bucket, keys, fmt.Sprint(step))
			if key != "" {
				m.CheckKey(t, cl[check], bucket, key, what)
			}
		}
	}
	checkAll := func(after string) {
		t.Helper()
		for i := range c.Nodes {
			if !c.Running(i) {
				continue
			}
			for _, key := range keys {
				m.CheckKey(t, cl[i], bucket, key, after+" through "+c.Nodes[i].ID)
			}
			m.CheckListing(t, cl[i], bucket, int32(1+i), after+" through "+c.Nodes[i].ID)
		}
	}
	all := []int{0, 1, 2}
	history(80, all)
	checkAll("the first steps")

	// The leader dies mid-history; the others go on.
	leader, err := c.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c.Kill(leader)
	others := slices.DeleteFunc(slices.Clone(all), func(i int) bool { return i == leader })
	for _, i := range others { // each survivor has learned the new leader
		waitWrites(ctx, t, cl[i])
	}
	history(40, others)
	if err := c.Start(leader); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitConverged(ctx); err != nil {
		t.Fatal(err)
	}
	checkAll("a leader kill")

	// A follower is away while the leader's log is compacted past it: it
	// comes back through InstallSnapshot, versions and delete markers
	// included.
	if leader, err = c.Leader(ctx); err != nil {
		t.Fatal(err)
	}
	away := (leader + 1) % 3
	awayAt := member(t, c, away).AppliedIndex
	c.Kill(away)
	others = slices.DeleteFunc(slices.Clone(all), func(i int) bool { return i == away })
	history(60, others)
	waitFor(ctx, t, "the leader's log compacted past the stopped follower", func() bool {
		lm := member(t, c, leader)
		return lm.SnapshotIndex > awayAt && lm.FirstLogIndex > awayAt+1
	})
	if err := c.Start(away); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitConverged(ctx); err != nil {
		t.Fatal(err)
	}
	if am := member(t, c, away); am.SnapshotsRestored == 0 {
		t.Fatalf("the returning follower was not restored from a snapshot: %+v", am)
	}
	checkAll("a snapshot restore")

	if err := c.Stop(); err != nil {
		t.Fatalf("stop: %v", err)
	}
	want := versionmodel.SortedLines(m.Listing())
	var first []string
	for i, n := range c.Nodes {
		got := replicaVersions(t, n.Data, bucket)
		var listing []string
		for _, v := range got {
			listing = append(listing, v.line)
		}
		if listing = versionmodel.SortedLines(listing); !slices.Equal(listing, want) {
			t.Fatalf("%s's own store holds versions\n%q\nwant %q", n.ID, listing, want)
		}
		full := fmt.Sprint(got)
		if i == 0 {
			first = []string{full}
		} else if full != first[0] {
			t.Fatalf("%s's store differs from %s's:\n%s\n%s", n.ID, c.Nodes[0].ID, full, first[0])
		}
	}
}

// waitWrites waits until a write through cl succeeds (a leader serves).
func waitWrites(ctx context.Context, t *testing.T, cl *s3.Client) {
	t.Helper()
	waitFor(ctx, t, "writes to resume", func() bool {
		_, err := cl.PutBucketTagging(ctx, &s3.PutBucketTaggingInput{Bucket: aws.String("versions"),
			Tagging: &types.Tagging{TagSet: []types.Tag{{Key: aws.String("probe"), Value: aws.String("1")}}}})
		return err == nil
	})
}

type replicaVersion struct {
	line string   // as versionmodel lists it
	hash [32]byte // of the bytes
}

// replicaVersions opens a stopped node's own store and lists every
// version of bucket with the SHA-256 of its bytes.
func replicaVersions(t *testing.T, data, bucket string) []replicaVersion {
	t.Helper()
	metaDir, dataDir := objstore.DefaultDirs(data)
	st, err := objstore.Open(objstore.Options{MetaDir: metaDir, DataDir: dataDir})
	if err != nil {
		t.Fatalf("open the store in %s: %v", data, err)
	}
	defer st.Close()
	res, err := st.ListVersions(bucket, objstore.VersionListOptions{MaxKeys: 100000})
	if err != nil {
		t.Fatal(err)
	}
	if res.IsTruncated {
		t.Fatalf("%s: more versions than one listing holds", data)
	}
	var out []replicaVersion
	for i, v := range res.Versions {
		id := objstore.VersionID(v)
		latest := i == 0 || res.Versions[i-1].Key != v.Key // each key's newest first
		// Clients (the model) know the version by the id the cluster's
		// key seals the engine's into.
		client := s3api.ClientVersionID(cluster.VersionKey([]byte(testutil.TestClusterSecret)), id)
		rv := replicaVersion{line: fmt.Sprintf("%s %s marker=%v latest=%v", v.Key, client, v.DeleteMarker, latest)}
		if !v.DeleteMarker {
			_, r, err := st.OpenVersion(context.Background(), bucket, v.Key, id, objstore.WholeObject)
			if err != nil {
				t.Fatalf("%s: open %s version %s: %v", data, v.Key, id, err)
			}
			body, err := io.ReadAll(r)
			r.Close()
			if err != nil {
				t.Fatalf("%s: read %s version %s: %v", data, v.Key, id, err)
			}
			rv.hash = sha256.Sum256(body)
		}
		out = append(out, rv)
	}
	return out
}

// TestClusterObjectLock: Object Lock holds on every node of a group:
// a version under COMPLIANCE retention or a legal hold cannot be deleted
// through any node, GOVERNANCE yields only to the owner's bypass, the
// bucket's versioning cannot be suspended; the leader's lifecycle pass
// expires noncurrent versions and lone delete markers through the log
// (NoncurrentVersionExpiration, ExpiredObjectDeleteMarker) and never a
// locked version, and a current version's expiry in a versioned bucket
// adds a delete marker. Every node's own store ends with the same
// versions.
func TestClusterObjectLock(t *testing.T) {
	c := testutil.StartCluster(t, testutil.ClusterOptions{Args: []string{
		"--lifecycle-day", "1s", "--lifecycle-interval", "300ms", "--inline-max", "0"}})
	cl := clients(c)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const bucket = "locked"
	if _, err := cl[1].CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket), ObjectLockEnabledForBucket: aws.Bool(true)}); err != nil {
		t.Fatal(err)
	}
	until := time.Now().Add(time.Hour)
	put := func(i int, key string, in *s3.PutObjectInput) string {
		t.Helper()
		in.Bucket, in.Key, in.Body = aws.String(bucket), aws.String(key), bytes.NewReader(randomBytes(uint64(len(key)), 10<<10))
		out, err := cl[i].PutObject(ctx, in)
		if err != nil {
			t.Fatalf("PUT %s: %v", key, err)
		}
		return aws.ToString(out.VersionId)
	}
	compliance := put(2, "k", &s3.PutObjectInput{ObjectLockMode: types.ObjectLockModeCompliance, ObjectLockRetainUntilDate: &until})
	put(0, "k", &s3.PutObjectInput{}) // noncurrent once k is deleted: expires
	held := put(1, "held", &s3.PutObjectInput{ObjectLockLegalHoldStatus: types.ObjectLockLegalHoldStatusOn})
	governance := put(2, "gov", &s3.PutObjectInput{ObjectLockMode: types.ObjectLockModeGovernance, ObjectLockRetainUntilDate: &until})
	// A lock asked for at CreateMultipartUpload, the upload driven
	// through three different nodes.
	up, err := cl[0].CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String(bucket), Key: aws.String("mp"),
		ObjectLockMode: types.ObjectLockModeCompliance, ObjectLockRetainUntilDate: &until})
	if err != nil {
		t.Fatal(err)
	}
	part, err := cl[1].UploadPart(ctx, &s3.UploadPartInput{Bucket: aws.String(bucket), Key: aws.String("mp"), UploadId: up.UploadId,
		PartNumber: aws.Int32(1), Body: bytes.NewReader(randomBytes(7, 10<<10))})
	if err != nil {
		t.Fatal(err)
	}
	done, err := cl[2].CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: aws.String(bucket), Key: aws.String("mp"), UploadId: up.UploadId,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: []types.CompletedPart{{PartNumber: aws.Int32(1), ETag: part.ETag}}}})
	if err != nil {
		t.Fatal(err)
	}
	multipart := aws.ToString(done.VersionId)

	for i := range c.Nodes {
		for _, v := range []struct{ key, id string }{{"k", compliance}, {"held", held}, {"gov", governance}, {"mp", multipart}} {
			_, err := cl[i].DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: aws.String(v.key), VersionId: aws.String(v.id)})
			if testutil.APICode(err) != "AccessDenied" {
				t.Fatalf("DELETE locked %s version %s through %s: %v, want AccessDenied", v.key, v.id, c.Nodes[i].ID, err)
			}
		}
		_, err := cl[i].PutBucketVersioning(ctx, &s3.PutBucketVersioningInput{Bucket: aws.String(bucket),
			VersioningConfiguration: &types.VersioningConfiguration{Status: types.BucketVersioningStatusSuspended}})
		if testutil.APICode(err) != "InvalidBucketState" {
			t.Fatalf("suspend versioning of a locked bucket through %s: %v", c.Nodes[i].ID, err)
		}
	}
	// The owner may bypass GOVERNANCE; a delete marker hides a locked
	// version without removing it.
	if _, err := cl[1].DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: aws.String("gov"),
		VersionId: aws.String(governance), BypassGovernanceRetention: aws.Bool(true)}); err != nil {
		t.Fatalf("DELETE under GOVERNANCE with bypass: %v", err)
	}
	marker, err := cl[0].DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: aws.String("k")})
	if err != nil || !aws.ToBool(marker.DeleteMarker) {
		t.Fatalf("DELETE k: %+v, %v", marker, err)
	}

	// Lifecycle: noncurrent versions expire one (1 s) day after they
	// became noncurrent, except the locked one; in a second bucket a
	// delete marker left alone goes too.
	for _, b := range []string{bucket, "plain"} {
		if b == "plain" {
			if err := createBucket(ctx, cl[0], b); err != nil {
				t.Fatal(err)
			}
			if _, err := cl[1].PutBucketVersioning(ctx, &s3.PutBucketVersioningInput{Bucket: aws.String(b),
				VersioningConfiguration: &types.VersioningConfiguration{Status: types.BucketVersioningStatusEnabled}}); err != nil {
				t.Fatal(err)
			}
			for i := range 3 {
				if _, err := cl[i].PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(b), Key: aws.String("x"), Body: bytes.NewReader(randomBytes(uint64(i), 5000))}); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := cl[2].PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(b), Key: aws.String("y"), Body: bytes.NewReader(randomBytes(9, 5000))}); err != nil {
				t.Fatal(err)
			}
			if _, err := cl[0].DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(b), Key: aws.String("y")}); err != nil {
				t.Fatal(err)
			}
		}
		_, err := cl[2].PutBucketLifecycleConfiguration(ctx, &s3.PutBucketLifecycleConfigurationInput{Bucket: aws.String(b),
			LifecycleConfiguration: &types.BucketLifecycleConfiguration{Rules: []types.LifecycleRule{{
				ID: aws.String("nc"), Status: types.ExpirationStatusEnabled, Filter: &types.LifecycleRuleFilter{Prefix: aws.String("")},
				NoncurrentVersionExpiration: &types.NoncurrentVersionExpiration{NoncurrentDays: aws.Int32(1)},
				Expiration:                  &types.LifecycleExpiration{ExpiredObjectDeleteMarker: aws.Bool(true)},
			}}}})
		if err != nil {
			t.Fatal(err)
		}
	}
	// In a third, the current version's expiry adds a delete marker (the
	// expired version stays, noncurrent).
	if err := createBucket(ctx, cl[0], "exp"); err != nil {
		t.Fatal(err)
	}
	if _, err := cl[1].PutBucketVersioning(ctx, &s3.PutBucketVersioningInput{Bucket: aws.String("exp"),
		VersioningConfiguration: &types.VersioningConfiguration{Status: types.BucketVersioningStatusEnabled}}); err != nil {
		t.Fatal(err)
	}
	if _, err := cl[2].PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("exp"), Key: aws.String("z"), Body: bytes.NewReader(randomBytes(3, 5000))}); err != nil {
		t.Fatal(err)
	}
	if _, err := cl[0].PutBucketLifecycleConfiguration(ctx, &s3.PutBucketLifecycleConfigurationInput{Bucket: aws.String("exp"),
		LifecycleConfiguration: &types.BucketLifecycleConfiguration{Rules: []types.LifecycleRule{{
			ID: aws.String("cur"), Status: types.ExpirationStatusEnabled, Filter: &types.LifecycleRuleFilter{Prefix: aws.String("")},
			Expiration: &types.LifecycleExpiration{Days: aws.Int32(1)},
		}}}}); err != nil {
		t.Fatal(err)
	}
	versions := func(i int, b string) []string {
		var out []string
		for _, line := range versionmodel.ListAllVersions(t, cl[i], b, 100) {
			f := strings.Fields(line)
			out = append(out, f[0]+" "+f[2])
		}
		return versionmodel.SortedLines(out)
	}
	wantLocked := []string{"held marker=false", "k marker=false", "k marker=true", "mp marker=false"} // the locked k and the marker hiding it; the locked multipart object
	wantPlain := []string{"x marker=false"}
	wantExp := []string{"z marker=false", "z marker=true"}
	waitFor(ctx, t, "the lifecycle pass to expire the noncurrent versions", func() bool {
		return slices.Equal(versions(0, bucket), wantLocked) && slices.Equal(versions(0, "plain"), wantPlain) &&
			slices.Equal(versions(0, "exp"), wantExp)
	})
	for i := range c.Nodes {
		if got := versions(i, bucket); !slices.Equal(got, wantLocked) {
			t.Fatalf("versions through %s: %q, want %q", c.Nodes[i].ID, got, wantLocked)
		}
		out, err := cl[i].GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String("k"), VersionId: aws.String(compliance)})
		if err != nil {
			t.Fatalf("GET the locked version through %s: %v", c.Nodes[i].ID, err)
		}
		out.Body.Close()
	}
	if err := c.WaitConverged(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.Stop(); err != nil {
		t.Fatalf("stop: %v", err)
	}
	for _, b := range []string{bucket, "plain", "exp"} {
		first := fmt.Sprint(replicaVersions(t, c.Nodes[0].Data, b))
		for _, n := range c.Nodes[1:] {
			if got := fmt.Sprint(replicaVersions(t, n.Data, b)); got != first {
				t.Fatalf("%s: %s's store differs from %s's:\n%s\n%s", b, n.ID, c.Nodes[0].ID, got, first)
			}
		}
	}
}
