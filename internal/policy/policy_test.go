package policy

import (
	"errors"
	"strings"
	"testing"
)

const hlsPolicy = `{
  "Version": "2012-10-17",
  "Statement": [
    {"Sid": "encoder", "Effect": "Allow", "Principal": "*",
     "Action": ["s3:PutObject", "s3:DeleteObject"],
     "Resource": "arn:aws:s3:::media/live/*",
     "Condition": {"IpAddress": {"aws:SourceIp": ["10.1.0.0/16", "192.0.2.7"]}}},
    {"Sid": "players", "Effect": "Allow", "Principal": {"AWS": "*"},
     "Action": "s3:GetObject", "Resource": "arn:aws:s3:::media/live/*.m3u8"},
    {"Sid": "nohidden", "Effect": "Deny", "Principal": "*",
     "Action": "s3:*", "Resource": "arn:aws:s3:::media/live/private/*",
     "Condition": {"StringNotEquals": {"aws:username": "alice"}}}
  ]
}`

var (
	anonymous = Principal{}
	alice     = Principal{AccessKey: "AKALICE", CanonicalID: "c0ffee", Name: "alice"}
	bob       = Principal{AccessKey: "AKBOB", CanonicalID: "beef", Name: "bob"}
)

func ctx(kv ...string) map[string][]string {
	m := map[string][]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		k := NormalizeKey(kv[i])
		m[k] = append(m[k], kv[i+1])
	}
	return m
}

func obj(key string) string { return "arn:aws:s3:::media/" + key }

