package s3auth

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// SigV4 constants.
const (
	v4Algorithm    = "AWS4-HMAC-SHA256"
	v4Terminal     = "aws4_request"
	v4Service      = "s3"
	iso8601Format  = "20060102T150405Z"
	yyyymmddFormat = "20060102"

	UnsignedPayload                 = "UNSIGNED-PAYLOAD"
	StreamingSignedPayload          = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD"
	StreamingSignedPayloadTrailer   = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER"
	StreamingUnsignedPayloadTrailer = "STREAMING-UNSIGNED-PAYLOAD-TRAILER"

	emptySHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
)

// credentialScope is the parsed "AKID/yyyymmdd/region/s3/aws4_request".
type credentialScope struct {
	accessKey, date, region, service, terminal string
}

func (c credentialScope) String() string {
	return c.date + "/" + c.region + "/" + c.service + "/" + c.terminal
}

func parseCredential(value string) (credentialScope, bool) {
	parts := strings.Split(value, "/")
	if len(parts) < 5 {
		return credentialScope{}, false
	}
	n := len(parts)
	c := credentialScope{
		accessKey: strings.Join(parts[:n-4], "/"),
		date:      parts[n-4], region: parts[n-3], service: parts[n-2], terminal: parts[n-1],
	}
	if c.accessKey == "" || len(c.date) != 8 {
		return credentialScope{}, false
	}
	if _, err := time.Parse(yyyymmddFormat, c.date); err != nil {
		return credentialScope{}, false
	}
	return c, true
}

// checkScope validates service, terminal and region; wrap turns a reason
// into the header or query flavour of the error.
func (v *Verifier) checkScope(c credentialScope, wrap func(string) *Error) error {
	if c.service != v4Service {
		return wrap(fmt.Sprintf("incorrect service %q. This endpoint belongs to %q.", c.service, v4Service))
	}
	if c.terminal != v4Terminal {
		return wrap(fmt.Sprintf("incorrect terminal %q. This endpoint uses %q.", c.terminal, v4Terminal))
	}
	if v.Region != "" && c.region != v.Region && !slices.Contains(v.Regions, c.region) {
		e := wrap(fmt.Sprintf("the region '%s' is wrong; expecting '%s'", c.region, v.Region))
		e.Region = v.Region
		return e
	}
	return nil
}

// v4Authorization is a parsed SigV4 Authorization header.
type v4Authorization struct {
	scope         credentialScope
	signedHeaders []string
	signature     string
}

// parseV4Authorization parses
// "AWS4-HMAC-SHA256 Credential=AK/date/region/s3/aws4_request, SignedHeaders=a;b, Signature=hex".
func parseV4Authorization(value string) (v4Authorization, error) {
	var auth v4Authorization
	if !hasPrefixFold(value, v4Algorithm+" ") {
		return auth, errInvalidArgument("Unsupported Authorization Type")
	}
	var credential, signedHeaders, signature string
	var seen [3]bool
	for field := range strings.SplitSeq(value[len(v4Algorithm)+1:], ",") {
		field = strings.TrimSpace(field)
		if field == "" {
			continue
		}
		key, val, ok := strings.Cut(field, "=")
		if !ok {
			return auth, errHeaderMalformed(fmt.Sprintf("the authorization component %q is malformed.", field))
		}
		var index int
		switch strings.TrimSpace(key) {
		case "Credential":
			index, credential = 0, val
		case "SignedHeaders":
			index, signedHeaders = 1, val
		case "Signature":
			index, signature = 2, val
		default:
			return auth, errHeaderMalformed(fmt.Sprintf("the authorization component %q is malformed.", field))
		}
		if seen[index] {
			return auth, errHeaderMalformed(fmt.Sprintf("the authorization component %q is repeated.", key))
		}
		seen[index] = true
	}
	if !seen[0] || !seen[1] || !seen[2] {
		return auth, errHeaderMalformed("the authorization header requires Credential, SignedHeaders and Signature.")
	}
	scope, ok := parseCredential(credential)
	if !ok {
		return auth, errHeaderMalformed("the Credential is mal-formed; expecting \"<YOUR-AKID>/YYYYMMDD/REGION/SERVICE/aws4_request\".")
	}
	headers, ok := parseSignedHeaders(signedHeaders)
	if !ok {
		return auth, errHeaderMalformed("the SignedHeaders component is malformed.")
	}
	if !isHex64(signature) {
		return auth, errHeaderMalformed("the Signature component is malformed.")
	}
	return v4Authorization{scope: scope, signedHeaders: headers, signature: strings.ToLower(signature)}, nil
}

