package checksum

import (
	"crypto/md5"
	"encoding/base64"
	"fmt"
	"net/http"
	"strings"
)

// Expected holds the integrity values a request declares for its body.
type Expected struct {
	// ContentMD5 is the decoded Content-MD5 header; nil when absent.
	ContentMD5 []byte
	// Checksum is the requested flexible checksum. Its Sum is the expected
	// digest from an x-amz-checksum-* header, or nil when the value comes
	// in the trailer (FromTrailer) or the client only named the algorithm.
	Checksum Checksum
	// FromTrailer is set when x-amz-trailer names the checksum header: the
	// expected value is read from the body's trailer at EOF.
	FromTrailer bool
}

// Stored is the algorithm whose checksum is kept with an object uploaded
// whole with these values: the requested one, else Default. Passed to
// NewReader, it costs nothing when a checksum was requested (the Reader
// computes that one anyway), and Default is not computed only to be
// dropped.
func (e Expected) Stored() Algorithm {
	if e.Checksum.Algorithm != None {
		return e.Checksum.Algorithm
	}
	return Default
}

// ParseContentMD5 decodes a Content-MD5 header value. A value that is not
// base64 of 16 bytes is InvalidDigest, as S3 reports it.
func ParseContentMD5(value string) ([]byte, error) {
	sum, err := base64.StdEncoding.DecodeString(strings.TrimSpace(value))
	if err != nil || len(sum) != md5.Size {
		return nil, errInvalidDigest()
	}
	return sum, nil
}

// ParseHeaders extracts the expected integrity values from request headers:
// Content-MD5, x-amz-checksum-<alg>, x-amz-sdk-checksum-algorithm and
// x-amz-trailer. It validates their form only; the values are compared with
// the body by a Reader.
func ParseHeaders(h http.Header) (Expected, error) {
	var exp Expected
	if values, ok := h[HeaderContentMD5]; ok && len(values) > 0 {
		sum, err := ParseContentMD5(values[0])
		if err != nil {
			return Expected{}, err
		}
		exp.ContentMD5 = sum
	}

	alg, value, err := valueHeader(h)
	if err != nil {
		return Expected{}, err
	}
	if alg != None {
		sum, err := alg.Decode(value)
		if err != nil {
			return Expected{}, err
		}
		exp.Checksum = Checksum{Algorithm: alg, Sum: sum}
	}

	if trailer := strings.TrimSpace(h.Get(HeaderTrailer)); trailer != "" {
		alg, ok := algorithmOfHeader(trailer)
		if !ok {
			return Expected{}, errInvalidRequest("The value specified in the x-amz-trailer header is not supported")
		}
		if exp.Checksum.Algorithm != None {
			return Expected{}, errInvalidRequest("Expecting a single x-amz-checksum- header. Multiple checksum Types are not allowed.")
		}
		exp.Checksum = Checksum{Algorithm: alg}
		exp.FromTrailer = true
	}

	if name := h.Get(HeaderSDKAlgorithm); name != "" {
		alg, ok := ParseAlgorithm(name)
		if !ok {
			return Expected{}, errInvalidRequest("Value for x-amz-sdk-checksum-algorithm header is invalid.")
		}
		switch {
		case exp.Checksum.Algorithm == None:
			return Expected{}, errInvalidRequest("x-amz-sdk-checksum-algorithm specified, but no corresponding x-amz-checksum-* or x-amz-trailer headers were found.")
		case exp.Checksum.Algorithm != alg:
			// S3 documents BadDigest when the named algorithm and the value
			// header disagree.
			return Expected{}, errBadDigestChecksum(alg)
		}
	}
	return exp, nil
}

// valueHeader finds the x-amz-checksum-<alg> header carrying a checksum
// value, and checks the other x-amz-checksum-* headers' form. A header
// naming an algorithm b3 does not compute is InvalidRequest: accepting it
// would tell the client its data was checked when it was not. At most one
// value header is allowed, as S3 requires.
func valueHeader(h http.Header) (Algorithm, string, error) {
	found, value := None, ""
	for name, values := range h {
		suffix, ok := strings.CutPrefix(strings.ToLower(name), HeaderPrefix)
		if !ok || len(values) == 0 {
			continue
		}
		switch suffix {
		case "mode": // GET and HEAD only; meaningless on a request body
			continue
		case "type":
			if _, err := ParseType(values[0]); err != nil {
				return None, "", err
			}
			continue
		case "algorithm":
			if _, ok := ParseAlgorithm(values[0]); !ok {
				return None, "", errUnsupportedAlgorithm()
			}
			continue
		}
		alg, ok := ParseAlgorithm(suffix)
		if !ok {
			return None, "", errInvalidRequest(fmt.Sprintf("The %s header is not supported: b3 verifies %s.", strings.ToLower(name), algorithmList()))
		}
		if found != None {
			return None, "", errInvalidRequest("Expecting a single x-amz-checksum- header. Multiple checksum Types are not allowed.")
		}
		found, value = alg, values[0]
	}
	return found, value, nil
}

// algorithmOfHeader maps "x-amz-checksum-crc32" (any case) to CRC32.
func algorithmOfHeader(name string) (Algorithm, bool) {
	lower := strings.ToLower(strings.TrimSpace(name))
	if !strings.HasPrefix(lower, HeaderPrefix) {
		return None, false
	}
	return ParseAlgorithm(lower[len(HeaderPrefix):])
}

// FromHeaders returns the checksum given by an x-amz-checksum-<alg> header
// in h (e.g. a response, a part listing or a trailer), or a zero Checksum.
func FromHeaders(h http.Header) (Checksum, error) {
	alg, value, err := valueHeader(h)
	if err != nil || alg == None {
		return Checksum{}, err
	}
	sum, err := alg.Decode(value)
	if err != nil {
		return Checksum{}, err
	}
	return Checksum{Algorithm: alg, Sum: sum}, nil
}
