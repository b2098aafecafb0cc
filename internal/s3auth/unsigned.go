package s3auth

import (
	"net/http"
	"slices"
	"strings"
)

// checkAmzHeadersSigned refuses a SigV4 request carrying an x-amz-* header
// its signature does not cover, as S3 does (403 AccessDenied, the names in
// HeadersNotSigned). Such headers change what a request does: an added
// x-amz-copy-source turns a presigned PutObject into a CopyObject run with
// the signer's rights. signed are the signed header names, lower case.
//
// Exempt, because their value is covered some other way or only frames a
// payload the signature does not cover anyway:
//   - x-amz-content-sha256: with an Authorization header its value is the
//     last line of the canonical request, so changing it breaks the
//     signature; with a presigned URL the payload hash is the query's
//     X-Amz-Content-Sha256, and the header only says how an unsigned body
//     is framed;
//   - presigned only: x-amz-decoded-content-length and x-amz-trailer,
//     which frame such an unsigned aws-chunked body.
func checkAmzHeadersSigned(r *http.Request, signed []string, presigned bool) error {
	var missing []string
	for name := range r.Header {
		lower := strings.ToLower(name)
		if !strings.HasPrefix(lower, "x-amz-") || slices.Contains(signed, lower) || amzHeaderExempt(lower, presigned) {
			continue
		}
		missing = append(missing, lower)
	}
	if len(missing) == 0 {
		return nil
	}
	slices.Sort(missing)
	e := errAccessDenied("There were headers present in the request which were not signed")
	e.HeadersNotSigned = strings.Join(missing, ", ")
	return e
}

func amzHeaderExempt(lower string, presigned bool) bool {
	switch lower {
	case "x-amz-content-sha256":
		return true
	case "x-amz-decoded-content-length", "x-amz-trailer":
		return presigned
	}
	return false
}