// TestEvaluate is the decision table: policy × request → decision.
func TestEvaluate(t *testing.T) {
	withUser := func(p Principal, c map[string][]string) map[string][]string {
		if p.Name != "" {
			c["aws:username"] = []string{p.Name}
		}
		return c
	}
	cases := []struct {
		name   string
		policy string
		who    Principal
		action string
		res    string
		ctx    map[string][]string
		want   Decision
	}{
		{"encoder puts from its network", hlsPolicy, anonymous, "s3:PutObject", obj("live/seg1.ts"), ctx("aws:SourceIp", "10.1.2.3"), Allowed},
		{"encoder deletes from its network", hlsPolicy, anonymous, "s3:DeleteObject", obj("live/seg1.ts"), ctx("aws:SourceIp", "10.1.200.3"), Allowed},
		{"single address as /32", hlsPolicy, anonymous, "s3:PutObject", obj("live/a.ts"), ctx("aws:SourceIp", "192.0.2.7"), Allowed},
		{"put from elsewhere", hlsPolicy, anonymous, "s3:PutObject", obj("live/seg1.ts"), ctx("aws:SourceIp", "10.2.0.1"), NotApplicable},
		{"put without address", hlsPolicy, anonymous, "s3:PutObject", obj("live/seg1.ts"), ctx(), NotApplicable},
		{"put outside the prefix", hlsPolicy, anonymous, "s3:PutObject", obj("vod/seg1.ts"), ctx("aws:SourceIp", "10.1.2.3"), NotApplicable},
		{"action is case-insensitive", hlsPolicy, anonymous, "S3:PUTOBJECT", obj("live/x"), ctx("aws:SourceIp", "10.1.2.3"), Allowed},
		{"player reads playlist", hlsPolicy, anonymous, "s3:GetObject", obj("live/index.m3u8"), ctx(), Allowed},
		{"player reads segment", hlsPolicy, anonymous, "s3:GetObject", obj("live/seg1.ts"), ctx(), NotApplicable},
		{"resource is case-sensitive", hlsPolicy, anonymous, "s3:GetObject", obj("LIVE/index.m3u8"), ctx(), NotApplicable},
		{"deny wins over allow", hlsPolicy, anonymous, "s3:GetObject", obj("live/private/a.m3u8"), ctx(), Denied},
		{"deny spares alice", hlsPolicy, alice, "s3:GetObject", obj("live/private/a.m3u8"), withUser(alice, ctx()), Allowed},
		{"deny hits bob", hlsPolicy, bob, "s3:GetObject", obj("live/private/a.m3u8"), withUser(bob, ctx()), Denied},

		{"principal by name", `{"Statement":{"Effect":"Allow","Principal":{"AWS":"alice"},"Action":"s3:ListBucket","Resource":"arn:aws:s3:::media"}}`,
			alice, "s3:ListBucket", "arn:aws:s3:::media", ctx(), Allowed},
		{"principal by user ARN", `{"Statement":{"Effect":"Allow","Principal":{"AWS":["arn:aws:iam::123456789012:user/team/alice"]},"Action":"s3:*","Resource":"arn:aws:s3:::media/*"}}`,
			alice, "s3:GetObject", obj("k"), ctx(), Allowed},
		{"principal by access key ARN", `{"Statement":{"Effect":"Allow","Principal":{"AWS":"arn:aws:iam::1:user/AKALICE"},"Action":"s3:*","Resource":"arn:aws:s3:::media/*"}}`,
			alice, "s3:GetObject", obj("k"), ctx(), Allowed},
		{"principal by canonical id", `{"Statement":{"Effect":"Allow","Principal":{"CanonicalUser":"c0ffee"},"Action":"s3:*","Resource":"arn:aws:s3:::media/*"}}`,
			alice, "s3:GetObject", obj("k"), ctx(), Allowed},
		{"other user not named", `{"Statement":{"Effect":"Allow","Principal":{"AWS":"alice"},"Action":"s3:*","Resource":"arn:aws:s3:::media/*"}}`,
			bob, "s3:GetObject", obj("k"), ctx(), NotApplicable},
		{"anonymous not named", `{"Statement":{"Effect":"Allow","Principal":{"AWS":"alice"},"Action":"s3:*","Resource":"arn:aws:s3:::media/*"}}`,
			anonymous, "s3:GetObject", obj("k"), ctx(), NotApplicable},
		{"account root names no one", `{"Statement":{"Effect":"Allow","Principal":{"AWS":"arn:aws:iam::123456789012:root"},"Action":"s3:*","Resource":"arn:aws:s3:::media/*"}}`,
			alice, "s3:GetObject", obj("k"), ctx(), NotApplicable},
		{"NotPrincipal deny", `{"Statement":{"Effect":"Deny","NotPrincipal":{"AWS":"alice"},"Action":"s3:*","Resource":"arn:aws:s3:::media/*"}}`,
			bob, "s3:GetObject", obj("k"), ctx(), Denied},
		{"NotPrincipal spares", `{"Statement":{"Effect":"Deny","NotPrincipal":{"AWS":"alice"},"Action":"s3:*","Resource":"arn:aws:s3:::media/*"}}`,
			alice, "s3:GetObject", obj("k"), ctx(), NotApplicable},
		{"NotAction", `{"Statement":{"Effect":"Deny","Principal":"*","NotAction":"s3:Get*","Resource":"arn:aws:s3:::media/*"}}`,
			alice, "s3:PutObject", obj("k"), ctx(), Denied},
		{"NotAction spares", `{"Statement":{"Effect":"Deny","Principal":"*","NotAction":"s3:Get*","Resource":"arn:aws:s3:::media/*"}}`,
			alice, "s3:GetObject", obj("k"), ctx(), NotApplicable},
		{"NotResource", `{"Statement":{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","NotResource":"arn:aws:s3:::media/secret/*"}}`,
			anonymous, "s3:GetObject", obj("public/k"), ctx(), Allowed},
		{"? wildcard", `{"Statement":{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::media/seg?.ts"}}`,
			anonymous, "s3:GetObject", obj("seg7.ts"), ctx(), Allowed},
		{"? wildcard one byte", `{"Statement":{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::media/seg?.ts"}}`,
			anonymous, "s3:GetObject", obj("seg17.ts"), ctx(), NotApplicable},
		{"bucket resource is not its objects", `{"Statement":{"Effect":"Allow","Principal":"*","Action":"s3:*","Resource":"arn:aws:s3:::media"}}`,
			anonymous, "s3:GetObject", obj("k"), ctx(), NotApplicable},
		{"username variable", `{"Version":"2012-10-17","Statement":{"Effect":"Allow","Principal":"*","Action":"s3:*","Resource":"arn:aws:s3:::media/home/${aws:username}/*"}}`,
			alice, "s3:PutObject", obj("home/alice/x"), withUser(alice, ctx()), Allowed},
		{"username variable other home", `{"Version":"2012-10-17","Statement":{"Effect":"Allow","Principal":"*","Action":"s3:*","Resource":"arn:aws:s3:::media/home/${aws:username}/*"}}`,
			alice, "s3:PutObject", obj("home/bob/x"), withUser(alice, ctx()), NotApplicable},
		{"variable absent for anonymous", `{"Version":"2012-10-17","Statement":{"Effect":"Allow","Principal":"*","Action":"s3:*","Resource":"arn:aws:s3:::media/home/${aws:username}/*"}}`,
			anonymous, "s3:PutObject", obj("home//x"), ctx(), NotApplicable},
		{"2008 version takes variables literally", `{"Version":"2008-10-17","Statement":{"Effect":"Allow","Principal":"*","Action":"s3:*","Resource":"arn:aws:s3:::media/${aws:username}"}}`,
			anonymous, "s3:GetObject", obj("${aws:username}"), ctx(), Allowed},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := Parse([]byte(c.policy), "media")
			if err != nil {
				t.Fatal(err)
			}
			got := p.Evaluate(&Request{Principal: c.who, Action: c.action, Resource: c.res, Context: c.ctx})
			if got != c.want {
				t.Fatalf("got %v, want %v", got, c.want)
			}
		})
	}
}

