package s3auth

import (
	"context"
	"encoding/base64"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	"github.com/minio/minio-go/v7/pkg/signer"
)

// minioPostForm returns the form fields minio-go's PresignedPostPolicy
// produces (no network: the region is configured).
func minioPostForm(t *testing.T, v2 bool, secret string, configure func(*minio.PostPolicy)) map[string]string {
	t.Helper()
	creds := credentials.NewStaticV4(exampleAccessKey, secret, "")
	if v2 {
		creds = credentials.NewStaticV2(exampleAccessKey, secret, "")
	}
	client, err := minio.New("s3.local:9000", &minio.Options{Creds: creds, Region: testRegion})
	if err != nil {
		t.Fatal(err)
	}
	policy := minio.NewPostPolicy()
	if err := policy.SetBucket("photos"); err != nil {
		t.Fatal(err)
	}
	if err := policy.SetExpires(time.Now().UTC().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	configure(policy)
	_, form, err := client.PresignedPostPolicy(context.Background(), policy)
	if err != nil {
		t.Fatal(err)
	}
	return form
}

func TestPostPolicyWithMinioClient(t *testing.T) {
	for _, v2 := range []bool{false, true} {
		form := minioPostForm(t, v2, exampleSecret, func(p *minio.PostPolicy) {
			must(t, p.SetKeyStartsWith("user/eric/"))
			must(t, p.SetContentType("image/jpeg"))
			must(t, p.SetContentLengthRange(10, 1000))
			must(t, p.SetUserMetadata("camera", "x100"))
		})
		form["key"] = "user/eric/${filename}"
		result, err := realClock().VerifyPostPolicy("photos", form, "cat.jpg")
		if err != nil {
			t.Fatalf("v2=%v: %v", v2, err)
		}
		if result.AccessKey != exampleAccessKey || result.Key != "user/eric/cat.jpg" || result.MinLength != 10 || result.MaxLength != 1000 {
			t.Fatalf("v2=%v: result %+v", v2, result)
		}
		if codeOf(result.CheckLength(5)) != "EntityTooSmall" || codeOf(result.CheckLength(1001)) != "EntityTooLarge" || result.CheckLength(500) != nil {
			t.Fatal("CheckLength does not enforce content-length-range")
		}

		cases := []struct {
			name   string
			mutate func(map[string]string)
			bucket string
			code   string
		}{
			{"key outside prefix", func(f map[string]string) { f["key"] = "user/bob/x" }, "photos", "AccessDenied"},
			{"content type differs", func(f map[string]string) { f["Content-Type"] = "text/html" }, "photos", "AccessDenied"},
			{"other bucket", func(map[string]string) {}, "videos", "AccessDenied"},
			{"extra field", func(f map[string]string) { f["x-amz-meta-extra"] = "1" }, "photos", "AccessDenied"},
			{"ignored extra field", func(f map[string]string) { f["x-ignore-me"] = "1" }, "photos", ""},
			{"tampered policy", func(f map[string]string) {
				f["policy"] = base64.StdEncoding.EncodeToString([]byte(`{"expiration":"2999-01-01T00:00:00Z","conditions":[]}`))
			}, "photos", "SignatureDoesNotMatch"},
			{"no key", func(f map[string]string) { delete(f, "key") }, "photos", "InvalidArgument"},
		}
		for _, c := range cases {
			f := map[string]string{}
			for k, v := range form {
				f[k] = v
			}
			c.mutate(f)
			_, err := realClock().VerifyPostPolicy(c.bucket, f, "cat.jpg")
			if codeOf(err) != c.code {
				t.Errorf("v2=%v %s: code %q (%v), want %q", v2, c.name, codeOf(err), err, c.code)
			}
		}
	}
	wrongSecret := minioPostForm(t, false, "wrong", func(p *minio.PostPolicy) { must(t, p.SetKey("k")) })
	if _, err := realClock().VerifyPostPolicy("photos", wrongSecret, ""); codeOf(err) != "SignatureDoesNotMatch" {
		t.Fatalf("wrong secret: %v", err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// signedPolicyForm signs a hand-written policy document with minio-go's
// PostPresignSignatureV4.
func signedPolicyForm(document string, at time.Time) map[string]string {
	policy := base64.StdEncoding.EncodeToString([]byte(document))
	return map[string]string{
		"key":              "k",
		"policy":           policy,
		"x-amz-algorithm":  "AWS4-HMAC-SHA256",
		"x-amz-credential": signer.GetCredential(exampleAccessKey, testRegion, at, signer.ServiceTypeS3),
		"x-amz-date":       at.Format(iso8601Format),
		"x-amz-signature":  signer.PostPresignSignatureV4(policy, at, exampleSecret, testRegion),
	}
}

func TestPostPolicyDocumentRules(t *testing.T) {
	at := sdkNow
	const v4Conditions = `["eq","$x-amz-algorithm","AWS4-HMAC-SHA256"],["starts-with","$x-amz-credential",""],["starts-with","$x-amz-date",""]`
	tests := []struct {
		name     string
		document string
		code     string
	}{
		{"valid", `{"expiration":"2025-03-01T13:00:00.000Z","conditions":[{"bucket":"b"},["eq","$key","k"],` + v4Conditions + `]}`, ""},
		{"expired", `{"expiration":"2025-03-01T11:00:00.000Z","conditions":[{"bucket":"b"},["eq","$key","k"],` + v4Conditions + `]}`, "AccessDenied"},
		{"bad expiration", `{"expiration":"tomorrow","conditions":[]}`, "InvalidPolicyDocument"},
		{"expiration key is case-sensitive", `{"EXPIRATION":"2025-03-01T13:00:00Z","conditions":[]}`, "InvalidPolicyDocument"},
		{"missing conditions", `{"expiration":"2025-03-01T13:00:00Z"}`, "InvalidPolicyDocument"},
		{"operator in any case", `{"expiration":"2025-03-01T13:00:00Z","conditions":[{"bucket":"b"},["StArTs-WiTh","$KeY","k"],["EQ","$key","k"],` + v4Conditions + `]}`, ""},
		{"unknown operator", `{"expiration":"2025-03-01T13:00:00Z","conditions":[["begins-with","$key","k"]]}`, "InvalidPolicyDocument"},
		{"empty condition", `{"expiration":"2025-03-01T13:00:00Z","conditions":[{}]}`, "InvalidPolicyDocument"},
		{"negative length", `{"expiration":"2025-03-01T13:00:00Z","conditions":[["content-length-range",-1,10]]}`, "InvalidPolicyDocument"},
		{"not json", `{"expiration":`, "InvalidPolicyDocument"},
		{"field not covered", `{"expiration":"2025-03-01T13:00:00Z","conditions":[["eq","$key","k"]]}`, "AccessDenied"},
		{"field names are case-insensitive", `{"expiration":"2025-03-01T13:00:00Z","conditions":[["eq","$KEY","k"],` + v4Conditions + `]}`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := newVerifier(at).VerifyPostPolicy("b", signedPolicyForm(tt.document, at), "")
			if codeOf(err) != tt.code {
				t.Fatalf("code %q (%v), want %q", codeOf(err), err, tt.code)
			}
		})
	}
	form := signedPolicyForm(`{"expiration":"2025-03-01T13:00:00Z","conditions":[]}`, at)
	delete(form, "x-amz-signature")
	if _, err := newVerifier(at).VerifyPostPolicy("b", form, ""); codeOf(err) != "InvalidArgument" {
		t.Fatalf("missing signature: %v", err)
	}
	anonymous, err := newVerifier(at).VerifyPostPolicy("b", map[string]string{"key": "a/${filename}"}, "f.txt")
	if err != nil || anonymous.AccessKey != "" || anonymous.Key != "a/f.txt" {
		t.Fatalf("anonymous form: %+v %v", anonymous, err)
	}
}
