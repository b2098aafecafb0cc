package server

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/b3-storage/b3/internal/tlsreload"
)

// listeners are the server's bound sockets and their TLS key pairs (nil:
// plain HTTP).
type listeners struct {
	s3, admin, console             net.Listener
	s3Cert, adminCert, consoleCert *tlsreload.Certificate
}

// listen loads the key pairs and binds every listener, or none.
func listen(cfg Config) (l *listeners, err error) {
	l = &listeners{}
	defer func() {
		if err != nil {
			l.close()
		}
	}()
	load := func(cert, key string) (*tlsreload.Certificate, error) {
		if cert == "" && key == "" {
			return nil, nil
		}
		return tlsreload.Load(cert, key, cfg.Logger)
	}
	if l.s3Cert, err = load(cfg.TLSCert, cfg.TLSKey); err != nil {
		return l, err
	}
	if l.adminCert, err = load(cfg.AdminTLSCert, cfg.AdminTLSKey); err != nil {
		return l, err
	}
	if l.consoleCert, err = load(cfg.ConsoleTLSCert, cfg.ConsoleTLSKey); err != nil {
		return l, err
	}
	if l.s3, err = tlsreload.Listen(cfg.Address, l.s3Cert); err != nil {
		return l, fmt.Errorf("listen on %s: %w", cfg.Address, err)
	}
	if cfg.AdminAddress != "" {
		if l.admin, err = tlsreload.Listen(cfg.AdminAddress, l.adminCert); err != nil {
			return l, fmt.Errorf("admin listener on %s: %w", cfg.AdminAddress, err)
		}
	}
	if cfg.ConsoleAddress != "" {
		if l.console, err = tlsreload.Listen(cfg.ConsoleAddress, l.consoleCert); err != nil {
			return l, fmt.Errorf("console listener on %s: %w", cfg.ConsoleAddress, err)
		}
	}
	return l, nil
}

func (l *listeners) close() {
	for _, ln := range []net.Listener{l.s3, l.admin, l.console} {
		if ln != nil {
			ln.Close()
		}
	}
}

func (l *listeners) certs() []*tlsreload.Certificate {
	var out []*tlsreload.Certificate
	for _, c := range []*tlsreload.Certificate{l.s3Cert, l.adminCert, l.consoleCert} {
		if c != nil {
			out = append(out, c)
		}
	}
	return out
}

func (l *listeners) url(ln net.Listener, cert *tlsreload.Certificate) string {
	return tlsreload.Scheme(cert) + "://" + ln.Addr().String()
}

// LockFile under the data root is held (flock) by the server using it and
// holds its pid.
const LockFile = "b3.pid"

// lockDataDir takes the data root for this process: a second server on
// it fails at once, naming the pid of the first. The lock is the kernel's
// (flock), so it goes with the process however it ends; the pid in the
// file is only for the message.
func lockDataDir(root string) (unlock func(), err error) {
	path := filepath.Join(root, LockFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock data directory: %w", err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		defer f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			owner := "another process"
			if data, rerr := os.ReadFile(path); rerr == nil {
				if pid, perr := strconv.Atoi(strings.TrimSpace(string(data))); perr == nil {
					owner = "pid " + strconv.Itoa(pid)
				}
			}
			return nil, fmt.Errorf("data directory %s is in use by %s (another b3 server?)", abs(root), owner)
		}
		return nil, fmt.Errorf("lock data directory %s: %w", root, err)
	}
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return func() {
		_ = f.Truncate(0)
		_ = f.Close() // releases the lock
	}, nil
}
