package s3auth

import (
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
)

const upperHex = "0123456789ABCDEF"

func isUnreserved(c byte) bool {
	return 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' ||
		c == '-' || c == '_' || c == '.' || c == '~'
}

// uriEncode appends s encoded the AWS way: every byte but the unreserved
// ones as %XX (upper-case hex); '/' kept when keepSlash.
func uriEncode(b *strings.Builder, s string, keepSlash bool) {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if isUnreserved(c) || c == '/' && keepSlash {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(upperHex[c>>4])
		b.WriteByte(upperHex[c&15])
	}
}

func unhex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// canonicalURI normalises an escaped request path to the S3 canonical URI:
// each %XX is decoded and every byte re-encoded with uriEncode, keeping
// literal '/' (and %2F as %2F). S3 does not double-encode, so this equals
// what SDKs sign for any key.
func canonicalURI(escapedPath string) string {
	if escapedPath == "" {
		return "/"
	}
	var b strings.Builder
	b.Grow(len(escapedPath) + 16)
	for i := 0; i < len(escapedPath); i++ {
		c := escapedPath[i]
		if c == '/' {
			b.WriteByte('/')
			continue
		}
		if c == '%' && i+2 < len(escapedPath) {
			hi, ok1 := unhex(escapedPath[i+1])
			lo, ok2 := unhex(escapedPath[i+2])
			if ok1 && ok2 {
				c = hi<<4 | lo
				i += 2
			}
		}
		if isUnreserved(c) {
			b.WriteByte(c)
		} else {
			b.WriteByte('%')
			b.WriteByte(upperHex[c>>4])
			b.WriteByte(upperHex[c&15])
		}
	}
	return b.String()
}

// uriCandidates returns the canonical URIs to try: the normalised form
// first, then the path exactly as sent when it differs (clients that sign
// their own, differently escaped, path).
func uriCandidates(r *http.Request) []string {
	escaped := r.URL.EscapedPath()
	normal := canonicalURI(escaped)
	if escaped == "" || escaped == normal {
		return []string{normal}
	}
	return []string{normal, escaped}
}

// canonicalQuery builds the SigV4 canonical query string from the raw
// query: pairs decoded, re-encoded strictly, sorted by key then value.
// The parameter named skip (X-Amz-Signature for presigned URLs) is left out.
func canonicalQuery(rawQuery, skip string) string {
	if rawQuery == "" {
		return ""
	}
	type pair struct{ key, value string }
	var pairs []pair
	for part := range strings.SplitSeq(rawQuery, "&") {
		if part == "" {
			continue
		}
		key, value, _ := strings.Cut(part, "=")
		key = queryUnescape(key)
		if key == skip && skip != "" {
			continue
		}
		var kb, vb strings.Builder
		uriEncode(&kb, key, false)
		uriEncode(&vb, queryUnescape(value), false)
		pairs = append(pairs, pair{kb.String(), vb.String()})
	}
	sort.Slice(pairs, func(i, j int) bool {
		if pairs[i].key != pairs[j].key {
			return pairs[i].key < pairs[j].key
		}
		return pairs[i].value < pairs[j].value
	})
	var b strings.Builder
	for i, p := range pairs {
		if i > 0 {
			b.WriteByte('&')
		}
		b.WriteString(p.key)
		b.WriteByte('=')
		b.WriteString(p.value)
	}
	return b.String()
}

// directivePrefix starts the names of HLS delivery directives
// (_HLS_msn, _HLS_part, _HLS_skip): query parameters a player appends to
// the playlist URL it was given, presigned or not.
const directivePrefix = "_HLS_"

// withoutDirectives returns rawQuery without its delivery directives,
// and whether it had any. A presigned GET or HEAD whose signature does
// not cover the query as sent is checked again without them: they only
// choose when, and in what form, the signed object is answered, never
// which object or what access.
func withoutDirectives(rawQuery string) (string, bool) {
	var kept []string
	found := false
	for part := range strings.SplitSeq(rawQuery, "&") {
		key, _, _ := strings.Cut(part, "=")
		if strings.HasPrefix(queryUnescape(key), directivePrefix) {
			found = true
			continue
		}
		kept = append(kept, part)
	}
	return strings.Join(kept, "&"), found
}

func queryUnescape(s string) string {
	if u, err := url.QueryUnescape(s); err == nil {
		return u
	}
	return s
}

// headerValue returns the canonical value of a signed header: all values
// trimmed, inner runs of spaces collapsed, joined by ','. Host and
// Content-Length live outside r.Header in a server request.
func headerValue(r *http.Request, name string) string {
	switch name {
	case "host":
		if r.Host != "" {
			return r.Host
		}
		return r.URL.Host
	case "content-length":
		if v := r.Header.Get("Content-Length"); v != "" {
			return strings.TrimSpace(v)
		}
		if r.ContentLength >= 0 {
			return strconv.FormatInt(r.ContentLength, 10)
		}
		return ""
	case "transfer-encoding":
		if v := r.Header.Values("Transfer-Encoding"); len(v) > 0 {
			return trimAll(strings.Join(v, ","))
		}
		return strings.Join(r.TransferEncoding, ",")
	}
	values := r.Header.Values(name)
	if len(values) == 1 {
		return trimAll(values[0])
	}
	trimmed := make([]string, len(values))
	for i, v := range values {
		trimmed[i] = trimAll(v)
	}
	return strings.Join(trimmed, ",")
}

// trimAll trims s and collapses runs of spaces to one (SigV4 "Trimall").
func trimAll(s string) string {
	s = strings.TrimSpace(s)
	if !strings.Contains(s, "  ") && !strings.ContainsAny(s, "\t\n\r") {
		return s
	}
	return strings.Join(strings.Fields(s), " ")
}
