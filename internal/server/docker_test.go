package server

import (
	"bytes"
	"net"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// dockerfile is what TestDockerfileListeners reads of the Dockerfile: its
// ENV settings, EXPOSEd ports and the ports its usage comment publishes
// (docker run -p).
type dockerfile struct {
	env       map[string]string
	exposed   []string
	published []string
}

func parseDockerfile(t *testing.T, text string) dockerfile {
	t.Helper()
	d := dockerfile{env: map[string]string{}}
	// Continuation lines join their instruction.
	text = strings.ReplaceAll(text, "\\\n", " ")
	for _, line := range strings.Split(text, "\n") {
		fields := strings.Fields(line)
		switch {
		case len(fields) == 0:
		case fields[0] == "#":
			for _, m := range regexp.MustCompile(`-p (?:[0-9.]+:)?(\d+):\d+`).FindAllStringSubmatch(line, -1) {
				d.published = append(d.published, m[1])
			}
		case fields[0] == "ENV":
			for _, kv := range fields[1:] {
				if k, v, ok := strings.Cut(kv, "="); ok {
					d.env[k] = v
				}
			}
		case fields[0] == "EXPOSE":
			d.exposed = append(d.exposed, fields[1:]...)
		}
	}
	return d
}

// TestDockerfileListeners: the image's settings (its ENV, read as b3
// server reads its environment) put every listener b3 server opens by
// default (S3, admin, console) on all addresses of the container, the
// image EXPOSEs each one's port, and the docker run of its usage comment
// publishes each.
func TestDockerfileListeners(t *testing.T) {
	data, err := os.ReadFile("../../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	d := parseDockerfile(t, string(data))
	cfg, _, err := LoadSettings(nil, func(k string) (string, bool) { v, ok := d.env[k]; return v, ok }, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range []struct{ name, addr string }{{"S3", cfg.Address}, {"admin", cfg.AdminAddress}, {"console", cfg.ConsoleAddress}} {
		host, port, err := net.SplitHostPort(l.addr)
		if err != nil {
			t.Errorf("the image's %s address %q: %v", l.name, l.addr, err)
			continue
		}
		if ip := net.ParseIP(host); ip == nil || !ip.IsUnspecified() {
			t.Errorf("the image's %s listener is on %s: unreachable from outside the container", l.name, l.addr)
		}
		if !slices.Contains(d.exposed, port) {
			t.Errorf("the image does not EXPOSE the %s port %s (EXPOSE %v)", l.name, port, d.exposed)
		}
		if !slices.Contains(d.published, port) {
			t.Errorf("the Dockerfile's docker run does not publish the %s port %s (-p %v)", l.name, port, d.published)
		}
	}
}
