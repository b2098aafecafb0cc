package s3api

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/b3-storage/b3/internal/objstore"
)

// TestVersionIDCodec: a client's id is one per version and opaque (the
// engine's consecutive counters do not show), "null" stays, and only ids
// made with the key are read: the engine's own form, a neighbour's id with
// one digit changed and another key's ids are refused.
func TestVersionIDCodec(t *testing.T) {
	c, other := newVersionCodec([]byte("key one")), newVersionCodec([]byte("key two"))
	hexID := regexp.MustCompile(`^[0-9a-f]{32}$`)
	seen := map[string]bool{}
	for v := uint64(1); v <= 1000; v++ {
		engine := fmt.Sprintf("%016x", v)
		id := c.encode(engine)
		if !hexID.MatchString(id) || seen[id] || strings.Contains(id, engine[8:]) {
			t.Fatalf("version %d: id %q (repeated or showing the counter)", v, id)
		}
		seen[id] = true
		if back, err := c.decode(id); err != nil || back != engine {
			t.Fatalf("version %d: %q decodes to %q, %v", v, id, back, err)
		}
		if _, err := other.decode(id); err == nil {
			t.Fatalf("version %d: another key reads %q", v, id)
		}
		flipped := []byte(id)
		flipped[v%32] = "0123456789abcdef"[(strings.IndexByte("0123456789abcdef", flipped[v%32])+1)%16]
		if _, err := c.decode(string(flipped)); err == nil {
			t.Fatalf("version %d: a changed id %q is accepted", v, flipped)
		}
	}
	if got := c.encode("null"); got != "null" {
		t.Fatalf("null encodes as %q", got)
	}
	if got, err := c.decode("null"); got != "null" || err != nil {
		t.Fatalf("null decodes as %q, %v", got, err)
	}
	// One spelling per id: its uppercase (or any letter of it in
	// uppercase) is refused as any invalid id is (review finding 7).
	id := c.encode("0000000000000001")
	upper := strings.ToUpper(id)
	oneUpper := []byte(id)
	for i, ch := range oneUpper {
		if ch >= 'a' && ch <= 'f' {
			oneUpper[i] -= 'a' - 'A'
			break
		}
	}
	if upper == id || string(oneUpper) == id {
		t.Fatalf("id %q has no letter", id)
	}
	for _, bad := range []string{"", "0000000000000001", strings.Repeat("0", 32), strings.Repeat("g", 32), "NULL", id + "0", upper, string(oneUpper)} {
		if _, err := c.decode(bad); err != objstore.ErrInvalidVersionID {
			t.Errorf("%q: %v, want ErrInvalidVersionID", bad, err)
		}
	}
	if newVersionCodec([]byte("key one")).encode("0000000000000007") != c.encode("0000000000000007") {
		t.Fatal("the same key gives another id")
	}
}

// TestGuessedVersionIDsRefused: the ids of a store's versions cannot be
// guessed from their order: the engine's counter, which named them
// before, is refused as a malformed version id, on GET, DELETE, a copy
// source, DeleteObjects and the listing's marker; the ids the store hands
// out work everywhere.
func TestGuessedVersionIDsRefused(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	ids := e.putVersions("guess", "k", "first", "second")
	for _, id := range ids {
		if len(id) != 32 || strings.HasPrefix(id, "0000") {
			t.Fatalf("version id %q", id)
		}
	}
	for _, guess := range []string{"0000000000000001", "0000000000000002", e.engineID(ids[0]), strings.ToUpper(ids[0])} {
		req := e.signedRequest(rootUser, "GET", "/guess/k?versionId="+guess, nil, "", nil)
		resp, body := e.do(req)
		wantXMLError(t, resp, body, http.StatusBadRequest, "InvalidArgument")
		req = e.signedRequest(rootUser, "DELETE", "/guess/k?versionId="+guess, nil, "", nil)
		resp, body = e.do(req)
		wantXMLError(t, resp, body, http.StatusBadRequest, "InvalidArgument")
		_, err := e.root().CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String("guess"), Key: aws.String("copy"), CopySource: aws.String("guess/k?versionId=" + guess)})
		wantCode(t, err, "InvalidArgument")
		out, err := e.root().DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: aws.String("guess"), Delete: &types.Delete{
			Objects: []types.ObjectIdentifier{{Key: aws.String("k"), VersionId: aws.String(guess)}}}})
		if err != nil || len(out.Errors) != 1 || aws.ToString(out.Errors[0].Code) != "NoSuchVersion" {
			t.Fatalf("DeleteObjects of %s: %+v %v", guess, out, err)
		}
		_, err = e.root().ListObjectVersions(ctx, &s3.ListObjectVersionsInput{Bucket: aws.String("guess"), KeyMarker: aws.String("k"), VersionIdMarker: aws.String(guess)})
		wantCode(t, err, "InvalidArgument")
	}
	if got := string(e.mustGetVersion("guess", "k", ids[0])); got != "first" {
		t.Fatalf("version 1 holds %q", got)
	}
	res, err := e.root().ListObjectVersions(ctx, &s3.ListObjectVersionsInput{Bucket: aws.String("guess"), MaxKeys: aws.Int32(1)})
	if err != nil || len(res.Versions) != 1 || aws.ToString(res.Versions[0].VersionId) != ids[1] || aws.ToString(res.NextVersionIdMarker) != ids[1] {
		t.Fatalf("first page: %+v %v", res, err)
	}
	res, err = e.root().ListObjectVersions(ctx, &s3.ListObjectVersionsInput{Bucket: aws.String("guess"), MaxKeys: aws.Int32(1),
		KeyMarker: res.NextKeyMarker, VersionIdMarker: res.NextVersionIdMarker})
	if err != nil || len(res.Versions) != 1 || aws.ToString(res.Versions[0].VersionId) != ids[0] {
		t.Fatalf("second page: %+v %v", res, err)
	}
	del, err := e.root().DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("guess"), Key: aws.String("k")})
	if err != nil || len(aws.ToString(del.VersionId)) != 32 {
		t.Fatalf("delete marker: %+v %v", del, err)
	}
	if _, err := e.root().DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("guess"), Key: aws.String("k"), VersionId: del.VersionId}); err != nil {
		t.Fatalf("delete the marker by its id: %v", err)
	}
}

// mustGetVersion reads one version's bytes.
func (e *testEnv) mustGetVersion(bucket, key, version string) []byte {
	e.t.Helper()
	out, err := e.root().GetObject(context.Background(), &s3.GetObjectInput{Bucket: &bucket, Key: &key, VersionId: &version})
	if err != nil {
		e.t.Fatalf("get %s/%s version %s: %v", bucket, key, version, err)
	}
	defer out.Body.Close()
	data, _ := io.ReadAll(out.Body)
	return data
}
