// Command b3 is the b3 object store: one binary, several roles.
//
//	b3 server   single node: S3 API + storage on local disks
//	b3 node     cluster member: a replica group on Raft (docs/CLUSTER.md)
//	b3 bench    load generator for any S3 endpoint
//	b3 mount    a bucket as a FUSE file system (docs/MOUNT.md)
//	b3 admin    stats, users, buckets, vacuum, limits, settings of a running server
//	b3 healthcheck  exit 0 if a server is ready (container HEALTHCHECK)
//	b3 version  build version, VCS revision, Go version
//
// main does flag parsing and wiring only; everything else lives under
// internal/.
package main

import (
	"fmt"
	"io"
	"os"
)

type command struct {
	name, summary string
	run           func(args []string, stdout, stderr io.Writer) int
}

func commands() []command {
	return []command{
		{"admin", "operate a running server: stats, users, buckets, vacuum, limits, settings", runAdmin},
		{"bench", "load generator: peak, mixed, hls, disk, kv, compare", runBench},
		{"healthcheck", "exit 0 if the server at --url is ready (for a container HEALTHCHECK)", runHealthcheck},
		{"mount", "a bucket as a file system (FUSE), for sequential writers and readers", runMount},
		{"node", "cluster member: S3 API + storage, replicated with Raft", runNode},
		{"router", "stateless S3 front of a cluster of several groups", runRouter},
		{"server", "S3 API on local disks", runServer},
		{"version", "print the build: version, VCS revision, Go version", runVersion},
	}
}

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stderr)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	for _, c := range commands() {
		if c.name == args[0] {
			return c.run(args[1:], stdout, stderr)
		}
	}
	fmt.Fprintf(stderr, "b3: unknown command %q\n\n", args[0])
	usage(stderr)
	return 2
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: b3 <command> [flags]\n\ncommands:")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-11s %s\n", c.name, c.summary)
	}
}
