package s3api

import (
	"crypto/hmac"
	"crypto/sha1"
	"encoding/base64"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/b3-storage/b3/internal/s3auth"
)

// TestSigV2BucketTrailingSlash: botocore's SigV2 signs "/bucket/" for a
// request to "/bucket"; both spellings authenticate, a wrong key not.
func TestSigV2BucketTrailingSlash(t *testing.T) {
	e := newEnv(t)
	e.mustCreateBucket("bkt")
	for _, tc := range []struct {
		resource string
		secret   string
		status   int
	}{
		{"/bkt/", rootUser.SecretKey, 200},
		{"/bkt", rootUser.SecretKey, 200},
		{"/bkt/", "wrong", 403},
	} {
		date := time.Now().UTC().Format(http.TimeFormat)
		mac := hmac.New(sha1.New, []byte(tc.secret))
		mac.Write([]byte("GET\n\n\n" + date + "\n" + tc.resource))
		req := mustRequest(t, "GET", e.ts.URL+"/bkt")
		req.Header.Set("Date", date)
		req.Header.Set("Authorization", "AWS "+rootUser.AccessKey+":"+base64.StdEncoding.EncodeToString(mac.Sum(nil)))
		if resp, body := e.do(req); resp.StatusCode != tc.status {
			t.Fatalf("signed %s with %s: %d %s", tc.resource, tc.secret, resp.StatusCode, body)
		}
	}
}

// routedQueryParams returns every query parameter the router acts on, read
// from its source: the names route.go (and versionParam, which route calls)
// tests with Has/Get or indexes the query with, and the unsupported list.
// A sub-resource added to the router is in it without anyone listing it
// twice.
func routedQueryParams(t *testing.T) []string {
	t.Helper()
	fset := token.NewFileSet()
	var nodes []ast.Node
	for _, name := range []string{"route.go", "versioning.go"} {
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			if fn, ok := d.(*ast.FuncDecl); name == "route.go" || ok && fn.Name.Name == "parseVersionParam" {
				nodes = append(nodes, d)
			}
		}
	}
	// isQuery: q, query, or rq.query (never rq.Header).
	isQuery := func(x ast.Expr) bool {
		switch x := x.(type) {
		case *ast.Ident:
			return x.Name == "q" || x.Name == "query"
		case *ast.SelectorExpr:
			return x.Sel.Name == "query"
		}
		return false
	}
	literal := func(x ast.Expr) (string, bool) {
		lit, ok := x.(*ast.BasicLit)
		if !ok || lit.Kind != token.STRING {
			return "", false
		}
		s, err := strconv.Unquote(lit.Value)
		return s, err == nil
	}
	seen := map[string]bool{}
	for _, n := range nodes {
		ast.Inspect(n, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.CallExpr:
				sel, ok := n.Fun.(*ast.SelectorExpr)
				if ok && (sel.Sel.Name == "Has" || sel.Sel.Name == "Get") && isQuery(sel.X) && len(n.Args) == 1 {
					if name, ok := literal(n.Args[0]); ok {
						seen[name] = true
					}
				}
			case *ast.IndexExpr:
				if name, ok := literal(n.Index); ok && isQuery(n.X) {
					seen[name] = true
				}
			}
			return true
		})
	}
	for _, name := range unsupported {
		seen[name] = true
	}
	var names []string
	for name := range seen {
		names = append(names, name)
	}
	sort.Strings(names)
	// The scan itself must work: these are routed today.
	for _, want := range []string{"acl", "uploadId", "ownershipControls", "policyStatus", "attributes", "versionId", "delete", "session"} {
		if !slices.Contains(names, want) {
			t.Fatalf("source scan missed %q: found %v", want, names)
		}
	}
	return names
}

// unsignedV2Params are query parameters the router reads that SigV2 does
// not sign, as S3 does not (clients would not sign them): list-type=2
// chooses ListObjectsV2 over ListObjects, the same action (s3:ListBucket)
// on the same bucket, authorized the same way; only the answer's format
// differs.
var unsignedV2Params = map[string]bool{"list-type": true}

// TestSigV2SignsEverySubResource: for every query parameter the router
// acts on, a SigV2 signature (header or presigned) over the bare path does
// not authenticate the request with that parameter added — a captured
// "PUT /bucket" does not replay as "PUT /bucket?ownershipControls". A
// parameter added to the router but not to SigV2's sub-resources fails
// here.
func TestSigV2SignsEverySubResource(t *testing.T) {
	now := time.Now().UTC().Truncate(time.Second)
	v := &s3auth.Verifier{Credentials: s3auth.StaticCredentials{rootUser.AccessKey: rootUser.SecretKey},
		Region: testRegion, Now: func() time.Time { return now }}
	sign := func(stringToSign string) string {
		mac := hmac.New(sha1.New, []byte(rootUser.SecretKey))
		mac.Write([]byte(stringToSign))
		return base64.StdEncoding.EncodeToString(mac.Sum(nil))
	}
	date := now.Format(http.TimeFormat)
	expires := strconv.FormatInt(now.Add(time.Hour).Unix(), 10)
	// request is method path?query, signed over method path: with an
	// Authorization header, or presigned (its auth parameters appended).
	request := func(method, path, query string, presigned bool) *http.Request {
		target := "http://127.0.0.1" + path
		if presigned {
			q := url.Values{"AWSAccessKeyId": {rootUser.AccessKey}, "Expires": {expires},
				"Signature": {sign(method + "\n\n\n" + expires + "\n" + path)}}
			if query != "" {
				query += "&"
			}
			query += q.Encode()
		}
		if query != "" {
			target += "?" + query
		}
		req, err := http.NewRequest(method, target, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !presigned {
			req.Header.Set("Date", date)
			req.Header.Set("Authorization", "AWS "+rootUser.AccessKey+":"+sign(method+"\n\n\n"+date+"\n"+path))
		}
		return req
	}
	code := func(req *http.Request) string {
		_, err := v.Authenticate(req)
		if err == nil {
			return ""
		}
		var e interface{ S3Code() string }
		if errors.As(err, &e) {
			return e.S3Code()
		}
		return err.Error()
	}
	params := routedQueryParams(t)
	for _, path := range []string{"/bkt", "/bkt/key"} {
		for _, method := range []string{"GET", "PUT", "DELETE", "POST"} {
			for _, presigned := range []bool{false, true} {
				if c := code(request(method, path, "", presigned)); c != "" {
					t.Fatalf("%s %s (presigned %v) as signed: %s", method, path, presigned, c)
				}
				for _, name := range params {
					if unsignedV2Params[name] {
						continue
					}
					for _, query := range []string{url.QueryEscape(name), url.QueryEscape(name) + "=1"} {
						if c := code(request(method, path, query, presigned)); c != "SignatureDoesNotMatch" {
							t.Errorf("%s %s signed, sent as %s?%s (presigned %v): %q, want SignatureDoesNotMatch",
								method, path, path, query, presigned, c)
						}
					}
				}
			}
		}
	}
}