func parseSignedHeaders(value string) ([]string, bool) {
	if value == "" {
		return nil, false
	}
	headers := strings.Split(value, ";")
	hasHost := false
	for i, h := range headers {
		if h == "" {
			return nil, false
		}
		headers[i] = strings.ToLower(h)
		hasHost = hasHost || headers[i] == "host"
	}
	return headers, hasHost
}

func isHex64(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if _, ok := unhex(s[i]); !ok {
			return false
		}
	}
	return true
}

// requestTimeV4 returns the request time from x-amz-date (or Date).
func requestTimeV4(r *http.Request) (time.Time, bool) {
	for _, name := range []string{"X-Amz-Date", "Date"} {
		if value := r.Header.Get(name); value != "" {
			return parseHTTPTime(value)
		}
	}
	return time.Time{}, false
}

func parseHTTPTime(value string) (time.Time, bool) {
	value = strings.TrimSpace(value)
	for _, layout := range []string{iso8601Format, http.TimeFormat, time.RFC1123, time.RFC1123Z, time.RFC850, time.ANSIC} {
		if t, err := time.Parse(layout, value); err == nil {
			return t.UTC(), true
		}
	}
	return time.Time{}, false
}

func hmacSHA256(key []byte, data string) []byte {
	h := hmac.New(sha256.New, key)
	h.Write([]byte(data))
	return h.Sum(nil)
}

// signingKey derives the SigV4 key for a scope.
func signingKey(secret string, scope credentialScope) []byte {
	key := hmacSHA256([]byte("AWS4"+secret), scope.date)
	key = hmacSHA256(key, scope.region)
	key = hmacSHA256(key, scope.service)
	return hmacSHA256(key, scope.terminal)
}

// canonicalRequest builds the SigV4 canonical request.
func canonicalRequest(r *http.Request, uri, query string, signedHeaders []string, payloadHash string) string {
	var b strings.Builder
	b.WriteString(r.Method)
	b.WriteByte('\n')
	b.WriteString(uri)
	b.WriteByte('\n')
	b.WriteString(query)
	b.WriteByte('\n')
	for _, name := range signedHeaders {
		b.WriteString(name)
		b.WriteByte(':')
		b.WriteString(headerValue(r, name))
		b.WriteByte('\n')
	}
	b.WriteByte('\n')
	b.WriteString(strings.Join(signedHeaders, ";"))
	b.WriteByte('\n')
	b.WriteString(payloadHash)
	return b.String()
}

func stringToSignV4(amzDate string, scope credentialScope, canonical string) string {
	sum := sha256.Sum256([]byte(canonical))
	return v4Algorithm + "\n" + amzDate + "\n" + scope.String() + "\n" + hex.EncodeToString(sum[:])
}

// verifyV4 computes the signature over each candidate canonical URI and
// reports whether one matches.
func verifyV4(r *http.Request, key []byte, amzDate string, scope credentialScope, query string,
	signedHeaders []string, payloadHash, signature string) bool {
	want, err := hex.DecodeString(signature)
	if err != nil {
		return false
	}
	for _, uri := range uriCandidates(r) {
		canonical := canonicalRequest(r, uri, query, signedHeaders, payloadHash)
		if hmac.Equal(hmacSHA256(key, stringToSignV4(amzDate, scope, canonical)), want) {
			return true
		}
	}
	return false
}

