package s3api

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

func TestObjectTagging(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	c := e.root()
	e.mustCreateBucket("tags")
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("tags"), Key: aws.String("k"), Body: strings.NewReader("x"), Tagging: aws.String("a=1&b=two%20words")}); err != nil {
		t.Fatal(err)
	}
	get, err := c.GetObjectTagging(ctx, &s3.GetObjectTaggingInput{Bucket: aws.String("tags"), Key: aws.String("k")})
	if err != nil || len(get.TagSet) != 2 || aws.ToString(get.TagSet[1].Value) != "two words" {
		t.Fatalf("tags from header: %+v %v", get, err)
	}
	if _, err := c.PutObjectTagging(ctx, &s3.PutObjectTaggingInput{Bucket: aws.String("tags"), Key: aws.String("k"),
		Tagging: &types.Tagging{TagSet: []types.Tag{{Key: aws.String("z"), Value: aws.String("9")}}}}); err != nil {
		t.Fatal(err)
	}
	get, err = c.GetObjectTagging(ctx, &s3.GetObjectTaggingInput{Bucket: aws.String("tags"), Key: aws.String("k")})
	if err != nil || len(get.TagSet) != 1 || aws.ToString(get.TagSet[0].Key) != "z" {
		t.Fatalf("replaced tags: %+v %v", get, err)
	}
	var many []types.Tag
	for i := range 11 {
		many = append(many, types.Tag{Key: aws.String(strings.Repeat("k", i+1)), Value: aws.String("v")})
	}
	_, err = c.PutObjectTagging(ctx, &s3.PutObjectTaggingInput{Bucket: aws.String("tags"), Key: aws.String("k"), Tagging: &types.Tagging{TagSet: many}})
	wantCode(t, err, "InvalidTag")
	_, err = c.PutObjectTagging(ctx, &s3.PutObjectTaggingInput{Bucket: aws.String("tags"), Key: aws.String("missing"), Tagging: &types.Tagging{TagSet: many[:1]}})
	wantCode(t, err, "NoSuchKey")
	if _, err := c.DeleteObjectTagging(ctx, &s3.DeleteObjectTaggingInput{Bucket: aws.String("tags"), Key: aws.String("k")}); err != nil {
		t.Fatal(err)
	}
	get, err = c.GetObjectTagging(ctx, &s3.GetObjectTaggingInput{Bucket: aws.String("tags"), Key: aws.String("k")})
	if err != nil || len(get.TagSet) != 0 {
		t.Fatalf("after delete: %+v %v", get, err)
	}
	// Data is untouched by tag updates.
	if got := string(e.mustGet("tags", "k")); got != "x" {
		t.Fatalf("data after tagging: %q", got)
	}

	// Bucket tagging.
	_, err = c.GetBucketTagging(ctx, &s3.GetBucketTaggingInput{Bucket: aws.String("tags")})
	wantCode(t, err, "NoSuchTagSet")
	if _, err := c.PutBucketTagging(ctx, &s3.PutBucketTaggingInput{Bucket: aws.String("tags"), Tagging: &types.Tagging{TagSet: many[:3]}}); err != nil {
		t.Fatal(err)
	}
	bt, err := c.GetBucketTagging(ctx, &s3.GetBucketTaggingInput{Bucket: aws.String("tags")})
	if err != nil || len(bt.TagSet) != 3 {
		t.Fatalf("bucket tags: %+v %v", bt, err)
	}
}

