// Package versionmodel is the model of S3 versioning that tests check a
// server against: a random history of PUTs, DELETEs and versioning state
// changes made through the AWS SDK (Model.Step), and what GET, GET by
// version ID and ListObjectVersions must then return (CheckKey,
// CheckListing), by AWS's documented rules. A single server's tests
// (package s3api) and a cluster's (test/cluster) share it; it imports no
// b3 package, so either may use it.
package versionmodel

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
)

// Model holds a bucket's versions by AWS's documented rules (Using
// versioning in S3 buckets; Working with objects in a versioning-suspended
// bucket), newest first per key: the model a random history of writes
// through the S3 API is checked against, by a single server's tests and a
// cluster's alike.
type Model struct {
	State string // "", Enabled, Suspended
	Keys  map[string][]Version
}

// Version is one version of a key as AWS's rules say it must be.
type Version struct {
	ID     string // as the server reported it when it was made
	Marker bool
	Data   string
}

// New returns the model of an empty bucket that never had
// versioning.
func New() *Model {
	return &Model{Keys: map[string][]Version{}}
}

// removeNull drops the key's null version, wherever it is.
func (m *Model) removeNull(key string) {
	m.Keys[key] = slices.DeleteFunc(m.Keys[key], func(v Version) bool { return v.ID == "null" })
}

// Put records a PUT that made version id.
func (m *Model) Put(key, id, data string) {
	if m.State != "Enabled" {
		m.removeNull(key)
	}
	m.Keys[key] = append([]Version{{ID: id, Data: data}}, m.Keys[key]...)
}

// DeleteLatest records a DELETE without a version ID that made the delete
// marker id (none without versioning).
func (m *Model) DeleteLatest(key, id string) {
	switch m.State {
	case "":
		m.removeNull(key)
		return
	case "Suspended":
		m.removeNull(key)
	}
	m.Keys[key] = append([]Version{{ID: id, Marker: true}}, m.Keys[key]...)
}

// DeleteVersion records a DELETE of version id; it reports whether the
// model had it, and whether it was a delete marker.
func (m *Model) DeleteVersion(key, id string) (marker, found bool) {
	for i, v := range m.Keys[key] {
		if v.ID == id {
			m.Keys[key] = slices.Delete(m.Keys[key], i, i+1)
			return v.Marker, true
		}
	}
	return false, false
}

// Listing renders the model as ListObjectVersions must list it (see
// ListAllVersions).
func (m *Model) Listing() []string {
	keys := make([]string, 0, len(m.Keys))
	for k := range m.Keys {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var out []string
	for _, k := range keys {
		for i, v := range m.Keys[k] {
			out = append(out, fmt.Sprintf("%s %s marker=%v latest=%v", k, v.ID, v.Marker, i == 0))
		}
	}
	return out
}

// Step makes one random operation of a history through c — a PUT (one in
// four past the inline limit), a DELETE with or without a version ID, or
// a change of the versioning state — checks what the server answered
// against the model and records it there. It returns the key it touched
// (and "" for a step that did nothing) and what it did.
func (m *Model) Step(t testing.TB, c *s3.Client, rng *rand.Rand, bucket string, keys []string, label string) (key, what string) {
	t.Helper()
	ctx := context.Background()
	key = keys[rng.IntN(len(keys))]
	switch op := rng.IntN(20); {
	case op < 8:
		data := fmt.Sprintf("%s-%s", key, label)
		if rng.IntN(4) == 0 {
			data = strings.Repeat(data, 200) // past the inline limit: segment records
		}
		out, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: strings.NewReader(data)})
		if err != nil {
			t.Fatal(err)
		}
		id := aws.ToString(out.VersionId)
		switch m.State {
		case "", "Suspended":
			// The null version; AWS's PutObject answer names no
			// version then (its "Versioning suspended" sample).
			if id != "" {
				t.Fatalf("PUT in a bucket with versioning %q reported version %q", m.State, id)
			}
			id = "null"
		default:
			if id == "" || id == "null" {
				t.Fatalf("PUT in a versioned bucket reported version %q", id)
			}
		}
		m.Put(key, id, data)
		return key, "put " + key
	case op < 12:
		out, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
		if err != nil {
			t.Fatal(err)
		}
		id := aws.ToString(out.VersionId)
		if m.State != "" && (!aws.ToBool(out.DeleteMarker) || id == "" || (m.State == "Suspended") != (id == "null")) {
			t.Fatalf("DELETE in a %s bucket: marker %v version %q", m.State, aws.ToBool(out.DeleteMarker), id)
		}
		m.DeleteLatest(key, id)
		return key, "delete " + key
	case op < 16 && len(m.Keys[key]) > 0:
		v := m.Keys[key][rng.IntN(len(m.Keys[key]))]
		if m.State == "" && v.ID != "null" {
			t.Fatalf("model holds a non-null version in an unversioned bucket")
		}
		out, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), VersionId: aws.String(v.ID)})
		if err != nil {
			t.Fatal(err)
		}
		wasMarker, _ := m.DeleteVersion(key, v.ID)
		if aws.ToBool(out.DeleteMarker) != wasMarker || aws.ToString(out.VersionId) != v.ID {
			t.Fatalf("DELETE version %s: marker %v version %q, want marker %v", v.ID, aws.ToBool(out.DeleteMarker), aws.ToString(out.VersionId), wasMarker)
		}
		return key, "delete version " + v.ID + " of " + key
	case op < 18:
		state := []types.BucketVersioningStatus{types.BucketVersioningStatusEnabled, types.BucketVersioningStatusSuspended}[rng.IntN(2)]
		if _, err := c.PutBucketVersioning(ctx, &s3.PutBucketVersioningInput{Bucket: aws.String(bucket),
			VersioningConfiguration: &types.VersioningConfiguration{Status: state}}); err != nil {
			t.Fatal(err)
		}
		m.State = string(state)
		return key, "versioning " + m.State
	}
	return "", ""
}

