package policy

import "testing"

// FuzzParse: Parse never panics, and an accepted policy evaluates and
// classifies any request without panicking.
func FuzzParse(f *testing.F) {
	f.Add([]byte(hlsPolicy))
	f.Add([]byte(`{"Statement":{"Effect":"Deny","NotPrincipal":{"AWS":["a"]},"NotAction":"s3:Get*","NotResource":"arn:aws:s3:::media/x"}}`))
	f.Add([]byte(`{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":"*","Action":"s3:*","Resource":"*","Condition":{"ForAllValues:StringLike":{"s3:RequestObjectTagKeys":["a*"]},"DateGreaterThanIfExists":{"aws:CurrentTime":"2020-01-01"},"Null":{"aws:username":"true"},"NumericLessThan":{"s3:max-keys":5}}}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Parse(data, "media")
		if err != nil {
			return
		}
		_ = p.IsPublic()
		for _, who := range []Principal{anonymous, alice} {
			p.Evaluate(&Request{Principal: who, Action: "s3:GetObject", Resource: "arn:aws:s3:::media/a/b",
				Context: ctx("aws:SourceIp", "10.0.0.1", "s3:prefix", "a/", "s3:max-keys", "7", "aws:CurrentTime", "2026-01-01T00:00:00Z", "aws:username", "alice")})
		}
	})
}
