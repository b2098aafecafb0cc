package s3api

import (
	"bytes"
	"context"
	"encoding/xml"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	pvfs "github.com/cockroachdb/pebble/v2/vfs"
	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/b3-storage/b3/internal/checksum"
	"github.com/b3-storage/b3/internal/objstore"
	"github.com/b3-storage/b3/internal/vfs"
)

// formField is one field of a POST form, in order (names may repeat).
type formField struct{ name, value string }

// presignedPost returns the URL and the fields of a POST policy that
// minio-go signs (SigV4) for bucket/key; setup adds conditions.
func (e *testEnv) presignedPost(bucket, key string, setup func(*minio.PostPolicy) error) (*url.URL, []formField) {
	e.t.Helper()
	return e.presignedPostBy(rootUser, bucket, key, setup)
}

// presignedPostBy is presignedPost signed by user.
func (e *testEnv) presignedPostBy(user User, bucket, key string, setup func(*minio.PostPolicy) error) (*url.URL, []formField) {
	e.t.Helper()
	u, _ := url.Parse(e.ts.URL)
	mc, err := minio.New(u.Host, &minio.Options{Creds: credentials.NewStaticV4(user.AccessKey, user.SecretKey, ""), Region: testRegion})
	if err != nil {
		e.t.Fatal(err)
	}
	policy := minio.NewPostPolicy()
	for _, err := range []error{policy.SetBucket(bucket), policy.SetKey(key), policy.SetExpires(time.Now().Add(time.Hour))} {
		if err != nil {
			e.t.Fatal(err)
		}
	}
	if setup != nil {
		if err := setup(policy); err != nil {
			e.t.Fatal(err)
		}
	}
	target, fields, err := mc.PresignedPostPolicy(context.Background(), policy)
	if err != nil {
		e.t.Fatal(err)
	}
	var out []formField
	for k, v := range fields {
		out = append(out, formField{k, v})
	}
	return target, out
}

// postForm sends a multipart form: the fields in order, then the file
// (none if nil). chunked sends it without a Content-Length
// (Transfer-Encoding: chunked); host, if set, replaces the URL's in the
// Host header.
func (e *testEnv) postForm(target, host string, fields []formField, file io.Reader, chunked bool) (*http.Response, string) {
	e.t.Helper()
	pr, pw := io.Pipe()
	w := multipart.NewWriter(pw)
	go func() {
		for _, f := range fields {
			w.WriteField(f.name, f.value)
		}
		if file == nil {
			pw.CloseWithError(w.Close())
			return
		}
		fw, _ := w.CreateFormFile("file", "upload.txt")
		if _, err := io.Copy(fw, file); err != nil {
			pw.CloseWithError(err)
			return
		}
		pw.CloseWithError(w.Close())
	}()
	var body io.Reader = pr
	if !chunked {
		data, err := io.ReadAll(pr)
		if err != nil {
			e.t.Fatal(err)
		}
		body = bytes.NewReader(data)
	}
	req, _ := http.NewRequest("POST", target, body)
	req.Header.Set("Content-Type", w.FormDataContentType())
	if host != "" {
		req.Host = host
	}
	if chunked {
		req.TransferEncoding = []string{"chunked"}
	}
	return e.do(req)
}

