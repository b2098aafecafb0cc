package s3auth

import (
	"crypto/hmac"
	"crypto/sha1"
	"encoding/base64"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"
)

// v2SubResources are the query parameters that belong to the SigV2
// canonicalized resource, sorted as the signature requires. Every query
// parameter that chooses what b3's router does must be among them (or the
// router must refuse a V2 request carrying it unsigned): otherwise a
// captured V2 signature for "PUT /bucket" would also authenticate
// "PUT /bucket?ownershipControls". s3api's TestSigV2SignsEverySubResource
// checks this against the router's own list. Parameters S3 does not sign
// stay out: a client would not sign them, and they only shape the answer
// of the operation the request already names (list-type, prefix, max-keys).
var v2SubResources = func() []string {
	list := []string{
		"accelerate", "acl", "analytics", "attributes", "cors", "delete", "encryption",
		"intelligent-tiering", "inventory", "legal-hold", "lifecycle", "location",
		"logging", "metadataTable", "metrics", "notification", "object-lock",
		"ownershipControls", "partNumber", "policy", "policyStatus", "publicAccessBlock",
		"replication", "requestPayment", "response-cache-control",
		"response-content-disposition", "response-content-encoding",
		"response-content-language", "response-content-type", "response-expires",
		"restore", "retention", "select", "select-type", "session", "tagging", "torrent",
		"uploadId", "uploads", "versionId", "versioning", "versions", "website",
	}
	sort.Strings(list)
	return list
}()

// parseV2Authorization parses "AWS AccessKey:Signature".
func parseV2Authorization(value string) (accessKey string, signature []byte, err error) {
	credential := strings.TrimSpace(value[len("AWS "):])
	accessKey, sig, ok := strings.Cut(credential, ":")
	if !ok || accessKey == "" || sig == "" {
		return "", nil, errInvalidArgument("AWS authorization header is invalid.  Expected AwsAccessKeyId:signature")
	}
	signature, decodeErr := base64.StdEncoding.DecodeString(sig)
	if decodeErr != nil {
		return "", nil, errSignatureMismatch()
	}
	return accessKey, signature, nil
}

// authenticateV2 handles "Authorization: AWS AccessKey:Signature".
func (v *Verifier) authenticateV2(r *http.Request, authorization string) (*Result, error) {
	accessKey, signature, err := parseV2Authorization(authorization)
	if err != nil {
		return nil, err
	}
	secret, err := v.secretKey(accessKey)
	if err != nil {
		return nil, err
	}
	// With x-amz-date the Date line of the string to sign is empty: the
	// x-amz-date header is signed among the amz headers instead.
	dateLine := r.Header.Get("Date")
	timeValue := dateLine
	if amzDate := r.Header.Get("X-Amz-Date"); amzDate != "" {
		dateLine, timeValue = "", amzDate
	}
	requestTime, ok := parseHTTPTime(timeValue)
	if !ok {
		return nil, errMissingDate()
	}
	if err := v.checkSkew(requestTime); err != nil {
		return nil, err
	}
	if !v.verifyV2(r, secret, dateLine, signature) {
		return nil, errSignatureMismatch()
	}
	body, payload, length, err := unverifiedBody(r)
	if err != nil {
		return nil, err
	}
	return &Result{AccessKey: accessKey, Method: SigV2Header, Payload: payload, Body: body, ContentLength: length}, nil
}

// authenticatePresignedV2 handles ?AWSAccessKeyId=&Expires=&Signature=.
func (v *Verifier) authenticatePresignedV2(r *http.Request, query url.Values) (*Result, error) {
	accessKey, expiresText, sig := query.Get("AWSAccessKeyId"), query.Get("Expires"), query.Get("Signature")
	if accessKey == "" || expiresText == "" || sig == "" {
		return nil, errAccessDenied("Query-string authentication requires the Signature, Expires and AWSAccessKeyId parameters")
	}
	expires, err := strconv.ParseInt(expiresText, 10, 64)
	if err != nil {
		return nil, errAccessDenied("Invalid date (should be seconds since epoch): " + expiresText)
	}
	// A '+' that was not escaped in the URL decodes to a space.
	signature, err := base64.StdEncoding.DecodeString(strings.ReplaceAll(sig, " ", "+"))
	if err != nil {
		return nil, errSignatureMismatch()
	}
	secret, err := v.secretKey(accessKey)
	if err != nil {
		return nil, err
	}
	now := v.now().Unix()
	if now > expires {
		return nil, errExpired()
	}
	// SigV2 has no signing time, so the cap is on how far ahead Expires
	// is: a week as for SigV4's X-Amz-Expires, plus the clock skew a V4
	// X-Amz-Date may have (a URL signed for a week by a client whose
	// clock runs a little ahead still works).
	if expires-now > int64((MaxPresignExpiry+v.maxSkew())/time.Second) {
		return nil, errAccessDenied("Expires must be less than a week (604800 seconds) in the future: " + expiresText)
	}
	if !v.verifyV2(r, secret, expiresText, signature) {
		return nil, errSignatureMismatch()
	}
	body, payload, length, err := unverifiedBody(r)
	if err != nil {
		return nil, err
	}
	return &Result{AccessKey: accessKey, Method: SigV2Presigned, Payload: payload, Body: body, ContentLength: length}, nil
}

