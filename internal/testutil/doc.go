// Package testutil starts real b3 processes for end-to-end tests: the b3
// binary is built once per test process (Binary), a Process is one running
// command whose output is kept for the failure message, and a Cluster is
// a replica group of `b3 node` processes on 127.0.0.1 with free ports,
// with a kill switch (SIGKILL) and a restart per node.
//
// Every process a test starts is stopped by t.Cleanup, also when the test
// fails or panics; a process still running after its graceful stop is
// killed. Nothing here mocks b3: tests talk to the processes over TCP.
package testutil