// TestPostObject uploads through an HTML-form POST whose policy minio-go
// signs (SigV4), and checks the policy's conditions are enforced.
func TestPostObject(t *testing.T) {
	e := newEnv(t)
	e.mustCreateBucket("forms")
	post := func(key string, maxLen int64, file []byte, extra ...formField) (*http.Response, string) {
		target, fields := e.presignedPost("forms", key, func(p *minio.PostPolicy) error {
			if err := p.SetContentLengthRange(0, maxLen); err != nil {
				return err
			}
			return p.SetContentType("text/plain")
		})
		return e.postForm(target.String(), "", append(fields, extra...), bytes.NewReader(file), false)
	}
	resp, body := post("uploads/a.txt", 100, []byte("form data"))
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("post: %d %s", resp.StatusCode, body)
	}
	if got := string(e.mustGet("forms", "uploads/a.txt")); got != "form data" {
		t.Fatalf("posted object: %q", got)
	}
	head, err := e.store.HeadObject("forms", "uploads/a.txt")
	if err != nil || head.ContentType != "text/plain" {
		t.Fatalf("posted content type: %+v %v", head, err)
	}
	// A form without a checksum gets the default full-object CRC64NVME,
	// like every other upload path.
	if want := checksum.Encode(checksum.CRC64NVME.Sum([]byte("form data"))); head.ChecksumAlgorithm != "CRC64NVME" || head.Checksum != want || head.ChecksumType != "FULL_OBJECT" {
		t.Fatalf("posted checksum: %s %q %s, want CRC64NVME %q FULL_OBJECT", head.ChecksumAlgorithm, head.Checksum, head.ChecksumType, want)
	}
	resp, body = post("big.txt", 4, []byte("too large"))
	wantXMLError(t, resp, body, 400, "EntityTooLarge")
	e.assertAbsent("forms", "big.txt")
	resp, body = post("extra.txt", 100, []byte("x"), formField{"x-amz-meta-unsigned", "1"})
	wantXMLError(t, resp, body, 403, "AccessDenied")
	e.assertAbsent("forms", "extra.txt")

	// A policy failure's message quotes the condition; the quotes are
	// rendered as themselves, not as &#34;.
	target, fields := e.presignedPost("forms", "ct.txt", func(p *minio.PostPolicy) error { return p.SetContentType("text/plain") })
	for i := range fields {
		if fields[i].name == "Content-Type" {
			fields[i].value = "text/html"
		}
	}
	resp, body = e.postForm(target.String(), "", fields, strings.NewReader("x"), false)
	wantXMLError(t, resp, body, 403, "AccessDenied")
	if want := `<Message>Invalid according to Policy: Policy Condition failed: ["eq", "$content-type", "text/plain"]</Message>`; !strings.Contains(body, want) {
		t.Fatalf("error document: %s\nwant %s", body, want)
	}
}

// TestPostObjectFieldNamesFoldCase: field names are case-insensitive; a
// form naming one twice is refused, so the policy never checks one value
// while the other is stored (with Content-Type=image/png checked and
// content-type=text/html stored, a public bucket served HTML).
func TestPostObjectFieldNamesFoldCase(t *testing.T) {
	e := newEnv(t)
	e.mustCreateBucket("forms")
	for _, tc := range []struct {
		name  string
		setup func(*minio.PostPolicy) error
		added formField
	}{
		{"content-type", func(p *minio.PostPolicy) error { return p.SetContentType("image/png") }, formField{"content-type", "text/html"}},
		{"content-type upper", func(p *minio.PostPolicy) error { return p.SetContentType("image/png") }, formField{"CONTENT-TYPE", "image/png"}},
		{"redirect", func(p *minio.PostPolicy) error { return p.SetSuccessActionRedirect("https://ok.example/") },
			formField{"Success_Action_Redirect", "https://evil.example/"}},
		{"tagging", func(p *minio.PostPolicy) error {
			return p.SetTagging(`<Tagging><TagSet><Tag><Key>a</Key><Value>1</Value></Tag></TagSet></Tagging>`)
		}, formField{"Tagging", `<Tagging><TagSet><Tag><Key>a</Key><Value>2</Value></Tag></TagSet></Tagging>`}},
		{"key", nil, formField{"KEY", "other"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			target, fields := e.presignedPost("forms", "dup", tc.setup)
			resp, body := e.postForm(target.String(), "", append(fields, tc.added), strings.NewReader("<html>"), false)
			wantXMLError(t, resp, body, 400, "InvalidArgument")
			e.assertAbsent("forms", "dup")
			e.assertAbsent("forms", "other")
		})
	}
	// One field, named in any case, is the one checked and stored.
	target, fields := e.presignedPost("forms", "png", func(p *minio.PostPolicy) error { return p.SetContentType("image/png") })
	for i, f := range fields {
		if strings.EqualFold(f.name, "content-type") {
			fields[i].name = "CONTENT-type"
		}
	}
	if resp, body := e.postForm(target.String(), "", fields, strings.NewReader("png"), false); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("post: %d %s", resp.StatusCode, body)
	}
	if head, err := e.store.HeadObject("forms", "png"); err != nil || head.ContentType != "image/png" {
		t.Fatalf("stored: %+v %v", head, err)
	}
}

