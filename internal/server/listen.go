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

// Listeners are a server's (or node's) bound sockets and their TLS key
// pairs (nil: plain HTTP). Admin and Console are nil when not asked for.
type Listeners struct {
	S3, Admin, Console             net.Listener
	S3Cert, AdminCert, ConsoleCert *tlsreload.Certificate
}

// Listen loads the key pairs (cfg's TLS settings) and binds every
// listener (cfg.Address, AdminAddress, ConsoleAddress), or none. b3
// server and b3 node both bind theirs here.
func Listen(cfg Config) (l *Listeners, err error) {
	l = &Listeners{}
	defer func() {
		if err != nil {
			l.Close()
		}
	}()
	load := func(cert, key string) (*tlsreload.Certificate, error) {
		if cert == "" && key == "" {
			return nil, nil
		}
		return tlsreload.Load(cert, key, cfg.Logger)
	}
	if l.S3Cert, err = load(cfg.TLSCert, cfg.TLSKey); err != nil {
		return l, err
	}
	if l.AdminCert, err = load(cfg.AdminTLSCert, cfg.AdminTLSKey); err != nil {
		return l, err
	}
	if l.ConsoleCert, err = load(cfg.ConsoleTLSCert, cfg.ConsoleTLSKey); err != nil {
		return l, err
	}
	if l.S3, err = tlsreload.Listen(cfg.Address, l.S3Cert); err != nil {
		return l, fmt.Errorf("listen on %s: %w", cfg.Address, err)
	}
	if cfg.AdminAddress != "" {
		if l.Admin, err = tlsreload.Listen(cfg.AdminAddress, l.AdminCert); err != nil {
			return l, fmt.Errorf("admin listener on %s: %w", cfg.AdminAddress, err)
		}
	}
	if cfg.ConsoleAddress != "" {
		if l.Console, err = tlsreload.Listen(cfg.ConsoleAddress, l.ConsoleCert); err != nil {
			return l, fmt.Errorf("console listener on %s: %w", cfg.ConsoleAddress, err)
		}
	}
	return l, nil
}

// Close closes every listener.
func (l *Listeners) Close() {
	for _, ln := range []net.Listener{l.S3, l.Admin, l.Console} {
		if ln != nil {
			ln.Close()
		}
	}
}

// Certs are the key pairs in use.
func (l *Listeners) Certs() []*tlsreload.Certificate {
	var out []*tlsreload.Certificate
	for _, c := range []*tlsreload.Certificate{l.S3Cert, l.AdminCert, l.ConsoleCert} {
		if c != nil {
			out = append(out, c)
		}
	}
	return out
}

// URL is ln's base URL, https with a key pair.
func (l *Listeners) URL(ln net.Listener, cert *tlsreload.Certificate) string {
	return tlsreload.Scheme(cert) + "://" + ln.Addr().String()
}

// LockFile under the data root is held (flock) by the server or node
// using it and holds its pid.
const LockFile = "b3.pid"

// LockDataDir takes the data root for this process: a second server or
// node on it fails at once, naming the pid of the first. The lock is the kernel's
// (flock), so it goes with the process however it ends; the pid in the
// file is only for the message.
func LockDataDir(root string) (unlock func(), err error) {
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
			return nil, fmt.Errorf("data directory %s is in use by %s (another b3 server or node?)", abs(root), owner)
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
