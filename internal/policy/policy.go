package policy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"time"
)

// MaxSize is the largest bucket policy S3 accepts (20 KiB).
const MaxSize = 20 << 10

// MalformedError is a policy document that cannot be accepted; Message is
// what S3 puts in its MalformedPolicy error.
type MalformedError struct{ Message string }

func (e *MalformedError) Error() string { return "malformed policy: " + e.Message }

func malformed(format string, args ...any) error {
	return &MalformedError{Message: fmt.Sprintf(format, args...)}
}

// Effect is a statement's Allow or Deny.
type Effect bool

// The two effects.
const (
	Deny  Effect = false
	Allow Effect = true
)

// Policy is a parsed bucket policy.
type Policy struct {
	Version    string
	ID         string
	Statements []Statement
	// variables: Version 2012-10-17 substitutes ${...} in Resource and
	// condition values; 2008-10-17 takes them literally.
	variables bool
}

// Statement is one statement. Exactly one of Principal/NotPrincipal,
// Action/NotAction, Resource/NotResource was given; the Not flags say
// which.
type Statement struct {
	Sid          string
	Effect       Effect
	Principals   []string // "*" for everyone; AWS or CanonicalUser values
	NotPrincipal bool
	Actions      []string // lower-cased patterns ("s3:get*")
	NotAction    bool
	Resources    []string // ARN patterns
	NotResource  bool
	Conditions   []Condition
}

// Condition is one (operator, key, values) triple of a Condition block.
type Condition struct {
	Operator string // base operator as written: "StringLike", "IpAddress"...
	IfExists bool
	Set      string // "", "ForAnyValue" or "ForAllValues"
	Key      string // normalised (see NormalizeKey)
	Values   []string
	kind     operatorKind
	negated  bool
	cmp      comparison
	prefixes []netip.Prefix // IpAddress, NotIpAddress
	numbers  []float64      // Numeric*
	dates    []time.Time    // Date*
}

type operatorKind uint8

const (
	kindString operatorKind = iota
	kindStringIgnoreCase
	kindStringLike
	kindNumeric
	kindDate
	kindBool
	kindIP
	kindArn
	kindNull
	kindBinary
)

// comparison is the relation of a Numeric or Date operator.
type comparison uint8

const (
	cmpEq comparison = iota
	cmpLt
	cmpLe
	cmpGt
	cmpGe
)

type operatorSpec struct {
	kind    operatorKind
	negated bool
	cmp     comparison
}

var operators = map[string]operatorSpec{
	"StringEquals":              {kind: kindString},
	"StringNotEquals":           {kind: kindString, negated: true},
	"StringEqualsIgnoreCase":    {kind: kindStringIgnoreCase},
	"StringNotEqualsIgnoreCase": {kind: kindStringIgnoreCase, negated: true},
	"StringLike":                {kind: kindStringLike},
	"StringNotLike":             {kind: kindStringLike, negated: true},
	"NumericEquals":             {kind: kindNumeric},
	"NumericNotEquals":          {kind: kindNumeric, negated: true},
	"NumericLessThan":           {kind: kindNumeric, cmp: cmpLt},
	"NumericLessThanEquals":     {kind: kindNumeric, cmp: cmpLe},
	"NumericGreaterThan":        {kind: kindNumeric, cmp: cmpGt},
	"NumericGreaterThanEquals":  {kind: kindNumeric, cmp: cmpGe},
	"DateEquals":                {kind: kindDate},
	"DateNotEquals":             {kind: kindDate, negated: true},
	"DateLessThan":              {kind: kindDate, cmp: cmpLt},
	"DateLessThanEquals":        {kind: kindDate, cmp: cmpLe},
	"DateGreaterThan":           {kind: kindDate, cmp: cmpGt},
	"DateGreaterThanEquals":     {kind: kindDate, cmp: cmpGe},
	"Bool":                      {kind: kindBool},
	"IpAddress":                 {kind: kindIP},
	"NotIpAddress":              {kind: kindIP, negated: true},
	"ArnEquals":                 {kind: kindArn},
	"ArnLike":                   {kind: kindArn},
	"ArnNotEquals":              {kind: kindArn, negated: true},
	"ArnNotLike":                {kind: kindArn, negated: true},
	"BinaryEquals":              {kind: kindBinary},
	"Null":                      {kind: kindNull},
}

// NormalizeKey returns the form condition keys are compared in: keys are
// case-insensitive, except the tag key after "/" in
// s3:ExistingObjectTag/<key> and s3:RequestObjectTag/<key>.
func NormalizeKey(key string) string {
	if i := strings.IndexByte(key, '/'); i >= 0 {
		return strings.ToLower(key[:i]) + key[i:]
	}
	return strings.ToLower(key)
}