// TestPostObjectSizeStreams: content-length-range, the object size limit
// and the free-space reserve hold while the file streams, plain or
// chunked: the upload is refused before the excess reaches the segments,
// and nothing is stored.
func TestPostObjectSizeStreams(t *testing.T) {
	const maxObject = 2 << 20
	e := newEnv(t, func(c *Config) { c.MaxObjectSize = maxObject })
	e.mustCreateBucket("forms")
	e.mustCreatePublicBucket("open", types.BucketCannedACLPublicReadWrite)
	written := func() int64 { return e.store.Blob().Stats().BytesAppended }
	for _, chunked := range []bool{false, true} {
		t.Run(fmt.Sprintf("chunked=%v", chunked), func(t *testing.T) {
			before := written()
			target, fields := e.presignedPost("forms", "ranged", func(p *minio.PostPolicy) error { return p.SetContentLengthRange(0, 1024) })
			resp, body := e.postForm(target.String(), "", fields, zeros(3<<20), chunked)
			wantXMLError(t, resp, body, 400, "EntityTooLarge")
			e.assertAbsent("forms", "ranged")
			if n := written() - before; n > 0 {
				t.Fatalf("a refused 3 MiB POST against a 1 KiB range wrote %d bytes to the segments", n)
			}

			// Anonymous, to a public-read-write bucket, past the object
			// size limit.
			before = written()
			resp, body = e.postForm(e.ts.URL+"/open", "", []formField{{"key", "huge"}}, zeros(3*maxObject), chunked)
			wantXMLError(t, resp, body, 400, "EntityTooLarge")
			e.assertAbsent("open", "huge")
			if n := written() - before; n > maxObject+64<<10 { // record headers
				t.Fatalf("a refused POST past the %d-byte limit wrote %d bytes", maxObject, n)
			}
		})
	}
}

// TestPostObjectFreeSpaceReserve: a chunked POST (no length to reserve up
// front) is refused once its bytes would cut into the free-space reserve,
// before they are written. The segment disk reports a fixed free space
// (the real one changes as other processes write) and the metadata lives
// in memory (no report), so the room above the reserve is exact.
func TestPostObjectFreeSpaceReserve(t *testing.T) {
	const room = 16 << 20
	e := newRoomEnv(t, room)
	before := e.store.Blob().Stats().BytesAppended
	resp, body := e.postForm(e.ts.URL+"/open", "", []formField{{"key", "full"}}, zeros(4*room), true)
	wantXMLError(t, resp, body, http.StatusInsufficientStorage, "InsufficientStorage")
	e.assertAbsent("open", "full")
	if n := e.store.Blob().Stats().BytesAppended - before; n > room+64<<10 { // record headers
		t.Fatalf("a POST refused for space wrote %d bytes, room was %d", n, room)
	}
	// Within the room, it is stored.
	if resp, body := e.postForm(e.ts.URL+"/open", "", []formField{{"key", "fits"}}, zeros(room/4), true); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("POST within the room: %d %s", resp.StatusCode, body)
	}
}

// newRoomEnv is an environment whose disks have exactly room bytes above
// the free-space reserve, with a public-read-write bucket "open": the
// segment disk reports a fixed free space (the real one changes as other
// processes write) and the metadata lives in memory (no report).
func newRoomEnv(t *testing.T, room int64) *testEnv {
	const free = 1 << 30
	e := newEnvStore(t, func(o *objstore.Options) {
		o.FS = fixedFreeFS{FS: vfs.Default, free: free}
		o.MetaFS = pvfs.NewMem()
		o.MinFreeBytes = free - room
	})
	e.mustCreatePublicBucket("open", types.BucketCannedACLPublicReadWrite)
	return e
}

// fixedFreeFS is the real disk reporting a fixed free space.
type fixedFreeFS struct {
	vfs.FS
	free int64
}

func (f fixedFreeFS) FreeSpace(string) (int64, error) { return f.free, nil }

func zeros(n int) io.Reader { return io.LimitReader(zeroReader{}, int64(n)) }

