package s3api

import (
	"context"
	"net/http"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/b3-storage/b3/internal/meta"
)

// TestPolicyRefusesUnevaluatedKeys: PutBucketPolicy refuses a condition
// key b3 never sets (MalformedPolicy), and accepts the lock keys.
func TestPolicyRefusesUnevaluatedKeys(t *testing.T) {
	e := newEnv(t)
	e.mustCreateBucket("keys")
	put := func(cond string) error {
		doc := policyDoc(`{"Effect":"Deny","Principal":"*","Action":"s3:PutObject","Resource":"arn:aws:s3:::keys/*","Condition":` + cond + `}`)
		_, err := e.root().PutBucketPolicy(context.Background(), &s3.PutBucketPolicyInput{Bucket: aws.String("keys"), Policy: &doc})
		return err
	}
	for _, cond := range []string{`{"StringNotEquals":{"aws:SourceVpce":"vpce-1"}}`, `{"NumericGreaterThan":{"s3:signatureAge":"1"}}`, `{"StringEquals":{"s3:object-lock-modes":"COMPLIANCE"}}`} {
		wantCode(t, put(cond), "MalformedPolicy")
	}
	for _, cond := range []string{`{"StringEquals":{"s3:object-lock-mode":"COMPLIANCE"}}`, `{"NumericGreaterThan":{"s3:object-lock-remaining-retention-days":"1"}}`,
		`{"DateGreaterThan":{"s3:object-lock-retain-until-date":"2030-01-01"}}`, `{"StringEquals":{"s3:object-lock-legal-hold":"ON"}}`} {
		if err := put(cond); err != nil {
			t.Errorf("%s: %v", cond, err)
		}
	}
	if resp, body := e.do(e.signedRequest(rootUser, http.MethodGet, "/keys?policy", nil, "", nil)); resp.StatusCode != http.StatusOK {
		t.Fatalf("get policy: %d %s", resp.StatusCode, body)
	}
}

// TestUnparseablePolicyReplaceable: a policy stored before PutBucketPolicy
// refused its condition key fails its bucket's requests closed, and its
// owner can still replace it.
func TestUnparseablePolicyReplaceable(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.mustCreateBucket("old")
	e.mustPut("old", "k", []byte("x"))
	stale := policyDoc(`{"Effect":"Deny","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::old/*","Condition":{"StringNotEquals":{"aws:SourceVpce":"vpce-1"}}}`)
	if err := e.store.UpdateBucket("old", func(b *meta.Bucket) error { b.Policy = []byte(stale); return nil }); err != nil {
		t.Fatal(err)
	}
	_, err := e.root().GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("old"), Key: aws.String("k")})
	if err == nil {
		t.Fatal("read under a policy that no longer parses")
	}
	_, err = e.other().PutBucketPolicy(ctx, &s3.PutBucketPolicyInput{Bucket: aws.String("old"), Policy: aws.String(policyDoc(`{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::old/*"}`))})
	if err == nil {
		t.Fatal("another user replaced the policy")
	}
	doc := policyDoc(`{"Effect":"Deny","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::old/secret/*"}`)
	if _, err := e.root().PutBucketPolicy(ctx, &s3.PutBucketPolicyInput{Bucket: aws.String("old"), Policy: &doc}); err != nil {
		t.Fatalf("owner replacing a policy that no longer parses: %v", err)
	}
	e.mustGet("old", "k")
}