// conditionKeys are the condition keys a request to b3 may carry (package
// s3api's conditionContext sets them where they apply), in NormalizeKey's
// form; conditionKeyPrefixes name a key by a prefix and a tag key. Parse
// refuses every other key: a key that no request ever carries makes its
// condition false (true when negated) for every request, so a statement
// written for AWS would be silently dropped, or would apply to everyone,
// instead of doing what it says.
var conditionKeys = map[string]bool{
	"aws:sourceip": true, "aws:securetransport": true, "aws:currenttime": true, "aws:epochtime": true,
	"aws:principaltype": true, "aws:userid": true, "aws:username": true, "aws:referer": true, "aws:useragent": true,
	"s3:prefix": true, "s3:delimiter": true, "s3:max-keys": true,
	"s3:x-amz-acl": true, "s3:x-amz-grant-read": true, "s3:x-amz-grant-write": true, "s3:x-amz-grant-read-acp": true,
	"s3:x-amz-grant-write-acp": true, "s3:x-amz-grant-full-control": true, "s3:x-amz-copy-source": true,
	"s3:x-amz-metadata-directive": true, "s3:x-amz-storage-class": true, "s3:x-amz-server-side-encryption": true,
	"s3:x-amz-server-side-encryption-aws-kms-key-id": true, "s3:x-amz-server-side-encryption-customer-algorithm": true,
	"s3:x-amz-content-sha256": true, "s3:requestobjecttagkeys": true, "s3:versionid": true,
	"s3:object-lock-mode": true, "s3:object-lock-retain-until-date": true,
	"s3:object-lock-remaining-retention-days": true, "s3:object-lock-legal-hold": true,
}

var conditionKeyPrefixes = []string{"s3:existingobjecttag/", "s3:requestobjecttag/"}

// KnownConditionKey reports whether key (in NormalizeKey's form) is a
// condition key b3 evaluates.
func KnownConditionKey(key string) bool {
	if conditionKeys[key] {
		return true
	}
	for _, p := range conditionKeyPrefixes {
		if rest, ok := strings.CutPrefix(key, p); ok && rest != "" {
			return true
		}
	}
	return false
}

// document is the JSON shape; every element is kept raw and checked by
// hand, because most of them may be a string or a list.
type document struct {
	Version   string          `json:"Version"`
	ID        string          `json:"Id"`
	Statement json.RawMessage `json:"Statement"`
}

type rawStatement struct {
	Sid          json.RawMessage `json:"Sid"`
	Effect       string          `json:"Effect"`
	Principal    json.RawMessage `json:"Principal"`
	NotPrincipal json.RawMessage `json:"NotPrincipal"`
	Action       json.RawMessage `json:"Action"`
	NotAction    json.RawMessage `json:"NotAction"`
	Resource     json.RawMessage `json:"Resource"`
	NotResource  json.RawMessage `json:"NotResource"`
	Condition    json.RawMessage `json:"Condition"`
}

// Parse parses and validates the policy document of bucket. Every error
// it returns is a *MalformedError.
func Parse(data []byte, bucket string) (*Policy, error) {
	if len(data) > MaxSize {
		return nil, malformed("Policies must be no more than %d bytes", MaxSize)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, malformed("Policies must be valid JSON and the first byte must be '{'")
	}
	var doc document
	if err := strictUnmarshal(data, &doc); err != nil {
		return nil, malformed("This policy contains invalid Json")
	}
	p := &Policy{Version: doc.Version, ID: doc.ID}
	switch doc.Version {
	case "2012-10-17":
		p.variables = true
	case "2008-10-17", "":
	default:
		return nil, malformed("The policy must contain a valid version string")
	}
	var raws []rawStatement
	if err := oneOrMany(doc.Statement, &raws); err != nil || len(raws) == 0 {
		return nil, malformed("Missing required field Statement")
	}
	for i := range raws {
		st, err := parseStatement(&raws[i], bucket)
		if err != nil {
			return nil, err
		}
		p.Statements = append(p.Statements, st)
	}
	return p, nil
}

// strictUnmarshal decodes one JSON value, refusing unknown fields and
// trailing data.
func strictUnmarshal(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return fmt.Errorf("trailing data")
	}
	return nil
}

// oneOrMany decodes a JSON object or a list of them into *[]rawStatement.
func oneOrMany(raw json.RawMessage, out *[]rawStatement) error {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return fmt.Errorf("missing")
	}
	if raw[0] == '[' {
		var list []json.RawMessage
		if err := json.Unmarshal(raw, &list); err != nil {
			return err
		}
		for _, item := range list {
			var st rawStatement
			if err := strictUnmarshal(item, &st); err != nil {
				return err
			}
			*out = append(*out, st)
		}
		return nil
	}
	var st rawStatement
	if err := strictUnmarshal(raw, &st); err != nil {
		return err
	}
	*out = append(*out, st)
	return nil
}

