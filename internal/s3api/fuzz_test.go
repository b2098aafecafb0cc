package s3api

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
)

// The request documents a client controls are parsed without panicking,
// and a document either parses or is an S3 client error (4xx).

func wantClientError(t *testing.T, err error) {
	t.Helper()
	if err == nil {
		return
	}
	var e *APIError
	if !errors.As(err, &e) || e.Status < 400 || e.Status >= 500 {
		t.Fatalf("want a 4xx APIError, got %v", err)
	}
}

func FuzzCompleteMultipartUpload(f *testing.F) {
	for _, seed := range []string{
		`<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>"a"</ETag></Part><Part><PartNumber>2</PartNumber><ETag>b</ETag></Part></CompleteMultipartUpload>`,
		`<CompleteMultipartUpload xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Part><ETag>x</ETag><PartNumber>10000</PartNumber><ChecksumCRC32>AAAAAA==</ChecksumCRC32></Part></CompleteMultipartUpload>`,
		`<CompleteMultipartUpload><Part><PartNumber>2</PartNumber></Part><Part><PartNumber>1</PartNumber></Part></CompleteMultipartUpload>`,
		`<CompleteMultipartUpload><Part><PartNumber>-1</PartNumber></Part></CompleteMultipartUpload>`,
		`<CompleteMultipartUpload>`, ``, `<a/>`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		req, err := parseCompleteRequest(data)
		wantClientError(t, err)
		if err != nil {
			return
		}
		prev := 0
		for _, p := range req.Parts {
			if p.PartNumber <= prev || p.PartNumber > 10000 {
				t.Fatalf("accepted part list out of order or range: %+v", req.Parts)
			}
			prev = p.PartNumber
		}
	})
}

func FuzzDeleteObjects(f *testing.F) {
	for _, seed := range []string{
		`<Delete><Quiet>true</Quiet><Object><Key>a</Key></Object><Object><Key>b</Key><VersionId>null</VersionId></Object></Delete>`,
		`<Delete xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Object><Key>&lt;x&gt;</Key></Object></Delete>`,
		`<Delete></Delete>`, `<Delete><Object>`, `garbage`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		req, err := parseDeleteRequest(data)
		wantClientError(t, err)
		if err == nil && (len(req.Objects) == 0 || len(req.Objects) > maxDeleteObjects) {
			t.Fatalf("accepted %d objects", len(req.Objects))
		}
	})
}

func FuzzCORSConfiguration(f *testing.F) {
	for _, seed := range []string{
		`<CORSConfiguration><CORSRule><AllowedOrigin>https://*.example.com</AllowedOrigin><AllowedMethod>GET</AllowedMethod><AllowedHeader>*</AllowedHeader><MaxAgeSeconds>10</MaxAgeSeconds></CORSRule></CORSConfiguration>`,
		`<CORSConfiguration><CORSRule><AllowedOrigin>**</AllowedOrigin><AllowedMethod>GET</AllowedMethod></CORSRule></CORSConfiguration>`,
		`<CORSConfiguration><CORSRule><AllowedOrigin>*</AllowedOrigin><AllowedMethod>PATCH</AllowedMethod></CORSRule></CORSConfiguration>`,
		`<CORSConfiguration/>`, `<CORSConfiguration>`,
	} {
		f.Add([]byte(seed), "https://www.example.com", "GET", "x-amz-date")
	}
	f.Fuzz(func(t *testing.T, data []byte, origin, method, header string) {
		conf, err := parseCORS(data)
		wantClientError(t, err)
		if err != nil {
			return
		}
		if r := conf.match(origin, method, []string{header}); r != nil && len(r.AllowedMethods) == 0 {
			t.Fatal("matched a rule without methods")
		}
	})
}

func FuzzTagging(f *testing.F) {
	for _, seed := range []string{
		`<Tagging><TagSet><Tag><Key>a</Key><Value>1</Value></Tag></TagSet></Tagging>`,
		`<Tagging><TagSet><Tag><Key>a</Key><Value>1</Value></Tag><Tag><Key>a</Key><Value>2</Value></Tag></TagSet></Tagging>`,
		`<Tagging><TagSet><Tag><Key></Key></Tag></TagSet></Tagging>`,
		`<Tagging>`, ``,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		tags, err := parseTaggingXML(data, maxTagsPerObject)
		wantClientError(t, err)
		if err == nil && len(tags) > maxTagsPerObject {
			t.Fatalf("accepted %d tags", len(tags))
		}
	})
}

func FuzzRange(f *testing.F) {
	for _, seed := range []string{"bytes=0-0", "bytes=-1", "bytes=5-", "bytes=9-3", "bytes=0-1,2-3", "bytes=x-y", "bytes=-0"} {
		f.Add(seed, int64(10))
	}
	f.Fuzz(func(t *testing.T, header string, size int64) {
		if size < 0 {
			size = -size
		}
		if size < 0 {
			return
		}
		r, ok, err := parseRange(header, size)
		wantClientError(t, err)
		if ok && (r.off < 0 || r.n <= 0 || r.off+r.n > size) {
			t.Fatalf("range %q on %d bytes: %+v", header, size, r)
		}
	})
}

