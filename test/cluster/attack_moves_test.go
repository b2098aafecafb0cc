package cluster_test

import (
	"bytes"
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/b3-storage/b3/internal/admin"
	"github.com/b3-storage/b3/internal/testutil"
)

// versionsOf lists every version and delete marker of bucket, one line
// each, in the listing's order.
func versionsOf(ctx context.Context, t *testing.T, cl *s3.Client, bucket string) []string {
	t.Helper()
	var out []string
	in := &s3.ListObjectVersionsInput{Bucket: aws.String(bucket), MaxKeys: aws.Int32(7)}
	for {
		page, err := cl.ListObjectVersions(ctx, in)
		if err != nil {
			t.Fatalf("list versions of %s: %v", bucket, err)
		}
		for _, v := range page.Versions {
			out = append(out, fmt.Sprintf("v %s %s latest=%v etag=%s", aws.ToString(v.Key), aws.ToString(v.VersionId), aws.ToBool(v.IsLatest), aws.ToString(v.ETag)))
		}
		for _, d := range page.DeleteMarkers {
			out = append(out, fmt.Sprintf("d %s %s latest=%v", aws.ToString(d.Key), aws.ToString(d.VersionId), aws.ToBool(d.IsLatest)))
		}
		if !aws.ToBool(page.IsTruncated) {
			break
		}
		in.KeyMarker, in.VersionIdMarker = page.NextKeyMarker, page.NextVersionIdMarker
	}
	sort.Strings(out) // a page puts versions before markers: compare as sets
	return out
}

