package s3api

import (
	"go/ast"
	"go/parser"
	"go/token"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/b3-storage/b3/internal/meta"
)

// actionCase is one request of the operation table: how it is sent, the
// operation route picks, and the actions AWS documents for it ("Actions,
// resources, and condition keys for Amazon S3", and each API's
// Permissions section), without and with ?versionId.
type actionCase struct {
	method, path, query string
	header              string // "Name: value", or ""
	op                  string
	action, also        string // without versionId ("" action: never authorized, preAuth)
	// vAction, vAlso: with ?versionId=null on an object; vAction ""
	// means the operation ignores versionId (same actions as without).
	vAction, vAlso string
	// onVersioned, onVersionedAlso: without versionId on a bucket that
	// has (or had) versioning; "" means the same as action and also.
	onVersioned, onVersionedAlso string
}

// operationTable is every operation b3 routes. TestOperationActions fails
// when an operation exists that it does not list.
var operationTable = []actionCase{
	{method: "GET", path: "/", op: "ListBuckets", action: "s3:ListAllMyBuckets"},

	{method: "PUT", path: "/b", op: "CreateBucket", action: "s3:CreateBucket"},
	{method: "HEAD", path: "/b", op: "HeadBucket", action: "s3:ListBucket"},
	{method: "DELETE", path: "/b", op: "DeleteBucket", action: "s3:DeleteBucket"},
	{method: "GET", path: "/b", op: "ListObjects", action: "s3:ListBucket"},
	{method: "GET", path: "/b", query: "list-type=2", op: "ListObjectsV2", action: "s3:ListBucket"},
	{method: "GET", path: "/b", query: "list-type=1", op: "ListObjects", action: "s3:ListBucket"},
	{method: "GET", path: "/b", query: "versions", op: "ListObjectVersions", action: "s3:ListBucketVersions"},
	{method: "GET", path: "/b", query: "uploads", op: "ListMultipartUploads", action: "s3:ListBucketMultipartUploads"},
	{method: "GET", path: "/b", query: "location", op: "GetBucketLocation", action: "s3:GetBucketLocation"},
	{method: "GET", path: "/b", query: "cors", op: "GetBucketCors", action: "s3:GetBucketCORS"},
	{method: "PUT", path: "/b", query: "cors", op: "PutBucketCors", action: "s3:PutBucketCORS"},
	{method: "DELETE", path: "/b", query: "cors", op: "DeleteBucketCors", action: "s3:PutBucketCORS"},
	{method: "GET", path: "/b", query: "tagging", op: "GetBucketTagging", action: "s3:GetBucketTagging"},
	{method: "GET", path: "/b", query: "encryption", op: "GetBucketEncryption", action: "s3:GetEncryptionConfiguration"},
	{method: "PUT", path: "/b", query: "encryption", op: "PutBucketEncryption", action: "s3:PutEncryptionConfiguration"},
	{method: "DELETE", path: "/b", query: "encryption", op: "DeleteBucketEncryption", action: "s3:PutEncryptionConfiguration"},
	{method: "PUT", path: "/b", query: "tagging", op: "PutBucketTagging", action: "s3:PutBucketTagging"},
	{method: "DELETE", path: "/b", query: "tagging", op: "DeleteBucketTagging", action: "s3:PutBucketTagging"},
	{method: "GET", path: "/b", query: "lifecycle", op: "GetBucketLifecycleConfiguration", action: "s3:GetLifecycleConfiguration"},
	{method: "PUT", path: "/b", query: "lifecycle", op: "PutBucketLifecycleConfiguration", action: "s3:PutLifecycleConfiguration"},
	{method: "DELETE", path: "/b", query: "lifecycle", op: "DeleteBucketLifecycle", action: "s3:PutLifecycleConfiguration"},
	{method: "GET", path: "/b", query: "acl", op: "GetBucketAcl", action: "s3:GetBucketAcl"},
	{method: "PUT", path: "/b", query: "acl", op: "PutBucketAcl", action: "s3:PutBucketAcl"},
	{method: "GET", path: "/b", query: "versioning", op: "GetBucketVersioning", action: "s3:GetBucketVersioning"},
	{method: "PUT", path: "/b", query: "versioning", op: "PutBucketVersioning", action: "s3:PutBucketVersioning"},
	{method: "GET", path: "/b", query: "object-lock", op: "GetObjectLockConfiguration", action: "s3:GetBucketObjectLockConfiguration"},
	{method: "PUT", path: "/b", query: "object-lock", op: "PutObjectLockConfiguration", action: "s3:PutBucketObjectLockConfiguration"},
	{method: "GET", path: "/b", query: "policy", op: "GetBucketPolicy", action: "s3:GetBucketPolicy"},
	{method: "PUT", path: "/b", query: "policy", op: "PutBucketPolicy", action: "s3:PutBucketPolicy"},
	{method: "DELETE", path: "/b", query: "policy", op: "DeleteBucketPolicy", action: "s3:DeleteBucketPolicy"},
	{method: "GET", path: "/b", query: "policyStatus", op: "GetBucketPolicyStatus", action: "s3:GetBucketPolicyStatus"},
	{method: "GET", path: "/b", query: "ownershipControls", op: "GetBucketOwnershipControls", action: "s3:GetBucketOwnershipControls"},
	{method: "PUT", path: "/b", query: "ownershipControls", op: "PutBucketOwnershipControls", action: "s3:PutBucketOwnershipControls"},
	{method: "DELETE", path: "/b", query: "ownershipControls", op: "DeleteBucketOwnershipControls", action: "s3:PutBucketOwnershipControls"},
	{method: "GET", path: "/b", query: "publicAccessBlock", op: "GetPublicAccessBlock", action: "s3:GetBucketPublicAccessBlock"},
	{method: "PUT", path: "/b", query: "publicAccessBlock", op: "PutPublicAccessBlock", action: "s3:PutBucketPublicAccessBlock"},
	{method: "DELETE", path: "/b", query: "publicAccessBlock", op: "DeletePublicAccessBlock", action: "s3:PutBucketPublicAccessBlock"},
	// DeleteObjects decides each key; a key with a VersionId as
	// DeleteObject with versionId does (checked below).
	{method: "POST", path: "/b", query: "delete", op: "DeleteObjects", action: "s3:DeleteObject", vAction: "s3:DeleteObjectVersion"},
	{method: "POST", path: "/b", header: "Content-Type: multipart/form-data; boundary=x", op: "PostObject", action: "s3:PutObject"},
	{method: "OPTIONS", path: "/b", op: "PreflightRequest"},

	{method: "GET", path: "/b/k", op: "GetObject", action: "s3:GetObject", vAction: "s3:GetObjectVersion"},
	{method: "HEAD", path: "/b/k", op: "HeadObject", action: "s3:GetObject", vAction: "s3:GetObjectVersion"},
	{method: "PUT", path: "/b/k", op: "PutObject", action: "s3:PutObject"},
	{method: "DELETE", path: "/b/k", op: "DeleteObject", action: "s3:DeleteObject", vAction: "s3:DeleteObjectVersion"},
	// The copy source is read as GetObject (copySourceAccess, below).
	{method: "PUT", path: "/b/k", header: "x-amz-copy-source: /b/src", op: "CopyObject", action: "s3:PutObject"},
	{method: "POST", path: "/b/k", query: "uploads", op: "CreateMultipartUpload", action: "s3:PutObject"},
	{method: "PUT", path: "/b/k", query: "partNumber=1&uploadId=u", op: "UploadPart", action: "s3:PutObject"},
	{method: "PUT", path: "/b/k", query: "partNumber=1&uploadId=u", header: "x-amz-copy-source: /b/src", op: "UploadPartCopy", action: "s3:PutObject"},
	{method: "POST", path: "/b/k", query: "uploadId=u", op: "CompleteMultipartUpload", action: "s3:PutObject"},
	{method: "DELETE", path: "/b/k", query: "uploadId=u", op: "AbortMultipartUpload", action: "s3:AbortMultipartUpload"},
	{method: "GET", path: "/b/k", query: "uploadId=u", op: "ListParts", action: "s3:ListMultipartUploadParts"},
	{method: "GET", path: "/b/k", query: "tagging", op: "GetObjectTagging", action: "s3:GetObjectTagging", vAction: "s3:GetObjectVersionTagging"},
	{method: "PUT", path: "/b/k", query: "tagging", op: "PutObjectTagging", action: "s3:PutObjectTagging", vAction: "s3:PutObjectVersionTagging"},
	{method: "DELETE", path: "/b/k", query: "tagging", op: "DeleteObjectTagging", action: "s3:DeleteObjectTagging", vAction: "s3:DeleteObjectVersionTagging"},
	{method: "GET", path: "/b/k", query: "acl", op: "GetObjectAcl", action: "s3:GetObjectAcl", vAction: "s3:GetObjectVersionAcl"},
	{method: "PUT", path: "/b/k", query: "acl", op: "PutObjectAcl", action: "s3:PutObjectAcl", vAction: "s3:PutObjectVersionAcl"},
	// GetObjectAttributes: on a versioned bucket the version actions,
	// with a versionId or without (its API reference, Permissions).
	{method: "GET", path: "/b/k", query: "attributes", op: "GetObjectAttributes",
		action: "s3:GetObjectAttributes", also: "s3:GetObject", vAction: "s3:GetObjectVersionAttributes", vAlso: "s3:GetObjectVersion",
		onVersioned: "s3:GetObjectVersionAttributes", onVersionedAlso: "s3:GetObjectVersion"},
	// Object Lock has no version actions: the same action, decided
	// against the version named.
	{method: "GET", path: "/b/k", query: "retention", op: "GetObjectRetention", action: "s3:GetObjectRetention", vAction: "s3:GetObjectRetention"},
	{method: "PUT", path: "/b/k", query: "retention", op: "PutObjectRetention", action: "s3:PutObjectRetention", vAction: "s3:PutObjectRetention"},
	{method: "GET", path: "/b/k", query: "legal-hold", op: "GetObjectLegalHold", action: "s3:GetObjectLegalHold", vAction: "s3:GetObjectLegalHold"},
	{method: "PUT", path: "/b/k", query: "legal-hold", op: "PutObjectLegalHold", action: "s3:PutObjectLegalHold", vAction: "s3:PutObjectLegalHold"},
}

