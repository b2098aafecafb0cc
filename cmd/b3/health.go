package main

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"

	"github.com/b3-storage/b3/internal/admin"
)

// runVersion is "b3 version": the build's module version, VCS revision
// and Go version (--json for all of admin.Build).
func runVersion(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("b3 version", flag.ContinueOnError)
	fs.SetOutput(stderr)
	asJSON := fs.Bool("json", false, "print JSON")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	b := admin.BuildInfo()
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(b)
		return 0
	}
	modified := ""
	if b.Modified {
		modified = " (modified)"
	}
	fmt.Fprintf(stdout, "b3 %s, revision %s%s, %s\n", b.Version, b.Revision, modified, b.GoVersion)
	return 0
}

// runHealthcheck is "b3 healthcheck": exit 0 if the server's
// /health/ready answers 200 within the timeout, else 1. It is the
// container image's HEALTHCHECK (FROM scratch has no curl).
func runHealthcheck(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("b3 healthcheck", flag.ContinueOnError)
	fs.SetOutput(stderr)
	def := os.Getenv("B3_HEALTHCHECK_URL")
	if def == "" {
		def = "http://127.0.0.1:9001/health/ready"
	}
	url := fs.String("url", def, "health URL (B3_HEALTHCHECK_URL); /health/live checks only that the process serves")
	caCert := fs.String("ca-cert", os.Getenv("B3_ADMIN_CA_CERT"), "CA of an https admin listener (B3_ADMIN_CA_CERT)")
	insecure := fs.Bool("insecure", false, "https: do not verify the certificate (a health check on loopback)")
	timeout := fs.Duration("timeout", 3*time.Second, "give up after")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	tlsCfg := &tls.Config{InsecureSkipVerify: *insecure} //nolint:gosec // opt-in, for loopback checks
	if *caCert != "" {
		pem, err := os.ReadFile(*caCert)
		if err != nil {
			fmt.Fprintf(stderr, "b3 healthcheck: %v\n", err)
			return 2
		}
		tlsCfg.RootCAs = x509.NewCertPool()
		tlsCfg.RootCAs.AppendCertsFromPEM(pem)
	}
	hc := &http.Client{Timeout: *timeout, Transport: &http.Transport{TLSClientConfig: tlsCfg}}
	resp, err := hc.Get(*url)
	if err != nil {
		fmt.Fprintf(stderr, "b3 healthcheck: %v\n", err)
		return 1
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK {
		fmt.Fprintf(stderr, "b3 healthcheck: %s: %s %s\n", *url, resp.Status, body)
		return 1
	}
	fmt.Fprintf(stdout, "%s", body)
	return 0
}