// TestConditions is the operator table: one condition × request context.
func TestConditions(t *testing.T) {
	cases := []struct {
		cond string
		ctx  map[string][]string
		want bool
	}{
		{`{"StringEquals":{"s3:prefix":"live/"}}`, ctx("s3:prefix", "live/"), true},
		{`{"StringEquals":{"s3:prefix":["a/","live/"]}}`, ctx("s3:prefix", "live/"), true},
		{`{"StringEquals":{"s3:prefix":"live/"}}`, ctx("s3:prefix", "LIVE/"), false},
		{`{"StringEquals":{"s3:prefix":"live/"}}`, ctx(), false},
		{`{"StringNotEquals":{"s3:prefix":"live/"}}`, ctx(), true},
		{`{"StringNotEquals":{"s3:prefix":["a","b"]}}`, ctx("s3:prefix", "b"), false},
		{`{"StringNotEquals":{"s3:prefix":["a","b"]}}`, ctx("s3:prefix", "c"), true},
		{`{"StringEqualsIgnoreCase":{"s3:prefix":"live/"}}`, ctx("s3:prefix", "LIVE/"), true},
		{`{"StringNotEqualsIgnoreCase":{"s3:prefix":"live/"}}`, ctx("s3:prefix", "LIVE/"), false},
		{`{"StringLike":{"s3:prefix":"live/*"}}`, ctx("s3:prefix", "live/cam1/"), true},
		{`{"StringLike":{"s3:prefix":"live/*"}}`, ctx("s3:prefix", "vod/"), false},
		{`{"StringNotLike":{"s3:prefix":"live/*"}}`, ctx("s3:prefix", "vod/"), true},
		{`{"StringEquals":{"s3:delimiter":"/"}}`, ctx("s3:delimiter", "/"), true},
		{`{"StringEqualsIfExists":{"s3:delimiter":"/"}}`, ctx(), true},
		{`{"StringEqualsIfExists":{"s3:delimiter":"/"}}`, ctx("s3:delimiter", "-"), false},
		{`{"NumericLessThanEquals":{"s3:max-keys":"100"}}`, ctx("s3:max-keys", "100"), true},
		{`{"NumericLessThanEquals":{"s3:max-keys":100}}`, ctx("s3:max-keys", "101"), false},
		{`{"NumericLessThan":{"s3:max-keys":"100"}}`, ctx("s3:max-keys", "100"), false},
		{`{"NumericGreaterThan":{"s3:max-keys":"10"}}`, ctx("s3:max-keys", "11"), true},
		{`{"NumericGreaterThanEquals":{"s3:max-keys":"10"}}`, ctx("s3:max-keys", "9"), false},
		{`{"NumericEquals":{"s3:max-keys":"10"}}`, ctx("s3:max-keys", "10.0"), true},
		{`{"NumericNotEquals":{"s3:max-keys":"10"}}`, ctx("s3:max-keys", "10"), false},
		{`{"NumericEquals":{"s3:max-keys":"10"}}`, ctx("s3:max-keys", "ten"), false},
		{`{"NumericLessThanIfExists":{"s3:max-keys":"10"}}`, ctx(), true},
		{`{"DateLessThan":{"aws:CurrentTime":"2030-01-01T00:00:00Z"}}`, ctx("aws:CurrentTime", "2026-11-23T05:00:00Z"), true},
		{`{"DateGreaterThan":{"aws:CurrentTime":"2030-01-01"}}`, ctx("aws:CurrentTime", "2026-11-23T05:00:00Z"), false},
		{`{"DateEquals":{"aws:EpochTime":"1700000000"}}`, ctx("aws:EpochTime", "1700000000"), true},
		{`{"DateNotEquals":{"aws:CurrentTime":"2026-11-23T05:00:00Z"}}`, ctx("aws:CurrentTime", "2026-11-23T05:00:00Z"), false},
		{`{"DateLessThanEquals":{"aws:CurrentTime":"2026-11-23T05:00:00Z"}}`, ctx("aws:CurrentTime", "2026-11-23T05:00:00Z"), true},
		{`{"DateGreaterThanEquals":{"aws:CurrentTime":"2026-11-23T05:00:01Z"}}`, ctx("aws:CurrentTime", "2026-11-23T05:00:00Z"), false},
		{`{"Bool":{"aws:SecureTransport":"false"}}`, ctx("aws:SecureTransport", "false"), true},
		{`{"Bool":{"aws:SecureTransport":false}}`, ctx("aws:SecureTransport", "true"), false},
		{`{"Bool":{"aws:SecureTransport":"true"}}`, ctx(), false},
		{`{"BoolIfExists":{"aws:SecureTransport":"true"}}`, ctx(), true},
		{`{"IpAddress":{"aws:SourceIp":"10.0.0.0/8"}}`, ctx("aws:SourceIp", "10.9.9.9"), true},
		{`{"IpAddress":{"aws:SourceIp":"10.0.0.0/8"}}`, ctx("aws:SourceIp", "11.0.0.1"), false},
		{`{"IpAddress":{"aws:SourceIp":"10.0.0.0/8"}}`, ctx("aws:SourceIp", "::ffff:10.0.0.1"), true},
		{`{"IpAddress":{"aws:SourceIp":"2001:db8::/32"}}`, ctx("aws:SourceIp", "2001:db8::1"), true},
		{`{"IpAddress":{"aws:SourceIp":"10.0.0.0/8"}}`, ctx(), false},
		{`{"NotIpAddress":{"aws:SourceIp":"10.0.0.0/8"}}`, ctx("aws:SourceIp", "11.0.0.1"), true},
		{`{"NotIpAddress":{"aws:SourceIp":["10.0.0.0/8","11.0.0.0/8"]}}`, ctx("aws:SourceIp", "11.0.0.1"), false},
		{`{"Null":{"aws:username":"true"}}`, ctx(), true},
		{`{"Null":{"aws:username":"true"}}`, ctx("aws:username", "alice"), false},
		{`{"Null":{"aws:username":"false"}}`, ctx("aws:username", "alice"), true},
		{`{"StringEquals":{"aws:username":"alice"}}`, ctx("aws:username", "alice"), true},
		{`{"StringEquals":{"s3:x-amz-acl":"bucket-owner-full-control"}}`, ctx("s3:x-amz-acl", "bucket-owner-full-control"), true},
		{`{"StringEquals":{"s3:x-amz-acl":"bucket-owner-full-control"}}`, ctx("s3:x-amz-acl", "public-read"), false},
		{`{"StringEquals":{"s3:ExistingObjectTag/class":"public"}}`, ctx("s3:ExistingObjectTag/class", "public"), true},
		{`{"StringEquals":{"S3:existingobjecttag/class":"public"}}`, ctx("s3:ExistingObjectTag/class", "public"), true},
		{`{"StringEquals":{"s3:ExistingObjectTag/Class":"public"}}`, ctx("s3:ExistingObjectTag/class", "public"), false},
		{`{"StringEquals":{"s3:RequestObjectTag/env":"prod"}}`, ctx("s3:RequestObjectTag/env", "prod"), true},
		{`{"ForAnyValue:StringEquals":{"s3:RequestObjectTagKeys":["env","team"]}}`, ctx("s3:RequestObjectTagKeys", "x", "s3:RequestObjectTagKeys", "team"), true},
		{`{"ForAnyValue:StringEquals":{"s3:RequestObjectTagKeys":["env","team"]}}`, ctx(), false},
		{`{"ForAllValues:StringEquals":{"s3:RequestObjectTagKeys":["env","team"]}}`, ctx("s3:RequestObjectTagKeys", "x", "s3:RequestObjectTagKeys", "team"), false},
		{`{"ForAllValues:StringEquals":{"s3:RequestObjectTagKeys":["env","team"]}}`, ctx("s3:RequestObjectTagKeys", "env"), true},
		{`{"ForAllValues:StringEquals":{"s3:RequestObjectTagKeys":["env","team"]}}`, ctx(), true},
		{`{"NumericGreaterThan":{"s3:object-lock-remaining-retention-days":"1"}}`, ctx("s3:object-lock-remaining-retention-days", "30"), true},
		{`{"StringEquals":{"s3:object-lock-mode":"COMPLIANCE"}}`, ctx("s3:object-lock-mode", "GOVERNANCE"), false},
		{`{"DateGreaterThan":{"s3:object-lock-retain-until-date":"2030-01-01T00:00:00Z"}}`, ctx("s3:object-lock-retain-until-date", "2031-01-01T00:00:00Z"), true},
		{`{"StringEquals":{"s3:object-lock-legal-hold":"ON"}}`, ctx("s3:object-lock-legal-hold", "ON"), true},
		{`{"StringEquals":{"s3:prefix":"live/"},"Bool":{"aws:SecureTransport":"true"}}`, ctx("s3:prefix", "live/", "aws:SecureTransport", "false"), false},
		{`{"StringEquals":{"s3:prefix":"live/","s3:delimiter":"/"}}`, ctx("s3:prefix", "live/"), false},
		{`{"StringLike":{"s3:prefix":"home/${aws:username}/*"}}`, ctx("s3:prefix", "home/alice/x", "aws:username", "alice"), true},
		{`{"StringLike":{"s3:prefix":"home/${aws:username}/*"}}`, ctx("s3:prefix", "home/bob/x", "aws:username", "alice"), false},
	}
	for _, c := range cases {
		doc := `{"Version":"2012-10-17","Statement":{"Effect":"Allow","Principal":"*","Action":"s3:*","Resource":"*","Condition":` + c.cond + `}}`
		p, err := Parse([]byte(doc), "media")
		if err != nil {
			t.Fatalf("%s: %v", c.cond, err)
		}
		got := p.Evaluate(&Request{Action: "s3:ListBucket", Resource: "arn:aws:s3:::media", Context: c.ctx}) == Allowed
		if got != c.want {
			t.Errorf("%s with %v: got %v, want %v", c.cond, c.ctx, got, c.want)
		}
	}
}

