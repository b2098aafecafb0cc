package cluster

import (
	"crypto/hmac"
	"crypto/sha256"

	"github.com/b3-storage/b3/internal/meta"
	"github.com/b3-storage/b3/internal/objstore"
	"github.com/b3-storage/b3/internal/s3api"
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

// clientVersionID is the id S3 clients see of version (the admin API's
// reports name versions so that an operator finds them in a listing).
func (n *Node) clientVersionID(version uint64) string {
	return s3api.ClientVersionID(VersionKey(n.secret), objstore.VersionID(&meta.Object{Versioned: true, Version: version}))
}
