package s3auth

import (
	"crypto/hmac"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// PostPolicy is an authenticated browser-form (POST object) upload.
type PostPolicy struct {
	// AccessKey is the signer; "" for a form without policy (anonymous).
	AccessKey string
	// Key is the object key with ${filename} substituted.
	Key string
	// MinLength and MaxLength bound the file size (content-length-range);
	// MaxLength is -1 when the policy sets no range.
	MinLength, MaxLength int64
}

// CheckLength enforces content-length-range on the uploaded file's size:
// EntityTooSmall or EntityTooLarge, as S3 reports them.
func (p *PostPolicy) CheckLength(size int64) error {
	if size < p.MinLength {
		return newError("EntityTooSmall", http.StatusBadRequest, "Your proposed upload is smaller than the minimum allowed size")
	}
	if p.MaxLength >= 0 && size > p.MaxLength {
		return newError("EntityTooLarge", http.StatusBadRequest, "Your proposed upload exceeds the maximum allowed size")
	}
	return nil
}

// postPolicyDocument is the decoded policy JSON.
type postPolicyDocument struct {
	Expiration *string
	Conditions []json.RawMessage
}

type postCondition struct {
	op, field, value string // op: "eq", "starts-with"
}

func errPolicy(format string, args ...any) *Error {
	return newError("InvalidPolicyDocument", http.StatusBadRequest, "Invalid Policy: "+format, args...)
}

func errPolicyDenied(format string, args ...any) *Error {
	return newError("AccessDenied", http.StatusForbidden, "Invalid according to Policy: "+format, args...)
}

// VerifyPostPolicy authenticates a POST object form. fields are the form
// fields other than the file (names matched case-insensitively; two names
// that differ only in case are refused), filename
// is the uploaded file's name for ${filename}, bucket the target bucket.
// It checks the signature (V4: x-amz-signature over the base64 policy with
// the derived key; V2: HMAC-SHA1 Signature), the expiration and every
// condition; the caller enforces the size with CheckLength while storing.
func (v *Verifier) VerifyPostPolicy(bucket string, fields map[string]string, filename string) (*PostPolicy, error) {
	form := make(map[string]string, len(fields))
	for name, value := range fields {
		lower := strings.ToLower(name)
		if _, dup := form[lower]; dup {
			// Which of the two values a check or the store would see is
			// up to map order: refuse rather than guess.
			return nil, errInvalidArgument(fmt.Sprintf("POST form field %q is given more than once (field names are case-insensitive).", lower))
		}
		form[lower] = value
	}
	key, ok := form["key"]
	if !ok {
		return nil, errInvalidArgument("Bucket POST must contain a field named 'key'.  If it is specified, please check the order of the fields.")
	}
	key = strings.ReplaceAll(key, "${filename}", filename)
	result := &PostPolicy{Key: key, MaxLength: -1}

	policy, hasPolicy := form["policy"]
	if !hasPolicy {
		if form["x-amz-signature"] != "" || form["signature"] != "" {
			return nil, errInvalidArgument("Bucket POST must contain a field named 'policy'.")
		}
		return result, nil // anonymous form upload; the bucket ACL decides
	}
	accessKey, err := v.verifyPostSignature(form, policy)
	if err != nil {
		return nil, err
	}
	result.AccessKey = accessKey

	document, conditions, lengthRange, err := parsePostPolicy(policy)
	if err != nil {
		return nil, err
	}
	expiration, err := parsePolicyTime(*document.Expiration)
	if err != nil {
		return nil, errPolicy("Invalid 'expiration' value: '%s'", *document.Expiration)
	}
	if v.now().After(expiration) {
		return nil, errPolicyDenied("Policy expired.")
	}
	if lengthRange != nil {
		result.MinLength, result.MaxLength = lengthRange[0], lengthRange[1]
	}

	values := func(field string) string {
		switch field {
		case "bucket":
			return bucket
		case "key":
			return key
		}
		return form[field]
	}
	covered := map[string]bool{}
	for _, c := range conditions {
		covered[c.field] = true
		got := values(c.field)
		if c.op == "eq" && got != c.value || c.op == "starts-with" && !strings.HasPrefix(got, c.value) {
			return nil, errPolicyDenied("Policy Condition failed: [\"%s\", \"$%s\", \"%s\"]", c.op, c.field, c.value)
		}
	}
	for name := range form {
		if postFieldExempt(name) || covered[name] {
			continue
		}
		return nil, errPolicyDenied("Extra input fields: %s", name)
	}
	return result, nil
}

// postFieldExempt lists the form fields that need no policy condition.
func postFieldExempt(name string) bool {
	switch name {
	case "policy", "signature", "awsaccesskeyid", "x-amz-signature", "file":
		return true
	}
	return strings.HasPrefix(name, "x-ignore-")
}

// verifyPostSignature checks the V4 or V2 signature of the policy and
// returns the access key.
func (v *Verifier) verifyPostSignature(form map[string]string, policy string) (string, error) {
	if algorithm, ok := form["x-amz-algorithm"]; ok {
		if algorithm != v4Algorithm {
			return "", errInvalidArgument("Policy algorithm must be AWS4-HMAC-SHA256")
		}
		signature := form["x-amz-signature"]
		if signature == "" {
			return "", errInvalidArgument("Bucket POST must contain a field named 'x-amz-signature'.")
		}
		scope, ok := parseCredential(form["x-amz-credential"])
		if !ok {
			return "", errInvalidArgument("Bucket POST must contain a valid field named 'x-amz-credential'.")
		}
		if err := v.checkScope(scope, func(reason string) *Error {
			return errInvalidArgument("Error parsing the X-Amz-Credential parameter; " + reason)
		}); err != nil {
			return "", err
		}
		if _, err := time.Parse(iso8601Format, form["x-amz-date"]); err != nil {
			return "", errInvalidArgument("X-Amz-Date must be in the ISO8601 Long Format \"yyyyMMdd'T'HHmmss'Z'\"")
		}
		secret, err := v.secretKey(scope.accessKey)
		if err != nil {
			return "", err
		}
		want, err := hex.DecodeString(signature)
		if err != nil || !hmac.Equal(hmacSHA256(signingKey(secret, scope), policy), want) {
			return "", errSignatureMismatch()
		}
		return scope.accessKey, nil
	}
	accessKey := form["awsaccesskeyid"]
	if accessKey == "" {
		return "", errInvalidArgument("Bucket POST must contain a field named 'AWSAccessKeyId'.  If it is specified, please check the order of the fields.")
	}
	signature := form["signature"]
	if signature == "" {
		return "", errInvalidArgument("Bucket POST must contain a field named 'Signature'.  If it is specified, please check the order of the fields.")
	}
	secret, err := v.secretKey(accessKey)
	if err != nil {
		return "", err
	}
	want, err := base64.StdEncoding.DecodeString(signature)
	if err != nil || !hmac.Equal(postV2Signature(secret, policy), want) {
		return "", errSignatureMismatch()
	}
	return accessKey, nil
}

// parsePostPolicy decodes the base64 policy and its conditions. Keys and
// operators are case-sensitive, as on S3; field names are not.
func parsePostPolicy(policy string) (*postPolicyDocument, []postCondition, *[2]int64, error) {
	raw, err := base64.StdEncoding.DecodeString(policy)
	if err != nil {
		return nil, nil, nil, errPolicy("Invalid Base64 Encoding")
	}
	// encoding/json matches struct fields case-insensitively; S3 does not,
	// so the top level is read as a map with exact keys.
	var top map[string]json.RawMessage
	if err := json.Unmarshal(raw, &top); err != nil {
		return nil, nil, nil, errPolicy("Invalid JSON.")
	}
	var document postPolicyDocument
	if expiration, ok := top["expiration"]; !ok || json.Unmarshal(expiration, &document.Expiration) != nil || document.Expiration == nil {
		return nil, nil, nil, errPolicy("Policy missing expiration.")
	}
	if conditions, ok := top["conditions"]; !ok || json.Unmarshal(conditions, &document.Conditions) != nil || document.Conditions == nil {
		return nil, nil, nil, errPolicy("Policy missing conditions.")
	}
	var conditions []postCondition
	var lengthRange *[2]int64
	for _, rawCondition := range document.Conditions {
		var object map[string]any
		if json.Unmarshal(rawCondition, &object) == nil {
			if len(object) != 1 {
				return nil, nil, nil, errPolicy("Invalid Simple-Condition: Simple-Conditions must have exactly one property specified.")
			}
			for field, value := range object {
				text, ok := value.(string)
				if !ok {
					return nil, nil, nil, errPolicy("Invalid Simple-Condition: value must be a string.")
				}
				conditions = append(conditions, postCondition{op: "eq", field: strings.ToLower(strings.TrimPrefix(field, "$")), value: text})
			}
			continue
		}
		var list []any
		if err := json.Unmarshal(rawCondition, &list); err != nil || len(list) != 3 {
			return nil, nil, nil, errPolicy("Invalid Condition: %s", rawCondition)
		}
		// Operators are matched in any case, as on AWS
		// (["StArTs-WiTh", "$key", "a/"] is starts-with).
		op, _ := list[0].(string)
		op = strings.ToLower(op)
		switch op {
		case "eq", "starts-with":
			field, ok1 := list[1].(string)
			value, ok2 := list[2].(string)
			if !ok1 || !ok2 || !strings.HasPrefix(field, "$") {
				return nil, nil, nil, errPolicy("Invalid Condition: %s", rawCondition)
			}
			conditions = append(conditions, postCondition{op: op, field: strings.ToLower(field[1:]), value: value})
		case "content-length-range":
			low, ok1 := policyInt(list[1])
			high, ok2 := policyInt(list[2])
			if !ok1 || !ok2 || low < 0 || high < low {
				return nil, nil, nil, errPolicy("Invalid content-length-range: %s", rawCondition)
			}
			lengthRange = &[2]int64{low, high}
		default:
			return nil, nil, nil, errPolicy("Invalid Condition: unknown operation %q", fmt.Sprint(list[0]))
		}
	}
	return &document, conditions, lengthRange, nil
}

func policyInt(value any) (int64, bool) {
	switch v := value.(type) {
	case float64:
		if v != float64(int64(v)) {
			return 0, false
		}
		return int64(v), true
	case string:
		n, err := strconv.ParseInt(v, 10, 64)
		return n, err == nil
	}
	return 0, false
}

func parsePolicyTime(value string) (time.Time, error) {
	for _, layout := range []string{"2006-01-02T15:04:05.000Z", time.RFC3339Nano, time.RFC3339} {
		if t, err := time.Parse(layout, value); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("policy expiration %q is not ISO 8601", value)
}