// TestParseRejects: every malformed document is a *MalformedError.
func TestParseRejects(t *testing.T) {
	stmt := func(s string) string { return `{"Version":"2012-10-17","Statement":` + s + `}` }
	cases := map[string]string{
		"empty":                ``,
		"not json":             `{"Version":`,
		"trailing data":        `{"Statement":[]} x`,
		"array at top":         `[]`,
		"bad version":          `{"Version":"2020-01-01","Statement":[]}`,
		"no statement":         `{"Version":"2012-10-17"}`,
		"empty statement list": stmt(`[]`),
		"unknown top element":  `{"Version":"2012-10-17","Statement":[],"Foo":1}`,
		"unknown stmt element": stmt(`{"Effect":"Allow","Principal":"*","Action":"s3:*","Resource":"*","Extra":1}`),
		"bad effect":           stmt(`{"Effect":"Permit","Principal":"*","Action":"s3:*","Resource":"*"}`),
		"no principal":         stmt(`{"Effect":"Allow","Action":"s3:*","Resource":"*"}`),
		"principal and not":    stmt(`{"Effect":"Allow","Principal":"*","NotPrincipal":"*","Action":"s3:*","Resource":"*"}`),
		"principal string":     stmt(`{"Effect":"Allow","Principal":"alice","Action":"s3:*","Resource":"*"}`),
		"principal kind":       stmt(`{"Effect":"Allow","Principal":{"Bogus":"x"},"Action":"s3:*","Resource":"*"}`),
		"principal empty map":  stmt(`{"Effect":"Allow","Principal":{},"Action":"s3:*","Resource":"*"}`),
		"no action":            stmt(`{"Effect":"Allow","Principal":"*","Resource":"*"}`),
		"action not s3":        stmt(`{"Effect":"Allow","Principal":"*","Action":"ec2:RunInstances","Resource":"*"}`),
		"action empty list":    stmt(`{"Effect":"Allow","Principal":"*","Action":[],"Resource":"*"}`),
		"action number":        stmt(`{"Effect":"Allow","Principal":"*","Action":7,"Resource":"*"}`),
		"no resource":          stmt(`{"Effect":"Allow","Principal":"*","Action":"s3:*"}`),
		"other bucket":         stmt(`{"Effect":"Allow","Principal":"*","Action":"s3:*","Resource":"arn:aws:s3:::other/*"}`),
		"not an arn":           stmt(`{"Effect":"Allow","Principal":"*","Action":"s3:*","Resource":"media/*"}`),
		"bad operator":         stmt(`{"Effect":"Allow","Principal":"*","Action":"s3:*","Resource":"*","Condition":{"StringSortOf":{"s3:prefix":"a"}}}`),
		"bad set operator":     stmt(`{"Effect":"Allow","Principal":"*","Action":"s3:*","Resource":"*","Condition":{"ForSome:StringEquals":{"s3:prefix":"a"}}}`),
		"bad key namespace":    stmt(`{"Effect":"Allow","Principal":"*","Action":"s3:*","Resource":"*","Condition":{"StringEquals":{"ec2:x":"a"}}}`),
		// Keys b3 never sets would make their condition false (true when
		// negated) for every request: refused, not ignored.
		"unevaluated aws key":   stmt(`{"Effect":"Deny","Principal":"*","Action":"s3:*","Resource":"*","Condition":{"StringNotEquals":{"aws:SourceVpce":"vpce-1"}}}`),
		"unevaluated arn key":   stmt(`{"Effect":"Allow","Principal":"*","Action":"s3:*","Resource":"*","Condition":{"ArnLike":{"aws:PrincipalArn":"arn:aws:iam::*:user/a*"}}}`),
		"unevaluated s3 key":    stmt(`{"Effect":"Deny","Principal":"*","Action":"s3:*","Resource":"*","Condition":{"NumericGreaterThan":{"s3:signatureAge":"600000"}}}`),
		"misspelt lock key":     stmt(`{"Effect":"Deny","Principal":"*","Action":"s3:*","Resource":"*","Condition":{"StringEquals":{"s3:object-lock-modes":"COMPLIANCE"}}}`),
		"tag key without tag":   stmt(`{"Effect":"Deny","Principal":"*","Action":"s3:*","Resource":"*","Condition":{"StringEquals":{"s3:RequestObjectTag/":"x"}}}`),
		"bad ip":                stmt(`{"Effect":"Allow","Principal":"*","Action":"s3:*","Resource":"*","Condition":{"IpAddress":{"aws:SourceIp":"10.0.0.300/8"}}}`),
		"bad number":            stmt(`{"Effect":"Allow","Principal":"*","Action":"s3:*","Resource":"*","Condition":{"NumericLessThan":{"s3:max-keys":"many"}}}`),
		"bad date":              stmt(`{"Effect":"Allow","Principal":"*","Action":"s3:*","Resource":"*","Condition":{"DateLessThan":{"aws:CurrentTime":"tomorrow"}}}`),
		"bad bool":              stmt(`{"Effect":"Allow","Principal":"*","Action":"s3:*","Resource":"*","Condition":{"Bool":{"aws:SecureTransport":"yes"}}}`),
		"condition not object":  stmt(`{"Effect":"Allow","Principal":"*","Action":"s3:*","Resource":"*","Condition":[]}`),
		"condition value null":  stmt(`{"Effect":"Allow","Principal":"*","Action":"s3:*","Resource":"*","Condition":{"StringEquals":{"s3:prefix":null}}}`),
		"condition value empty": stmt(`{"Effect":"Allow","Principal":"*","Action":"s3:*","Resource":"*","Condition":{"StringEquals":{"s3:prefix":[]}}}`),
		"too large":             `{"Statement":"` + strings.Repeat("x", MaxSize) + `"}`,
	}
	for name, doc := range cases {
		_, err := Parse([]byte(doc), "media")
		var me *MalformedError
		if !errors.As(err, &me) {
			t.Errorf("%s: got %v, want a MalformedError", name, err)
		}
	}
}

