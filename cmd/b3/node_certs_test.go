package main

import (
	"bytes"
	"crypto/x509"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/b3-storage/b3/internal/tlsreload"
)

// TestNodeCerts: `b3 node certs` makes a CA and a pair per node that a
// node loads as its cluster identity (chained to the CA, for server and
// client authentication), with the hosts of a --peers list as SANs; run
// again on the same directory it keeps the CA and renews the pairs; bad
// arguments are refused.
func TestNodeCerts(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "certs")
	var stdout, stderr bytes.Buffer
	if rc := run([]string{"node", "certs", "--out", dir, "--nodes", "n1=127.0.0.1:9101,n2=node2.example+10.0.0.2,n3=[::1]:9103", "--days", "30"}, &stdout, &stderr); rc != 0 {
		t.Fatalf("exit %d: %s", rc, stderr.String())
	}
	if got := strings.Count(stdout.String(), "\n"); got != 8 {
		t.Fatalf("files written: %q, want the CA's 2 and 2 per node", stdout.String())
	}
	caBefore, _ := os.ReadFile(filepath.Join(dir, "ca.pem"))
	load := func(id string) *tlsreload.Certificate {
		t.Helper()
		c, err := tlsreload.LoadMutual(filepath.Join(dir, id+".pem"), filepath.Join(dir, id+"-key.pem"), filepath.Join(dir, "ca.pem"), slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatalf("%s's pair as a cluster identity: %v", id, err)
		}
		return c
	}
	for _, tc := range []struct {
		id    string
		ips   []string
		names []string
	}{
		{"n1", []string{"127.0.0.1"}, nil},
		{"n2", []string{"10.0.0.2"}, []string{"node2.example"}},
		{"n3", []string{"::1"}, nil},
	} {
		leaf := load(tc.id).Leaf()
		var ips []string
		for _, ip := range leaf.IPAddresses {
			ips = append(ips, ip.String())
		}
		if !slices.Equal(ips, tc.ips) || !slices.Equal(leaf.DNSNames, tc.names) || leaf.Subject.CommonName != tc.id {
			t.Errorf("%s: IP SANs %v, DNS SANs %v, CN %q; want %v, %v, %q", tc.id, ips, leaf.DNSNames, leaf.Subject.CommonName, tc.ips, tc.names, tc.id)
		}
		if d := time.Until(leaf.NotAfter); d < 29*24*time.Hour || d > 31*24*time.Hour {
			t.Errorf("%s: valid until %v, want in 30 days", tc.id, leaf.NotAfter)
		}
		for _, host := range append(tc.ips, tc.names...) {
			if err := leaf.VerifyHostname(host); err != nil {
				t.Errorf("%s: %v", tc.id, err)
			}
		}
		if err := leaf.VerifyHostname(net.IPv4(10, 9, 9, 9).String()); err == nil {
			t.Errorf("%s: valid for an address it was not issued for", tc.id)
		}
	}
	for _, f := range []string{"ca-key.pem", "n1-key.pem"} {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v, %v; want mode 0600", f, st.Mode(), err)
		}
	}

	// Again: the same CA, a new pair for n1.
	serial := load("n1").Leaf().SerialNumber
	if rc := run([]string{"node", "certs", "--out", dir, "--nodes", "n1=127.0.0.1"}, &stdout, &stderr); rc != 0 {
		t.Fatalf("renewal: exit %d: %s", rc, stderr.String())
	}
	if caAfter, _ := os.ReadFile(filepath.Join(dir, "ca.pem")); !bytes.Equal(caAfter, caBefore) {
		t.Fatal("a second run replaced the CA")
	}
	if renewed := load("n1").Leaf(); renewed.SerialNumber.Cmp(serial) == 0 {
		t.Fatal("the renewal kept the old certificate")
	} else if _, err := renewed.Verify(x509.VerifyOptions{Roots: load("n2").Pool(), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Fatalf("the renewed certificate and the other nodes' bundle: %v", err)
	}

	for _, args := range [][]string{
		{"node", "certs", "--nodes", "n1=127.0.0.1"},
		{"node", "certs", "--out", dir},
		{"node", "certs", "--out", dir, "--nodes", "n1"},
		{"node", "certs", "--out", dir, "--nodes", "../x=127.0.0.1"},
		{"node", "certs", "--out", dir, "--nodes", "n1=127.0.0.1", "--days", "0"},
	} {
		stderr.Reset()
		if rc := run(args, &stdout, &stderr); rc != 2 || stderr.Len() == 0 {
			t.Errorf("%v: exit %d, %q; want 2 and a message", args, rc, stderr.String())
		}
	}
}
