package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/b3-storage/b3/internal/cluster"
)

// runNodeCerts is "b3 node certs": a CA and per-node key pairs for
// --cluster-tls-* (docs/CLUSTER.md, "Encryption between nodes").
func runNodeCerts(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("b3 node certs", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("out", "", "directory of the CA (ca.pem, ca-key.pem; created unless there) and the nodes' files (ID.pem, ID-key.pem) (required)")
	nodes := fs.String("nodes", "", "the nodes: id=host[+host...],... or a --peers list; a host is what the other nodes dial (required)")
	days := fs.Int("days", 365, "validity of the node certificates, in days")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: b3 node certs --out DIR --nodes n1=10.0.0.1,n2=node2.example,... [--days 365]")
		fmt.Fprintln(stderr, "\nIssues a certificate and key per node, signed by the CA in DIR (made first if DIR has none),\nfor --cluster-tls-cert, --cluster-tls-key and --cluster-tls-ca (DIR/ca.pem). Run it again\nwith the same DIR to renew a node's pair or to add a node. Flags:")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if *out == "" || *nodes == "" || fs.NArg() > 0 || *days <= 0 {
		fs.Usage()
		return 2
	}
	list, err := cluster.ParseCertNodes(*nodes)
	if err != nil {
		fmt.Fprintf(stderr, "b3 node certs: --nodes: %v\n", err)
		return 2
	}
	files, err := cluster.WriteCerts(*out, list, time.Duration(*days)*24*time.Hour)
	if err != nil {
		fmt.Fprintf(stderr, "b3 node certs: %v\n", err)
		return 1
	}
	for _, f := range files {
		fmt.Fprintln(stdout, f)
	}
	return 0
}
