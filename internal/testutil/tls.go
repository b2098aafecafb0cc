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
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial := big.NewInt(ca.serial.Add(1))
	tmpl := &x509.Certificate{
		SerialNumber: serial, Subject: pkix.Name{CommonName: "b3 test server"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
	}
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
