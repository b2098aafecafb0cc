// Package mount tests `b3 mount` end to end: real FUSE mounts (fuse3,
// installed by scripts/install-test-tools.sh) of a real `b3 server`,
// driven by real tools (cp, dd, cat, ls, mkdir, rm, mv) and system calls,
// with the bucket checked through the S3 API. Each test states which line
// of docs/MOUNT.md it holds to.
//
// B3_MOUNT_LONG=1 runs the long variants (a 1 GiB file instead of 48 MiB).
package mount