// routed routes a request of the table (with extra query parameters).
func routed(t *testing.T, c actionCase, extra string) *request {
	t.Helper()
	q := c.query
	if extra != "" {
		q = strings.TrimPrefix(q+"&"+extra, "&")
	}
	r, err := http.NewRequest(c.method, "http://s3.test"+c.path+"?"+q, nil)
	if err != nil {
		t.Fatal(err)
	}
	if name, value, ok := strings.Cut(c.header, ": "); ok {
		r.Header.Set(name, value)
	}
	rq := &request{Request: r}
	if err := (&Server{}).route(rq); err != nil {
		t.Fatalf("%s %s?%s: %v", c.method, c.path, q, err)
	}
	return rq
}

// TestOperationActions: every operation route can pick maps to the
// action (and the second action) AWS documents for it, with and without
// ?versionId; an operation added without an entry here fails.
func TestOperationActions(t *testing.T) {
	listed := map[string]bool{}
	for _, c := range operationTable {
		listed[c.op] = true
		name := strings.TrimSpace(c.method + " " + c.path + "?" + c.query + " " + c.header)
		t.Run(name, func(t *testing.T) {
			rq := routed(t, c, "")
			if rq.op.name != c.op {
				t.Fatalf("routed to %s, want %s", rq.op.name, c.op)
			}
			if c.action == "" {
				if !rq.op.preAuth {
					t.Fatalf("%s has no action but is authorized", c.op)
				}
				return
			}
			a := requestAccess(rq)
			if a.action != c.action || a.also != c.also || a.version != "" {
				t.Errorf("without versionId: %q also %q (version %q), want %q also %q", a.action, a.also, a.version, c.action, c.also)
			}
			onVersioned, onVersionedAlso := c.onVersioned, c.onVersionedAlso
			if onVersioned == "" {
				onVersioned, onVersionedAlso = c.action, c.also
			}
			for _, b := range []meta.Bucket{{Versioning: meta.VersioningEnabled}, {Versioning: meta.VersioningSuspended}, {ObjectLock: true}} {
				rq.bucketRec = &b
				if a := requestAccess(rq); a.action != onVersioned || a.also != onVersionedAlso || a.version != "" {
					t.Errorf("without versionId on a bucket with versioning %q (lock %v): %q also %q (version %q), want %q also %q",
						b.Versioning, b.ObjectLock, a.action, a.also, a.version, onVersioned, onVersionedAlso)
				}
			}
			rq.bucketRec = nil
			want, wantAlso, wantVersion := c.vAction, c.vAlso, "null"
			if want == "" {
				want, wantAlso, wantVersion = c.action, c.also, ""
			}
			var v access
			if rq.key == "" {
				// DeleteObjects: each key of the document.
				v = objectAccess(rq.op, "null")
			} else {
				vrq := routed(t, c, "versionId=null")
				if vrq.op != rq.op {
					t.Fatalf("versionId changes the operation: %s", vrq.op.name)
				}
				v = requestAccess(vrq)
			}
			if rq.key == "" && c.vAction == "" {
				return // bucket operations have no version
			}
			if v.action != want || v.also != wantAlso || v.version != wantVersion {
				t.Errorf("with versionId: %q also %q (version %q), want %q also %q (version %q)",
					v.action, v.also, v.version, want, wantAlso, wantVersion)
			}
		})
	}
	if a := copySourceAccess(""); a.action != "s3:GetObject" || a.acl != aclObjectRead || a.version != "" {
		t.Errorf("copy source: %+v, want s3:GetObject and READ on the object", a)
	}
	if a := copySourceAccess("null"); a.action != "s3:GetObjectVersion" || a.acl != aclObjectRead || a.version != "null" {
		t.Errorf("copy source version: %+v, want s3:GetObjectVersion and READ on the version", a)
	}
	for _, name := range declaredOperations(t) {
		if !listed[name] {
			t.Errorf("operation %s is not in operationTable: add it with the action AWS documents for it (and with versionId)", name)
		}
	}
	for name := range versionActions {
		if !listed[name] {
			t.Errorf("versionActions names %s, which is no operation", name)
		}
	}
}

// declaredOperations returns the name of every operation literal in the
// package's sources.
func declaredOperations(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var names []string
	for _, file := range files {
		if strings.HasSuffix(file, "_test.go") {
			continue
		}
		src, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(fset, file, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.CompositeLit)
			if !ok {
				return true
			}
			if id, ok := lit.Type.(*ast.Ident); !ok || id.Name != "operation" {
				return true
			}
			for _, el := range lit.Elts {
				kv, ok := el.(*ast.KeyValueExpr)
				if !ok {
					continue
				}
				if k, ok := kv.Key.(*ast.Ident); ok && k.Name == "name" {
					if s, ok := kv.Value.(*ast.BasicLit); ok {
						name, _ := strconv.Unquote(s.Value)
						names = append(names, name)
						return true
					}
				}
			}
			t.Errorf("%s: an operation literal without a constant name", fset.Position(lit.Pos()))
			return true
		})
	}
	if len(names) < 50 {
		t.Fatalf("found only %d operations in %v", len(names), files)
	}
	return names
}