// TestAttackGroupsMoveVersions: partitions go to g2 and back (drain,
// undrain) after a history of overwrites, deletes, delete markers,
// Object Lock retention and legal holds made on both groups. Each round
// trip keeps every version, marker, lock and hold exactly: no deleted
// object comes back, no acknowledged version is lost, a locked version
// still cannot be deleted.
func TestAttackGroupsMoveVersions(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	const lk, plain = "locked", "plain"
	const n = 40
	tg := startTwoGroups(t, func(c *testutil.Cluster) {
		cl := retrying(c.Client(0, 30*time.Second))
		if _, err := cl.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(lk), ObjectLockEnabledForBucket: aws.Bool(true)}); err != nil {
			t.Fatal(err)
		}
		if err := createBucket(ctx, cl, plain); err != nil {
			t.Fatal(err)
		}
		for i := range n {
			for _, b := range []string{lk, plain} {
				if _, err := cl.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(b), Key: aws.String(fmt.Sprintf("k%02d", i)),
					Body: bytes.NewReader(randomBytes(uint64(i), 2000+i*100))}); err != nil {
					t.Fatal(err)
				}
			}
		}
	})
	tg.waitBalanced(ctx, t)
	root := retrying(tg.g1.ClientOf(tg.routers[0], 30*time.Second))
	// The history, made with part of the keys in each group.
	want := map[string][]byte{} // plain: key → body, nil for deleted
	var lockedVersions, heldVersions []struct{ key, version string }
	for i := range n {
		key := fmt.Sprintf("k%02d", i)
		switch i % 4 {
		case 0: // overwritten
			body := randomBytes(uint64(100+i), 3000)
			if _, err := root.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(plain), Key: aws.String(key), Body: bytes.NewReader(body)}); err != nil {
				t.Fatal(err)
			}
			want[key] = body
			out, err := root.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(lk), Key: aws.String(key), Body: bytes.NewReader(body),
				ObjectLockMode: types.ObjectLockModeCompliance, ObjectLockRetainUntilDate: aws.Time(time.Now().Add(2 * time.Hour))})
			if err != nil {
				t.Fatal(err)
			}
			lockedVersions = append(lockedVersions, struct{ key, version string }{key, aws.ToString(out.VersionId)})
		case 1: // deleted
			if _, err := root.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(plain), Key: aws.String(key)}); err != nil {
				t.Fatal(err)
			}
			want[key] = nil
			if _, err := root.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(lk), Key: aws.String(key)}); err != nil {
				t.Fatal(err)
			}
		case 2: // deleted, then written again
			if _, err := root.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(plain), Key: aws.String(key)}); err != nil {
				t.Fatal(err)
			}
			body := randomBytes(uint64(200+i), 100)
			if _, err := root.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(plain), Key: aws.String(key), Body: bytes.NewReader(body)}); err != nil {
				t.Fatal(err)
			}
			want[key] = body
			if _, err := root.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(lk), Key: aws.String(key)}); err != nil {
				t.Fatal(err)
			}
			if _, err := root.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(lk), Key: aws.String(key), Body: bytes.NewReader(body)}); err != nil {
				t.Fatal(err)
			}
		case 3: // a legal hold on the only version; plain: unchanged
			want[key] = randomBytes(uint64(i), 2000+i*100)
			head, err := root.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(lk), Key: aws.String(key)})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := root.PutObjectLegalHold(ctx, &s3.PutObjectLegalHoldInput{Bucket: aws.String(lk), Key: aws.String(key), VersionId: head.VersionId,
				LegalHold: &types.ObjectLockLegalHold{Status: types.ObjectLockLegalHoldStatusOn}}); err != nil {
				t.Fatal(err)
			}
			heldVersions = append(heldVersions, struct{ key, version string }{key, aws.ToString(head.VersionId)})
		}
	}
	before := versionsOf(ctx, t, root, lk)
	check := func(when string) {
		t.Helper()
		for _, ep := range []string{tg.routers[1], tg.g1.Nodes[1].Endpoint()} {
			cl := retrying(tg.g1.ClientOf(ep, 30*time.Second))
			if got := versionsOf(ctx, t, cl, lk); strings.Join(got, "\n") != strings.Join(before, "\n") {
				t.Errorf("%s, through %s: the versions changed:\nbefore:\n%s\nnow:\n%s", when, ep, strings.Join(before, "\n"), strings.Join(got, "\n"))
			}
			for key, body := range want {
				got, err := getObject(ctx, cl, plain, key)
				switch {
				case body == nil && testutil.APICode(err) != "NoSuchKey":
					t.Errorf("%s, through %s: deleted %s: %d bytes, %v", when, ep, key, len(got), err)
				case body != nil && (err != nil || !bytes.Equal(got, body)):
					t.Errorf("%s, through %s: %s: %d bytes, %v", when, ep, key, len(got), err)
				}
			}
			for _, v := range lockedVersions {
				if _, err := cl.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(lk), Key: aws.String(v.key), VersionId: aws.String(v.version)}); err == nil {
					t.Errorf("%s, through %s: deleted the locked version %s of %s", when, ep, v.version, v.key)
				}
			}
			for _, v := range heldVersions {
				out, err := cl.GetObjectLegalHold(ctx, &s3.GetObjectLegalHoldInput{Bucket: aws.String(lk), Key: aws.String(v.key), VersionId: aws.String(v.version)})
				if err != nil || out.LegalHold == nil || out.LegalHold.Status != types.ObjectLockLegalHoldStatusOn {
					t.Errorf("%s, through %s: the legal hold of %s %s: %+v, %v", when, ep, v.key, v.version, out, err)
				}
				if _, err := cl.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(lk), Key: aws.String(v.key), VersionId: aws.String(v.version)}); err == nil {
					t.Errorf("%s, through %s: deleted the held version %s of %s", when, ep, v.version, v.key)
				}
			}
		}
	}
	check("balanced")
	rb := &admin.Client{Endpoint: tg.admin, Token: tg.g1.AdminToken}
	wait := func(what string, done func(admin.ClusterStatus) bool) {
		t.Helper()
		for {
			st, err := tg.status(ctx)
			if err == nil && st.Balanced && len(st.Moves) == 0 && done(st) {
				return
			}
			if ctx.Err() != nil {
				t.Fatalf("%s: %+v, %v", what, st, err)
			}
			time.Sleep(300 * time.Millisecond)
		}
	}
	if _, err := rb.DrainGroup(ctx, "g2", true); err != nil {
		t.Fatal(err)
	}
	wait("g2 drained", func(st admin.ClusterStatus) bool { return st.Groups[1].Partitions == 0 })
	check("g2 drained")
	if _, err := rb.DrainGroup(ctx, "g2", false); err != nil {
		t.Fatal(err)
	}
	wait("g2 back", func(st admin.ClusterStatus) bool { return st.Groups[1].Partitions > 0 })
	// The source's leftovers are swept every 10 s: reads go on meanwhile.
	check("g2 back")
	time.Sleep(12 * time.Second)
	check("g2 back, swept")
}
