package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/signal"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/b3-storage/b3/internal/bench"
	"github.com/b3-storage/b3/internal/mount"
)

const mountUsage = `usage: b3 mount [flags] BUCKET[/PREFIX] MOUNTPOINT

Mounts a bucket (or the keys under PREFIX) on MOUNTPOINT with FUSE and
serves it in the foreground until SIGINT or SIGTERM, then unmounts.
Semantics: docs/MOUNT.md.

flags:
`

func runMount(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("b3 mount", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, mountUsage); fs.PrintDefaults() }
	var conn bench.S3Options
	conn.RegisterConnFlags(fs)
	fs.IntVar(&conn.Retries, "retries", 3, "SDK retries per request")
	cfg := mount.Config{}
	fs.BoolVar(&cfg.ReadOnly, "read-only", false, "mount read-only")
	fs.BoolVar(&cfg.AllowOther, "allow-other", false, "let other users access the mount (the kernel then checks --uid/--gid/--*-mode)")
	uid := fs.Uint("uid", uint(os.Getuid()), "owner of every file and directory")
	gid := fs.Uint("gid", uint(os.Getgid()), "group of every file and directory")
	fileMode := fs.String("file-mode", "0644", "permission bits of files (octal)")
	dirMode := fs.String("dir-mode", "0755", "permission bits of directories (octal)")
	fs.DurationVar(&cfg.MetadataTTL, "metadata-ttl", defaultTTL, "how long names, attributes and listings are trusted before asking the server again (0: always ask)")
	fs.DurationVar(&cfg.NegativeTTL, "negative-ttl", defaultTTL, "how long the kernel trusts that a name does not exist")
	fs.IntVar(&cfg.DirCacheSize, "dir-cache-size", 4096, "directory listings kept in memory at most")
	partSize := fs.String("part-size", "8MiB", "multipart part size of uploads; smaller files are one PUT")
	fs.IntVar(&cfg.UploadConcurrency, "upload-concurrency", 4, "parts in flight per file being written")
	writeMem := fs.String("write-memory", "128MiB", "upload buffers of all files together")
	readPart := fs.String("read-part-size", "8MiB", "size of one ranged GET of read-ahead")
	readAhead := fs.String("read-ahead", "32MiB", "largest read-ahead window of one open file")
	readMem := fs.String("read-memory", "128MiB", "read-ahead buffers of all files together")
	smallFile := fs.String("small-file", "1MiB", "objects up to this size are read with one GET")
	fs.BoolVar(&cfg.DirectIO, "direct-io", true, "bypass the kernel page cache: reads and writes reach the mount at the application's size (up to 1 MiB) instead of 128 KiB read-ahead requests")
	fs.BoolVar(&cfg.SDKRequests, "sdk-requests", false, "send every request through the AWS SDK's middleware (default: GetObject, PutObject and UploadPart go as plain HTTP requests, signed and retried as the SDK would)")
	fs.BoolVar(&cfg.Debug, "debug", false, "log every FUSE request")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the mount to this file until it is unmounted")
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return 0
		}
		return 2
	}
	if fs.NArg() != 2 {
		fmt.Fprintln(stderr, "b3 mount: want BUCKET[/PREFIX] and MOUNTPOINT")
		fs.Usage()
		return 2
	}
	err := func() error {
		cfg.UID, cfg.GID = uint32(*uid), uint32(*gid)
		cfg.SignPayload = conn.SignPayload
		var err error
		if cfg.FileMode, err = parseMode(*fileMode); err != nil {
			return fmt.Errorf("--file-mode: %w", err)
		}
		if cfg.DirMode, err = parseMode(*dirMode); err != nil {
			return fmt.Errorf("--dir-mode: %w", err)
		}
		sizes := []struct {
			name  string
			value string
			into  *int
		}{{"part-size", *partSize, &cfg.PartSize}, {"read-part-size", *readPart, &cfg.ReadPartSize},
			{"read-ahead", *readAhead, &cfg.ReadAhead}, {"small-file", *smallFile, &cfg.SmallFile}}
		for _, s := range sizes {
			n, err := bench.ParseSize(s.value)
			if err != nil {
				return fmt.Errorf("--%s: %w", s.name, err)
			}
			*s.into = int(n)
		}
		wm, err := bench.ParseSize(*writeMem)
		if err != nil {
			return fmt.Errorf("--write-memory: %w", err)
		}
		rm, err := bench.ParseSize(*readMem)
		if err != nil {
			return fmt.Errorf("--read-memory: %w", err)
		}
		if cfg.PartSize > 0 && cfg.ReadPartSize > 0 {
			cfg.WriteBuffers = max(1, int(wm/int64(cfg.PartSize)))
			cfg.ReadBuffers = max(1, int(rm/int64(cfg.ReadPartSize)))
		}
		cfg.Bucket, cfg.Prefix, _ = strings.Cut(fs.Arg(0), "/")
		if cfg.Prefix != "" && !strings.HasSuffix(cfg.Prefix, "/") {
			cfg.Prefix += "/"
		}
		cfg.Log = log.New(stderr, "b3 mount: ", log.LstdFlags)
		conn.MaxConns = max(64, 2*(cfg.WriteBuffers+cfg.ReadBuffers))
		if *cpuProfile != "" {
			f, err := os.Create(*cpuProfile)
			if err != nil {
				return err
			}
			defer f.Close()
			if err := pprof.StartCPUProfile(f); err != nil {
				return err
			}
			defer pprof.StopCPUProfile()
		}
		return serveMount(conn, cfg, fs.Arg(1), stdout)
	}()
	if err != nil {
		fmt.Fprintf(stderr, "b3 mount: %v\n", err)
		return 1
	}
	return 0
}

const defaultTTL = 5 * time.Second

func parseMode(s string) (uint32, error) {
	m, err := strconv.ParseUint(s, 8, 32)
	if err != nil || m > 0o7777 {
		return 0, errors.New("want octal permission bits such as 0644")
	}
	return uint32(m), nil
}

// serveMount mounts, then serves until SIGINT/SIGTERM or an external
// unmount (fusermount3 -u), and unmounts.
func serveMount(conn bench.S3Options, cfg mount.Config, dir string, stdout io.Writer) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	client, err := bench.NewS3Client(ctx, conn)
	if err != nil {
		return err
	}
	mt, err := mount.Mount(ctx, client, dir, cfg)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "b3 mount: %s/%s mounted on %s (requests up to %d KiB)\n", cfg.Bucket, cfg.Prefix, dir, mount.MaxRequest()>>10)
	unmounted := make(chan struct{})
	go func() { mt.Wait(); close(unmounted) }()
	select {
	case <-unmounted:
		return nil
	case <-ctx.Done():
	}
	abandoned, err := mt.Unmount(dir)
	if abandoned > 0 {
		cfg.Log.Printf("%d files were still being written; their uploads were aborted", abandoned)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "b3 mount: unmounted %s\n", dir)
	return nil
}