func TestCORS(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	c := e.root()
	e.mustCreateBucket("web")
	e.mustPut("web", "page", []byte("<p>"))
	preflight := func(origin, method, headers string) *http.Response {
		req, _ := http.NewRequest("OPTIONS", e.ts.URL+"/web/page", nil)
		req.Header.Set("Origin", origin)
		req.Header.Set("Access-Control-Request-Method", method)
		if headers != "" {
			req.Header.Set("Access-Control-Request-Headers", headers)
		}
		resp, _ := e.do(req)
		return resp
	}
	if resp := preflight("https://example.com", "GET", ""); resp.StatusCode != 403 {
		t.Fatalf("preflight without CORS config: %d", resp.StatusCode)
	}
	_, err := c.GetBucketCors(ctx, &s3.GetBucketCorsInput{Bucket: aws.String("web")})
	wantCode(t, err, "NoSuchCORSConfiguration")
	if _, err := c.PutBucketCors(ctx, &s3.PutBucketCorsInput{Bucket: aws.String("web"), CORSConfiguration: &types.CORSConfiguration{CORSRules: []types.CORSRule{{
		AllowedOrigins: []string{"https://*.example.com"}, AllowedMethods: []string{"GET", "PUT"}, AllowedHeaders: []string{"x-amz-*", "content-type"},
		ExposeHeaders: []string{"ETag"}, MaxAgeSeconds: aws.Int32(600),
	}}}}); err != nil {
		t.Fatal(err)
	}
	got, err := c.GetBucketCors(ctx, &s3.GetBucketCorsInput{Bucket: aws.String("web")})
	if err != nil || len(got.CORSRules) != 1 || got.CORSRules[0].AllowedMethods[1] != "PUT" || aws.ToInt32(got.CORSRules[0].MaxAgeSeconds) != 600 {
		t.Fatalf("get cors: %+v %v", got, err)
	}
	for _, tc := range []struct {
		origin, method, headers string
		status                  int
	}{
		{"https://www.example.com", "PUT", "X-Amz-Date, Content-Type", 200},
		{"https://www.example.com", "DELETE", "", 403},
		{"https://evil.com", "GET", "", 403},
		{"https://www.example.com", "GET", "Authorization", 403},
	} {
		resp := preflight(tc.origin, tc.method, tc.headers)
		if resp.StatusCode != tc.status {
			t.Fatalf("preflight %+v: %d", tc, resp.StatusCode)
		}
		if tc.status == 200 && (resp.Header.Get("Access-Control-Allow-Origin") != tc.origin || resp.Header.Get("Access-Control-Max-Age") != "600" ||
			!strings.Contains(resp.Header.Get("Access-Control-Allow-Methods"), "PUT")) {
			t.Fatalf("preflight headers: %v", resp.Header)
		}
		// The headers asked for come back lowercased, as S3 answers them.
		if want := strings.ToLower(tc.headers); tc.status == 200 && resp.Header.Get("Access-Control-Allow-Headers") != want {
			t.Fatalf("preflight Access-Control-Allow-Headers %q, want %q", resp.Header.Get("Access-Control-Allow-Headers"), want)
		}
	}
	// An actual request with an Origin gets the CORS headers, the rule's
	// methods included; allowed headers only when it asks for some.
	req := e.signedRequest(rootUser, "GET", "/web/page", nil, "", http.Header{"Origin": {"https://a.example.com"}})
	resp, _ := e.do(req)
	if resp.Header.Get("Access-Control-Allow-Origin") != "https://a.example.com" || resp.Header.Get("Access-Control-Expose-Headers") != "ETag" ||
		resp.Header.Get("Access-Control-Allow-Methods") != "GET, PUT" || resp.Header.Get("Access-Control-Allow-Headers") != "" {
		t.Fatalf("CORS response headers: %v", resp.Header)
	}
	req = e.signedRequest(rootUser, "GET", "/web/page", nil, "", http.Header{"Origin": {"https://a.example.com"},
		"Access-Control-Request-Method": {"PUT"}, "Access-Control-Request-Headers": {"X-Amz-Meta-A"}})
	if resp, _ := e.do(req); resp.Header.Get("Access-Control-Allow-Headers") != "x-amz-meta-a" {
		t.Fatalf("an actual request naming its headers: %v", resp.Header)
	}
	// One that carries a preflight's headers is matched as that preflight
	// (S3 does): here its Access-Control-Request-Method, DELETE, matches no
	// rule, so no CORS headers although GET would.
	req = e.signedRequest(rootUser, "GET", "/web/page", nil, "", http.Header{"Origin": {"https://a.example.com"}, "Access-Control-Request-Method": {"DELETE"}})
	if resp, _ := e.do(req); resp.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Fatalf("a GET naming DELETE as its preflight's method got CORS headers: %v", resp.Header)
	}
	if _, err := c.DeleteBucketCors(ctx, &s3.DeleteBucketCorsInput{Bucket: aws.String("web")}); err != nil {
		t.Fatal(err)
	}
	if resp := preflight("https://www.example.com", "PUT", ""); resp.StatusCode != 403 {
		t.Fatalf("preflight after delete: %d", resp.StatusCode)
	}
	// Invalid configurations.
	for _, doc := range []string{
		"<CORSConfiguration></CORSConfiguration>",
		"<CORSConfiguration><CORSRule><AllowedOrigin>*</AllowedOrigin><AllowedMethod>PATCH</AllowedMethod></CORSRule></CORSConfiguration>",
		"<CORSConfiguration><CORSRule>",
	} {
		resp, body := e.do(e.signedRequest(rootUser, "PUT", "/web?cors", []byte(doc), "", nil))
		if resp.StatusCode != 400 {
			t.Fatalf("bad cors %q accepted: %d %s", doc, resp.StatusCode, body)
		}
	}
}

