// Package bench is `b3 bench`: a load generator for any S3 endpoint and for
// raw disks, and the reports it writes.
//
// Modes (Main dispatches on the first argument):
//
//	peak     closed loop: for each object size and concurrency, workers
//	         upload unique keys back to back, then download keys uploaded
//	         in an unmeasured prepare phase. Per cell: ops/s, MB/s,
//	         latency percentiles, errors by type.
//	mixed    open loop (OpenLoop): uploads and downloads at fixed rates,
//	         held for a duration at each multiple of a baseline; per-second
//	         series; each multiple judged sustained or saturated
//	         (SaturationRule).
//	disk     write() latency and MB/s of a directory by buffer size,
//	         buffered and O_DIRECT, with and without fdatasync.
//	kv       YCSB-style tiny records: load, then read/update mixes.
//	compare  JSON reports side by side with ratios.
//
// What the numbers mean, and guarantees:
//   - Latency is per operation, recorded in an HdrHistogram (1 ns .. 1 h,
//     3 significant digits); percentiles are of successful operations only,
//     failures are counted by type (S3 error code, HTTP status, transport
//     category). MB/s is 10^6 bytes per second of successful operations
//     over the cell's wall time.
//   - In the mixed test latency counts from each request's scheduled start,
//     so a stalled server or a late client cannot hide queueing (no
//     coordinated omission). The schedule is computed, not paced by
//     completions, and the clock is an interface so tests prove it.
//   - Every run is bounded: cells by duration and/or count, the mixed test
//     by hold time plus a drain deadline, disk cells by bytes and time.
//   - Ctrl-C cancels the run's context: operations in flight return,
//     counted as "canceled" (not as server errors), and the partial report
//     is still printed and written, marked interrupted.
//   - Payloads come from one random ring (Pool) cut at key-dependent
//     offsets: no per-request generation or buffer allocation, and a
//     download can be verified from its key alone (--verify).
//   - Reports satisfy Report.Check: per cell, issued = ok + errors +
//     canceled, errors by type add up, and P50 <= P90 <= P99 <= P99.5 <=
//     P99.9 <= max.
//
// Not guaranteed: the client's own CPU is shared with a local server, so on
// small machines the generator can be a bottleneck; the mixed test reports
// that as issue lateness and never calls such a run sustained.
//
// Tests that need a live S3 server are behind the build tag "integration"
// and read B3_TEST_ENDPOINT (see integration_test.go).
package bench