// authenticateV4 handles the SigV4 Authorization header.
func (v *Verifier) authenticateV4(r *http.Request, authorization string) (*Result, error) {
	auth, err := parseV4Authorization(authorization)
	if err != nil {
		return nil, err
	}
	if err := v.checkScope(auth.scope, errHeaderMalformed); err != nil {
		return nil, err
	}
	secret, err := v.secretKey(auth.scope.accessKey)
	if err != nil {
		return nil, err
	}
	requestTime, ok := requestTimeV4(r)
	if !ok {
		return nil, errMissingDate()
	}
	if requestTime.Format(yyyymmddFormat) != auth.scope.date {
		return nil, errHeaderMalformed("Invalid credential date. Date is not the same as X-Amz-Date.")
	}
	if err := v.checkSkew(requestTime); err != nil {
		return nil, err
	}
	if err := checkAmzHeadersSigned(r, auth.signedHeaders, false); err != nil {
		return nil, err
	}
	payloadHash := r.Header.Get("X-Amz-Content-Sha256")
	payload, err := parsePayloadHash(payloadHash)
	if err != nil {
		return nil, err
	}
	key := signingKey(secret, auth.scope)
	amzDate := requestTime.Format(iso8601Format)
	if !verifyV4(r, key, amzDate, auth.scope, canonicalQuery(r.URL.RawQuery, ""), auth.signedHeaders, payloadHash, auth.signature) {
		return nil, errSignatureMismatch()
	}

	result := &Result{AccessKey: auth.scope.accessKey, Method: SigV4Header, Payload: payload, ContentLength: r.ContentLength}
	switch payload {
	case PayloadSHA256:
		result.Body = newSHA256Body(r.Body, payloadHash)
	case PayloadUnverified:
		result.Body = newPlainBody(r.Body)
	default:
		var chain *chunkSigner // nil: STREAMING-UNSIGNED-PAYLOAD-TRAILER
		if payload != PayloadStreamingTrailer {
			chain = &chunkSigner{key: key, amzDate: amzDate, scope: auth.scope.String(), previous: auth.signature}
		}
		body, length, err := newChunkedBody(r, payload, chain)
		if err != nil {
			return nil, err
		}
		result.Body, result.ContentLength = body, length
	}
	return result, nil
}

// parsePayloadHash classifies x-amz-content-sha256. It is required for
// SigV4 header authentication.
func parsePayloadHash(value string) (Payload, error) {
	switch value {
	case "":
		return 0, errInvalidRequest("Missing required header for this request: x-amz-content-sha256")
	case UnsignedPayload:
		return PayloadUnverified, nil
	case StreamingSignedPayload:
		return PayloadStreamingSigned, nil
	case StreamingSignedPayloadTrailer:
		return PayloadStreamingSignedTrailer, nil
	case StreamingUnsignedPayloadTrailer:
		return PayloadStreamingTrailer, nil
	}
	if isHex64(value) {
		return PayloadSHA256, nil
	}
	return 0, errInvalidArgument("x-amz-content-sha256 must be UNSIGNED-PAYLOAD, STREAMING-UNSIGNED-PAYLOAD-TRAILER, STREAMING-AWS4-HMAC-SHA256-PAYLOAD, STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER or a valid sha256 value.")
}

