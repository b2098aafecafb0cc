// Package bench is `b3 bench`: a load generator for any S3 endpoint and for
// raw disks, and the reports it writes.
//
// Modes (Main dispatches on the first argument):
//
//	peak     closed loop: for each object size and concurrency, workers
//	         upload unique keys back to back, then download keys uploaded
//	         in an unmeasured prepare phase. Per cell: ops/s, MB/s,
//	         latency percentiles, errors by type. Charts: ops/s for objects
//	         under 1 MiB, MB/s for larger ones. With no flags it is a
//	         first look of about a minute (4KiB, 256KiB, 4MiB at
//	         concurrency 1, 8, 32, 3 s a cell); with --cleanup (the
//	         default) it deletes what it uploaded, and the bucket if the
//	         run created it.
//	mixed    open loop (OpenLoop): uploads and downloads at fixed rates,
//	         held for a duration at each multiple of a baseline; per-second
//	         series; each multiple judged sustained or saturated
//	         (SaturationRule). --at-hold runs a command as a chosen
//	         hold starts (a vacuum pass, say) to measure its cost.
//	hls      live cameras (hls.go): each uploads a segment every --segment
//	         at --bitrate, rewrites its playlist, deletes segments past
//	         --retention; viewers read playlists and newest segments. Per
//	         camera count: segment upload latency from the due instant
//	         (overall and per camera), missed deadlines, playlist
//	         staleness, errors; per-second series; held or not held.
//	         Its requests go through HTTPTarget (plain net/http, SigV4
//	         UNSIGNED-PAYLOAD, segments by sendfile from an in-memory copy
//	         of the pool) unless --client sdk: the generator shares the
//	         cores with the server it measures.
//	disk     write() latency and MB/s of a directory by buffer size,
//	         buffered and O_DIRECT, with and without fdatasync.
//	kv       YCSB-style tiny records: load, then read/update mixes.
//	compare  JSON reports side by side with ratios.
//
// What the numbers mean, and guarantees:
//
//   - Latency is per operation, recorded in an HdrHistogram (1 ns .. 1 h,
//     3 significant digits); percentiles are of successful operations only,
//     failures are counted by type (S3 error code, HTTP status, transport
//     category). MB/s is 10^6 bytes per second of successful operations
//     over the cell's wall time. In the mixed test the rates count what
//     completed within the hold: requests a saturated server finishes
//     during the drain count in ops and latency, and the cell's note says
//     how many there were, but not in ops/s or MB/s (else a server that
//     finishes its backlog late would show the offered rate).
//
//   - In the mixed test latency counts from each request's scheduled start,
//     so a stalled server or a late client cannot hide queueing (no
//     coordinated omission). The schedule is computed, not paced by
//     completions, and the clock is an interface so tests prove it.
//
//   - Every run is bounded: cells by duration and/or count, the mixed test
//     by hold time plus a drain deadline, disk cells by bytes and time.
//
//   - Ctrl-C cancels the run's context: operations in flight return,
//     counted as "canceled" (not as server errors), and the partial report
//     is still printed and written, marked interrupted.
//
//   - Payloads come from one random ring (Pool) cut at key-dependent
//     offsets: no per-request generation or buffer allocation, and a
//     download can be verified from its key alone (--verify).
//
//   - Reports satisfy Report.Check: per cell, issued = ok + errors +
//     canceled, errors by type add up, and P50 <= P90 <= P99 <= P99.5 <=
//     P99.9 <= max.
//
//   - Every cell reports the generator's own CPU (ClientCPU, percent of
//     one core, from getrusage) so a reader can tell when the client, not
//     the server, was the limit; --cpuprofile profiles it.
//
// The hot path: payloads are windows of the ring (ReadAt/Seek, so the SDK
// and the transfer manager never buffer them), downloads stream through
// pooled buffers into a Sink, objects from --multipart-threshold go through
// the transfer manager, and the HTTP transport keeps as many idle
// connections per host as the run can have requests in flight (the default
// of 2 would reconnect constantly and measure TCP handshakes). Requests are
// signed UNSIGNED-PAYLOAD unless --sign-payload: over plain HTTP the SDK
// would otherwise SHA-256 every body, the largest client cost after the
// socket syscalls.
//
// Not guaranteed: the client's own CPU is shared with a local server, so on
// small machines the generator can be a bottleneck; the mixed test reports
// that as issue lateness and never calls such a run sustained. Through the
// SDK a small GET costs the client 0.1-0.15 ms of CPU: at 4 KiB the
// generator needs over half a core for 5,000 GET/s.
//
// Tests: the modes' bookkeeping runs against an in-memory target and a fake
// S3 handler; live_test.go runs every S3 mode through Main against a real
// b3 server process (the test binary re-executed as `b3 server`), or
// against B3_TEST_ENDPOINT when set. scripts/perf holds the measurement
// scripts (b3 against MinIO, the disk reference, the cost of vacuum).
package bench
