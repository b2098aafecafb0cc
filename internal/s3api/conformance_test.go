package s3api

import (
	"net/http"
	"testing"
)

// TestConformanceEdges covers answers an S3 conformance suite checks and
// that b3 once got wrong: each request, its status and S3 code, and that a
// refused DELETE left the object in place.
func TestConformanceEdges(t *testing.T) {
	e := newEnv(t)
	e.mustCreateBucket("edge")
	e.mustPut("edge", "obj", []byte("0123456789"))

	for _, tc := range []struct {
		name, method, path string
		header             http.Header
		status             int
		code               string
	}{
		{"delete with a version id", "DELETE", "/edge/obj?versionId=abc", nil, 400, "InvalidArgument"},
		{"get with a version id", "GET", "/edge/obj?versionId=123", nil, 400, "InvalidArgument"},
		{"head with a version id", "HEAD", "/edge/obj?versionId=123", nil, 400, ""},
		{"partNumber with Range", "GET", "/edge/obj?partNumber=1", http.Header{"Range": {"bytes=0-1"}}, 400, "InvalidRequest"},
		{"partNumber past the last part", "GET", "/edge/obj?partNumber=2", nil, 416, "InvalidPartNumber"},
		{"list-type 3", "GET", "/edge?list-type=3", nil, 400, "InvalidArgument"},
		{"continuation token b3 did not issue", "GET", "/edge?list-type=2&continuation-token=enp6", nil, 400, "InvalidArgument"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := e.do(e.signedRequest(rootUser, tc.method, tc.path, nil, "", tc.header))
			if tc.method == "HEAD" {
				if resp.StatusCode != tc.status {
					t.Fatalf("status %d, want %d", resp.StatusCode, tc.status)
				}
				return
			}
			wantXMLError(t, resp, body, tc.status, tc.code)
		})
	}
	// The refused DELETE removed nothing; versionId=null is the object itself.
	if got := string(e.mustGet("edge", "obj")); got != "0123456789" {
		t.Fatalf("object after refused delete: %q", got)
	}
	resp, _ := e.do(e.signedRequest(rootUser, "GET", "/edge/obj?versionId=null", nil, "", nil))
	if resp.StatusCode != 200 {
		t.Fatalf("GET ?versionId=null: %d", resp.StatusCode)
	}
	resp, _ = e.do(e.signedRequest(rootUser, "DELETE", "/edge/obj?versionId=null", nil, "", nil))
	if resp.StatusCode != 204 {
		t.Fatalf("DELETE ?versionId=null: %d", resp.StatusCode)
	}
	e.assertAbsent("edge", "obj")
}
