package cluster

import (
	"crypto/hmac"
	"crypto/sha256"
)

// VersionKey is the key of the version ids clients see (s3api's
// versionids.go), derived from the cluster secret: every member has it,
// a member that joins later too, and it needs no replicated state, so a
// version's id is the same through every node, across restarts,
// snapshots and failovers. Changing the cluster secret changes every
// version id clients see (the versions stay): clients list them again.
// The handshake's HMACs (auth.go) are over messages that begin
// "listener" or "dialer", never this one.
func VersionKey(secret []byte) []byte {
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte("b3 version-id key"))
	return mac.Sum(nil)
}