func TestIsPublic(t *testing.T) {
	cases := []struct {
		stmt string
		want bool
	}{
		{`{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::media/*"}`, true},
		{`{"Effect":"Allow","Principal":{"AWS":["alice","*"]},"Action":"s3:GetObject","Resource":"arn:aws:s3:::media/*"}`, true},
		{`{"Effect":"Deny","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::media/*"}`, false},
		{`{"Effect":"Allow","Principal":{"AWS":"alice"},"Action":"s3:GetObject","Resource":"arn:aws:s3:::media/*"}`, false},
		{`{"Effect":"Allow","NotPrincipal":{"AWS":"alice"},"Action":"s3:GetObject","Resource":"arn:aws:s3:::media/*"}`, true},
		{`{"Effect":"Allow","Principal":"*","Action":"s3:PutObject","Resource":"arn:aws:s3:::media/*","Condition":{"IpAddress":{"aws:SourceIp":"10.1.0.0/16"}}}`, false},
		{`{"Effect":"Allow","Principal":"*","Action":"s3:PutObject","Resource":"arn:aws:s3:::media/*","Condition":{"IpAddress":{"aws:SourceIp":"0.0.0.0/0"}}}`, true},
		{`{"Effect":"Allow","Principal":"*","Action":"s3:PutObject","Resource":"arn:aws:s3:::media/*","Condition":{"IpAddressIfExists":{"aws:SourceIp":"10.1.0.0/16"}}}`, true},
		{`{"Effect":"Allow","Principal":"*","Action":"s3:PutObject","Resource":"arn:aws:s3:::media/*","Condition":{"NotIpAddress":{"aws:SourceIp":"10.1.0.0/16"}}}`, true},
		{`{"Effect":"Allow","Principal":"*","Action":"s3:PutObject","Resource":"arn:aws:s3:::media/*","Condition":{"StringEquals":{"aws:username":"alice"}}}`, false},
		{`{"Effect":"Allow","Principal":"*","Action":"s3:PutObject","Resource":"arn:aws:s3:::media/*","Condition":{"StringLike":{"aws:username":"a*"}}}`, true},
		{`{"Effect":"Allow","Principal":"*","Action":"s3:PutObject","Resource":"arn:aws:s3:::media/*","Condition":{"Bool":{"aws:SecureTransport":"true"}}}`, true},
	}
	for _, c := range cases {
		p, err := Parse([]byte(`{"Version":"2012-10-17","Statement":[`+c.stmt+`]}`), "media")
		if err != nil {
			t.Fatalf("%s: %v", c.stmt, err)
		}
		if got := p.IsPublic(); got != c.want {
			t.Errorf("%s: IsPublic %v, want %v", c.stmt, got, c.want)
		}
	}
}

