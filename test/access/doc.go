// Package access tests b3's access control end to end: bucket policies,
// ACLs, ownership controls and Block Public Access, through the real
// aws-sdk-go-v2 and plain HTTP against `b3 server` processes started by
// testutil.StartServer, across restarts. The package has no non-test code.
package access
