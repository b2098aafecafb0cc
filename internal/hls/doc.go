// Package hls is what b3 needs of Low-Latency HLS (draft-pantos-hls-
// rfc8216bis, section 6.2.5) to serve a stored media playlist as an
// origin: the client's delivery directives (_HLS_msn, _HLS_part,
// _HLS_skip), the few facts of a playlist they are decided on (Parse), a
// Playlist Delta Update (Delta, DeltaDateRanges), the history of a
// playlist's date ranges that v2 updates need (History), and a registry
// of requests held until a playlist write reaches them (Registry).
//
// It does no I/O: the S3 layer reads the stored playlist, asks Decide
// what to do, holds the request on a Waiter, and calls Registry.Wake
// with the playlist a write stored. The package never rewrites a
// playlist except to produce a delta update; what the encoder wrote is
// what players get.
//
// # Positions
//
// A request waits for a Target: a Media Sequence Number M and, with
// _HLS_part, a Part Index N. A playlist has reached (M, N) when it holds
// part N of segment M or anything later: a part of a later segment, or a
// later complete segment. Part N beyond the last part of a complete
// segment M is part 0 of segment M+1, as the specification says. Without
// _HLS_part the playlist must hold segment M complete. A playlist with
// EXT-X-ENDLIST has reached every target: directives are ignored then.
//
// # Guarantees
//
//   - Wake wakes exactly the waiters whose target the given playlist has
//     reached, and removes them; the others stay registered. A waiter
//     costs a small struct in a map and a channel; nothing polls.
//   - Decide never holds a request the playlist cannot answer in time by
//     the rules: more than two segments ahead, or parts beyond the
//     Advance Part Limit, is TooFar (400).
//   - Delta keeps every line that is not skipped, in order; it skips only
//     whole segments older than the Skip Boundary, and keeps the
//     EXT-X-MAP, EXT-X-KEY and EXT-X-BITRATE tags in force for the first
//     segment it keeps. DeltaDateRanges also leaves out the date ranges
//     History says are older than the Skip Boundary, and History answers
//     only once it has followed a playlist for its Skip Boundary, so no
//     removal a client must hear of is missing.
package hls
