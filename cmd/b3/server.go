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

	"github.com/b3-storage/b3/internal/server"
)

// runServer is "b3 server": settings from flags, B3_* variables and an
// optional YAML file (server.LoadSettings), then server.Run until SIGINT
// or SIGTERM. SIGUSR1 starts a vacuum pass.
func runServer(args []string, stdout, stderr io.Writer) int {
	cfg, out, err := server.LoadSettings(args, os.LookupEnv, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "b3 server: %v\n", err)
		return 2
	}
	cfg.Logger = out.NewLogger(stderr)
	for _, w := range out.Warnings {
		cfg.Logger.Warn(w)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := server.Run(ctx, cfg, stdout); err != nil {
		fmt.Fprintf(stderr, "b3 server: %v\n", err)
		return 1
	}
	return 0
}
