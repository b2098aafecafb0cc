package policy

import "fmt"

// ACL permissions, as S3 names them.
const (
	PermRead        = "READ"
	PermWrite       = "WRITE"
	PermReadACP     = "READ_ACP"
	PermWriteACP    = "WRITE_ACP"
	PermFullControl = "FULL_CONTROL"
)

// The predefined groups a grant may name.
const (
	AllUsers           = "http://acs.amazonaws.com/groups/global/AllUsers"
	AuthenticatedUsers = "http://acs.amazonaws.com/groups/global/AuthenticatedUsers"
	LogDelivery        = "http://acs.amazonaws.com/groups/s3/LogDelivery"
)

// Grant gives Permission to Grantee: a canonical user id or a group URI.
type Grant struct {
	Grantee    string
	Permission string
}

// IsGroup reports whether the grantee is a group URI.
func (g Grant) IsGroup() bool {
	return g.Grantee == AllUsers || g.Grantee == AuthenticatedUsers || g.Grantee == LogDelivery
}

// Public reports whether the grant opens access beyond named users: to
// everyone or to every authenticated user, as S3's Block Public Access
// counts it.
func (g Grant) Public() bool {
	return g.Grantee == AllUsers || g.Grantee == AuthenticatedUsers
}

// ValidPermission reports whether p is an ACL permission.
func ValidPermission(p string) bool {
	switch p {
	case PermRead, PermWrite, PermReadACP, PermWriteACP, PermFullControl:
		return true
	}
	return false
}

// CannedACLs are the canned ACL names S3 accepts in x-amz-acl.
var CannedACLs = []string{
	"private", "public-read", "public-read-write", "aws-exec-read",
	"authenticated-read", "bucket-owner-read", "bucket-owner-full-control",
	"log-delivery-write",
}

// Canned expands a canned ACL into grants, given the canonical ids of the
// resource's owner and of its bucket's owner (for a bucket, the same).
// aws-exec-read's grant to Amazon EC2 names no b3 user and is left out.
func Canned(name, owner, bucketOwner string) ([]Grant, error) {
	grants := []Grant{{owner, PermFullControl}}
	switch name {
	case "", "private", "aws-exec-read":
	case "public-read":
		grants = append(grants, Grant{AllUsers, PermRead})
	case "public-read-write":
		grants = append(grants, Grant{AllUsers, PermRead}, Grant{AllUsers, PermWrite})
	case "authenticated-read":
		grants = append(grants, Grant{AuthenticatedUsers, PermRead})
	case "bucket-owner-read":
		if bucketOwner != owner {
			grants = append(grants, Grant{bucketOwner, PermRead})
		}
	case "bucket-owner-full-control":
		if bucketOwner != owner {
			grants = append(grants, Grant{bucketOwner, PermFullControl})
		}
	case "log-delivery-write":
		grants = append(grants, Grant{LogDelivery, PermWrite}, Grant{LogDelivery, PermReadACP})
	default:
		return nil, fmt.Errorf("unknown canned ACL %q", name)
	}
	return grants, nil
}

// Grants reports whether grants give who the permission perm (directly or
// through FULL_CONTROL). With ignorePublic (Block Public Access's
// IgnorePublicAcls) grants to AllUsers and AuthenticatedUsers count for
// nothing.
func Grants(grants []Grant, who Principal, perm string, ignorePublic bool) bool {
	for _, g := range grants {
		if g.Permission != perm && g.Permission != PermFullControl {
			continue
		}
		if ignorePublic && g.Public() {
			continue
		}
		switch g.Grantee {
		case AllUsers:
			return true
		case AuthenticatedUsers:
			if !who.Anonymous() {
				return true
			}
		default:
			if !who.Anonymous() && g.Grantee == who.CanonicalID {
				return true
			}
		}
	}
	return false
}

// AnyPublic reports whether any grant is public (Grant.Public).
func AnyPublic(grants []Grant) bool {
	for _, g := range grants {
		if g.Public() {
			return true
		}
	}
	return false
}
