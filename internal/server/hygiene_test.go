package server

import (
	"bytes"
	"strings"
	"testing"
)

func TestAuthBackOffSetting(t *testing.T) {
	env := func(string) (string, bool) { return "", false }
	for _, tc := range []struct {
		args  []string
		burst int
		off   bool
	}{{nil, 10, false}, {[]string{"--auth-backoff", "3"}, 3, false}, {[]string{"--auth-backoff", "0"}, 0, true}} {
		cfg, _, err := LoadSettings(tc.args, env, &bytes.Buffer{})
		if err != nil {
			t.Fatal(err)
		}
		if l := cfg.authLimits(); l.Off != tc.off || (!tc.off && (l.AddrBurst != tc.burst || l.KeyBurst != 10*tc.burst)) {
			t.Errorf("%v: %+v", tc.args, l)
		}
	}
	if _, _, err := LoadSettings([]string{"--auth-backoff", "-1"}, env, &bytes.Buffer{}); err == nil {
		t.Error("a negative back-off accepted")
	}
	if (&Config{}).authLimits().AddrBurst != 10 {
		t.Error("a Config built in code has no back-off")
	}
}

// TestSecretFlagWarnings: secrets on the command line are warned of
// (not refused); the same from the environment are not.
func TestSecretFlagWarnings(t *testing.T) {
	const secret = "0123456789abcdef-secret"
	_, out, err := LoadSettings([]string{"--access-key", "AK", "--secret-key", secret, "--admin-token", secret}, func(string) (string, bool) { return "", false }, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if w := strings.Join(out.Warnings, "\n"); !strings.Contains(w, "--secret-key on the command line") || !strings.Contains(w, "--admin-token on the command line") || strings.Contains(w, secret) {
		t.Errorf("warnings: %q", out.Warnings)
	}
	_, out, err = LoadSettings(nil, func(k string) (string, bool) {
		return map[string]string{"B3_ACCESS_KEY": "AK", "B3_SECRET_KEY": secret}[k], k == "B3_ACCESS_KEY" || k == "B3_SECRET_KEY"
	}, &bytes.Buffer{})
	if err != nil || len(out.Warnings) != 0 {
		t.Errorf("from the environment: %q %v", out.Warnings, err)
	}
}
