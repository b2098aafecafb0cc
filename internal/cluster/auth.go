package cluster

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/b3-storage/b3/internal/server"
	"github.com/b3-storage/b3/internal/tlsreload"
)

// Authentication between nodes.
//
// Every connection to a node's --cluster-address, Raft's and HTTP alike,
// opens with a mutual challenge on the cluster secret, a key every member
// holds, before a byte of either protocol:
//
//	dialer   → listener  "b3c1" | nonce D (32 random bytes)
//	listener → dialer    nonce L (32 random bytes) | HMAC-SHA256(secret, "listener" | D | L)
//	dialer   → listener  HMAC-SHA256(secret, "dialer" | D | L) | protocol (raftMagic, protoHTTP or protoForward)
//
// A router opens with routerMagic instead and proves the router key, a
// key derived from the secret (RouterKey) that does not give the secret:
// the listener then serves it the forward side and, on the HTTP side,
// only what a router needs (routerHandler). Whoever holds a router's
// host can send S3 requests (which the leader authenticates) and change
// operators' map settings, but cannot move, copy, fence or switch
// partitions, propose users, or read or push object bytes.
//
// Each side proves it holds the secret over a nonce the other just chose,
// so a recorded exchange cannot be replayed, and the two proofs differ by
// role, so one cannot be reflected as the other. A listener closes a
// connection that fails (or does not finish within handshakeTimeout)
// without answering anything; a dialer drops a listener that fails. Then
// the connection carries the protocol: the secret keeps processes that
// lack it from joining the group, pushing or fetching bytes, or
// forwarding requests. It does not hide or protect the traffic on a
// network an attacker can read or alter; with --cluster-tls-* the whole
// exchange runs inside mutual TLS, which does (peertls.go).
const (
	authMagic = "b3c1"
	// routerMagic opens a router's handshake: the same exchange on the
	// router key (RouterKey) instead of the secret. A router's connection
	// carries forwarded S3 requests, and on the HTTP side only the map,
	// nodes' info and operators' map settings (routerHandler), never a
	// node-to-node endpoint that moves, copies or decides data.
	routerMagic = "b3r1"
	nonceSize   = 32
	protoHTTP   = 'H'
	// protoForward carries S3 requests a node forwards to the leader on
	// a client's behalf, and nothing else: its handler is the S3 API
	// alone (forward.go), so no client path can reach the node-to-node
	// endpoints that protoHTTP serves.
	protoForward     = 'F'
	handshakeTimeout = 10 * time.Second
	// MinSecretLen is the shortest cluster secret a node accepts, from
	// every source (B3_CLUSTER_SECRET, --cluster-secret-file, the copy
	// kept in the data directory: loadSecret). It matters because the
	// listener answers first: anyone who can connect gets
	// HMAC(secret, "listener" | D | L) over a nonce D of their choosing
	// before proving anything, which they can test guesses of the secret
	// against offline, at their leisure. Only the secret's entropy bounds
	// that; 16 characters is the floor, 32 random bytes (base64) the
	// advice (docs/CLUSTER.md).
	MinSecretLen = 16
	secretFile   = "cluster-secret"
)

var errAuth = errors.New("cluster: peer failed authentication (not the same cluster secret? or --cluster-tls-* on one node only?)")

func authMAC(secret []byte, role string, d, l []byte) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(role))
	m.Write(d)
	m.Write(l)
	return m.Sum(nil)
}

// DialPeer opens an authenticated connection to a node's cluster address
// for protocol proto (raftMagic, protoHTTP or protoForward): over mutual TLS with the
// key pair and CA bundle tlsID (peertls.go), or in the clear if tlsID is
// nil. Every connection a node opens to another goes through here.
func DialPeer(ctx context.Context, addr string, secret []byte, tlsID *tlsreload.Certificate, proto byte) (net.Conn, error) {
	return dialAs(ctx, addr, authMagic, secret, tlsID, proto)
}

func dialAs(ctx context.Context, addr, magic string, secret []byte, tlsID *tlsreload.Certificate, proto byte) (net.Conn, error) {
	c, err := (&net.Dialer{Timeout: 2 * time.Second, KeepAlive: 15 * time.Second}).DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	if tlsID != nil {
		_ = c.SetDeadline(time.Now().Add(handshakeTimeout))
		if c, err = dialTLS(ctx, c, tlsID, addr); err != nil {
			return nil, fmt.Errorf("dial %s: %w", addr, err)
		}
	}
	if err := handshakeAs(c, magic, secret, proto); err != nil {
		c.Close()
		return nil, fmt.Errorf("dial %s: %w", addr, err)
	}
	return c, nil
}

