package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/b3-storage/b3/internal/blob"
	"github.com/b3-storage/b3/internal/server"
)

// runServer is "b3 server": flags (each also from B3_<NAME>), then
// server.Run until SIGINT or SIGTERM.
func runServer(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("server", flag.ContinueOnError)
	fs.SetOutput(stderr)
	env := func(name, def string) string {
		if v, ok := os.LookupEnv("B3_" + name); ok {
			return v
		}
		return def
	}
	var (
		address   = fs.String("address", env("ADDRESS", "127.0.0.1:9000"), "listen address (B3_ADDRESS)")
		root      = fs.String("data", env("DATA", "data"), "data root: meta/, segments/ and credentials.json (B3_DATA)")
		metaDir   = fs.String("meta-dir", env("META_DIR", ""), "metadata directory, SSD (B3_META_DIR; default <data>/meta)")
		dataDir   = fs.String("data-dir", env("DATA_DIR", ""), "segment directory, HDD is fine (B3_DATA_DIR; default <data>/segments)")
		accessKey = fs.String("access-key", env("ACCESS_KEY", ""), "root access key (B3_ACCESS_KEY; default: generated on first start)")
		secretKey = fs.String("secret-key", env("SECRET_KEY", ""), "root secret key (B3_SECRET_KEY)")
		region    = fs.String("region", env("REGION", "us-east-1"), "region (B3_REGION)")
		domain    = fs.String("domain", env("DOMAIN", ""), "base domain(s) for virtual-host-style requests, comma separated (B3_DOMAIN)")
		fsync     = fs.String("fsync", env("FSYNC", "batch"), "durability: batch (group commit), always, none (B3_FSYNC)")
		logLevel  = fs.String("log-level", env("LOG_LEVEL", "info"), "debug, info, warn, error (B3_LOG_LEVEL)")
	)
	directIO := true
	if v, ok := os.LookupEnv("B3_DIRECT_IO"); ok {
		b, err := strconv.ParseBool(v)
		if err != nil {
			fmt.Fprintf(stderr, "b3 server: B3_DIRECT_IO=%q: %v\n", v, err)
			return 2
		}
		directIO = b
	}
	fs.BoolVar(&directIO, "direct-io", directIO, "read segments with O_DIRECT (B3_DIRECT_IO)")
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "b3 server: unexpected arguments %q\n", fs.Args())
		return 2
	}
	sync, err := blob.ParseSyncPolicy(*fsync)
	if err != nil {
		fmt.Fprintf(stderr, "b3 server: --fsync: %v\n", err)
		return 2
	}
	users, err := server.ParseUsers(os.Getenv("B3_USERS"))
	if err != nil {
		fmt.Fprintf(stderr, "b3 server: B3_USERS: %v\n", err)
		return 2
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		fmt.Fprintf(stderr, "b3 server: --log-level: %v\n", err)
		return 2
	}
	var domains []string
	for d := range strings.SplitSeq(*domain, ",") {
		if d = strings.TrimSpace(d); d != "" {
			domains = append(domains, strings.ToLower(d))
		}
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err = server.Run(ctx, server.Config{
		Address: *address, Root: *root, MetaDir: *metaDir, DataDir: *dataDir,
		AccessKey: *accessKey, SecretKey: *secretKey, Users: users,
		Region: *region, Domains: domains, Sync: sync, DirectIO: directIO,
		Logger: slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level})),
	}, stdout)
	if err != nil {
		fmt.Fprintf(stderr, "b3 server: %v\n", err)
		return 1
	}
	return 0
}
