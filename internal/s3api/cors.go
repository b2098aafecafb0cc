package s3api

import (
	"encoding/xml"
	"net/http"
	"strconv"
	"strings"

	"github.com/b3-storage/b3/internal/meta"
)

var (
	opGetBucketCORS    = operation{name: "GetBucketCors", perm: permOwner, handle: (*Server).getBucketCORS}
	opPutBucketCORS    = operation{name: "PutBucketCors", perm: permOwner, handle: (*Server).putBucketCORS}
	opDeleteBucketCORS = operation{name: "DeleteBucketCors", perm: permOwner, handle: (*Server).deleteBucketCORS}
	opPreflight        = operation{name: "PreflightRequest", preAuth: true, handle: (*Server).preflight}
)

// Limits of a CORS configuration, as S3's: the document is at most 64 KB,
// with at most 100 rules.
const (
	maxCORSDocument = 64 << 10
	maxCORSRules    = 100
)

// corsConfiguration is the CORSConfiguration document. The raw bytes are
// stored; the parsed form is cached (docCache), as every request carrying
// an Origin consults it, before it is authorized.
type corsConfiguration struct {
	XMLName xml.Name   `xml:"CORSConfiguration"`
	Xmlns   string     `xml:"xmlns,attr,omitempty"`
	Rules   []corsRule `xml:"CORSRule"`
}

type corsRule struct {
	ID             string   `xml:"ID,omitempty"`
	AllowedOrigins []string `xml:"AllowedOrigin"`
	AllowedMethods []string `xml:"AllowedMethod"`
	AllowedHeaders []string `xml:"AllowedHeader"`
	ExposeHeaders  []string `xml:"ExposeHeader"`
	MaxAgeSeconds  *int     `xml:"MaxAgeSeconds,omitempty"`
}

// parseCORS decodes and validates a CORS configuration: 1..100 rules, each
// with origins and methods among GET, PUT, HEAD, POST, DELETE, and at most
// one wildcard per origin or header.
func parseCORS(data []byte) (*corsConfiguration, error) {
	var conf corsConfiguration
	if err := xml.Unmarshal(data, &conf); err != nil {
		return nil, errMalformedXML
	}
	if len(conf.Rules) == 0 || len(conf.Rules) > maxCORSRules {
		return nil, errMalformedXML
	}
	for _, r := range conf.Rules {
		if len(r.AllowedOrigins) == 0 || len(r.AllowedMethods) == 0 {
			return nil, errMalformedXML
		}
		for _, m := range r.AllowedMethods {
			switch m {
			case "GET", "PUT", "HEAD", "POST", "DELETE":
			default:
				return nil, errInvalidRequest.withMessage("Found unsupported HTTP method in CORS config. Unsupported method is %s", m)
			}
		}
		for _, o := range append(append([]string{}, r.AllowedOrigins...), r.AllowedHeaders...) {
			if strings.Count(o, "*") > 1 {
				return nil, errInvalidRequest.withMessage("AllowedOrigin/AllowedHeader %q can not have more than one wildcard.", o)
			}
		}
	}
	return &conf, nil
}

// bucketCORS returns b's parsed CORS configuration, nil if it has none.
// The configuration returned is shared: callers must not modify it.
func (s *Server) bucketCORS(b *meta.Bucket) (*corsConfiguration, error) {
	if len(b.CORS) == 0 {
		return nil, nil
	}
	return s.cors.get(b.Name, b.CORS, parseCORS)
}

// wildcardMatch matches s against a pattern with at most one '*'.
func wildcardMatch(pattern, s string) bool {
	before, after, found := strings.Cut(pattern, "*")
	if !found {
		return pattern == s
	}
	return len(s) >= len(before)+len(after) && strings.HasPrefix(s, before) && strings.HasSuffix(s, after)
}

// match returns the first rule allowing origin, method and every header
// in requestHeaders (case-insensitively), as S3 evaluates them.
func (c *corsConfiguration) match(origin, method string, requestHeaders []string) *corsRule {
	for i := range c.Rules {
		r := &c.Rules[i]
		if !anyMatch(r.AllowedOrigins, origin, false) || !anyMatch(r.AllowedMethods, method, false) {
			continue
		}
		ok := true
		for _, h := range requestHeaders {
			if !anyMatch(r.AllowedHeaders, h, true) {
				ok = false
				break
			}
		}
		if ok {
			return r
		}
	}
	return nil
}

func anyMatch(patterns []string, s string, fold bool) bool {
	if fold {
		s = strings.ToLower(s)
	}
	for _, p := range patterns {
		if fold {
			p = strings.ToLower(p)
		}
		if wildcardMatch(p, s) {
			return true
		}
	}
	return false
}

