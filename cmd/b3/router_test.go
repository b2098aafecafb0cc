package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestRouterKey: b3 router key prints a key derived from the cluster
// secret — the same for the same secret, another for another, never the
// secret itself — and b3 router takes it from B3_ROUTER_KEY in place of
// B3_CLUSTER_SECRET, or refuses both given as files.
func TestRouterKey(t *testing.T) {
	key := func(secret string) (string, int) {
		var out, errb bytes.Buffer
		env := func(k string) (string, bool) {
			if k == "B3_CLUSTER_SECRET" && secret != "" {
				return secret, true
			}
			return "", false
		}
		code := routerKey(nil, env, &out, &errb)
		return strings.TrimSpace(out.String()), code
	}
	a, code := key("cluster-secret-aaaaaaaaaaaa")
	if code != 0 || len(a) < 32 || strings.Contains(a, "cluster-secret") {
		t.Fatalf("b3 router key: exit %d, %q", code, a)
	}
	if again, _ := key("cluster-secret-aaaaaaaaaaaa"); again != a {
		t.Fatalf("the same secret gave two keys: %q, %q", a, again)
	}
	if other, _ := key("cluster-secret-bbbbbbbbbbbb"); other == a {
		t.Fatal("two secrets gave one key")
	}
	if _, code := key(""); code != 2 {
		t.Fatalf("b3 router key with no secret: exit %d, want 2", code)
	}
	if _, code := key("short"); code != 2 {
		t.Fatalf("b3 router key of a secret under 16 characters: exit %d, want 2", code)
	}

	env := map[string]string{"B3_CLUSTER_SECRET": "cluster-secret-aaaaaaaaaaaa", "B3_ROUTER_KEY": a}
	getenv := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	var errb bytes.Buffer
	cfg, code := parseRouter([]string{"--cluster-seeds", "127.0.0.1:1"}, getenv, &errb)
	if code != -1 || cfg.RouterKey != a || cfg.ClusterSecret != "" {
		t.Fatalf("b3 router with B3_ROUTER_KEY and B3_CLUSTER_SECRET: exit %d, key %q, secret %q; want the key alone\n%s", code, cfg.RouterKey, cfg.ClusterSecret, errb.String())
	}
}