func TestMatch(t *testing.T) {
	cases := []struct {
		pattern, s string
		want       bool
	}{
		{"", "", true}, {"*", "", true}, {"*", "abc", true}, {"a*c", "abbbc", true},
		{"a*c", "abbb", false}, {"a?c", "abc", true}, {"a?c", "ac", false},
		{"*.m3u8", "live/x.m3u8", true}, {"*.m3u8", "live/x.m3u8.ts", false},
		{"a*b*c", "axxbyyc", true}, {"a*b*c", "axxbyy", false}, {"**", "x", true},
		{"abc", "ABC", false}, {"*a", strings.Repeat("b", 1000), false},
	}
	for _, c := range cases {
		if got := Match(c.pattern, c.s); got != c.want {
			t.Errorf("Match(%q, %q) = %v", c.pattern, c.s, got)
		}
	}
}

func TestACLGrants(t *testing.T) {
	owner, other := "c0ffee", "beef"
	cases := []struct {
		canned       string
		who          Principal
		perm         string
		ignorePublic bool
		want         bool
	}{
		{"private", alice, PermRead, false, true},
		{"private", bob, PermRead, false, false},
		{"private", anonymous, PermRead, false, false},
		{"public-read", anonymous, PermRead, false, true},
		{"public-read", anonymous, PermRead, true, false},
		{"public-read", anonymous, PermWrite, false, false},
		{"public-read", anonymous, PermReadACP, false, false},
		{"public-read-write", anonymous, PermWrite, false, true},
		{"authenticated-read", anonymous, PermRead, false, false},
		{"authenticated-read", bob, PermRead, false, true},
		{"bucket-owner-read", bob, PermRead, false, true},
		{"bucket-owner-read", bob, PermWriteACP, false, false},
		{"bucket-owner-full-control", bob, PermWriteACP, false, true},
		{"log-delivery-write", bob, PermWrite, false, false},
	}
	for _, c := range cases {
		grants, err := Canned(c.canned, owner, other)
		if err != nil {
			t.Fatal(err)
		}
		if got := Grants(grants, c.who, c.perm, c.ignorePublic); got != c.want {
			t.Errorf("%s: %s for %+v = %v, want %v", c.canned, c.perm, c.who, got, c.want)
		}
	}
	if _, err := Canned("bogus", owner, owner); err == nil {
		t.Fatal("unknown canned ACL accepted")
	}
}

// BenchmarkEvaluate: one decision of the HLS policy (three statements,
// an IP condition) for an anonymous segment upload, as s3api makes it
// per request of a bucket with a policy.
func BenchmarkEvaluate(b *testing.B) {
	p, err := Parse([]byte(hlsPolicy), "media")
	if err != nil {
		b.Fatal(err)
	}
	r := &Request{Action: "s3:PutObject", Resource: obj("live/cam1/seg000123.ts"), Context: ctx("aws:SourceIp", "10.1.2.3", "aws:SecureTransport", "false")}
	b.ReportAllocs()
	for b.Loop() {
		if p.Evaluate(r) != Allowed {
			b.Fatal("not allowed")
		}
	}
}

// BenchmarkParse: parsing the HLS policy (done once per change of a
// bucket's policy; decisions use the parsed form).
func BenchmarkParse(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse([]byte(hlsPolicy), "media"); err != nil {
			b.Fatal(err)
		}
	}
}