// verifyV2 checks HMAC-SHA1 over the SigV2 string to sign:
//
//	Method \n Content-MD5 \n Content-Type \n Date \n CanonicalizedAmzHeaders CanonicalizedResource
func (v *Verifier) verifyV2(r *http.Request, secret, dateLine string, signature []byte) bool {
	var prefix strings.Builder
	prefix.WriteString(r.Method)
	prefix.WriteByte('\n')
	prefix.WriteString(r.Header.Get("Content-Md5"))
	prefix.WriteByte('\n')
	prefix.WriteString(r.Header.Get("Content-Type"))
	prefix.WriteByte('\n')
	prefix.WriteString(dateLine)
	prefix.WriteByte('\n')
	writeAmzHeaders(&prefix, r.Header)

	subResources := canonicalSubResources(r.URL.RawQuery)
	bucket := v.virtualHostBucket(r.Host)
	for _, path := range v2ResourceCandidates(r, bucket) {
		stringToSign := prefix.String() + bucket + path + subResources
		mac := hmac.New(sha1.New, []byte(secret))
		mac.Write([]byte(stringToSign))
		if hmac.Equal(mac.Sum(nil), signature) {
			return true
		}
	}
	return false
}

// v2ResourceCandidates returns the paths to try in the canonicalized
// resource. A path-style bucket-level request to "/bucket" may have been
// signed as "/bucket/" — botocore does, and it is the resource AWS itself
// uses for the bucket ("/" under virtual-host style) — so for a single
// path segment without a trailing slash, both spellings are accepted.
// This identifies the same resource and leaks nothing: the signature still
// covers method, headers and bucket.
func v2ResourceCandidates(r *http.Request, bucket string) []string {
	paths := uriCandidates(r)
	if bucket != "" {
		return paths
	}
	for _, p := range paths {
		if len(p) > 1 && p[0] == '/' && !strings.Contains(p[1:], "/") {
			paths = append(paths, p+"/")
			break
		}
	}
	return paths
}

// writeAmzHeaders writes the x-amz-* headers, lower-cased and sorted, as
// "name:v1,v2\n".
func writeAmzHeaders(b *strings.Builder, header http.Header) {
	var names []string
	values := map[string][]string{}
	for name, vv := range header {
		lower := strings.ToLower(name)
		if !strings.HasPrefix(lower, "x-amz-") {
			continue
		}
		if _, seen := values[lower]; !seen {
			names = append(names, lower)
		}
		values[lower] = append(values[lower], vv...)
	}
	sort.Strings(names)
	for _, name := range names {
		b.WriteString(name)
		b.WriteByte(':')
		for i, value := range values[name] {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(strings.TrimSpace(value))
		}
		b.WriteByte('\n')
	}
}

// canonicalSubResources returns "?acl&versionId=3" for the sub-resource
// parameters present in the query (values decoded, first value only).
func canonicalSubResources(rawQuery string) string {
	if rawQuery == "" {
		return ""
	}
	query, _ := url.ParseQuery(rawQuery)
	var b strings.Builder
	for _, name := range v2SubResources {
		values, ok := query[name]
		if !ok {
			continue
		}
		if b.Len() == 0 {
			b.WriteByte('?')
		} else {
			b.WriteByte('&')
		}
		b.WriteString(name)
		if len(values) > 0 && values[0] != "" {
			b.WriteByte('=')
			b.WriteString(values[0])
		}
	}
	return b.String()
}

// virtualHostBucket returns "/bucket" for a host "bucket.<domain>" with a
// configured domain, else "".
func (v *Verifier) virtualHostBucket(host string) string {
	if h, _, ok := strings.Cut(host, ":"); ok {
		host = h
	}
	host = strings.ToLower(host)
	for _, domain := range v.Domains {
		domain = strings.ToLower(domain)
		if strings.HasSuffix(host, "."+domain) {
			return "/" + host[:len(host)-len(domain)-1]
		}
	}
	return ""
}

// postV2Signature is the SigV2 signature of a POST policy.
func postV2Signature(secret, policy string) []byte {
	mac := hmac.New(sha1.New, []byte(secret))
	mac.Write([]byte(policy))
	return mac.Sum(nil)
}
