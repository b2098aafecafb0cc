// Package server runs b3 as a single node: it opens the object store on
// local disks, loads (or creates, on first start) the credentials, and
// serves the S3 API over HTTP until its context ends, then shuts down
// gracefully: in-flight requests finish, then the store closes.
//
// # Files under the data root (default ./data)
//
//	meta/              pebble metadata (--meta-dir; put it on SSD)
//	segments/          append-only segment files (--data-dir; HDD is fine)
//	credentials.json   the generated root user, mode 0600
//	users.json         users added through the admin API, mode 0600
//	admin-token        the generated admin API token, mode 0600
//	overrides.json     settings changed through the admin API, mode 0600
//	b3.pid             pid of the server using the root (flock-ed), mode 0600
//
// Besides the S3 listener, Run serves the admin API, /metrics, health and
// pprof on Config.AdminAddress (package admin), runs automatic vacuum and
// the lifecycle sweeper, and starts a vacuum pass on SIGUSR1. Either
// listener may be HTTPS (package tlsreload; SIGHUP reloads the key
// pairs). Settings (flags, B3_* variables, YAML file) are resolved and
// range-checked by LoadSettings, which names the source of a bad value.
// The root user is an administrator (s3api.User.Admin).
//
// Credentials given as flags (or B3_ACCESS_KEY/B3_SECRET_KEY) take the
// place of the generated ones and are not written to disk.
package server