func mustRequest(t *testing.T, method, url string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	return req
}

func TestLifecycleAndVersioningConfig(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	c := e.root()
	e.mustCreateBucket("life")
	_, err := c.GetBucketLifecycleConfiguration(ctx, &s3.GetBucketLifecycleConfigurationInput{Bucket: aws.String("life")})
	wantCode(t, err, "NoSuchLifecycleConfiguration")
	if _, err := c.PutBucketLifecycleConfiguration(ctx, &s3.PutBucketLifecycleConfigurationInput{Bucket: aws.String("life"),
		LifecycleConfiguration: &types.BucketLifecycleConfiguration{Rules: []types.LifecycleRule{{
			ID: aws.String("expire"), Status: types.ExpirationStatusEnabled, Filter: &types.LifecycleRuleFilter{Prefix: aws.String("tmp/")},
			Expiration: &types.LifecycleExpiration{Days: aws.Int32(7)},
		}}}}); err != nil {
		t.Fatal(err)
	}
	got, err := c.GetBucketLifecycleConfiguration(ctx, &s3.GetBucketLifecycleConfigurationInput{Bucket: aws.String("life")})
	if err != nil || len(got.Rules) != 1 || aws.ToInt32(got.Rules[0].Expiration.Days) != 7 {
		t.Fatalf("lifecycle: %+v %v", got, err)
	}
	_, err = c.PutBucketVersioning(ctx, &s3.PutBucketVersioningInput{Bucket: aws.String("life"),
		VersioningConfiguration: &types.VersioningConfiguration{Status: "On"}})
	wantCode(t, err, "IllegalVersioningConfigurationException")
	resp, body := e.do(e.signedRequest(rootUser, "GET", "/life?website", nil, "", nil))
	wantXMLError(t, resp, body, 501, "NotImplemented")
}

// TestBoto3LifecycleRuleIDsAndTransitions: through boto3, a lifecycle rule
// stored without an ID comes back with one (AWS names it) while a rule's
// own ID is kept, and the x-amz-expiration of an object it expires names
// it; a Transition whose Date is not midnight UTC (boto3 sends
// "20220927" as an epoch instant, as the s3-tests suite does) is 400
// InvalidArgument, and a valid one is b3's 501 NotImplemented.
func TestBoto3LifecycleRuleIDsAndTransitions(t *testing.T) {
	e := newEnv(t)
	e.mustCreateBucket("rules")
	got := e.boto3(`
c = client()
c.put_bucket_lifecycle_configuration(Bucket="rules", LifecycleConfiguration={"Rules": [
    {"Filter": {"Prefix": "logs/"}, "Status": "Enabled", "Expiration": {"Days": 3}},
    {"ID": "mine", "Filter": {"Prefix": "tmp/"}, "Status": "Enabled", "Expiration": {"Days": 1}}]})
rules = c.get_bucket_lifecycle_configuration(Bucket="rules")["Rules"]
named = rules[0].get("ID", "")
print(len(named) > 0 and named != "mine", rules[1].get("ID"))
c.put_object(Bucket="rules", Key="logs/a", Body=b"x")
print(('rule-id="%s"' % named) in c.head_object(Bucket="rules", Key="logs/a").get("Expiration", ""))
def put(date):
    c.put_bucket_lifecycle_configuration(Bucket="rules", LifecycleConfiguration={"Rules": [
        {"ID": "rule1", "Prefix": "test1/", "Status": "Enabled", "Expiration": {"Date": "2023-09-27"},
         "Transitions": [{"Date": date, "StorageClass": "GLACIER"}]}]})
print(code(lambda: put("20220927")), code(lambda: put("2030-01-01")))
`)
	if want := "True mine\nTrue\nInvalidArgument NotImplemented"; got != want {
		t.Fatalf("boto3 printed\n%s\nwant\n%s", got, want)
	}
}
