package server

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadJSONFile: the one reader of b3's JSON files (users of a server
// and of a node, runtime settings): a missing file is no error, a
// malformed one names the file, a good one is decoded.
func TestReadJSONFile(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name, content string // content "": no file
		found         bool
		err           string
		want          []string
	}{
		{"missing.json", "", false, "", nil},
		{"bad.json", "[{", true, "users file " + filepath.Join(dir, "bad.json") + " is malformed", nil},
		{"good.json", `["a","b"]`, true, "", []string{"a", "b"}},
	} {
		path := filepath.Join(dir, tc.name)
		if tc.content != "" {
			if err := os.WriteFile(path, []byte(tc.content), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		var got []string
		found, err := ReadJSONFile(path, "users", &got)
		if found != tc.found || (err == nil) != (tc.err == "") || (err != nil && !strings.Contains(err.Error(), tc.err)) ||
			strings.Join(got, ",") != strings.Join(tc.want, ",") {
			t.Errorf("%s: found %v, err %v, got %q; want %v, %q, %q", tc.name, found, err, got, tc.found, tc.err, tc.want)
		}
	}
}
