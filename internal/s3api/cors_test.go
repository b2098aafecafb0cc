package s3api

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/b3-storage/b3/internal/meta"
)

// largeCORSDocument is a valid CORS configuration of size bytes (padded
// with white space): 100 rules (the most S3 allows) sharing out origins
// that no test request sends, so a request is matched against all of them.
func largeCORSDocument(size int) []byte {
	const (
		rules = 100
		head  = "<CORSConfiguration>"
		tail  = "</CORSConfiguration>"
	)
	var b strings.Builder
	b.WriteString(head)
	perRule := (size - len(head) - len(tail)) / rules
	for r := range rules {
		start := b.Len()
		b.WriteString("<CORSRule><AllowedMethod>GET</AllowedMethod><AllowedHeader>x-amz-*</AllowedHeader>")
		for o := 0; ; o++ {
			origin := fmt.Sprintf("<AllowedOrigin>https://app-%d-%d.example.org</AllowedOrigin>", r, o)
			if o > 0 && b.Len()-start+len(origin)+len("</CORSRule>") > perRule {
				break
			}
			b.WriteString(origin)
		}
		b.WriteString("</CORSRule>")
	}
	if pad := size - b.Len() - len(tail); pad > 0 {
		b.WriteString(strings.Repeat(" ", pad))
	}
	b.WriteString(tail)
	return []byte(b.String())
}

// storeCORS writes doc as bucket's CORS configuration directly into the
// store, as a document accepted before PutBucketCors had its size cap.
func storeCORS(t testing.TB, e *testEnv, bucket string, doc []byte) {
	t.Helper()
	if err := e.store.UpdateBucket(bucket, func(b *meta.Bucket) error { b.CORS = doc; return nil }); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkCORSStoredDocument measures one anonymous request carrying an
// Origin against a bucket with a large stored CORS configuration, through
// the server's handler (no network): an actual request (GET of a private
// object, refused) and a preflight (OPTIONS, refused: no rule matches).
// 4MiB is the largest document b3 accepted before PutBucketCors was
// capped (the request-document limit); 64KiB is the cap.
func BenchmarkCORSStoredDocument(b *testing.B) {
	for _, size := range []int{64 << 10, 4 << 20} {
		e := newEnvTB(b, nil)
		e.mustCreateBucket("web")
		e.mustPut("web", "page", []byte("<p>"))
		storeCORS(b, e, "web", largeCORSDocument(size))
		for _, method := range []string{"GET", "OPTIONS"} {
			b.Run(fmt.Sprintf("%dKiB/%s", size>>10, method), func(b *testing.B) {
				request := func() {
					req := httptest.NewRequest(method, "/web/page", nil)
					req.Header.Set("Origin", "https://attacker.example.net")
					req.Header.Set("Access-Control-Request-Method", "GET")
					rec := httptest.NewRecorder()
					e.api.ServeHTTP(rec, req)
					if rec.Code != http.StatusForbidden {
						b.Fatalf("%s: %d %s", method, rec.Code, rec.Body)
					}
				}
				request() // the steady state: a first request may fill a cache
				for b.Loop() {
					request()
				}
			})
		}
	}
}

// TestPutBucketCORSLimits: PutBucketCors takes a document of up to 64 KB
// and 100 rules, as S3 does, and refuses a larger one with MalformedXML,
// storing nothing.
func TestPutBucketCORSLimits(t *testing.T) {
	e := newEnv(t)
	e.mustCreateBucket("web")
	put := func(doc []byte) (*http.Response, string) {
		return e.do(e.signedRequest(rootUser, "PUT", "/web?cors", doc, "", nil))
	}
	fits := largeCORSDocument(maxCORSDocument)
	if len(fits) != maxCORSDocument {
		t.Fatalf("test document of %d bytes", len(fits))
	}
	if resp, body := put(fits); resp.StatusCode != 200 {
		t.Fatalf("%d-byte configuration: %d %s", len(fits), resp.StatusCode, body)
	}
	for _, doc := range [][]byte{
		largeCORSDocument(maxCORSDocument + 1),
		largeCORSDocument(1 << 20),
		// Within the size, one rule too many.
		[]byte("<CORSConfiguration>" + strings.Repeat("<CORSRule><AllowedOrigin>*</AllowedOrigin><AllowedMethod>GET</AllowedMethod></CORSRule>", maxCORSRules+1) + "</CORSConfiguration>"),
	} {
		resp, body := put(doc)
		wantXMLError(t, resp, body, 400, "MalformedXML")
	}
	// The accepted document is still the bucket's.
	resp, body := e.do(e.signedRequest(rootUser, "GET", "/web?cors", nil, "", nil))
	if resp.StatusCode != 200 || strings.Count(body, "<CORSRule>") != 100 || !strings.Contains(body, "app-99-0.example.org") {
		t.Fatalf("configuration after refused puts: %d %.200s", resp.StatusCode, body)
	}
}

// TestCORSStoredDocumentBeyondCap: a configuration stored before the
// 64 KB cap (up to 4 MiB) still loads and applies; and the parsed
// configuration follows the bucket record however it changes (here
// written straight to the store, as a record replicated from another
// node is), never serving the document it replaced.
func TestCORSStoredDocumentBeyondCap(t *testing.T) {
	e := newEnv(t)
	e.mustCreateBucket("web")
	e.mustPut("web", "page", []byte("<p>"))
	preflight := func(origin string) int {
		t.Helper()
		req := httptest.NewRequest("OPTIONS", "/web/page", nil)
		req.Header.Set("Origin", origin)
		req.Header.Set("Access-Control-Request-Method", "GET")
		rec := httptest.NewRecorder()
		e.api.ServeHTTP(rec, req)
		return rec.Code
	}
	big := largeCORSDocument(1 << 20)
	storeCORS(t, e, "web", big)
	if got := preflight("https://app-99-3.example.org"); got != 200 {
		t.Fatalf("preflight against a 1 MiB stored configuration: %d", got)
	}
	resp, body := e.do(e.signedRequest(rootUser, "GET", "/web?cors", nil, "", nil))
	if resp.StatusCode != 200 || strings.Count(body, "<CORSRule>") != 100 {
		t.Fatalf("GetBucketCors of a 1 MiB stored configuration: %d %.200s", resp.StatusCode, body)
	}
	b, err := e.store.GetBucket("web")
	if err != nil {
		t.Fatal(err)
	}
	first, err := e.api.bucketCORS(b)
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := e.api.bucketCORS(b); again != first {
		t.Fatal("the same stored document was parsed again")
	}
	// The same length, another origin: the cache must compare contents.
	storeCORS(t, e, "web", []byte(strings.ReplaceAll(string(big), "app-99-3.", "app-99-X.")))
	if got := preflight("https://app-99-3.example.org"); got != 403 {
		t.Fatalf("preflight for an origin the new configuration removed: %d", got)
	}
	if got := preflight("https://app-99-X.example.org"); got != 200 {
		t.Fatalf("preflight for an origin the new configuration added: %d", got)
	}
	// Deleted on another path: no CORS at all.
	storeCORS(t, e, "web", nil)
	if got := preflight("https://app-99-X.example.org"); got != 403 {
		t.Fatalf("preflight after the configuration was removed: %d", got)
	}
	// A stored document that does not parse fails as it did, cached or not.
	storeCORS(t, e, "web", []byte("<CORSConfiguration>"))
	for range 2 {
		if got := preflight("https://app-99-X.example.org"); got != 400 {
			t.Fatalf("preflight against a malformed stored configuration: %d", got)
		}
	}
}
