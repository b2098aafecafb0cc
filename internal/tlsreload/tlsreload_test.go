package tlsreload

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"log/slog"
	"math/big"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/b3-storage/b3/internal/testutil"
)

// TestSwapKeepsConnections serves HTTPS, replaces the key pair on disk,
// and checks: a connection opened before keeps working; new handshakes
// get the new certificate, after Reload and after a file change seen by
// Watch; a half-written renewal keeps the old pair in use.
func TestSwapKeepsConnections(t *testing.T) {
	ca := testutil.NewCA(t)
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	first := ca.Issue(t, certFile, keyFile)
	cert, err := Load(certFile, keyFile, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	ln, err := Listen("127.0.0.1:0", cert)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok") })}
	go srv.Serve(ln)
	defer srv.Close()
	url := "https://" + ln.Addr().String() + "/"

	// Each client keeps one connection; the serial a request sees is the
	// certificate its connection was opened with.
	newClient := func() *http.Client {
		return &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.Pool()}, MaxConnsPerHost: 1}}
	}
	get := func(c *http.Client) *big.Int {
		t.Helper()
		resp, err := c.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if b, _ := io.ReadAll(resp.Body); string(b) != "ok" {
			t.Fatalf("body %q", b)
		}
		return resp.TLS.PeerCertificates[0].SerialNumber
	}

	kept := newClient()
	if got := get(kept); got.Cmp(first) != 0 {
		t.Fatalf("first certificate: serial %v, want %v", got, first)
	}
	second := ca.Issue(t, certFile, keyFile)
	if err := cert.Reload(); err != nil {
		t.Fatal(err)
	}
	// The kept connection carries on with the session it negotiated.
	if got := get(kept); got.Cmp(first) != 0 {
		t.Fatalf("kept connection: serial %v, want the first %v (a new connection was made, or the session changed)", got, first)
	}
	if got := get(newClient()); got.Cmp(second) != 0 {
		t.Fatalf("new connection after Reload: serial %v, want %v", got, second)
	}

	// A renewal caught half-written: the new certificate, the old key.
	keyBefore, _ := os.ReadFile(keyFile)
	third := ca.Issue(t, certFile, keyFile)
	thirdKey, _ := os.ReadFile(keyFile)
	os.WriteFile(keyFile, keyBefore, 0o600)
	if err := cert.Reload(); err == nil {
		t.Fatal("a mismatched pair loaded")
	}
	if got := get(newClient()); got.Cmp(second) != 0 {
		t.Fatalf("after a failed reload: serial %v, want the previous %v", got, second)
	}

	// The renewal completes: Watch notices the change on its own.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go cert.Watch(ctx, 10*time.Millisecond, nil)
	os.WriteFile(keyFile, thirdKey, 0o600)
	deadline := time.Now().Add(30 * time.Second)
	for cert.Leaf().SerialNumber.Cmp(third) != 0 {
		if time.Now().After(deadline) {
			t.Fatal("Watch did not load the renewed pair within 30s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if got := get(newClient()); got.Cmp(third) != 0 {
		t.Fatalf("after Watch: serial %v, want %v", got, third)
	}
	if got := get(kept); got.Cmp(first) != 0 {
		t.Fatalf("kept connection after two renewals: serial %v, want %v", got, first)
	}
}

// TestMutualReload: LoadMutual's CA bundle is reloaded with the pair
// (a CA added to the bundle is trusted after Reload, and after a file
// change seen by Watch), and a pair that does not chain to the bundle is
// refused at load and at reload, the previous pair and bundle staying.
func TestMutualReload(t *testing.T) {
	ca, next := testutil.NewCA(t), testutil.NewCA(t)
	dir := t.TempDir()
	certFile, keyFile, caFile := filepath.Join(dir, "n1.pem"), filepath.Join(dir, "n1-key.pem"), filepath.Join(dir, "ca.pem")
	ca.IssuePeer(t, certFile, keyFile, "127.0.0.1")
	os.WriteFile(caFile, ca.PEM, 0o600)
	id, err := LoadMutual(certFile, keyFile, caFile, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	first := id.Leaf() // (serials alone do not tell two test CAs' certificates apart)
	trusts := func(c *testutil.CA) bool {
		p := filepath.Join(t.TempDir(), "leaf.pem")
		c.IssuePeer(t, p, p+".key", "127.0.0.1")
		pair, err := tls.LoadX509KeyPair(p, p+".key")
		if err != nil {
			t.Fatal(err)
		}
		_, err = pair.Leaf.Verify(x509.VerifyOptions{Roots: id.Pool(), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
		return err == nil
	}
	if !trusts(ca) || trusts(next) {
		t.Fatal("the bundle as loaded: want the first CA only")
	}

	// A pair of the next CA, while the bundle lacks it: refused.
	next.IssuePeer(t, certFile, keyFile, "127.0.0.1")
	if err := id.Reload(); err == nil || !strings.Contains(err.Error(), "unknown authority") {
		t.Fatalf("a pair not chaining to the bundle: %v", err)
	}
	if id.Leaf() != first {
		t.Fatal("the refused pair is in use")
	}
	if _, err := LoadMutual(certFile, keyFile, caFile, nil); err == nil {
		t.Fatal("LoadMutual took a pair not chaining to the bundle")
	}

	// Both CAs in the bundle: Watch picks up the change and the pair.
	os.WriteFile(caFile, append(append([]byte(nil), ca.PEM...), next.PEM...), 0o600)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go id.Watch(ctx, 10*time.Millisecond, nil)
	deadline := time.Now().Add(30 * time.Second)
	for id.Leaf() == first {
		if time.Now().After(deadline) {
			t.Fatal("Watch did not load the new bundle and pair within 30s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !trusts(ca) || !trusts(next) {
		t.Fatal("the reloaded bundle: want both CAs")
	}
}
