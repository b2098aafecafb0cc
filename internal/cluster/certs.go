package cluster

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/b3-storage/b3/internal/server"
)

// Certificates for --cluster-tls-* (b3 node certs): a private CA and one
// key pair per node, for a test or a small deployment. Keys are ECDSA
// P-256; a node's certificate is valid for both server and client
// authentication (it serves its cluster port and dials the others) and
// names the hosts other nodes dial it by. The CA's key is only needed to
// issue more: keep it off the nodes.
const (
	CAFile    = "ca.pem"
	caKeyFile = "ca-key.pem"
	// caValidity: the CA outlives many renewals of the node certificates.
	caValidity = 10 * 365 * 24 * time.Hour
)

// CertNode is one node to issue a certificate for: its id (the files'
// name) and the hosts (IP addresses or DNS names) other nodes reach it by.
type CertNode struct {
	ID    string
	Hosts []string
}

// ParseCertNodes parses "n1=10.0.0.1,n2=node2.example,..."; a --peers
// list does too (the ports are dropped), and one node's several hosts are
// joined by "+" (n1=10.0.0.1+node1.example).
func ParseCertNodes(spec string) ([]CertNode, error) {
	var nodes []CertNode
	for entry := range strings.SplitSeq(spec, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		id, hosts, ok := strings.Cut(entry, "=")
		if !ok || id == "" || hosts == "" || strings.ContainsAny(id, `/\`) {
			return nil, fmt.Errorf("node %q: want id=host[+host...]", entry)
		}
		n := CertNode{ID: id}
		for h := range strings.SplitSeq(hosts, "+") {
			if host, _, err := net.SplitHostPort(h); err == nil {
				h = host
			}
			if h == "" {
				return nil, fmt.Errorf("node %q: an empty host", entry)
			}
			n.Hosts = append(n.Hosts, h)
		}
		nodes = append(nodes, n)
	}
	if len(nodes) == 0 {
		return nil, errors.New("no nodes given")
	}
	return nodes, nil
}

// WriteCerts issues into dir a certificate and key for each node
// (ID.pem, ID-key.pem, valid for validity), signed by the CA in dir
// (ca.pem, ca-key.pem), which it creates first if dir has none. It
// returns the files it wrote. Keys are written readable by this user only.
func WriteCerts(dir string, nodes []CertNode, validity time.Duration) ([]string, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	var written []string
	ca, caKey, err := readCA(dir)
	if errors.Is(err, fs.ErrNotExist) {
		if ca, caKey, err = newCA(dir); err == nil {
			written = append(written, filepath.Join(dir, CAFile), filepath.Join(dir, caKeyFile))
		}
	}
	if err != nil {
		return nil, err
	}
	for _, n := range nodes {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return nil, err
		}
		tmpl := &x509.Certificate{
			SerialNumber: serial(), Subject: pkix.Name{CommonName: n.ID},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(validity),
			KeyUsage:    x509.KeyUsageDigitalSignature,
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		}
		for _, h := range n.Hosts {
			if ip := net.ParseIP(h); ip != nil {
				tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
			} else {
				tmpl.DNSNames = append(tmpl.DNSNames, h)
			}
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		if err != nil {
			return nil, fmt.Errorf("certificate of %s: %w", n.ID, err)
		}
		certPath, keyPath := filepath.Join(dir, n.ID+".pem"), filepath.Join(dir, n.ID+"-key.pem")
		// A node watching these files while they are replaced keeps its
		// pair until both match again (tlsreload).
		if err := writeKey(keyPath, key); err != nil {
			return nil, err
		}
		if err := writePEM(certPath, "CERTIFICATE", der, 0o644); err != nil {
			return nil, err
		}
		written = append(written, certPath, keyPath)
	}
	return written, nil
}

func newCA(dir string) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(), Subject: pkix.Name{CommonName: "b3 cluster CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(caValidity),
		IsCA: true, BasicConstraintsValid: true, MaxPathLenZero: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, err
	}
	if err := writeKey(filepath.Join(dir, caKeyFile), key); err != nil {
		return nil, nil, err
	}
	if err := writePEM(filepath.Join(dir, CAFile), "CERTIFICATE", der, 0o644); err != nil {
		return nil, nil, err
	}
	cert, err := x509.ParseCertificate(der)
	return cert, key, err
}

// readCA reads dir's CA (fs.ErrNotExist: it has none).
func readCA(dir string) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	certPEM, err := os.ReadFile(filepath.Join(dir, CAFile))
	if err != nil {
		return nil, nil, err
	}
	keyPEM, err := os.ReadFile(filepath.Join(dir, caKeyFile))
	if err != nil {
		return nil, nil, fmt.Errorf("%s has %s but not its key: %w", dir, CAFile, err)
	}
	cb, kb := pemBlock(certPEM), pemBlock(keyPEM)
	if cb == nil || kb == nil {
		return nil, nil, fmt.Errorf("%s: %s or %s holds no PEM block", dir, CAFile, caKeyFile)
	}
	cert, err := x509.ParseCertificate(cb.Bytes)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", CAFile, err)
	}
	parsed, err := x509.ParsePKCS8PrivateKey(kb.Bytes)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", caKeyFile, err)
	}
	key, ok := parsed.(*ecdsa.PrivateKey)
	if !ok || !cert.IsCA {
		return nil, nil, fmt.Errorf("%s: not a CA made by b3 node certs (an ECDSA CA certificate and its key)", dir)
	}
	return cert, key, nil
}

func pemBlock(data []byte) *pem.Block {
	b, _ := pem.Decode(data)
	return b
}

func writeKey(path string, key *ecdsa.PrivateKey) error {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return err
	}
	return writePEM(path, "PRIVATE KEY", der, 0o600)
}

// writePEM replaces path in one rename (a node reloading its pair reads
// the old file or the new one, never half of one).
func writePEM(path, kind string, der []byte, perm os.FileMode) error {
	return server.WriteFileSync(path, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), perm)
}

// serial is a random 128-bit serial number, as RFC 5280 allows (and
// unique without a counter kept anywhere).
func serial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	return n.Add(n, big.NewInt(1))
}
