package testutil

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/b3-storage/b3/internal/admin"
)

// ServerOptions configure StartServer. Zero values pick the defaults.
type ServerOptions struct {
	// Data is the data root; default a fresh directory under t.TempDir().
	Data string
	// Args are added to the command line (after the harness's own flags,
	// so a later flag of the same name wins).
	Args []string
	// Env is added to the environment of the process.
	Env       []string
	AccessKey string // default "TESTACCESSKEY0000000"
	SecretKey string // default "test/secret/key/000000000000000000000000"
	// NoAdmin starts the server without an admin listener.
	NoAdmin bool
	// Binary is the b3 command to run; default Binary's build.
	Binary string
	// CA, if set, serves S3 over HTTPS with a certificate it issued
	// (Server.TLSCert, TLSKey); the server's clients trust it.
	CA *CA

	tlsCert, tlsKey string // issued by StartServer
}

// Server is one `b3 server` process on loopback.
type Server struct {
	bin       string
	opts      ServerOptions
	Data      string
	S3Addr    string // "127.0.0.1:port"
	AdminAddr string // "" with NoAdmin
	// ConsoleAddr is the web console's "127.0.0.1:port" (every server
	// gets one: the default 127.0.0.1:9002 would collide between tests).
	ConsoleAddr string
	AdminToken  string
	Proc        *Process // the current (or last) process
	logs        []string // output of earlier processes
	// TLSCert and TLSKey are the S3 listener's files with ServerOptions.CA.
	TLSCert, TLSKey string
}

// StartServer starts `b3 server` on free loopback ports, waits until it
// serves S3, and stops it when the test ends, failing the test if the
// stop was not graceful and printing the output if the test failed.
func StartServer(t testing.TB, opts ServerOptions) *Server {
	t.Helper()
	if opts.Data == "" {
		opts.Data = filepath.Join(t.TempDir(), "data")
	}
	if opts.CA != nil {
		dir := t.TempDir()
		opts.tlsCert, opts.tlsKey = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
		opts.CA.Issue(t, opts.tlsCert, opts.tlsKey)
	}
	s, err := NewServer(opts)
	if s != nil {
		t.Cleanup(func() {
			if s.Proc != nil && !s.Proc.Exited() {
				if err := s.Proc.Stop(30 * time.Second); err != nil {
					t.Errorf("b3 server: %v", err)
				}
			}
			if t.Failed() && s.Proc != nil {
				t.Logf("b3 server output:\n%s", s.Output())
			}
		})
	}
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// NewServer is StartServer for TestMain: the caller stops the server.
// opts.Data must be set. On a start that fails, the server returned (if
// not nil) holds the output.
func NewServer(opts ServerOptions) (*Server, error) {
	if opts.Data == "" {
		return nil, errors.New("testutil.NewServer: no data directory")
	}
	if opts.AccessKey == "" {
		opts.AccessKey, opts.SecretKey = "TESTACCESSKEY0000000", "test/secret/key/000000000000000000000000"
	}
	bin := opts.Binary
	if bin == "" {
		var err error
		if bin, err = BuildBinary(); err != nil {
			return nil, err
		}
	}
	var err error
	if opts.CA != nil && opts.tlsCert == "" {
		return nil, errors.New("testutil.NewServer: a CA needs StartServer")
	}
	s := &Server{bin: bin, opts: opts, Data: opts.Data, AdminToken: "test-admin-token", TLSCert: opts.tlsCert, TLSKey: opts.tlsKey}
	if s.S3Addr, err = freeAddr(); err != nil {
		return nil, err
	}
	if !opts.NoAdmin {
		if s.AdminAddr, err = freeAddr(); err != nil {
			return nil, err
		}
	}
	if s.ConsoleAddr, err = freeAddr(); err != nil {
		return nil, err
	}
	return s, s.Start()
}

// Endpoint is the S3 endpoint URL.
func (s *Server) Endpoint() string {
	if s.opts.CA != nil {
		return "https://" + s.S3Addr
	}
	return "http://" + s.S3Addr
}

// Keys returns the root user's credentials.
func (s *Server) Keys() (accessKey, secretKey string) { return s.opts.AccessKey, s.opts.SecretKey }

// Client returns an S3 client of the root user.
func (s *Server) Client(timeout time.Duration) *s3.Client {
	if s.opts.CA != nil {
		return S3ClientCA(s.Endpoint(), s.opts.AccessKey, s.opts.SecretKey, timeout, s.opts.CA.Pool())
	}
	return S3ClientTimeout(s.Endpoint(), s.opts.AccessKey, s.opts.SecretKey, timeout)
}

// Admin returns a client of the admin API.
func (s *Server) Admin() *admin.Client {
	return &admin.Client{Endpoint: "http://" + s.AdminAddr, Token: s.AdminToken, HTTP: &http.Client{Timeout: 10 * time.Second}}
}

// Args returns the command line of the server. Tests stop servers
// without the drain delay unless they ask for one.
func (s *Server) Args() []string {
	args := []string{"server", "--data", s.Data, "--address", s.S3Addr, "--admin-address", s.AdminAddr, "--console-address", s.ConsoleAddr, "--drain-delay", "0s"}
	if s.opts.CA != nil {
		args = append(args, "--tls-cert", s.TLSCert, "--tls-key", s.TLSKey)
	}
	return append(args, s.opts.Args...)
}

// Output returns everything every process of this server printed.
func (s *Server) Output() string {
	out := strings.Join(s.logs, "")
	if s.Proc != nil {
		out += s.Proc.Output.String()
	}
	return out
}

// Start (re)starts the server on its data directory and ports, and waits
// until this process printed its banner (after every listener is bound)
// and answers S3 requests.
func (s *Server) Start() error {
	if s.Proc != nil {
		if !s.Proc.Exited() {
			return fmt.Errorf("b3 server is running")
		}
		s.logs = append(s.logs, s.Proc.Output.String())
	}
	p, err := Start("b3 server", s.bin, s.Args(), append([]string{
		"B3_ACCESS_KEY=" + s.opts.AccessKey, "B3_SECRET_KEY=" + s.opts.SecretKey, "B3_ADMIN_TOKEN=" + s.AdminToken,
	}, s.opts.Env...))
	if err != nil {
		return err
	}
	s.Proc = p
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := s.Client(5 * time.Second)
	for {
		if p.Exited() {
			return fmt.Errorf("b3 server exited: %v\n%s", p.Wait(0), p.Output.String())
		}
		if strings.Contains(p.Output.String(), "b3 server: S3 API on") {
			if _, err := c.ListBuckets(ctx, &s3.ListBucketsInput{}); err == nil {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("b3 server did not start within 30s:\n%s", p.Output.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Kill sends SIGKILL and waits for the process to end.
func (s *Server) Kill() { s.Proc.Kill() }

// Stop sends SIGTERM and waits for a graceful end.
func (s *Server) Stop() error { return s.Proc.Stop(30 * time.Second) }

// Restart stops the server gracefully and starts it again.
func (s *Server) Restart() error {
	if err := s.Stop(); err != nil {
		return err
	}
	return s.Start()
}