// stringList decodes a string or a non-empty list of strings.
func stringList(raw json.RawMessage) ([]string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, err
		}
		return []string{s}, nil
	}
	var list []string
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, err
	}
	if len(list) == 0 {
		return nil, fmt.Errorf("empty list")
	}
	return list, nil
}

// exclusive picks the one of a positive element and its Not form that is
// present.
func exclusive(name string, pos, neg json.RawMessage) (json.RawMessage, bool, error) {
	switch {
	case len(pos) > 0 && len(neg) > 0:
		return nil, false, malformed("Statement can not contain both %s and Not%s", name, name)
	case len(pos) > 0:
		return pos, false, nil
	case len(neg) > 0:
		return neg, true, nil
	}
	return nil, false, malformed("Missing required field %s", name)
}

func parseStatement(raw *rawStatement, bucket string) (Statement, error) {
	var st Statement
	if len(raw.Sid) > 0 {
		if err := json.Unmarshal(raw.Sid, &st.Sid); err != nil {
			return st, malformed("Statement Sid must be a string")
		}
	}
	switch raw.Effect {
	case "Allow":
		st.Effect = Allow
	case "Deny":
		st.Effect = Deny
	default:
		return st, malformed("Invalid effect: %s", raw.Effect)
	}
	principal, not, err := exclusive("Principal", raw.Principal, raw.NotPrincipal)
	if err != nil {
		return st, err
	}
	st.NotPrincipal = not
	if st.Principals, err = parsePrincipal(principal); err != nil {
		return st, err
	}
	action, not, err := exclusive("Action", raw.Action, raw.NotAction)
	if err != nil {
		return st, err
	}
	st.NotAction = not
	actions, err := stringList(action)
	if err != nil {
		return st, malformed("Action must be a string or a list of strings")
	}
	for _, a := range actions {
		if !validAction(a) {
			return st, malformed("Policy has invalid action")
		}
		st.Actions = append(st.Actions, strings.ToLower(a))
	}
	resource, not, err := exclusive("Resource", raw.Resource, raw.NotResource)
	if err != nil {
		return st, err
	}
	st.NotResource = not
	if st.Resources, err = stringList(resource); err != nil {
		return st, malformed("Resource must be a string or a list of strings")
	}
	for _, r := range st.Resources {
		if !resourceInBucket(r, bucket) {
			return st, malformed("Policy has invalid resource")
		}
	}
	if len(bytes.TrimSpace(raw.Condition)) > 0 {
		if st.Conditions, err = parseConditions(raw.Condition); err != nil {
			return st, err
		}
	}
	return st, nil
}

// parsePrincipal accepts "*", {"AWS": ...} and {"CanonicalUser": ...};
// {"Service": ...} and {"Federated": ...} parse and never match.
func parsePrincipal(raw json.RawMessage) ([]string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil || s != "*" {
			return nil, malformed("Invalid principal in policy")
		}
		return []string{"*"}, nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || len(m) == 0 {
		return nil, malformed("Invalid principal in policy")
	}
	var out []string
	for kind, v := range m {
		values, err := stringList(v)
		if err != nil {
			return nil, malformed("Invalid principal in policy")
		}
		switch kind {
		case "AWS", "CanonicalUser":
			for _, s := range values {
				if s == "" {
					return nil, malformed("Invalid principal in policy")
				}
				out = append(out, s)
			}
		case "Service", "Federated":
			// Never matches a b3 caller.
		default:
			return nil, malformed("Invalid principal in policy")
		}
	}
	if out == nil {
		out = []string{}
	}
	return out, nil
}

// validAction accepts "*" and "s3:<name>", the name of letters and
// wildcards.
func validAction(a string) bool {
	if a == "*" {
		return true
	}
	name, ok := strings.CutPrefix(strings.ToLower(a), "s3:")
	if !ok || name == "" {
		return false
	}
	for _, c := range name {
		if !('a' <= c && c <= 'z' || c == '*' || c == '?') {
			return false
		}
	}
	return true
}