type zeroReader struct{}

func (zeroReader) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// TestPostObjectResponse: the 201 document and Location header carry the
// object's absolute URL, path- or virtual-host-style as requested; a form
// without a file, or with an empty unnamed one, is MalformedPOSTRequest.
func TestPostObjectResponse(t *testing.T) {
	e := newEnv(t)
	e.mustCreateBucket("forms")
	target, fields := e.presignedPost("forms", "dir/a b.txt", func(p *minio.PostPolicy) error { return p.SetSuccessStatusAction("201") })
	host := strings.TrimPrefix(e.ts.URL, "http://")
	check := func(resp *http.Response, body, want string) {
		t.Helper()
		var doc struct{ Location, Bucket, Key string }
		if resp.StatusCode != http.StatusCreated || xml.Unmarshal([]byte(body), &doc) != nil {
			t.Fatalf("post: %d %s", resp.StatusCode, body)
		}
		if doc.Location != want || resp.Header.Get("Location") != want || doc.Bucket != "forms" || doc.Key != "dir/a b.txt" {
			t.Fatalf("Location %q (header %q), want %q; %+v", doc.Location, resp.Header.Get("Location"), want, doc)
		}
	}
	resp, body := e.postForm(target.String(), "", fields, strings.NewReader("x"), false)
	check(resp, body, "http://"+host+"/forms/dir/a%20b.txt")

	// Virtual-host style: the bucket is in the Host (domain s3.test).
	resp, body = e.postForm(e.ts.URL+"/", "forms.s3.test", fields, strings.NewReader("x"), false)
	check(resp, body, "http://forms.s3.test/dir/a%20b.txt")

	resp, body = e.postForm(target.String(), "", fields, nil, false)
	wantXMLError(t, resp, body, 400, "MalformedPOSTRequest")
	// A file field with no file chosen: no name, no bytes.
	resp, body = e.postForm(target.String(), "", append(fields, formField{"file", ""}), nil, false)
	wantXMLError(t, resp, body, 400, "MalformedPOSTRequest")
	// An empty file with a name is an empty object.
	target, fields = e.presignedPost("forms", "empty.txt", nil)
	resp, body = e.postForm(target.String(), "", fields, strings.NewReader(""), false)
	if resp.StatusCode != http.StatusNoContent || len(e.mustGet("forms", "empty.txt")) != 0 {
		t.Fatalf("empty file: %d %s", resp.StatusCode, body)
	}
}

// TestBoto3PostPolicyOperatorCase: boto3's presigned POST with condition
// operators in mixed case (["StArTs-WiTh", "$KeY", "foo/"]), which AWS
// folds: a key that meets the condition is stored, one that does not is
// refused; and the 201 and 204 answers echo the checksum the form gave.
func TestBoto3PostPolicyOperatorCase(t *testing.T) {
	e := newEnv(t)
	e.mustCreateBucket("forms")
	for _, tc := range []struct{ key, status, want string }{
		{"foo/a.txt", "201", "201 crc"},
		{"foo/b.txt", "204", "204 crc"},
		{"bar/c.txt", "204", "403 none"},
	} {
		got := e.boto3(`
import base64, zlib, requests
body = b"form body"
crc = base64.b64encode(zlib.crc32(body).to_bytes(4, "big")).decode()
fields = {"x-amz-checksum-crc32": crc, "success_action_status": "` + tc.status + `"}
post = client().generate_presigned_post("forms", "` + tc.key + `", Fields=fields,
    Conditions=[["StArTs-WiTh", "$KeY", "foo/"], {"x-amz-checksum-crc32": crc}, {"success_action_status": "` + tc.status + `"}])
r = requests.post(post["url"], data=post["fields"], files={"file": ("f.txt", body)})
print(r.status_code, "crc" if r.headers.get("x-amz-checksum-crc32") == crc else "none")
`)
		if got != tc.want {
			t.Errorf("POST %s: got %q, want %q", tc.key, got, tc.want)
		}
	}
	if got := string(e.mustGet("forms", "foo/a.txt")); got != "form body" {
		t.Fatalf("stored %q", got)
	}
	e.assertAbsent("forms", "bar/c.txt")
}
