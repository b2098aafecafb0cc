package main

import (
	"os"
	"path/filepath"
	"testing"
)

// TestAdminConnectionPrecedence: the admin URL and token come from
// flags, else B3_ADMIN_URL/B3_ADMIN_TOKEN, else the config file under the
// user's config directory, else the defaults; each on its own.
func TestAdminConnectionPrecedence(t *testing.T) {
	home := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", home)
	t.Setenv("HOME", home)
	for _, v := range []string{"B3_ADMIN_URL", "B3_ADMIN_ENDPOINT", "B3_ADMIN_TOKEN", "B3_ADMIN_CONFIG", "B3_ADMIN_CA_CERT", "B3_DATA"} {
		t.Setenv(v, "")
	}
	t.Chdir(t.TempDir()) // no ./data here
	os.MkdirAll(filepath.Join(home, "b3"), 0o700)
	os.WriteFile(filepath.Join(home, "b3", "admin.yaml"), []byte("url: https://file:9001\ntoken: file-token\n"), 0o600)

	for _, tc := range []struct {
		name             string
		env              map[string]string
		flags            adminFlags
		wantURL, wantTok string
	}{
		{"file", nil, adminFlags{}, "https://file:9001", "file-token"},
		{"env over file", map[string]string{"B3_ADMIN_URL": "http://env:1", "B3_ADMIN_TOKEN": "env-token"}, adminFlags{}, "http://env:1", "env-token"},
		{"env token, file url", map[string]string{"B3_ADMIN_TOKEN": "env-token"}, adminFlags{}, "https://file:9001", "env-token"},
		{"flags over env", map[string]string{"B3_ADMIN_URL": "http://env:1", "B3_ADMIN_TOKEN": "env-token"},
			adminFlags{url: "http://flag:2", token: "flag-token"}, "http://flag:2", "flag-token"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			c, err := tc.flags.client()
			if err != nil || c.Endpoint != tc.wantURL || c.Token != tc.wantTok {
				t.Fatalf("got %v %v, want %s %s", c, err, tc.wantURL, tc.wantTok)
			}
		})
	}

	os.Remove(filepath.Join(home, "b3", "admin.yaml"))
	if _, err := (&adminFlags{}).client(); err == nil {
		t.Fatal("no token anywhere, yet a client")
	}
	c, err := (&adminFlags{token: "x"}).client()
	if err != nil || c.Endpoint != "http://127.0.0.1:9001" {
		t.Fatalf("default URL: %v %v", c, err)
	}
	if _, err := (&adminFlags{token: "x", config: filepath.Join(home, "missing.yaml")}).client(); err == nil {
		t.Fatal("a config file named with --config that does not exist was ignored")
	}
}