// resourceInBucket accepts "*" and ARNs "arn:aws:s3:::<bucket>[/...]"
// whose bucket part (a pattern) matches bucket, as S3 refuses a policy
// naming other buckets.
func resourceInBucket(r, bucket string) bool {
	if r == "*" {
		return true
	}
	rest, ok := strings.CutPrefix(r, "arn:aws:s3:::")
	if !ok || rest == "" {
		return false
	}
	bucketPart, _, hasKey := strings.Cut(rest, "/")
	if strings.ContainsAny(bucketPart, "*?") {
		// A pattern such as "arn:aws:s3:::*" may span the key part too.
		return Match(rest, bucket) || Match(rest, bucket+"/x") || hasKey && Match(bucketPart, bucket)
	}
	return bucketPart == bucket
}

func parseConditions(raw json.RawMessage) ([]Condition, error) {
	var block map[string]map[string]json.RawMessage
	if err := json.Unmarshal(raw, &block); err != nil {
		return nil, malformed("Condition must be an object of operators")
	}
	var out []Condition
	for op, keys := range block {
		c := Condition{Operator: op}
		if set, rest, ok := strings.Cut(op, ":"); ok {
			if set != "ForAnyValue" && set != "ForAllValues" {
				return nil, malformed("Invalid Condition type : %s", op)
			}
			c.Set, c.Operator = set, rest
		}
		if base, ok := strings.CutSuffix(c.Operator, "IfExists"); ok && base != "Null" {
			c.Operator, c.IfExists = base, true
		}
		spec, ok := operators[c.Operator]
		if !ok {
			return nil, malformed("Invalid Condition type : %s", op)
		}
		c.kind, c.negated = spec.kind, spec.negated
		if len(keys) == 0 {
			return nil, malformed("Condition %s has no keys", op)
		}
		for key, v := range keys {
			k := c
			k.Key = NormalizeKey(key)
			if !KnownConditionKey(k.Key) {
				return nil, malformed("Policy has an invalid condition key: %s is not a key this server evaluates", key)
			}
			values, err := conditionValues(v)
			if err != nil {
				return nil, malformed("Invalid value for Condition %s %s", op, key)
			}
			k.Values = values
			if err := k.compile(spec); err != nil {
				return nil, err
			}
			out = append(out, k)
		}
	}
	return out, nil
}

// conditionValues decodes a string, number or bool, or a list of them,
// as strings.
func conditionValues(raw json.RawMessage) ([]string, error) {
	raw = bytes.TrimSpace(raw)
	var list []json.RawMessage
	if len(raw) > 0 && raw[0] == '[' {
		if err := json.Unmarshal(raw, &list); err != nil {
			return nil, err
		}
		if len(list) == 0 {
			return nil, fmt.Errorf("empty list")
		}
	} else {
		list = []json.RawMessage{raw}
	}
	out := make([]string, 0, len(list))
	for _, item := range list {
		var v any
		if err := json.Unmarshal(item, &v); err != nil {
			return nil, err
		}
		switch x := v.(type) {
		case string:
			out = append(out, x)
		case float64:
			out = append(out, string(bytes.TrimSpace(item)))
		case bool:
			out = append(out, strconv.FormatBool(x))
		default:
			return nil, fmt.Errorf("value of type %T", v)
		}
	}
	return out, nil
}

// compile checks the values of typed operators and keeps their parsed
// forms.
func (c *Condition) compile(spec operatorSpec) error {
	bad := func() error { return malformed("Invalid value for Condition %s %s", c.Operator, c.Key) }
	for _, v := range c.Values {
		switch c.kind {
		case kindIP:
			p, err := parsePrefix(v)
			if err != nil {
				return bad()
			}
			c.prefixes = append(c.prefixes, p)
		case kindNumeric:
			n, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return bad()
			}
			c.numbers = append(c.numbers, n)
		case kindDate:
			t, ok := parseDate(v)
			if !ok {
				return bad()
			}
			c.dates = append(c.dates, t)
		case kindBool, kindNull:
			if !strings.EqualFold(v, "true") && !strings.EqualFold(v, "false") {
				return bad()
			}
		}
	}
	c.cmp = spec.cmp
	return nil
}

func parsePrefix(v string) (netip.Prefix, error) {
	if strings.Contains(v, "/") {
		p, err := netip.ParsePrefix(v)
		return p.Masked(), err
	}
	a, err := netip.ParseAddr(v)
	if err != nil {
		return netip.Prefix{}, err
	}
	return netip.PrefixFrom(a, a.BitLen()), nil
}

// parseDate accepts ISO 8601 (RFC 3339, with or without fractional
// seconds, or a date alone) and Unix epoch seconds.
func parseDate(v string) (time.Time, bool) {
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05Z0700", "2006-01-02T15:04Z07:00", "2006-01-02"} {
		if t, err := time.Parse(layout, v); err == nil {
			return t, true
		}
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		return time.Unix(n, 0), true
	}
	return time.Time{}, false
}
