package s3auth

import "testing"

// TestWithoutDirectives: the _HLS_ parameters, and only they, leave the
// query a presigned URL is checked again with.
func TestWithoutDirectives(t *testing.T) {
	for _, c := range []struct {
		raw, want string
		found     bool
	}{
		{"", "", false},
		{"X-Amz-Signature=abc&X-Amz-Date=1", "X-Amz-Signature=abc&X-Amz-Date=1", false},
		{"X-Amz-Date=1&_HLS_msn=4&_HLS_part=1&X-Amz-Signature=abc", "X-Amz-Date=1&X-Amz-Signature=abc", true},
		{"%5FHLS_skip=YES&a=b", "a=b", true},              // an escaped name is still a directive
		{"_HLS=1&_hls_msn=2", "_HLS=1&_hls_msn=2", false}, // the prefix is exact
	} {
		got, found := withoutDirectives(c.raw)
		if got != c.want || found != c.found {
			t.Errorf("%q: %q %v, want %q %v", c.raw, got, found, c.want, c.found)
		}
	}
}
