package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/b3-storage/b3/internal/cluster"
	"github.com/b3-storage/b3/internal/server"
)

// runRouter runs `b3 router`: a stateless S3 front of a cluster.
func runRouter(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "key" {
		return routerKey(args[1:], os.LookupEnv, stdout, stderr)
	}
	cfg, code := parseRouter(args, os.LookupEnv, stderr)
	if code >= 0 {
		return code
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := cluster.RunRouter(ctx, cfg, stdout); err != nil {
		fmt.Fprintf(stderr, "b3 router: %v\n", err)
		return 1
	}
	return 0
}

// routerKey runs `b3 router key`: it prints the router key of the cluster
// secret (B3_CLUSTER_SECRET or --cluster-secret-file), which a router is
// given instead of the secret (B3_ROUTER_KEY or --router-key-file).
func routerKey(args []string, getenv func(string) (string, bool), stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("b3 router key", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: b3 router key [--cluster-secret-file FILE]\n\nPrints the router key of the cluster secret (default: B3_CLUSTER_SECRET): give it to b3 router\nas B3_ROUTER_KEY or --router-key-file, so that routers do not hold the secret.\n\nflags:")
		fs.PrintDefaults()
	}
	file := fs.String("cluster-secret-file", "", "file holding the cluster secret (default: B3_CLUSTER_SECRET)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	secret, err := clusterSecret(getenv, *file)
	if err == nil && secret == "" {
		err = errors.New("no cluster secret: B3_CLUSTER_SECRET or --cluster-secret-file")
	}
	var key string
	if err == nil {
		key, err = cluster.RouterKey(secret)
	}
	if err != nil {
		fmt.Fprintf(stderr, "b3 router key: %v\n", err)
		return 2
	}
	fmt.Fprintln(stdout, key)
	return 0
}

// routerShared are the settings b3 router takes from b3 server.
var routerShared = []string{"log-level", "log-format", "tls-cert", "tls-key", "domain", "admin-token", "drain-delay"}

func parseRouter(args []string, getenv func(string) (string, bool), stderr io.Writer) (cfg cluster.RouterConfig, code int) {
	fs := flag.NewFlagSet("b3 router", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: b3 router --address ADDR --cluster-seeds ADDR,... [--admin-address ADDR] [flags]\n       b3 router key [--cluster-secret-file FILE]")
		fmt.Fprintln(stderr, "\nA stateless S3 front of a b3 cluster: each request goes to the leader of the group that owns it.\nIt needs the router key (B3_ROUTER_KEY or --router-key-file), which b3 router key prints from\nthe cluster secret; a router given the secret itself (B3_CLUSTER_SECRET) is taken for a member.\n\nflags:")
		fs.PrintDefaults()
	}
	var seeds, secretFile, keyFile string
	fs.String("config", "", "YAML config file: keys are the flag names (B3_CONFIG)")
	fs.StringVar(&cfg.Address, "address", "127.0.0.1:8000", "S3 API listen address")
	fs.StringVar(&seeds, "cluster-seeds", "", "cluster addresses (host:port,...) of nodes of the cluster (required)")
	fs.StringVar(&cfg.AdminAddress, "admin-address", "", "admin listen address: health and b3 admin cluster status (needs --admin-token)")
	fs.StringVar(&keyFile, "router-key-file", "", "file holding the router key, the output of b3 router key (default: B3_ROUTER_KEY)")
	fs.StringVar(&secretFile, "cluster-secret-file", "", "file holding the cluster secret, instead of the router key: the nodes then take the router for a member (default: B3_CLUSTER_SECRET)")
	fs.StringVar(&cfg.ClusterTLSCert, "cluster-tls-cert", "", "the router's certificate (PEM) for mutual TLS with the nodes, with --cluster-tls-key and --cluster-tls-ca (as the nodes')")
	fs.StringVar(&cfg.ClusterTLSKey, "cluster-tls-key", "", "the key of --cluster-tls-cert (PEM)")
	fs.StringVar(&cfg.ClusterTLSCA, "cluster-tls-ca", "", "CA certificates (PEM) the nodes' certificates must chain to")
	shared := server.SharedFlags(fs, routerShared...)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return cfg, 0
		}
		return cfg, 2
	}
	fail := func(format string, a ...any) (cluster.RouterConfig, int) {
		fmt.Fprintf(stderr, "b3 router: "+format+"\n", a...)
		return cfg, 2
	}
	if err := server.LoadFlags(fs, getenv); err != nil {
		return fail("%v", err)
	}
	cfg.Seeds = splitList(seeds)
	if len(cfg.Seeds) == 0 {
		return fail("--cluster-seeds is required: the cluster address of at least one node of the cluster")
	}
	sc, out, err := shared()
	if err != nil {
		return fail("%v", err)
	}
	cfg.TLSCert, cfg.TLSKey, cfg.Domains, cfg.AdminToken, cfg.DrainDelay = sc.TLSCert, sc.TLSKey, sc.Domains, sc.AdminToken, sc.DrainDelay
	cfg.Logger = out.NewLogger(stderr).With("router", cfg.Address)
	for _, w := range out.Warnings {
		cfg.Logger.Warn(w)
	}
	if cfg.ClusterSecret, err = clusterSecret(getenv, secretFile); err != nil {
		return fail("%v", err)
	}
	if keyFile != "" {
		data, err := os.ReadFile(keyFile)
		if err != nil {
			return fail("--router-key-file: %v", err)
		}
		cfg.RouterKey = string(data)
	} else {
		cfg.RouterKey, _ = getenv("B3_ROUTER_KEY")
	}
	if cfg.RouterKey != "" && secretFile == "" {
		cfg.ClusterSecret = "" // B3_CLUSTER_SECRET beside a router key: the key
	}
	return cfg, -1
}