// RouterKey is the key a router proves instead of the cluster secret,
// derived from it: a router holding it can forward S3 requests and follow
// the map, but cannot act as a member (b3 router key prints it).
func RouterKey(secret string) (string, error) {
	s, err := loadSecret("", secret)
	if err != nil {
		return "", err
	}
	return string(routerKeyOf(s)), nil
}

// routerKeyOf is RouterKey of the loaded secret, as the handshake uses it.
func routerKeyOf(secret []byte) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte("b3 router key v1"))
	return []byte(base64.RawURLEncoding.EncodeToString(m.Sum(nil)))
}

// DialRouter is DialPeer for a router, proving the router key.
func DialRouter(ctx context.Context, addr string, key []byte, tlsID *tlsreload.Certificate, proto byte) (net.Conn, error) {
	return dialAs(ctx, addr, routerMagic, key, tlsID, proto)
}

func handshakeAs(c net.Conn, magic string, secret []byte, proto byte) error {
	_ = c.SetDeadline(time.Now().Add(handshakeTimeout))
	d := make([]byte, nonceSize)
	_, _ = rand.Read(d)
	if _, err := c.Write(append([]byte(magic), d...)); err != nil {
		return err
	}
	in := make([]byte, nonceSize+sha256.Size)
	if _, err := io.ReadFull(c, in); err != nil {
		if refusedCertificate(err) {
			return fmt.Errorf("the peer refused this node's TLS certificate (not issued by a CA of its --cluster-tls-ca?): %w", err)
		}
		return fmt.Errorf("%w: %v", errAuth, err)
	}
	l, mac := in[:nonceSize], in[nonceSize:]
	if !hmac.Equal(mac, authMAC(secret, "listener", d, l)) {
		return errAuth
	}
	if _, err := c.Write(append(authMAC(secret, "dialer", d, l), proto)); err != nil {
		return err
	}
	return c.SetDeadline(time.Time{})
}

// serverHandshake authenticates a dialer, a member (the secret) or a
// router (routerKey), and returns the protocol it asked for.
func serverHandshake(c net.Conn, r io.Reader, secret, routerKey []byte) (proto byte, router bool, err error) {
	_ = c.SetDeadline(time.Now().Add(handshakeTimeout))
	in := make([]byte, len(authMagic)+nonceSize)
	if _, err := io.ReadFull(r, in); err != nil {
		return 0, false, err
	}
	switch string(in[:len(authMagic)]) {
	case authMagic:
	case routerMagic:
		router, secret = true, routerKey
	default:
		return 0, false, errAuth
	}
	d := in[len(authMagic):]
	l := make([]byte, nonceSize)
	_, _ = rand.Read(l)
	if _, err := c.Write(append(l, authMAC(secret, "listener", d, l)...)); err != nil {
		return 0, false, err
	}
	proof := make([]byte, sha256.Size+1)
	if _, err := io.ReadFull(r, proof); err != nil {
		return 0, false, err
	}
	if !hmac.Equal(proof[:sha256.Size], authMAC(secret, "dialer", d, l)) {
		return 0, false, errAuth
	}
	return proof[sha256.Size], router, c.SetDeadline(time.Time{})
}

// loadSecret returns the cluster secret: the one given (B3_CLUSTER_SECRET
// or --cluster-secret-file), else the one a previous start kept in the
// data directory.
func loadSecret(root, given string) ([]byte, error) {
	given = strings.TrimSpace(given)
	if given == "" {
		data, err := os.ReadFile(filepath.Join(root, secretFile))
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return nil, errors.New("no cluster secret: give every node the same one, of at least 16 characters, in B3_CLUSTER_SECRET or --cluster-secret-file (docs/CLUSTER.md)")
		case err != nil:
			return nil, err
		}
		given = strings.TrimSpace(string(data))
	}
	if len(given) < MinSecretLen {
		return nil, fmt.Errorf("the cluster secret has %d characters, want at least %d", len(given), MinSecretLen)
	}
	return []byte(given), nil
}

// keepSecret stores the secret in the data directory (readable by this
// user only), so that a restart needs it no more.
func keepSecret(root string, secret []byte) error {
	path := filepath.Join(root, secretFile)
	if have, err := os.ReadFile(path); err == nil && strings.TrimSpace(string(have)) == string(secret) {
		return nil
	}
	return server.WriteFileSync(path, append(append([]byte(nil), secret...), '\n'), 0o600)
}