// FuzzPostForm parses a raw POST object request off the wire (plain or
// Transfer-Encoding: chunked) and streams its file through the size bound:
// no panic; a form either fails with a 4xx or yields unique lower-case
// field names, and the bound never lets more than max bytes through.
func FuzzPostForm(f *testing.F) {
	const max = 16
	form := func(te string, fields ...string) string {
		var body strings.Builder
		for i := 0; i+1 < len(fields); i += 2 {
			fmt.Fprintf(&body, "--B\r\nContent-Disposition: form-data; name=%q\r\n\r\n%s\r\n", fields[i], fields[i+1])
		}
		body.WriteString("--B\r\nContent-Disposition: form-data; name=\"file\"; filename=\"f\"\r\n\r\nfile data\r\n--B--\r\n")
		head := "POST /bucket HTTP/1.1\r\nHost: s3.test\r\nContent-Type: multipart/form-data; boundary=B\r\n"
		if te == "chunked" {
			return head + "Transfer-Encoding: chunked\r\n\r\n" + fmt.Sprintf("%x\r\n%s\r\n0\r\n\r\n", body.Len(), body.String())
		}
		return head + fmt.Sprintf("Content-Length: %d\r\n\r\n%s", body.Len(), body.String())
	}
	for _, seed := range []string{
		form("", "key", "k", "Content-Type", "image/png"),
		form("", "key", "k", "Content-Type", "image/png", "content-type", "text/html"),
		form("chunked", "key", "k", "success_action_redirect", "https://a/", "SUCCESS_ACTION_REDIRECT", "https://b/"),
		form("chunked", "Key", "k", "KEY", "k2"),
		form("chunked", "key", "k", "tagging", "<Tagging/>", "Tagging", "<Tagging/>"),
		form("chunked"),
		"POST /bucket HTTP/1.1\r\nHost: s3.test\r\nContent-Type: multipart/form-data; boundary=B\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n--B\r\n\r\n",
		"POST /bucket HTTP/1.1\r\nHost: s3.test\r\nContent-Type: multipart/form-data; boundary=B\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffff\r\n",
		"POST /bucket HTTP/1.1\r\nHost: s3.test\r\nContent-Type: text/plain\r\nContent-Length: 3\r\n\r\nabc",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, wire []byte) {
		r, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(wire)))
		if err != nil {
			return
		}
		fields, file, err := readPostForm(&request{Request: r})
		wantClientError(t, err)
		if err != nil {
			return
		}
		if file == nil {
			t.Fatal("no error and no file")
		}
		for name := range fields {
			if name != strings.ToLower(name) {
				t.Fatalf("field %q kept in its case", name)
			}
		}
		bounded := &boundedBody{src: file.body, max: max, tooLarge: errEntityTooLarge,
			space: &spaceLease{reserve: func(int64) (func(), error) { return func() {}, nil }}}
		if n, err := io.Copy(io.Discard, bounded); n > max {
			t.Fatalf("bound let %d bytes through (max %d), err %v", n, max, err)
		}
	})
}

// FuzzAccessControlPolicy: an AccessControlPolicy body (PutBucketAcl,
// PutObjectAcl) parses into grants of known permissions and grantees, or
// is a client error; x-amz-grant-* headers likewise.
func FuzzAccessControlPolicy(f *testing.F) {
	otherID := CanonicalID(otherUser.AccessKey)
	for _, seed := range []string{
		`<AccessControlPolicy xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Owner><ID>` + otherID + `</ID></Owner><AccessControlList><Grant><Grantee xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:type="CanonicalUser"><ID>` + otherID + `</ID></Grantee><Permission>FULL_CONTROL</Permission></Grant></AccessControlList></AccessControlPolicy>`,
		`<AccessControlPolicy><AccessControlList><Grant><Grantee xsi:type="Group"><URI>http://acs.amazonaws.com/groups/global/AllUsers</URI></Grantee><Permission>READ</Permission></Grant><Grant><Grantee xsi:type="AmazonCustomerByEmail"><EmailAddress>other@example.com</EmailAddress></Grantee><Permission>WRITE_ACP</Permission></Grant></AccessControlList></AccessControlPolicy>`,
		`<AccessControlPolicy><AccessControlList><Grant><Grantee><ID>nobody</ID></Grantee><Permission>READ</Permission></Grant></AccessControlList></AccessControlPolicy>`,
		`<AccessControlPolicy><AccessControlList><Grant><Permission>READ</Permission></Grant></AccessControlList></AccessControlPolicy>`,
		`<AccessControlPolicy>`, ``, `<a/>`,
	} {
		f.Add([]byte(seed), `id="`+otherID+`", uri="http://acs.amazonaws.com/groups/global/AuthenticatedUsers"`)
	}
	s := New(nil, Config{Users: []User{rootUser, otherUser}})
	f.Fuzz(func(t *testing.T, data []byte, header string) {
		for _, parse := range []func() (aclRequest, error){
			func() (aclRequest, error) { return s.aclFromDocument(data) },
			func() (aclRequest, error) {
				return s.aclFromHeaders(http.Header{"X-Amz-Grant-Read": {header}})
			},
		} {
			r, err := parse()
			wantClientError(t, err)
			if err != nil {
				continue
			}
			grants, err := r.resolve(rootUser.AccessKey, rootUser.AccessKey)
			if err != nil {
				t.Fatalf("resolve: %v", err)
			}
			for _, g := range grants {
				if g.Permission == "" || g.Grantee == "" {
					t.Fatalf("empty grant %+v", g)
				}
			}
		}
	})
}
