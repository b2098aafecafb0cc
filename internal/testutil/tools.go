package testutil

import (
	"os"
	"os/exec"
	"testing"
)

// Chromium finds Debian's chromium (scripts/install-test-tools.sh), for
// the tests that drive a headless browser.
func Chromium(t testing.TB) string {
	t.Helper()
	for _, p := range []string{"/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"} {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	if p, err := exec.LookPath("chromium"); err == nil {
		return p
	}
	t.Fatal("chromium not found: run scripts/install-test-tools.sh (Debian package chromium)")
	return ""
}
