// Package admin is b3's operator interface: an HTTP API on its own
// listener (127.0.0.1:9001 by default), Prometheus metrics, health checks
// and pprof, and the client the `b3 admin` command uses.
//
// # Endpoints
//
//	GET  /health/live            200 while the process serves          (open)
//	GET  /health/ready           200 while it accepts S3 requests      (open)
//	GET  /metrics                Prometheus text format                (open)
//	GET  /debug/pprof/...        Go profiles                           (token)
//	GET  /admin/v1/stats         segments, vacuum, lifecycle, cache, I/O (token)
//	     ?objects=1              also count objects and bytes (a full metadata scan)
//	GET  /admin/v1/users         list access keys                      (token)
//	POST /admin/v1/users         {"name": ...} -> new key and secret   (token)
//	DELETE /admin/v1/users/{ak}  remove an access key; one owning buckets (token)
//	     ?new_owner=<ak>         hands them over first, ?force=1 leaves them (to root)
//	GET  /admin/v1/buckets       every bucket: owner, objects, bytes   (token)
//	PUT  /admin/v1/buckets/{b}/owner  {"owner": ak} give it away       (token)
//	DELETE /admin/v1/buckets/{b} delete; ?force=1 empties it first     (token)
//	GET  /admin/v1/settings      runtime settings: value, configured, overridden (token)
//	DELETE /admin/v1/settings/overrides  back to the configuration     (token)
//	GET  /admin/v1/vacuum        vacuum status                         (token)
//	POST /admin/v1/vacuum/start  {"threshold": 0.3} one pass now       (token)
//	POST /admin/v1/vacuum/stop   cancel the pass, stop the auto loop   (token)
//	POST /admin/v1/vacuum/auto   {"interval": "5m"} (re)start the loop (token)
//	GET  /admin/v1/limits        I/O limits in force                   (token)
//	PUT  /admin/v1/limits        replace them (takes effect at once)   (token)
//	GET  /admin/v1/cache         cache statistics                      (token)
//	PUT  /admin/v1/cache         {"max_bytes": N} resize (0: off)      (token)
//	POST /admin/v1/lifecycle/run one lifecycle pass now                (token)
//
// "token" endpoints want "Authorization: Bearer <admin token>"; the token
// is compared in constant time. Health and metrics are open so that load
// balancers and Prometheus need no secret: bind the listener to a private
// address. Errors are JSON {"error": "..."} with a 4xx/5xx status.
//
// Every change (users, buckets, limits, vacuum, cache, lifecycle runs, settings)
// logs one "audit" line naming the action, the actor the client declares
// (ActorHeader) and its address. Limits, vacuum auto/stop and the cache size are saved
// through Config.Overrides before they are answered, so they outlive a
// restart.
//
// The web console (package console, --console-address) calls this API in
// process for its operations pages; it has no page here.
package admin
