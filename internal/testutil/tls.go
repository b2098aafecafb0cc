package testutil

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

// CA is a certificate authority made for one test: servers get
// certificates it issued, clients trust it (File, Pool).
type CA struct {
	cert   *x509.Certificate
	key    *ecdsa.PrivateKey
	PEM    []byte
	File   string // PEM file of the CA certificate (aws --ca-bundle)
	serial atomic.Int64
}

// NewCA makes a CA and writes its certificate under t.TempDir().
func NewCA(t testing.TB) *CA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "b3 test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	ca := &CA{key: key, PEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
	ca.cert, _ = x509.ParseCertificate(der)
	ca.serial.Store(1)
	ca.File = filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca.File, ca.PEM, 0o600); err != nil {
		t.Fatal(err)
	}
	return ca
}

// Pool is a pool holding the CA.
func (ca *CA) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.cert)
	return p
}

// Issue writes a server certificate for 127.0.0.1 and localhost to
// certFile and its key to keyFile (each replaced in one rename, as a
// renewal tool does), and returns its serial number, which differs for
// every certificate issued.
func (ca *CA) Issue(t testing.TB, certFile, keyFile string) *big.Int {
	t.Helper()
	return ca.issue(t, certFile, keyFile, &x509.Certificate{
		Subject: pkix.Name{CommonName: "b3 test server"}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
	})
}

// IssuePeer is Issue for a cluster node (--cluster-tls-cert): valid for
// both server and client authentication, for the given hosts (IP
// addresses become IP SANs, names DNS SANs).
func (ca *CA) IssuePeer(t testing.TB, certFile, keyFile string, hosts ...string) *big.Int {
	t.Helper()
	tmpl := &x509.Certificate{Subject: pkix.Name{CommonName: "b3 test node"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	return ca.issue(t, certFile, keyFile, tmpl)
}

// issue completes tmpl (serial, a day's validity, a fresh key), signs
// it, and writes the pair.
func (ca *CA) issue(t testing.TB, certFile, keyFile string, tmpl *x509.Certificate) *big.Int {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial := big.NewInt(ca.serial.Add(1))
	tmpl.SerialNumber, tmpl.KeyUsage = serial, x509.KeyUsageDigitalSignature
	tmpl.NotBefore, tmpl.NotAfter = time.Now().Add(-time.Hour), time.Now().Add(24*time.Hour)
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	write := func(path string, block *pem.Block) {
		tmp := path + ".tmp"
		if err := os.WriteFile(tmp, pem.EncodeToMemory(block), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, path); err != nil {
			t.Fatal(err)
		}
	}
	write(keyFile, &pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})
	write(certFile, &pem.Block{Type: "CERTIFICATE", Bytes: der})
	return serial
}
