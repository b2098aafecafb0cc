package e2e

import (
	"strings"
	"testing"
)

// TestBoto3PostRedirect: a browser-form POST (boto3's
// generate_presigned_post, sent with urllib3) with
// success_action_redirect answers 303 to that URL with bucket, key and
// etag appended in that order, as S3 does (issue 31; Ceph s3-tests
// test_post_object_success_redirect_action compares the URL whole).
func TestBoto3PostRedirect(t *testing.T) {
	t.Parallel()
	const b = "e2e-post-redirect"
	ensureBucket(t, b)
	out := runTool(t, "python3", "-c", `
import sys, boto3, urllib3
from botocore.config import Config
endpoint, bucket = sys.argv[1], sys.argv[2]
c = boto3.client("s3", endpoint_url=endpoint, config=Config(signature_version="s3v4", s3={"addressing_style": "path"}))
for redirect in ["http://example.com/done", "http://example.com/done?from=form"]:
    post = c.generate_presigned_post(bucket, "dir/foo.txt", Fields={"success_action_redirect": redirect},
        Conditions=[{"success_action_redirect": redirect}], ExpiresIn=600)
    fields = dict(post["fields"])
    fields["file"] = ("foo.txt", b"bar")
    r = urllib3.PoolManager().request("POST", post["url"], fields=fields, redirect=False)
    etag = c.head_object(Bucket=bucket, Key="dir/foo.txt")["ETag"].strip('"')
    sep = "&" if "?" in redirect else "?"
    want = redirect + sep + "bucket=" + bucket + "&key=dir%2Ffoo.txt&etag=%22" + etag + "%22"
    got = r.headers.get("Location")
    if r.status != 303 or got != want:
        print("POST with success_action_redirect %s: %d %s, want 303 %s" % (redirect, r.status, got, want))
        sys.exit(1)
print("post redirect: OK")
`, env.endpoint, b)
	if !strings.Contains(out, "post redirect: OK") {
		t.Fatalf("boto3 POST redirect session did not finish:\n%s", out)
	}
}