// setCORSHeaders writes the response headers of a matched rule: the
// rule's methods, and the headers asked for (Access-Control-Request-
// Headers, lowercased) where a request names some, an actual one too, as
// S3 answers them; a preflight also gets the rule's max age.
func setCORSHeaders(h http.Header, r *corsRule, origin string, preflight bool, requestHeaders []string) {
	allowOrigin := origin
	if len(r.AllowedOrigins) == 1 && r.AllowedOrigins[0] == "*" {
		allowOrigin = "*"
	} else {
		h.Set("Access-Control-Allow-Credentials", "true")
	}
	h.Set("Access-Control-Allow-Origin", allowOrigin)
	h.Add("Vary", "Origin, Access-Control-Request-Headers, Access-Control-Request-Method")
	if len(r.ExposeHeaders) > 0 {
		h.Set("Access-Control-Expose-Headers", strings.Join(r.ExposeHeaders, ", "))
	}
	h.Set("Access-Control-Allow-Methods", strings.Join(r.AllowedMethods, ", "))
	if len(requestHeaders) > 0 {
		// Lowercased, as S3 answers them (header names are
		// case-insensitive; a browser compares them so).
		lower := make([]string, len(requestHeaders))
		for i, name := range requestHeaders {
			lower[i] = strings.ToLower(name)
		}
		h.Set("Access-Control-Allow-Headers", strings.Join(lower, ", "))
	}
	if preflight && r.MaxAgeSeconds != nil {
		h.Set("Access-Control-Max-Age", strconv.Itoa(*r.MaxAgeSeconds))
	}
}

// addCORSHeaders adds CORS response headers to an actual (non-preflight)
// request that carries an Origin and matches a rule of the bucket.
func (s *Server) addCORSHeaders(rq *request, b *meta.Bucket) {
	origin := rq.Header.Get("Origin")
	if origin == "" || len(b.CORS) == 0 {
		return
	}
	conf, err := s.bucketCORS(b)
	if err != nil || conf == nil {
		return
	}
	// An actual request that carries a preflight's headers is matched as
	// the preflight it names, as S3 does: its Access-Control-Request-Method
	// and -Headers rather than its own method.
	method, headers := rq.Method, []string(nil)
	if m := rq.Header.Get("Access-Control-Request-Method"); m != "" {
		method, headers = m, splitHeaderList(rq.Header.Get("Access-Control-Request-Headers"))
	}
	if r := conf.match(origin, method, headers); r != nil {
		setCORSHeaders(rq.w.Header(), r, origin, false, headers)
	}
}

func splitHeaderList(v string) []string {
	var out []string
	for part := range strings.SplitSeq(v, ",") {
		if p := strings.TrimSpace(part); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// preflight answers a CORS preflight (OPTIONS). It is unauthenticated, as
// browsers send it without credentials.
func (s *Server) preflight(rq *request) error {
	origin := rq.Header.Get("Origin")
	method := rq.Header.Get("Access-Control-Request-Method")
	if origin == "" {
		return errInvalidRequest.withMessage("Insufficient information. Origin request header needed.")
	}
	if method == "" {
		return errInvalidRequest.withMessage("Invalid Access-Control-Request-Method: null")
	}
	b, err := s.store.GetBucket(rq.bucket)
	if err != nil {
		return err
	}
	if len(b.CORS) == 0 {
		return errAccessForbiddenCORS.withMessage("CORSResponse: CORS is not enabled for this bucket.")
	}
	conf, err := s.bucketCORS(b)
	if err != nil {
		return err
	}
	headers := splitHeaderList(rq.Header.Get("Access-Control-Request-Headers"))
	r := conf.match(origin, method, headers)
	if r == nil {
		return errAccessForbiddenCORS
	}
	setCORSHeaders(rq.w.Header(), r, origin, true, headers)
	return writeEmpty(rq, http.StatusOK)
}

func (s *Server) getBucketCORS(rq *request) error {
	if len(rq.bucketRec.CORS) == 0 {
		return errNoSuchCORS
	}
	conf, err := s.bucketCORS(rq.bucketRec)
	if err != nil {
		return err
	}
	out := *conf // shared with the cache
	out.Xmlns = s3Namespace
	return writeXML(rq, &out)
}

func (s *Server) putBucketCORS(rq *request) error {
	data, err := readSmallBody(rq)
	if err != nil {
		return err
	}
	if len(data) > maxCORSDocument {
		return errMalformedXML.withMessage("The CORS configuration must not exceed %d bytes; this one has %d", maxCORSDocument, len(data))
	}
	if _, err := parseCORS(data); err != nil {
		return err
	}
	if err := s.store.UpdateBucket(rq.bucket, func(b *meta.Bucket) error { b.CORS = data; return nil }); err != nil {
		return err
	}
	return writeEmpty(rq, http.StatusOK)
}

func (s *Server) deleteBucketCORS(rq *request) error {
	if err := s.store.UpdateBucket(rq.bucket, func(b *meta.Bucket) error { b.CORS = nil; return nil }); err != nil {
		return err
	}
	return writeEmpty(rq, http.StatusNoContent)
}
