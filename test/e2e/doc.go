// Package e2e tests b3 end to end: it builds the b3 binary, starts a real
// `b3 server` process on a loopback port with its own data directory, and
// drives it with unmodified real clients — the aws CLI, boto3, s3cmd,
// rclone and curl as separate processes, aws-sdk-go-v2 and minio-go in
// process — plus raw HTTP for inputs no well-behaved client sends.
//
// The package has no non-test code. The tools come from
// scripts/install-test-tools.sh (`make tools`, run first by `make test`);
// a missing tool fails the test with a message naming the script, it is
// never skipped.
//
// Isolation: the test process unsets AWS_CA_BUNDLE and every other AWS_*
// variable, sets the credentials and region the server was started with,
// points HOME and every client's configuration file at a temporary
// directory, and bypasses proxies for the loopback address, so nothing on
// the machine leaks into a client and no test touches anything but its own
// server.
//
// Data: a 100 MiB file of pseudo-random bytes is generated once per run and
// shared; each client works in its own bucket, so the client tests can run
// in parallel.
package e2e
