// Package tlsreload serves TLS with a certificate that is replaced while
// the server runs: a renewal (Let's Encrypt-style, where a tool rewrites
// the certificate and key files every few weeks) needs no restart and
// drops no connection.
//
// A Certificate holds the key pair loaded last from its two PEM files.
// Reload reads both files again; Watch does so on SIGHUP (the caller
// forwards the signal) and whenever either file's size or modification
// time changes (polled). The pair is only swapped once both files parse
// and match each other: a renewal caught half-written (the new
// certificate, the old key) keeps the old pair in use and is retried at
// the next poll.
//
// The certificate is chosen per handshake (tls.Config.GetCertificate), so
// connections already open keep the session they negotiated and carry on
// undisturbed; only new handshakes present the new certificate.
//
// LoadMutual adds, for mutual TLS (b3 node's cluster port, where one key
// pair both serves and dials), the bundle of CA certificates a peer's
// certificate must chain to (Pool): it is reloaded with the pair, and
// the pair is only put in use if its own certificate chains to the
// bundle, for both server and client authentication (so a node never
// presents a certificate its peers, holding the same bundle, refuse).
//
// Listen wraps a listener of any role (S3, admin, console) the same way,
// offering HTTP/1.1 only over TLS 1.2 and later.
package tlsreload