// authenticatePresignedV4 handles X-Amz-* query authentication.
func (v *Verifier) authenticatePresignedV4(r *http.Request, query url.Values) (*Result, error) {
	for _, name := range []string{"X-Amz-Algorithm", "X-Amz-Credential", "X-Amz-Signature", "X-Amz-Date", "X-Amz-SignedHeaders", "X-Amz-Expires"} {
		if query.Get(name) == "" {
			return nil, errQueryMalformed("Query-string authentication version 4 requires the X-Amz-Algorithm, X-Amz-Credential, X-Amz-Signature, X-Amz-Date, X-Amz-SignedHeaders, and X-Amz-Expires parameters.")
		}
	}
	if query.Get("X-Amz-Algorithm") != v4Algorithm {
		return nil, errQueryMalformed("X-Amz-Algorithm only supports \"AWS4-HMAC-SHA256\"")
	}
	scope, ok := parseCredential(query.Get("X-Amz-Credential"))
	if !ok {
		return nil, errQueryMalformed("Error parsing the X-Amz-Credential parameter; the Credential is mal-formed; expecting \"<YOUR-AKID>/YYYYMMDD/REGION/SERVICE/aws4_request\".")
	}
	if err := v.checkScope(scope, func(reason string) *Error {
		return errQueryMalformed("Error parsing the X-Amz-Credential parameter; " + reason)
	}); err != nil {
		return nil, err
	}
	amzDate := query.Get("X-Amz-Date")
	requestTime, err := time.Parse(iso8601Format, amzDate)
	if err != nil {
		return nil, errQueryMalformed("X-Amz-Date must be in the ISO8601 Long Format \"yyyyMMdd'T'HHmmss'Z'\"")
	}
	expires, err := strconv.ParseInt(query.Get("X-Amz-Expires"), 10, 64)
	switch {
	case err != nil:
		return nil, errQueryMalformed("X-Amz-Expires should be a number")
	case expires < 0:
		return nil, errQueryMalformed("X-Amz-Expires must be non-negative")
	case expires > int64(MaxPresignExpiry/time.Second):
		return nil, errQueryMalformed("X-Amz-Expires must be less than a week (in seconds) that is 604800 seconds")
	}
	signedHeaders, ok := parseSignedHeaders(query.Get("X-Amz-SignedHeaders"))
	if !ok {
		return nil, errQueryMalformed("X-Amz-SignedHeaders must include host.")
	}
	signature := query.Get("X-Amz-Signature")
	if !isHex64(signature) {
		return nil, errSignatureMismatch()
	}
	secret, err := v.secretKey(scope.accessKey)
	if err != nil {
		return nil, err
	}
	if requestTime.Format(yyyymmddFormat) != scope.date {
		return nil, errQueryMalformed("Invalid credential date. Date is not the same as X-Amz-Date.")
	}
	now := v.now()
	if requestTime.Sub(now) > v.maxSkew() {
		return nil, errAccessDenied("Request is not valid yet")
	}
	if now.After(requestTime.Add(time.Duration(expires) * time.Second)) {
		return nil, errExpired()
	}
	if err := checkAmzHeadersSigned(r, signedHeaders, true); err != nil {
		return nil, err
	}
	payloadHash := query.Get("X-Amz-Content-Sha256")
	if payloadHash == "" {
		payloadHash = UnsignedPayload
	}
	key := signingKey(secret, scope)
	verified := verifyV4(r, key, amzDate, scope, canonicalQuery(r.URL.RawQuery, "X-Amz-Signature"), signedHeaders, payloadHash, strings.ToLower(signature))
	if !verified && (r.Method == http.MethodGet || r.Method == http.MethodHead) {
		if rest, ok := withoutDirectives(r.URL.RawQuery); ok {
			verified = verifyV4(r, key, amzDate, scope, canonicalQuery(rest, "X-Amz-Signature"), signedHeaders, payloadHash, strings.ToLower(signature))
		}
	}
	if !verified {
		return nil, errSignatureMismatch()
	}
	result := &Result{AccessKey: scope.accessKey, Method: SigV4Presigned, ContentLength: r.ContentLength}
	if isHex64(payloadHash) {
		result.Payload, result.Body = PayloadSHA256, newSHA256Body(r.Body, payloadHash)
		return result, nil
	}
	body, payload, length, err := unverifiedBody(r)
	if err != nil {
		return nil, err
	}
	result.Body, result.Payload, result.ContentLength = body, payload, length
	return result, nil
}
