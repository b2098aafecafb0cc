package s3auth

import (
	"io"
	"net/http"
	"net/url"
	"time"
)

// Credentials looks up the secret key of an access key.
type Credentials interface {
	SecretKey(accessKey string) (secret string, ok bool)
}

// StaticCredentials is a fixed access key -> secret key table.
type StaticCredentials map[string]string

// SecretKey implements Credentials.
func (c StaticCredentials) SecretKey(accessKey string) (string, bool) {
	secret, ok := c[accessKey]
	return secret, ok
}

// DefaultMaxSkew is how far a request's time may be from the server's
// before RequestTimeTooSkewed, as on AWS.
const DefaultMaxSkew = 15 * time.Minute

// MaxPresignExpiry is the longest X-Amz-Expires SigV4 accepts (7 days).
const MaxPresignExpiry = 7 * 24 * time.Hour

// Verifier authenticates S3 requests. Its fields are read-only after
// first use, so one Verifier serves all requests concurrently.
type Verifier struct {
	Credentials Credentials
	// Region the server answers for. Requests signed for another region
	// fail with AuthorizationHeaderMalformed naming this one. Empty accepts
	// any region.
	Region string
	// Regions are further regions accepted in a credential scope.
	Regions []string
	// Domains are the virtual-host base domains (e.g. "s3.example.com"):
	// SigV2 needs the bucket of "bucket.s3.example.com" in its canonical
	// resource. SigV4 does not care.
	Domains []string
	// MaxSkew overrides DefaultMaxSkew when positive.
	MaxSkew time.Duration
	// Now returns the current time; nil means time.Now. Tests set it.
	Now func() time.Time
}

// Method says how a request was authenticated.
type Method uint8

// Authentication methods.
const (
	Anonymous Method = iota
	SigV4Header
	SigV4Presigned
	SigV2Header
	SigV2Presigned
)

func (m Method) String() string {
	return [...]string{"anonymous", "sigv4", "sigv4-presigned", "sigv2", "sigv2-presigned"}[m]
}

// Payload says how the request body is protected.
type Payload uint8

// Payload protections, from x-amz-content-sha256.
const (
	PayloadUnverified             Payload = iota // SigV2, anonymous, UNSIGNED-PAYLOAD
	PayloadSHA256                                // hex sha256 checked at EOF
	PayloadStreamingSigned                       // STREAMING-AWS4-HMAC-SHA256-PAYLOAD
	PayloadStreamingTrailer                      // STREAMING-UNSIGNED-PAYLOAD-TRAILER
	PayloadStreamingSignedTrailer                // STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER
)

// IsChunked reports whether the body is aws-chunked encoded.
func (p Payload) IsChunked() bool { return p >= PayloadStreamingSigned }

// Body is the decoded request payload. Read verifies as it goes (body hash,
// chunk signatures) and returns an *Error instead of io.EOF when the
// verification fails. Bytes returned before an error are unverified: the
// caller must not acknowledge an upload whose body did not end in io.EOF.
//
// Trailer returns the trailing headers of an aws-chunked body once Read has
// returned io.EOF (for signed trailers, only after x-amz-trailer-signature
// was verified); nil otherwise. checksum.Reader uses it via
// checksum.TrailerSource.
type Body interface {
	io.Reader
	Trailer() http.Header
}

// Result is an authenticated request.
type Result struct {
	// AccessKey is the principal; "" for Anonymous.
	AccessKey string
	Method    Method
	Payload   Payload
	// Body replaces r.Body: always non-nil, decoded and verifying.
	Body Body
	// ContentLength is the decoded payload length (x-amz-decoded-content-
	// length for aws-chunked bodies, else r.ContentLength); -1 if unknown.
	ContentLength int64
}

// Authenticate checks the request's signature and returns the principal
// and a verifying body. It reads only headers and the URL; the body is not
// touched until the caller reads Result.Body, so "Expect: 100-continue" is
// answered only for authenticated requests. Errors are *Error.
func (v *Verifier) Authenticate(r *http.Request) (*Result, error) {
	query, _ := url.ParseQuery(r.URL.RawQuery) // a partial parse is fine: bad pairs fail the signature
	authorization := r.Header.Get("Authorization")

	mechanisms := 0
	hasV4Query := query.Has("X-Amz-Algorithm") || query.Has("X-Amz-Credential") || query.Has("X-Amz-Signature")
	hasV2Query := query.Has("AWSAccessKeyId") || query.Has("Signature")
	for _, present := range []bool{authorization != "", hasV4Query, hasV2Query} {
		if present {
			mechanisms++
		}
	}
	if mechanisms > 1 {
		return nil, errInvalidArgument("Only one auth mechanism allowed; only the X-Amz-Algorithm query parameter, Signature query string parameter or the Authorization header should be specified")
	}

	switch {
	case authorization != "":
		return v.authenticateHeader(r, authorization)
	case hasV4Query:
		return v.authenticatePresignedV4(r, query)
	case hasV2Query:
		return v.authenticatePresignedV2(r, query)
	}
	body, payload, length, err := unverifiedBody(r)
	if err != nil {
		return nil, err
	}
	return &Result{Method: Anonymous, Payload: payload, Body: body, ContentLength: length}, nil
}

func (v *Verifier) authenticateHeader(r *http.Request, authorization string) (*Result, error) {
	switch {
	case hasPrefixFold(authorization, v4Algorithm+" "):
		return v.authenticateV4(r, authorization)
	case hasPrefixFold(authorization, "AWS "):
		return v.authenticateV2(r, authorization)
	}
	return nil, errInvalidArgument("Unsupported Authorization Type")
}

func (v *Verifier) now() time.Time {
	if v.Now != nil {
		return v.Now()
	}
	return time.Now()
}

func (v *Verifier) maxSkew() time.Duration {
	if v.MaxSkew > 0 {
		return v.MaxSkew
	}
	return DefaultMaxSkew
}

// checkSkew fails requests whose time is too far from the server's.
// time.Time.Sub saturates, so a date centuries away is the smallest or
// largest Duration: the skew is compared on both sides rather than
// negated (the negation of the smallest Duration is itself, which would
// let a year-9999 date through to the signature check).
func (v *Verifier) checkSkew(requestTime time.Time) error {
	skew, limit := v.now().Sub(requestTime), v.maxSkew()
	if skew > limit || skew < -limit {
		return errSkewed()
	}
	return nil
}

func (v *Verifier) secretKey(accessKey string) (string, error) {
	if v.Credentials == nil || accessKey == "" {
		return "", errInvalidAccessKey()
	}
	secret, ok := v.Credentials.SecretKey(accessKey)
	if !ok {
		return "", errInvalidAccessKey()
	}
	return secret, nil
}

func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && equalFoldASCII(s[:len(prefix)], prefix)
}

func equalFoldASCII(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		ca, cb := a[i], b[i]
		if 'A' <= ca && ca <= 'Z' {
			ca += 'a' - 'A'
		}
		if 'A' <= cb && cb <= 'Z' {
			cb += 'a' - 'A'
		}
		if ca != cb {
			return false
		}
	}
	return true
}