// CheckKey compares GET of key, and GET of each of its versions, through c
// with the model.
func (m *Model) CheckKey(t testing.TB, c *s3.Client, bucket, key, after string) {
	t.Helper()
	ctx := context.Background()
	vs := m.Keys[key]
	out, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	switch {
	case len(vs) == 0 || vs[0].Marker:
		if apiCode(err) != "NoSuchKey" {
			t.Fatalf("after %s: GET %s: %v, want NoSuchKey", after, key, err)
		}
		var re *awshttp.ResponseError
		if len(vs) > 0 && (!errors.As(err, &re) || re.Response.Header.Get("x-amz-delete-marker") != "true" ||
			re.Response.Header.Get("x-amz-version-id") != vs[0].ID) {
			t.Fatalf("after %s: GET %s of a delete marker lacks its headers: %v", after, key, err)
		}
	default:
		if err != nil {
			t.Fatalf("after %s: GET %s: %v", after, key, err)
		}
		body, _ := io.ReadAll(out.Body)
		out.Body.Close()
		id := aws.ToString(out.VersionId)
		if m.State == "" && vs[0].ID == "null" && id == "" {
			id = "null" // no versioning: no header, as S3
		}
		if string(body) != vs[0].Data || id != vs[0].ID {
			t.Fatalf("after %s: GET %s = %q version %q, want %q version %q", after, key, body, id, vs[0].Data, vs[0].ID)
		}
	}
	for _, v := range vs {
		out, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), VersionId: aws.String(v.ID)})
		if v.Marker {
			if apiCode(err) != "MethodNotAllowed" {
				t.Fatalf("after %s: GET marker %s of %s: %v", after, v.ID, key, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("after %s: GET version %s of %s: %v", after, v.ID, key, err)
		}
		body, _ := io.ReadAll(out.Body)
		out.Body.Close()
		if !bytes.Equal(body, []byte(v.Data)) {
			t.Fatalf("after %s: GET version %s of %s = %q, want %q", after, v.ID, key, body, v.Data)
		}
	}
}

// CheckListing compares the whole ListObjectVersions listing through c,
// paged by pageSize, with the model.
func (m *Model) CheckListing(t testing.TB, c *s3.Client, bucket string, pageSize int32, after string) {
	t.Helper()
	got := SortedLines(ListAllVersions(t, c, bucket, pageSize))
	if want := SortedLines(m.Listing()); !slices.Equal(got, want) {
		t.Fatalf("after %s: versions\n got %q\nwant %q", after, got, want)
	}
}

// ListAllVersions lists every version of bucket through c, paged by
// pageSize, as "key versionID marker=bool latest=bool".
func ListAllVersions(t testing.TB, c *s3.Client, bucket string, pageSize int32) []string {
	t.Helper()
	ctx := context.Background()
	var out []string
	in := &s3.ListObjectVersionsInput{Bucket: aws.String(bucket), MaxKeys: aws.Int32(pageSize)}
	for pages := 0; ; pages++ {
		if pages > 10000 {
			t.Fatal("ListObjectVersions does not end")
		}
		res, err := c.ListObjectVersions(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		n := len(out)
		for _, v := range res.Versions {
			out = append(out, fmt.Sprintf("%s %s marker=false latest=%v", aws.ToString(v.Key), aws.ToString(v.VersionId), aws.ToBool(v.IsLatest)))
		}
		for _, d := range res.DeleteMarkers {
			out = append(out, fmt.Sprintf("%s %s marker=true latest=%v", aws.ToString(d.Key), aws.ToString(d.VersionId), aws.ToBool(d.IsLatest)))
		}
		if len(out)-n > int(pageSize) {
			t.Fatalf("page of %d for max-keys %d", len(out)-n, pageSize)
		}
		if !aws.ToBool(res.IsTruncated) {
			return out
		}
		in.KeyMarker, in.VersionIdMarker = res.NextKeyMarker, res.NextVersionIdMarker
	}
}

// SortedLines returns list sorted: the SDK splits a page's versions from
// its delete markers, so listings are compared as sets (the order of one
// key's versions is checked by meta's tests, and latest= by the model).
func SortedLines(list []string) []string {
	out := slices.Clone(list)
	slices.Sort(out)
	return out
}

// apiCode returns the S3 error code of err ("" if none).
func apiCode(err error) string {
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) {
		return apiErr.ErrorCode()
	}
	return ""
}
