package s3api

import (
	"os/exec"
	"strings"
	"testing"
)

// boto3Prelude defines, for a test's Python script, client(sig) (a boto3
// S3 client of the root user for the test server, path-style, no
// retries, signing with sig: "s3v4", or "s3" for SigV2) and code(fn)
// (the S3 error code fn raises, "OK" when it raises none).
const boto3Prelude = `
import os
import boto3
from botocore.config import Config
from botocore.exceptions import ClientError

def client(sig="s3v4"):
    return boto3.client("s3", endpoint_url=os.environ["B3_ENDPOINT"], region_name="us-east-1",
        aws_access_key_id=os.environ["B3_ACCESS_KEY"], aws_secret_access_key=os.environ["B3_SECRET_KEY"],
        config=Config(signature_version=sig, s3={"addressing_style": "path"}, retries={"max_attempts": 1}))

def code(fn):
    try:
        fn()
        return "OK"
    except ClientError as e:
        return e.response["Error"]["Code"]
`

// boto3 runs script (after boto3Prelude) with python3 against the test
// server and returns what it printed, trimmed.
func (e *testEnv) boto3(script string) string {
	e.t.Helper()
	cmd := exec.Command("python3", "-c", boto3Prelude+script)
	cmd.Env = append(cmd.Environ(), "B3_ENDPOINT="+e.ts.URL, "B3_ACCESS_KEY="+rootUser.AccessKey, "B3_SECRET_KEY="+rootUser.SecretKey,
		"AWS_CONFIG_FILE=/dev/null", "AWS_SHARED_CREDENTIALS_FILE=/dev/null")
	out, err := cmd.CombinedOutput()
	if err != nil {
		e.t.Fatalf("python3 boto3 script: %v\n%s", err, out)
	}
	return strings.TrimSpace(string(out))
}

// TestBoto3SigV2RequestTime: a SigV2 request (boto3's "s3" signer) whose
// x-amz-date is far from the server's clock, in the past or in year 9999,
// is RequestTimeTooSkewed, as on AWS; one of now authenticates.
func TestBoto3SigV2RequestTime(t *testing.T) {
	e := newEnv(t)
	e.mustCreateBucket("v2time")
	for _, tc := range []struct{ date, code string }{
		{"Tue, 07 Jul 9999 21:53:04 GMT", "RequestTimeTooSkewed"},
		{"Tue, 07 Jul 2010 21:53:04 GMT", "RequestTimeTooSkewed"},
		{"", "OK"},
	} {
		got := e.boto3(`
c = client("s3")
date = "` + tc.date + `"
def set_date(params, **kwargs):
    if date:
        params["headers"]["x-amz-date"] = date
c.meta.events.register("before-call.s3.ListObjects", set_date)
print(code(lambda: c.list_objects(Bucket="v2time")))
`)
		if got != tc.code {
			t.Errorf("x-amz-date %q: got %s, want %s", tc.date, got, tc.code)
		}
	}
}
